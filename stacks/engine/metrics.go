package engine

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the engine's Prometheus metrics: how many Pulumi CLI processes it started and
// the wall time spent in them. They are what an operation really costs on the machine (each
// process loads the CLI and the stack's state), so the operator and the HTTP API both export
// them; the benchmark's idle-cost figure reads them.
func (e *Engine) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tfrs_engine_cli_processes_total",
			Help: "Pulumi CLI processes the engine started.",
		}, func() float64 { return float64(e.cli.calls.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tfrs_engine_cli_seconds_total",
			Help: "Wall time spent waiting on Pulumi CLI processes.",
		}, func() float64 { return timeDuration(e.cli.nanos.Load()).Seconds() }),
		shareCollector{e},
	}
}

// shareCollector exports the fair queue (fairshare.go) by share: operations running and
// waiting for a slot. Only shares that run or wait for something have series, so the label
// set stays as small as the current load. The label is "share", not "namespace": Prometheus
// targets carry a namespace label of their own.
type shareCollector struct{ e *Engine }

var (
	descShareRunning = prometheus.NewDesc("tfrs_engine_operations_running",
		"Engine operations holding a slot, by share (a tenant namespace, or _admin for the platform's stacks).", []string{"share"}, nil)
	descShareWaiting = prometheus.NewDesc("tfrs_engine_operations_waiting",
		"Engine operations waiting for a slot, by share (a tenant namespace, or _admin for the platform's stacks).", []string{"share"}, nil)
)

func (shareCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descShareRunning
	ch <- descShareWaiting
}

func (c shareCollector) Collect(ch chan<- prometheus.Metric) {
	if c.e.fair == nil {
		return // a zero Engine (the monitoring test describes one)
	}
	for share, l := range c.e.fair.snapshot() {
		ch <- prometheus.MustNewConstMetric(descShareRunning, prometheus.GaugeValue, float64(l.running), share)
		ch <- prometheus.MustNewConstMetric(descShareWaiting, prometheus.GaugeValue, float64(l.waiting), share)
	}
}

// Instrumented is what exports engine metrics (an *Engine; test fakes need not).
type Instrumented interface {
	Collectors() []prometheus.Collector
}
