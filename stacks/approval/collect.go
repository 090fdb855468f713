package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Saved is every plan a preview with runner.Op.SavePlans carried, by stack (none: an empty
// map). The CLI writes these as they are; the gate uses Collect.
func Saved(out *runner.Outcome) map[string]*engine.Plan {
	plans := map[string]*engine.Plan{}
	if out == nil {
		return plans
	}
	for _, s := range out.Stacks {
		if s.Result != nil && s.Result.Plan != nil {
			plans[s.Stack] = s.Result.Plan
		}
	}
	return plans
}

// Collect is the plan set of a SavePlans preview: a plan of every stack it ran (a personal
// tenant's runs reach its job type's shared stack too). A stack it ran without one is an
// error: the engine saves a plan for every stack it previews with SavePlans, and an up
// reaching a stack its plans do not cover is refused.
func Collect(out *runner.Outcome) (map[string]*engine.Plan, error) {
	plans := Saved(out)
	for _, s := range out.Stacks {
		if plans[s.Stack] == nil {
			return nil, fmt.Errorf("the preview of stack %s saved no plan", s.Stack)
		}
	}
	if len(plans) == 0 {
		return nil, errors.New("the preview ran no stack, so there is no plan to review")
	}
	return plans, nil
}

// Incomplete says why a preview's plans cannot be applied as the object's change later, ""
// when they can: they must hold the object's own stack's plan. A personal tenant whose job
// type's shared stack does not exist yet cannot plan its own stack before that one is up.
func Incomplete(out *runner.Outcome, rep *diff.Report) string {
	if Saved(out)[out.Target.Stack] != nil {
		return ""
	}
	switch {
	case rep != nil && rep.Skipped != "":
		return rep.Skipped
	case out.Target.Shared != "" && out.Own() == nil:
		return "the job type's shared stack does not exist yet, so the tenant's own stack cannot be planned before it is up"
	}
	return "the preview returned no plan of the resource's own stack"
}

// SetID is the id a person approves: a single plan's own (content-derived) id; a set's
// derived from all its plans' ids, so approving it approves exactly the plans reviewed, never
// a set that shares one of them.
func SetID(plans map[string]*engine.Plan) string {
	ids := make(map[string]string, len(plans))
	for stack, p := range plans {
		ids[stack] = p.ID
	}
	return setID(ids)
}

func setID(ids map[string]string) string {
	var id string
	lines := make([]string, 0, len(ids))
	for stack, pid := range ids {
		id = pid
		lines = append(lines, stack+"="+pid)
	}
	if len(lines) > 1 {
		sort.Strings(lines)
		sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		id = hex.EncodeToString(sum[:8])
	}
	return id
}

// MaxDataLoss bounds the data-loss list kept with a plan (status.pendingPlan.dataLoss allows
// 64 entries).
const MaxDataLoss = 64

// Summarize is the reviewable part of a report: counts by op and "<op> <type> <name>" of the
// changes that destroy data. Names and types only, never a property value.
func Summarize(rep *diff.Report) (map[engine.StepOp]int, []string) {
	var loss []string
	for _, c := range rep.DataLoss {
		if len(loss) == MaxDataLoss {
			break
		}
		loss = append(loss, fmt.Sprintf("%s %s %s", c.Op, c.Type, c.Name))
	}
	return rep.Counts(), loss
}
