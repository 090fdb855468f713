package diff

import (
	"fmt"
	"strings"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Component states that ComponentStates reports.
const (
	StateUpToDate   = "up to date"  // every resource of the component matches the program
	StateNotCreated = "not created" // the component is not in the stack yet
	StateRemoved    = "to remove"   // the stack has it, the program no longer does
)

// ComponentStates reads each component's live state from a preview outcome: a component
// whose resources all preview as unchanged is up to date, one the preview would create is not
// created yet, and otherwise the pending ops are listed ("pending: 1 update, 1 replace").
// Keys are component ids (stacks.Graph node ids); components the preview did not touch are
// absent.
func ComponentStates(o *runner.Outcome) map[string]string {
	out := map[string]string{}
	if o == nil {
		return out
	}
	type acc struct {
		own     engine.StepOp
		pending map[engine.StepOp]int
		failed  bool
	}
	seen := map[string]*acc{}
	var order []string
	for _, s := range o.Stacks {
		if s.Result == nil {
			continue
		}
		components := componentNames(s.Result.Steps)
		for _, st := range s.Result.Steps {
			qualified, name := ParseURN(st.URN)
			id := componentOf(qualified, name, components)
			if id == "" {
				continue
			}
			a := seen[id]
			if a == nil {
				a = &acc{pending: map[engine.StepOp]int{}}
				seen[id] = a
				order = append(order, id)
			}
			if len(qualified) == 1 {
				a.own = st.Op
			} else if changing(st.Op) {
				a.pending[st.Op]++
			}
			a.failed = a.failed || st.Failed
		}
	}
	for _, id := range order {
		a := seen[id]
		switch {
		case a.failed:
			out[id] = "failed"
		case a.own == engine.StepCreate:
			out[id] = StateNotCreated
		case a.own == engine.StepDelete:
			out[id] = StateRemoved
		case len(a.pending) == 0:
			out[id] = StateUpToDate
		default:
			var parts []string
			for _, op := range orderedOps(a.pending) {
				parts = append(parts, fmt.Sprintf("%d %s", a.pending[op], op))
			}
			out[id] = "pending: " + strings.Join(parts, ", ")
		}
	}
	return out
}
