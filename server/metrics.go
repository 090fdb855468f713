package server

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// metrics are the server's Prometheus metrics, on a registry of its own so that two servers
// in one process (tests) never collide on the global one. Route labels are route templates
// ("/v1/namespaces/:ns/tenants/:name"), never raw paths, methods come from a fixed list, and
// only authenticated requests and the probes are counted (metricsMiddleware), to keep
// cardinality fixed whatever clients send.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge
	// unauthenticated counts 401s, without labels (metricsMiddleware never sees them).
	unauthenticated prometheus.Counter
	ops             *prometheus.CounterVec
	opDuration      *prometheus.HistogramVec
	opsInflight     *prometheus.GaugeVec
	all             []prometheus.Collector // everything registered on reg
}

func newMetrics(eng any) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tfrs_http_requests_total", Help: "HTTP requests by method, route and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tfrs_http_request_duration_seconds", Help: "HTTP request durations by method and route (event streams included).",
			Buckets: []float64{.005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"method", "route"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tfrs_http_requests_in_flight", Help: "HTTP requests being served.",
		}),
		unauthenticated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tfrs_http_unauthenticated_requests_total", Help: "Requests refused 401 (no or a wrong bearer token); they are in no other HTTP metric.",
		}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tfrs_operations_total", Help: "Finished stack operations by kind (create, update, delete) and result (succeeded, failed, canceled).",
		}, []string{"kind", "result"}),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tfrs_operation_duration_seconds", Help: "Stack operation durations by kind and result.",
			Buckets: []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600},
		}, []string{"kind", "result"}),
		opsInflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tfrs_operations_in_flight", Help: "Stack operations running, by kind.",
		}, []string{"kind"}),
	}
	m.all = []prometheus.Collector{m.requests, m.duration, m.inflight, m.unauthenticated, m.ops, m.opDuration, m.opsInflight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
	if in, ok := eng.(engine.Instrumented); ok {
		m.all = append(m.all, in.Collectors()...)
	}
	m.reg.MustRegister(m.all...)
	return m
}

// Collectors are every metric a server registers on its /metrics (with eng's when it exports
// them); config/monitoring's test checks the dashboard and the alerts against them.
func Collectors(eng any) []prometheus.Collector { return newMetrics(eng).all }

// observeRequest records a request under labels the caller took from fixed sets.
func (m *metrics) observeRequest(method, route, code string, d time.Duration) {
	m.requests.WithLabelValues(method, route, code).Inc()
	m.duration.WithLabelValues(method, route).Observe(d.Seconds())
}

func (m *metrics) operationStarted(kind OperationKind) {
	m.opsInflight.WithLabelValues(string(kind)).Inc()
}

func (m *metrics) operationEnded(kind OperationKind, state OperationState, d time.Duration) {
	m.opsInflight.WithLabelValues(string(kind)).Dec()
	m.ops.WithLabelValues(string(kind), string(state)).Inc()
	m.opDuration.WithLabelValues(string(kind), string(state)).Observe(d.Seconds())
}

func (m *metrics) handler() echo.HandlerFunc {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return func(c echo.Context) error {
		h.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}

// statusOf is the status a request ended with: echo's recorded one, or 200 for a handler that
// wrote nothing.
func statusOf(c echo.Context) int {
	if s := c.Response().Status; s != 0 {
		return s
	}
	return http.StatusOK
}
