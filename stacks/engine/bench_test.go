//go:build integration

package engine

import (
	"context"
	"testing"
	"time"
)

// Benchmarks of the engine against the real CLI, provider and local control plane. Besides
// ns/op (wall time of the whole operation) each reports:
//
//	cli-calls/op  CLI processes the engine started (its main cost: each is a process start
//	              plus a state read)
//	cli-ms/op     wall time inside those processes (the inline program runs meanwhile)
//	engine-ms/op  the engine's own overhead: wall time outside any CLI process
//
// Run: go test -run '^$' -bench . -benchtime 3x ./stacks/engine/
func BenchmarkEngine(b *testing.B) {
	kc := kubeconfig(b)
	e := newEngine(b, Options{})
	ctx := context.Background()
	must := func(_ *Result, err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	measure := func(b *testing.B, setup func(), op func()) {
		b.Helper()
		var cliCalls int64
		var cliTime, wall time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if setup != nil {
				setup()
			}
			before := e.Stats()
			start := time.Now()
			b.StartTimer()
			op()
			b.StopTimer()
			wall += time.Since(start)
			after := e.Stats()
			cliCalls += after.CLICalls - before.CLICalls
			cliTime += after.CLITime - before.CLITime
		}
		n := float64(b.N)
		b.ReportMetric(float64(cliCalls)/n, "cli-calls/op")
		b.ReportMetric(float64(cliTime.Milliseconds())/n, "cli-ms/op")
		b.ReportMetric(float64((wall-cliTime).Milliseconds())/n, "engine-ms/op")
	}

	empty := Request{Stack: "cluster.bench-empty", Program: emptyProgram}
	must(e.Up(ctx, empty)) // create the stack outside the measurement
	b.Run("up-empty", func(b *testing.B) {
		measure(b, nil, func() { must(e.Up(ctx, empty)) })
	})
	b.Run("preview-empty", func(b *testing.B) {
		measure(b, nil, func() { must(e.Preview(ctx, empty)) })
	})

	cms := Request{Stack: "tenant.bench.cm20", Program: configMapsProgram(kc, "bench-cm20", 20, "v")}
	b.Run("preview-20-configmaps", func(b *testing.B) {
		// Nothing deployed: the preview plans 21 creates (namespace + 20 ConfigMaps).
		measure(b, nil, func() { must(e.Preview(ctx, cms)) })
	})
	b.Run("up-20-configmaps", func(b *testing.B) {
		measure(b, func() { must(e.Destroy(ctx, Request{Stack: cms.Stack})) }, func() { must(e.Up(ctx, cms)) })
	})
	b.Run("noop-up-20-configmaps", func(b *testing.B) {
		measure(b, nil, func() { must(e.Up(ctx, cms)) })
	})
	must(e.Destroy(ctx, Request{Stack: cms.Stack}))
}
