package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/smoke"
)

// runSmoke is `tfrs dev --smoke`: the smallest real program (Namespace + Deployment) through
// the engine, with file:// state under the dev directory, printing progress as it goes.
func runSmoke(ctx context.Context, cp *controlplane.ControlPlane, stateDir string) error {
	kc, err := cp.Kubeconfig()
	if err != nil {
		return err
	}
	// The dev state is local and throwaway; real deployments set TFRS_PASSPHRASE (README).
	eng, err := engine.New(ctx, engine.Options{StateDir: stateDir, Passphrase: os.Getenv("TFRS_PASSPHRASE"), AllowEmptyPassphrase: os.Getenv("TFRS_PASSPHRASE") == ""})
	if err != nil {
		return err
	}
	defer eng.Close()
	fmt.Printf("state:      %s\n", eng.BackendURL())
	start := time.Now()
	sink := func(ev engine.Event) {
		if ev.Kind == engine.EventStepDone || ev.Kind == engine.EventStepFailed {
			fmt.Printf("  %6.1fs  %-8s %s\n", time.Since(start).Seconds(), ev.Op, ev.Type)
		}
	}
	rep, err := smoke.Run(ctx, eng, "smoke.dev", kc, "smoke", sink)
	for _, r := range []*engine.Result{rep.Up, rep.Again, rep.Destroy} {
		if r != nil {
			fmt.Printf("%-8s %-6s changes=%v in %s\n", r.Operation, r.Stack, map[engine.StepOp]int(r.Changes), r.Duration.Round(time.Millisecond))
		}
	}
	if err != nil {
		return err
	}
	fmt.Printf("smoke flow passed: Deployment Ready with %v replicas, second up changed nothing, destroy removed everything (%s)\n",
		rep.ReadyReplicas, time.Since(start).Round(time.Millisecond))
	return nil
}
