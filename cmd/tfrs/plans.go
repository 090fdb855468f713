package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfrs-io/tfrs-operator/stacks/approval"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Saved plans in CI: `tfrs preview --save-plan DIR` writes one file per stack,
// DIR/<stack>.plan.json; the pipeline keeps DIR as an artifact of the reviewed pull request;
// `tfrs up --plan DIR` applies exactly those plans after the merge. Every object is checked
// against its plans before the first one runs (the plan covers its stack, and was taken for
// this very spec); a deviation the spec cannot show (a parent's outputs, the cluster) Pulumi
// refuses as the up runs, at the first step the plan does not contain.

const planFileSuffix = ".plan.json"

// writePlans saves the plans an outcome carries (approval.Saved), one file per stack (0600:
// the plan's secrets are ciphertext, but it is nobody else's business).
func writePlans(dir string, out *runner.Outcome) error {
	for stack, p := range approval.Saved(out) {
		b, err := p.Encode()
		if err != nil {
			return err
		}
		path := filepath.Join(dir, stack+planFileSuffix)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return fmt.Errorf("--save-plan: %w", err)
		}
	}
	return nil
}

// readPlans reads every plan in dir, each checked against its own id (an edited plan is
// refused) and its file name.
func readPlans(dir string) (map[string]*engine.Plan, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"+planFileSuffix))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--plan %s: no *%s files (write them with tfrs preview --save-plan)", dir, planFileSuffix)
	}
	plans := map[string]*engine.Plan{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--plan: %w", err)
		}
		p, err := engine.DecodePlan(b)
		if err != nil {
			return nil, fmt.Errorf("--plan %s: %w", filepath.Base(f), err)
		}
		if want := strings.TrimSuffix(filepath.Base(f), planFileSuffix); p.Stack != want {
			return nil, fmt.Errorf("--plan %s: holds a plan of stack %s", filepath.Base(f), p.Stack)
		}
		plans[p.Stack] = p
	}
	return plans, nil
}

// plansOf picks the object's plans (its own stack and a personal tenant's shared stack); nil
// when the up applies no plans.
func (s *stackRun) plansOf(p prepared) map[string]*engine.Plan {
	if s.flags.plans == nil {
		return nil
	}
	out := map[string]*engine.Plan{}
	for _, stack := range []string{p.target.Shared, p.target.Stack} {
		if pl := s.flags.plans[stack]; pl != nil {
			out[stack] = pl
		}
	}
	return out
}

// gate is the approval check of an up, before anything runs: with --plan, every object needs
// a plan of its own stack taken for its spec; without, an object whose mode reviews every
// change (approval.ReviewsEveryChange: Manual) is refused. The CLI is itself a review step
// (the person or pipeline that runs it), so OnDataLoss is left to --fail-on-data-loss here;
// the operator and the HTTP API enforce it.
func (s *stackRun) gate(ctx context.Context, p prepared) error {
	if s.flags.plans == nil {
		mode, err := s.runner.Approval(ctx, p.obj) // a personal tenant's: its cluster's
		if err != nil {
			return err
		}
		if approval.ReviewsEveryChange(mode) {
			field := "spec.approval.mode"
			if mode != p.obj.Approval() {
				field = "its cluster's spec.personal.approval.mode"
			}
			return fmt.Errorf("%s: %s is %s: only a reviewed plan is applied (tfrs preview --save-plan DIR, then tfrs up --plan DIR)", p.target, field, mode)
		}
		return nil
	}
	plans := s.plansOf(p)
	if plans[p.target.Stack] == nil {
		return fmt.Errorf("%w: --plan %s has no plan of stack %s", engine.ErrPlanMismatch, s.flags.planDir, p.target.Stack)
	}
	return runner.CheckPlans(p.obj, plans)
}
