package operator

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// driftReport is what a drift check found: the resources a preview right after a refresh
// would change. Only types, logical names, the step and the changed property paths are kept,
// never a value.
type driftReport struct {
	Changes []string
}

// maxDriftList bounds the Drifted message; the rest is counted.
const maxDriftList = 10

func (d *driftReport) drifted() bool { return d != nil && len(d.Changes) > 0 }

func (d *driftReport) message() string {
	if !d.drifted() {
		return "the resources match the spec"
	}
	list := d.Changes
	more := ""
	if len(list) > maxDriftList {
		more = fmt.Sprintf("; and %d more", len(list)-maxDriftList)
		list = list[:maxDriftList]
	}
	return fmt.Sprintf("%d resource(s) differ from the spec: %s%s", len(d.Changes), strings.Join(list, "; "), more)
}

// driftOf lists the steps of a preview that would change something.
func driftOf(steps []engine.Step) *driftReport {
	d := &driftReport{}
	for _, s := range steps {
		switch s.Op {
		case engine.StepSame, engine.StepRead, engine.StepRefresh:
			continue
		}
		if s.Type == "pulumi:pulumi:Stack" {
			continue // the stack itself carries no resources of its own
		}
		entry := fmt.Sprintf("%s %s %s", s.Op, s.Type, urnName(s.URN))
		if len(s.Diffs) > 0 {
			paths := s.Diffs
			if len(paths) > 3 {
				paths = append(paths[:3:3], "…")
			}
			entry += " (" + strings.Join(paths, ", ") + ")"
		}
		d.Changes = append(d.Changes, entry)
	}
	return d
}

// urnName is the logical name at the end of a URN ("urn:pulumi:s::p::type::name" → "name").
func urnName(urn string) string {
	if i := strings.LastIndex(urn, "::"); i >= 0 {
		return urn[i+2:]
	}
	return urn
}

// checkDrift reads every resource back (refresh) and then asks what an up would change
// (preview). Both run on the operator's stack only; the preview needs the parent's outputs,
// like an up.
func checkDrift(ctx context.Context, r *runner.Runner, obj v1alpha1.Object, op runner.Op) (*driftReport, error) {
	if _, err := r.Refresh(ctx, obj, op); err != nil {
		return nil, err
	}
	out, err := r.Preview(ctx, obj, op)
	if err != nil {
		if c := applyConflicts(err.Error()); len(c) > 0 {
			return &driftReport{Changes: c}, nil
		}
		return nil, err
	}
	return driftOf(out.Steps()), nil
}

// reApplyConflict matches the provider's report of a server-side apply conflict: a field the
// stack sets was changed by another field manager (kubectl scale, kubectl edit, a controller).
var reApplyConflict = regexp.MustCompile(`(?s)reported that "([^"]+)" failed to fully initialize or become live: Server-Side Apply field conflict.*?Apply failed with \d+ conflicts?: (.*?)(?:; error:|\n|$)`)

// applyConflicts lists the apply conflicts in a failed preview: each one is drift (the preview
// cannot even compute the change until the field is taken back), not a failed check. The
// provider's message names objects, field managers and field paths, never values.
func applyConflicts(msg string) []string {
	var out []string
	for _, m := range reApplyConflict.FindAllStringSubmatch(msg, -1) {
		out = append(out, fmt.Sprintf("conflict %s: %s", m[1], strings.TrimSpace(m[2])))
	}
	return out
}
