package operator

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// The operator's metrics, served with controller-runtime's own on the manager's /metrics.
// Labels: kind (TFRCluster, TFRTenant, TFRServer), operation (up, destroy, drift), result
// (succeeded, failed, conflict, canceled, waiting, ...).
var (
	operationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfrs_operator_operations_total",
		Help: "Stack operations the operator ran, by kind, operation and result.",
	}, []string{"kind", "operation", "result"})

	operationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tfrs_operator_operation_duration_seconds",
		Help:    "Wall time of the operator's stack operations, by kind, operation and result.",
		Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800},
	}, []string{"kind", "operation", "result"})

	operationsInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tfrs_operator_operations_in_flight",
		Help: "Stack operations running now, by kind.",
	}, []string{"kind"})

	stacksFailing = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tfrs_operator_stacks_failing",
		Help: "Objects whose last operation failed (not Ready and waiting for a retry or a human), by kind.",
	}, []string{"kind"})

	resyncSkips = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfrs_operator_resync_skips_total",
		Help: "Reconciles that found nothing to do and ran no engine operation, by kind.",
	}, []string{"kind"})
)

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}

// Collectors are the operator's own metrics, as registered on controller-runtime's registry
// (config/monitoring's test checks the dashboard and the alerts against them).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{operationsTotal, operationDuration, operationsInFlight, stacksFailing, resyncSkips}
}

// registerEngineMetrics exports the engine's own metrics (CLI processes and time) on the
// manager's /metrics. The registry is global: with several operators in one process (tests)
// the first engine's stay, which is harmless.
func registerEngineMetrics(e any) {
	if in, ok := e.(engine.Instrumented); ok {
		for _, c := range in.Collectors() {
			_ = metrics.Registry.Register(c)
		}
	}
}

// failingSet keeps the stacks-failing gauge exact: an object counts once however often it
// fails, and stops counting when it succeeds or is gone.
type failingSet struct {
	mu   sync.Mutex
	keys map[string]bool
	kind string
}

func (f *failingSet) set(key string, failing bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil {
		f.keys = map[string]bool{}
	}
	if failing {
		f.keys[key] = true
	} else {
		delete(f.keys, key)
	}
	stacksFailing.WithLabelValues(f.kind).Set(float64(len(f.keys)))
}
