package approval

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

const (
	own    = "tenant.default.r1"
	shared = "tenant-shared.chat"
)

func planOf(stack, id string) *engine.Plan { return &engine.Plan{ID: id, Stack: stack} }

func ran(stack string, p *engine.Plan) runner.StackResult {
	return runner.StackResult{Stack: stack, Result: &engine.Result{Stack: stack, Plan: p}}
}

// Collect: a plan of every stack the preview ran, or an error naming the one without.
func TestCollect(t *testing.T) {
	p1, s1 := planOf(own, "1111111111111111"), planOf(shared, "2222222222222222")
	out := &runner.Outcome{Target: kinds.Target{Stack: own, Shared: shared}, Stacks: []runner.StackResult{ran(shared, s1), ran(own, p1)}}
	got, err := Collect(out)
	require.NoError(t, err)
	assert.Equal(t, map[string]*engine.Plan{own: p1, shared: s1}, got)
	assert.Equal(t, got, Saved(out))
	assert.Empty(t, Incomplete(out, &diff.Report{}))

	missing := &runner.Outcome{Target: kinds.Target{Stack: own}, Stacks: []runner.StackResult{ran(own, nil)}}
	_, err = Collect(missing)
	assert.ErrorContains(t, err, "the preview of stack "+own+" saved no plan")
	_, err = Collect(&runner.Outcome{Target: kinds.Target{Stack: own}})
	assert.ErrorContains(t, err, "ran no stack")
	assert.Empty(t, Saved(nil))
}

// Incomplete: plans without the own stack's cannot be approved as the object's change.
func TestIncomplete(t *testing.T) {
	s1 := planOf(shared, "2222222222222222")
	beforeShared := &runner.Outcome{Target: kinds.Target{Stack: own, Shared: shared}, Stacks: []runner.StackResult{ran(shared, s1)}}
	assert.Contains(t, Incomplete(beforeShared, &diff.Report{}), "shared stack does not exist yet")
	assert.Equal(t, "waits for TFRTenant acme", Incomplete(beforeShared, &diff.Report{Skipped: "waits for TFRTenant acme"}))
	assert.Equal(t, "the preview returned no plan of the resource's own stack", Incomplete(&runner.Outcome{Target: kinds.Target{Stack: own}}, &diff.Report{}))
}

// SetID: one plan's own id; several plans' a derived one, the same whatever the map order,
// and another as soon as one plan differs.
func TestSetID(t *testing.T) {
	p1, s1, s2 := planOf(own, "1111111111111111"), planOf(shared, "2222222222222222"), planOf(shared, "3333333333333333")
	assert.Equal(t, p1.ID, SetID(map[string]*engine.Plan{own: p1}))
	two := SetID(map[string]*engine.Plan{own: p1, shared: s1})
	assert.True(t, engine.ValidPlanID(two), two)
	assert.NotEqual(t, p1.ID, two, "a set of two has an id of its own")
	for range 20 {
		assert.Equal(t, two, SetID(map[string]*engine.Plan{shared: s1, own: p1}))
	}
	assert.NotEqual(t, two, SetID(map[string]*engine.Plan{own: p1, shared: s2}), "a set sharing the own plan is another set")
}

// Summarize: counts by op, and at most MaxDataLoss data-loss entries, types and names only.
func TestSummarize(t *testing.T) {
	rep := report(harmless, replacePVC, deletePG)
	counts, loss := Summarize(rep)
	assert.Equal(t, map[engine.StepOp]int{engine.StepUpdate: 1, engine.StepReplace: 1, engine.StepDelete: 1}, counts)
	assert.Equal(t, []string{"replace " + diff.TypePVC + " x", "delete " + diff.TypeCNPGCluster + " x"}, loss)

	var many []diff.Change
	for i := range MaxDataLoss + 10 {
		c := change(engine.StepDelete, diff.TypePVC)
		c.Name = fmt.Sprintf("pvc-%d", i)
		many = append(many, c)
	}
	_, loss = Summarize(report(many...))
	assert.Len(t, loss, MaxDataLoss)
}
