package operator

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
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

	stacksByRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tfrs_operator_stacks_by_revision",
		Help: "Objects by the program revision of their last successful up (status.revision.id; \"none\" before one), by kind.",
	}, []string{"kind", "revision"})

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
	return []prometheus.Collector{operationsTotal, operationDuration, operationsInFlight, stacksFailing, stacksByRevision, resyncSkips}
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

// revisionSet keeps the stacks-by-revision gauge exact: each object counts once, under the
// revision its status names, and stops counting when it is gone.
type revisionSet struct {
	mu   sync.Mutex
	of   map[string]string // object key → revision id
	kind string
}

// set records the object's revision: nil (never applied by a build that records one) counts
// as "none".
func (s *revisionSet) set(key string, rev *v1alpha1.Revision) {
	id := "none"
	if rev != nil && rev.ID != "" {
		id = rev.ID
	}
	s.update(key, id)
}

// forget stops counting the object (it is gone).
func (s *revisionSet) forget(key string) { s.update(key, "") }

func (s *revisionSet) update(key, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.of == nil {
		s.of = map[string]string{}
	}
	old, had := s.of[key]
	if had && old == id {
		return
	}
	if id == "" {
		delete(s.of, key)
	} else {
		s.of[key] = id
	}
	counts := map[string]int{}
	for _, v := range s.of {
		counts[v]++
	}
	if had && counts[old] == 0 {
		stacksByRevision.DeleteLabelValues(s.kind, old)
	}
	for v, n := range counts {
		stacksByRevision.WithLabelValues(s.kind, v).Set(float64(n))
	}
}
