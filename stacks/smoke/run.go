package smoke

import (
	"context"
	"fmt"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// Report is what one smoke run observed.
type Report struct {
	Up, Again, Destroy *engine.Result
	ReadyReplicas      float64
}

// Run drives the smoke program through the engine: up (the Deployment must become Ready), a
// second up (must change nothing), destroy. It stops at the first failed expectation.
func Run(ctx context.Context, eng *engine.Engine, stack, kubeconfig, namespace string, sink engine.Sink) (*Report, error) {
	req := engine.Request{Stack: stack, Program: Program(kubeconfig, namespace), ManagedBy: engine.ManagedByCLI, Sink: sink}
	rep := &Report{}
	var err error
	if rep.Up, err = eng.Up(ctx, req); err != nil {
		return rep, fmt.Errorf("up: %w", err)
	}
	ready, _ := rep.Up.Outputs[OutReadyReplicas].Value.(float64)
	rep.ReadyReplicas = ready
	if ready != 2 {
		return rep, fmt.Errorf("up: deployment has %v ready replicas, want 2", rep.Up.Outputs[OutReadyReplicas].Value)
	}
	if rep.Again, err = eng.Up(ctx, req); err != nil {
		return rep, fmt.Errorf("second up: %w", err)
	}
	if n := rep.Again.Changes.Changed(); n != 0 {
		return rep, fmt.Errorf("second up changed %d resources, want none", n)
	}
	if rep.Destroy, err = eng.Destroy(ctx, req); err != nil {
		return rep, fmt.Errorf("destroy: %w", err)
	}
	return rep, nil
}
