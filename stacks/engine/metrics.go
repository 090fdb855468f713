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
	}
}

// Instrumented is what exports engine metrics (an *Engine; test fakes need not).
type Instrumented interface {
	Collectors() []prometheus.Collector
}
