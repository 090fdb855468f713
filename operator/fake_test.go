package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// newEngine is the fake engine the harness runs the real runner on: every stack holds three
// resources and outputs with a secret (a tenant stack's complete enough for its members),
// and StackVersion tells its changes.
func newEngine() *enginetest.Engine {
	eng := enginetest.New()
	eng.Resources = 3
	eng.NewOutputs = func(stack string) program.Outputs {
		outs := program.Outputs{
			"host":     program.NewOutput(stack+".svc", false),
			"port":     program.NewOutput(5432.0, false),
			"password": program.NewOutput(enginetest.Secret, true),
		}
		if strings.HasPrefix(stack, stackname.LevelTenant+".") {
			outs = enginetest.TenantOutputs(outs)
		}
		return outs
	}
	return eng
}

// put makes a ready stack as another door would.
func (h *harness) put(stack string, by engine.ManagedBy, tags map[string]string, outs program.Outputs) {
	h.eng.Put(stack, enginetest.Stack{Tags: enginetest.Tags(by, tags), Outputs: outs, Ready: true})
}

// decisions are those of the last up that had any.
func (h *harness) decisions() map[string]engine.Decision {
	var d map[string]engine.Decision
	for _, c := range h.eng.Log() {
		if c.Op == engine.OpUp && len(c.Request.Decisions) > 0 {
			d = c.Request.Decisions
		}
	}
	return d
}

// unversioned hides the fake's StackVersion, as an engine that cannot tell a stack's version:
// only runner.Engine's methods are promoted.
type unversioned struct{ runner.Engine }

// fakeParents reads parent readiness from the fake engine; the programs never run, so the
// parents' contents do not matter.
type fakeParents struct{ eng *enginetest.Engine }

func (p fakeParents) ready(stack string) error {
	if st, ok := p.eng.Stack(stack); !ok || !st.Ready {
		return &kinds.ParentError{Stack: stack, Reason: "its stack does not exist yet"}
	}
	return nil
}

func (p fakeParents) Cluster(_ context.Context, stack string) (stacks.TenantCluster, error) {
	return stacks.TenantCluster{RabbitMQOperatorReady: true}, p.ready(stack)
}

func (p fakeParents) Tenant(_ context.Context, stack string) (stacks.TenantOutputs, error) {
	return stacks.TenantOutputs{}, p.ready(stack)
}

// harness is the core over a fake client, the real runner and a fake engine, with a clock
// the test moves.
type harness struct {
	t      *testing.T
	c      client.Client
	eng    *enginetest.Engine
	jobs   *jobs
	opts   Options
	recs   map[string]*reconciler
	events *events.FakeRecorder
	clock  time.Time
	mu     sync.Mutex
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	scheme, err := Scheme()
	require.NoError(t, err)
	b := fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&v1alpha1.TFRCluster{}, &v1alpha1.TFRTenant{}, &v1alpha1.TFRServer{}).
		WithObjects(objs...)
	for _, ix := range fieldIndexes {
		b = b.WithIndex(ix.obj, ix.field, ix.fn)
	}
	h := &harness{t: t, c: b.Build(), eng: newEngine(), jobs: newJobs(), recs: map[string]*reconciler{},
		events: events.NewFakeRecorder(1000), clock: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	h.jobs.now = h.now
	t.Cleanup(func() { h.jobs.stop(); h.jobs.wg.Wait() })
	h.opts = Options{Engine: h.eng, Run: runner.Options{Parents: fakeParents{h.eng}}}
	h.opts.defaults()
	rn := runner.New(h.eng, runOptions(h.c, h.opts.Run))
	pc := newParentCache(digestTTL(h.opts.ResyncPeriod))
	for _, k := range []*kind{clusterKind(), tenantKind(), serverKind()} {
		r := newReconciler(k, h.c, rn, h.jobs, pc, h.opts)
		r.events, r.now = h.events, h.now
		h.recs[string(k.name())] = r
	}
	return h
}

// useEngine makes the reconcilers run on eng (the fake, wrapped) instead of the fake itself.
func (h *harness) useEngine(eng runner.Engine) {
	rn := runner.New(eng, runOptions(h.c, h.opts.Run))
	for _, r := range h.recs {
		r.runner = rn
	}
}

func (h *harness) now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.clock
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clock = h.clock.Add(d)
}

func kindOf(obj client.Object) string { return string(obj.(v1alpha1.Object).KindName()) }

// reconcile runs one Reconcile of obj.
func (h *harness) reconcile(obj client.Object) ctrl.Result {
	h.t.Helper()
	res, err := h.recs[kindOf(obj)].Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	require.NoError(h.t, err)
	return res
}

// settle reconciles obj until it has no job running, waiting for each job to end (the
// controller would be woken by the job's channel), and returns the last result.
func (h *harness) settle(obj client.Object) ctrl.Result {
	h.t.Helper()
	res := h.reconcile(obj)
	for range 20 {
		t, err := kinds.TargetOf(obj.(v1alpha1.Object))
		require.NoError(h.t, err)
		j := h.jobs.get(t.Stack)
		if j == nil {
			return res
		}
		select {
		case <-j.done:
		case <-time.After(10 * time.Second):
			h.t.Fatalf("job %s of %s did not end", j.kind, t.Stack)
		}
		res = h.reconcile(obj)
	}
	h.t.Fatal("the object never settled")
	return res
}

// get re-reads obj.
func (h *harness) get(obj client.Object) {
	h.t.Helper()
	require.NoError(h.t, h.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
}

// drainEvents returns the events recorded so far.
func (h *harness) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// requireNoSecret fails when the object (status included) or an event shows a secret value.
func (h *harness) requireNoSecret(obj client.Object, evs []string, secrets ...string) {
	h.t.Helper()
	h.get(obj)
	b, err := json.Marshal(obj)
	require.NoError(h.t, err)
	for _, s := range append(secrets, enginetest.Secret) {
		status := string(b[strings.Index(string(b), `"status"`):])
		require.NotContains(h.t, status, s, "a secret value in status")
		for _, e := range evs {
			require.NotContains(h.t, e, s, "a secret value in an event")
		}
	}
}

func cond(obj v1alpha1.Object, typ string) *metav1.Condition {
	for i, c := range obj.GetStackStatus().Conditions {
		if c.Type == typ {
			return &obj.GetStackStatus().Conditions[i]
		}
	}
	return nil
}

func newCluster(name string) *v1alpha1.TFRCluster {
	return &v1alpha1.TFRCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1, UID: uid(name)},
		Spec: v1alpha1.TFRClusterSpec{Domain: "tfrs.example.com", Approval: auto, Personal: v1alpha1.PersonalSpec{Approval: auto}}}
}

func newTenant(ns, name, cluster string) *v1alpha1.TFRTenant {
	return &v1alpha1.TFRTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, UID: uid(ns + name)},
		Spec: v1alpha1.TFRTenantSpec{ClusterRef: cluster, Type: v1alpha1.TenantEnterprise, Approval: auto}}
}

func newServer(ns, name, tenant string) *v1alpha1.TFRServer {
	return &v1alpha1.TFRServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, UID: uid(ns + name)},
		Spec: v1alpha1.TFRServerSpec{TenantRef: tenant, RobotID: "r-" + name, RobotType: "chat", Image: "ghcr.io/tfrs-io/tfrobot:1.0.0", Approval: auto}}
}

// auto keeps the core tests on the behaviour they test: every change applies as it comes (the
// fake engine saves no plans; the approval gate has tests of its own).
var auto = v1alpha1.ApprovalSpec{Mode: v1alpha1.ApprovalAuto}

func uid(s string) types.UID { return types.UID(fmt.Sprintf("uid-%s", s)) }

var errBoom = errors.New("boom")
