package enginetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// A stack's life: an up creates it with the door's tag and default outputs, a second up
// leaves the tag, a destroy makes it not ready, a remove deletes it; the version follows
// every change, and every call is logged in order.
func TestStackLifecycle(t *testing.T) {
	ctx := context.Background()
	e := New()
	const stack = "cluster.main"
	_, ok := e.StackVersion(ctx, stack)
	assert.False(t, ok, "no version for a missing stack")

	res, err := e.Up(ctx, engine.Request{Stack: stack, ManagedBy: engine.ManagedByAPI, Tags: map[string]string{"k": "v"}, Message: "m"})
	require.NoError(t, err)
	assert.Equal(t, engine.Changes{engine.StepCreate: 1}, res.Changes)
	assert.Equal(t, ClusterOutputs(), res.Outputs)
	v1, ok := e.StackVersion(ctx, stack)
	require.True(t, ok)

	res, err = e.Up(ctx, engine.Request{Stack: stack, ManagedBy: engine.ManagedByCLI})
	require.NoError(t, err)
	assert.Equal(t, engine.Changes{engine.StepSame: 1}, res.Changes)
	st, err := e.Status(ctx, stack)
	require.NoError(t, err)
	assert.Equal(t, engine.ManagedByAPI, st.ManagedBy, "the managed-by tag is never overwritten")
	assert.Equal(t, map[string]string{engine.TagManagedBy: "api", "k": "v"}, st.Tags)
	assert.True(t, st.Ready)
	assert.Equal(t, "update", st.Last.Kind)
	v2, _ := e.StackVersion(ctx, stack)
	assert.NotEqual(t, v1, v2)

	st.Tags["k"] = "changed"
	tags, err := e.Tags(ctx, stack)
	require.NoError(t, err)
	assert.Equal(t, "v", tags["k"], "Status returns a copy")

	res, err = e.Destroy(ctx, engine.Request{Stack: stack})
	require.NoError(t, err)
	assert.Equal(t, engine.Changes{engine.StepDelete: 1}, res.Changes)
	st, err = e.Status(ctx, stack)
	require.NoError(t, err)
	assert.False(t, st.Ready)
	out, err := e.Outputs(ctx, stack)
	require.NoError(t, err)
	assert.Empty(t, out)

	require.NoError(t, e.Remove(ctx, stack, false))
	for _, err := range []error{
		second(e.Status(ctx, stack)), second(e.Outputs(ctx, stack)), second(e.Refresh(ctx, engine.Request{Stack: stack})),
		second(e.Destroy(ctx, engine.Request{Stack: stack})),
	} {
		require.ErrorIs(t, err, engine.ErrNotFound)
	}
	assert.Equal(t, []string{"up cluster.main", "up cluster.main", "status cluster.main", "status cluster.main",
		"destroy cluster.main", "status cluster.main", "outputs cluster.main", "remove cluster.main",
		"status cluster.main", "outputs cluster.main", "refresh cluster.main", "destroy cluster.main"}, e.Calls())
	assert.Equal(t, []string{"up cluster.main", "up cluster.main", "destroy cluster.main", "remove cluster.main",
		"refresh cluster.main", "destroy cluster.main"}, e.Ops())
	assert.Equal(t, []string{"remove cluster.main"}, e.CallsOf(engine.OpRemove))
	assert.Equal(t, 2, e.Count("outputs cluster.main"))
	assert.Equal(t, engine.ManagedByCLI, e.Request("up cluster.main").ManagedBy, "the last up's request")
	assert.Equal(t, "m", e.Log()[0].Request.Message)
	assert.Nil(t, e.Log()[2].Request, "a read has none")
	e.Reset()
	assert.Empty(t, e.Calls())
}

func second[T any](_ T, err error) error { return err }

// Put, Edit, Drop and Stack change and read the state without a logged call; only Put
// changes the version.
func TestStateWithoutCalls(t *testing.T) {
	ctx := context.Background()
	e := New()
	e.Put("tenant.ns.a", Stack{Tags: Tags(engine.ManagedByCLI, map[string]string{engine.TagParent: "cluster.main"}), Ready: true})
	e.Put("tenant.ns.b", Stack{})
	e.Put("server.ns.s", Stack{})
	v1, _ := e.StackVersion(ctx, "tenant.ns.a")
	require.True(t, e.Edit("tenant.ns.a", func(s *Stack) { s.Outputs = program.Outputs{"x": program.NewOutput("y", false)} }))
	assert.False(t, e.Edit("tenant.ns.missing", func(*Stack) { t.Fatal("called for a missing stack") }))
	v2, _ := e.StackVersion(ctx, "tenant.ns.a")
	assert.Equal(t, v1, v2, "an edit is not seen by the version")
	st, ok := e.Stack("tenant.ns.a")
	require.True(t, ok)
	assert.Equal(t, "y", st.Outputs["x"].Reveal())
	assert.Equal(t, "cli", st.Tags[engine.TagManagedBy])
	e.Drop("tenant.ns.b")
	_, ok = e.Stack("tenant.ns.b")
	assert.False(t, ok)
	assert.Empty(t, e.Calls())

	list, err := e.List(ctx, "tenant.")
	require.NoError(t, err)
	assert.Equal(t, []engine.StackSummary{{Name: "tenant.ns.a"}}, list)
	assert.Equal(t, []string{"list tenant."}, e.Calls())

	e.Put("tenant.ns.c", Stack{Tags: map[string]string{engine.TagParent: "cluster.x"}})
	e.Put("server.ns.c", Stack{Tags: map[string]string{engine.TagParent: "cluster.x"}})
	tagged, err := e.TaggedStacks(ctx, "tenant.", engine.TagParent, "cluster.x")
	require.NoError(t, err)
	assert.Equal(t, []string{"tenant.ns.c"}, tagged)
	assert.Equal(t, []string{"list tenant.", "list tenant."}, e.Calls())
}

// Hooks: Fail queues errors for the next calls of one kind, FailOn fails calls by operation
// and stack, Steps shapes the results (failed ones too), NewOutputs the outputs of an up,
// Resources the change counts.
func TestHooks(t *testing.T) {
	ctx := context.Background()
	e := New()
	boom, bang := errors.New("boom"), errors.New("bang")
	e.Fail("up tenant.ns.a", boom, bang)
	_, err := e.Up(ctx, engine.Request{Stack: "tenant.ns.a"})
	require.ErrorIs(t, err, boom)
	_, err = e.Up(ctx, engine.Request{Stack: "tenant.ns.a"})
	require.ErrorIs(t, err, bang)
	_, ok := e.Stack("tenant.ns.a")
	assert.False(t, ok, "a failed up changes nothing")

	e.Resources = 3
	e.NewOutputs = func(stack string) program.Outputs { return program.Outputs{"of": program.NewOutput(stack, false)} }
	e.Steps = func(c Call) []engine.Step { return []engine.Step{{URN: "urn:" + c.String()}} }
	res, err := e.Up(ctx, engine.Request{Stack: "tenant.ns.a"})
	require.NoError(t, err)
	assert.Equal(t, engine.Changes{engine.StepCreate: 3}, res.Changes)
	assert.Equal(t, "tenant.ns.a", res.Outputs["of"].Reveal())
	assert.Equal(t, []engine.Step{{URN: "urn:up tenant.ns.a"}}, res.Steps)

	e.Hook = FailOn(boom, "tenant.ns.a", engine.OpPreview, engine.OpStatus)
	res, err = e.Preview(ctx, engine.Request{Stack: "tenant.ns.a"})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, []engine.Step{{URN: "urn:preview tenant.ns.a"}}, res.Steps, "a failed operation reports its steps")
	_, err = e.Tags(ctx, "tenant.ns.a")
	require.ErrorIs(t, err, boom)
	_, err = e.Preview(ctx, engine.Request{Stack: "tenant.ns.b"})
	require.NoError(t, err, "another stack")
	_, err = e.Outputs(ctx, "tenant.ns.a")
	require.NoError(t, err, "another operation")

	e.Hook = FailOn(bang, "", engine.OpList)
	_, err = e.List(ctx, "")
	require.ErrorIs(t, err, bang, "any stack")
}

func TestDefaultOutputsAreWellTyped(t *testing.T) {
	tenant := DefaultOutputs("tenant.ns.a")
	_, err := stacks.TenantOutputsFromStack(tenant)
	require.NoError(t, err)
	for k, secret := range stacks.TenantOutputKeys() {
		if secret {
			assert.Equal(t, Secret, tenant[k].Reveal(), k)
		}
	}
	cl, err := stacks.TenantClusterFromStack(DefaultOutputs("cluster.main"))
	require.NoError(t, err)
	assert.True(t, cl.RabbitMQOperatorReady)
	assert.Empty(t, DefaultOutputs("server.ns.s"))

	kept := TenantOutputs(program.Outputs{"host": program.NewOutput("h", false)})
	assert.Equal(t, "h", kept["host"].Reveal(), "TenantOutputs completes, never drops")
}

// Hold holds the calls of its operations until the gate opens; a call whose context ends
// first is canceled and changes nothing. Other operations pass.
func TestHold(t *testing.T) {
	e := New()
	gate := e.Hold(engine.OpUp)
	require.NoError(t, second(e.Preview(context.Background(), engine.Request{Stack: "cluster.a"})), "not held")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		res, err := e.Up(ctx, engine.Request{Stack: "cluster.a"})
		assert.Nil(t, res)
		done <- err
	}()
	assert.Equal(t, "up cluster.a", <-gate.Entered)
	cancel()
	require.ErrorIs(t, <-done, engine.ErrCanceled)
	_, ok := e.Stack("cluster.a")
	assert.False(t, ok, "a canceled up makes no stack")

	go func() { done <- second(e.Up(context.Background(), engine.Request{Stack: "cluster.b"})) }()
	<-gate.Entered
	select {
	case <-done:
		t.Fatal("the up went through a closed gate")
	case <-time.After(20 * time.Millisecond):
	}
	gate.Open()
	gate.Open()
	require.NoError(t, <-done)
	assert.Equal(t, []string{"preview cluster.a", "up cluster.a", "up cluster.b"}, e.Calls())
}

// Many goroutines on one Engine (run with -race): every call is logged once, every stack
// ends up ready, and versions never repeat.
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	e := New()
	var hooked sync.Map
	e.Hook = func(_ context.Context, c Call) error {
		hooked.Store(c.String(), true)
		return nil
	}
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stack := fmt.Sprintf("tenant.ns.t%d", i)
			for range 5 {
				_, err := e.Up(ctx, engine.Request{Stack: stack, ManagedBy: engine.ManagedByOperator})
				assert.NoError(t, err)
				_, err = e.Status(ctx, stack)
				assert.NoError(t, err)
				_, err = e.List(ctx, "tenant.")
				assert.NoError(t, err)
				e.StackVersion(ctx, stack)
				e.Calls()
			}
		}()
	}
	wg.Wait()
	assert.Len(t, e.Calls(), n*5*3)
	versions := map[string]bool{}
	for i := range n {
		stack := fmt.Sprintf("tenant.ns.t%d", i)
		st, ok := e.Stack(stack)
		require.True(t, ok)
		assert.True(t, st.Ready)
		v, _ := e.StackVersion(ctx, stack)
		assert.False(t, versions[v], "version %s repeats", v)
		versions[v] = true
		_, ok = hooked.Load("up " + stack)
		assert.True(t, ok)
	}
}
