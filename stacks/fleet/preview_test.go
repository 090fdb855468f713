package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// fakeRunner answers Unchanged from proven and Preview from steps, by stack, and counts the
// previews running at once.
type fakeRunner struct {
	mu        sync.Mutex
	proven    map[string]bool
	steps     map[string][]engine.Step
	fail      map[string]error
	previews  []string
	running   atomic.Int32
	maxAtOnce atomic.Int32
}

func (f *fakeRunner) Unchanged(_ context.Context, obj v1alpha1.Object) (bool, error) {
	t, _ := kinds.TargetOf(obj)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.proven[t.Stack], nil
}

func (f *fakeRunner) Preview(_ context.Context, obj v1alpha1.Object, _ runner.Op) (*runner.Outcome, error) {
	t, _ := kinds.TargetOf(obj)
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		m := f.maxAtOnce.Load()
		if n <= m || f.maxAtOnce.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.previews = append(f.previews, t.Stack)
	out := &runner.Outcome{Target: t, Stacks: []runner.StackResult{{Stack: t.Stack, Result: &engine.Result{Operation: engine.OpPreview, Steps: f.steps[t.Stack]}}}}
	return out, f.fail[t.Stack]
}

func tenant(name string) *v1alpha1.TFRTenant {
	return &v1alpha1.TFRTenant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
		Spec: v1alpha1.TFRTenantSpec{ClusterRef: "main", Type: v1alpha1.TenantEnterprise}}
}

func step(stack, qualified, name string, op engine.StepOp, diffs ...string) engine.Step {
	parts := strings.Split(qualified, "$")
	return engine.Step{URN: "urn:pulumi:" + stack + "::tfrs::" + qualified + "::" + name, Type: parts[len(parts)-1], Op: op, Diffs: diffs}
}

func grafanaBump(stack string) []engine.Step {
	return []engine.Step{
		step(stack, "tfrs:tenant:Grafana", "grafana", engine.StepSame),
		step(stack, "tfrs:tenant:Grafana$kubernetes:helm.sh/v3:Release", "grafana", engine.StepUpdate, "version"),
	}
}

func TestPreviewReportsEveryStackOnce(t *testing.T) {
	f := &fakeRunner{proven: map[string]bool{}, steps: map[string][]engine.Step{}, fail: map[string]error{}}
	var objs []v1alpha1.Object
	for i := range 12 {
		tn := tenant(fmt.Sprintf("t%02d", i))
		objs = append(objs, tn)
		stack := "tenant.team." + tn.Name
		switch {
		case i < 6:
			f.proven[stack] = true
		case i < 9:
			f.steps[stack] = grafanaBump(stack)
		case i == 9:
			f.steps[stack] = append(grafanaBump(stack),
				step(stack, "tfrs:tenant:TimescaleDB", "timescaledb", engine.StepSame),
				step(stack, "tfrs:tenant:TimescaleDB$kubernetes:postgresql.cnpg.io/v1:Cluster", "t09-tsdb", engine.StepReplace, "spec.bootstrap"))
		case i == 10:
			tn.Spec.Suspend = true
		case i == 11:
			f.fail[stack] = errors.New("parent not ready")
		}
	}
	var seen []string
	rep := Preview(context.Background(), f, objs, Options{Parallel: 2, Done: func(e Entry, done, total int) {
		seen = append(seen, e.Target.Stack)
		assert.Equal(t, 12, total)
		assert.Equal(t, len(seen), done)
	}})
	require.Len(t, rep.Entries, 12)
	assert.Len(t, seen, 12)
	for i, e := range rep.Entries {
		assert.Equal(t, objs[i].GetName(), e.Target.Name, "entries keep the order of the objects")
	}
	assert.ElementsMatch(t, []string{"tenant.team.t06", "tenant.team.t07", "tenant.team.t08", "tenant.team.t09", "tenant.team.t11"}, f.previews,
		"proven and suspended stacks run no preview")
	assert.LessOrEqual(t, f.maxAtOnce.Load(), int32(2), "at most Parallel previews at once")
	assert.Equal(t, map[Status]int{StatusUnchanged: 6, StatusUpdate: 3, StatusReplace: 1, StatusSuspended: 1, StatusError: 1}, rep.Counts)
	assert.Equal(t, 6, rep.Proven)
	assert.Equal(t, 4, rep.Changed())
	assert.True(t, rep.DataLoss)
	assert.True(t, rep.Entries[9].DataLoss)
	assert.Contains(t, rep.Entries[10].Error, "suspended")
	assert.Equal(t, "parent not ready", rep.Entries[11].Error)

	require.Len(t, rep.Groups, 2)
	assert.Equal(t, "timescaledb", rep.Groups[0].Component, "data loss first")
	assert.True(t, rep.Groups[0].DataLoss)
	assert.Equal(t, []string{"tenant.team.t09"}, rep.Groups[0].Stacks)
	assert.Equal(t, "grafana", rep.Groups[1].Component)
	assert.Equal(t, "update kubernetes:helm.sh/v3:Release (version)", rep.Groups[1].Label())
	assert.Equal(t, []string{"tenant.team.t06", "tenant.team.t07", "tenant.team.t08", "tenant.team.t09"}, rep.Groups[1].Stacks)

	var text, mdown, js bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	require.NoError(t, rep.WriteMarkdown(&mdown))
	require.NoError(t, rep.WriteJSON(&js))
	assert.True(t, strings.HasPrefix(text.String(), "WARNING: DATA LOSS"), text.String())
	assert.Contains(t, text.String(), "6 unchanged (6 proven from recorded inputs, no Pulumi run)")
	assert.Contains(t, text.String(), "grafana: update kubernetes:helm.sh/v3:Release (version) on 4 stack(s)")
	assert.Contains(t, mdown.String(), "> [!CAUTION]")
	assert.Contains(t, mdown.String(), "| grafana | update kubernetes:helm.sh/v3:Release (version) | 4: ")
	assert.Contains(t, mdown.String(), "| tenant.team.t00 | unchanged | proven from recorded inputs |")
	assert.Contains(t, js.String(), `"proven": true`)
}

// Full previews every stack for real, proven or not.
func TestFullPreviewsEveryStack(t *testing.T) {
	f := &fakeRunner{proven: map[string]bool{"tenant.team.a": true, "tenant.team.b": true}, steps: map[string][]engine.Step{}}
	rep := Preview(context.Background(), f, []v1alpha1.Object{tenant("a"), tenant("b")}, Options{Full: true})
	assert.ElementsMatch(t, []string{"tenant.team.a", "tenant.team.b"}, f.previews)
	assert.Zero(t, rep.Proven)
	assert.Equal(t, map[Status]int{StatusUnchanged: 2}, rep.Counts)
}

// A door's Check refuses an object before anything of it is read or previewed: it is an
// error entry, and the others go on.
func TestCheckRefusesBeforeAnythingRuns(t *testing.T) {
	f := &fakeRunner{proven: map[string]bool{}, steps: map[string][]engine.Step{}}
	refused := tenant("a")
	rep := Preview(context.Background(), f, []v1alpha1.Object{refused, tenant("b")}, Options{
		Check: func(_ context.Context, obj v1alpha1.Object) error {
			if obj == refused {
				return errors.New("refused by the door")
			}
			return nil
		},
	})
	assert.Equal(t, []string{"tenant.team.b"}, f.previews)
	assert.Equal(t, map[Status]int{StatusError: 1, StatusUnchanged: 1}, rep.Counts)
	assert.Equal(t, "refused by the door", rep.Entries[0].Error)
}

func TestJoinShort(t *testing.T) {
	assert.Equal(t, "a, b", joinShort([]string{"a", "b"}, 5))
	assert.Equal(t, "a, b, … (3 more)", joinShort([]string{"a", "b", "c", "d", "e"}, 2))
}

func TestSelect(t *testing.T) {
	c := &v1alpha1.TFRCluster{ObjectMeta: metav1.ObjectMeta{Name: "main"}}
	other := &v1alpha1.TFRCluster{ObjectMeta: metav1.ObjectMeta{Name: "other"}}
	a := tenant("a")
	a.Labels = map[string]string{"tier": "gold"}
	b := tenant("b")
	b.Namespace = "team-b"
	b.Spec.ClusterRef = "other"
	sa := &v1alpha1.TFRServer{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"}, Spec: v1alpha1.TFRServerSpec{TenantRef: "a"}}
	sb := &v1alpha1.TFRServer{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-b"}, Spec: v1alpha1.TFRServerSpec{TenantRef: "b"}}
	all := []v1alpha1.Object{c, other, a, b, sa, sb}
	names := func(sel Selector) []string {
		got, err := sel.Select(all)
		require.NoError(t, err)
		var out []string
		for _, o := range got {
			out = append(out, string(o.KindName())+" "+o.GetNamespace()+"/"+o.GetName())
		}
		return out
	}
	assert.Len(t, names(Selector{}), 6)
	assert.Equal(t, []string{"TFRTenant team/a", "TFRTenant team-b/b"}, names(Selector{Kinds: []v1alpha1.Kind{v1alpha1.KindTFRTenant}}))
	assert.Equal(t, []string{"TFRTenant team/a", "TFRServer team/web"}, names(Selector{Namespace: "team"}))
	assert.Equal(t, []string{"TFRTenant team/a"}, names(Selector{Labels: "tier=gold"}))
	assert.Equal(t, []string{"TFRCluster /main", "TFRTenant team/a", "TFRServer team/web"}, names(Selector{Cluster: "main"}))
	assert.Equal(t, []string{"TFRServer team-b/web"}, names(Selector{Cluster: "other", Kinds: []v1alpha1.Kind{v1alpha1.KindTFRServer}}))
	_, err := Selector{Labels: "a in ("}.Select(all)
	require.Error(t, err)

	for in, want := range map[string]v1alpha1.Kind{"TFRTenant": v1alpha1.KindTFRTenant, "tenants": v1alpha1.KindTFRTenant, "server": v1alpha1.KindTFRServer, "tfrclusters": v1alpha1.KindTFRCluster} {
		k, err := ParseKind(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, k)
	}
	_, err = ParseKind("pod")
	require.Error(t, err)
}
