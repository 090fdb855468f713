//go:build integration

package engine

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestCollectorsCountCLIProcesses: the exported counters are the engine's own accounting, so
// an operation's CLI processes show on /metrics.
func TestCollectorsCountCLIProcesses(t *testing.T) {
	e := newEngine(t, Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.Collectors()...)
	processes := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "tfrs_engine_cli_processes_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatal("tfrs_engine_cli_processes_total not exported")
		return 0
	}
	before := processes()
	// List is still a CLI read (`stack ls`); Outputs and Status are read in-process.
	_, err := e.List(context.Background(), "cluster.")
	require.NoError(t, err)
	after := processes()
	require.Equal(t, before+1, after, "one `stack ls` process")
	require.Equal(t, float64(e.Stats().CLICalls), after)
}
