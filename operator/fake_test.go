package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
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

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
	"github.com/tfrs-io/tfrs-operator/stacks/stackname"
)

// fakeEngine stands in for *engine.Engine under the real runner: stacks are records in memory,
// operations succeed unless an error is queued for them, and every call is logged.
type fakeEngine struct {
	mu      sync.Mutex
	stacks  map[string]*fakeStack
	calls   []string
	errs    map[string][]error // "up cluster.main" → errors returned by the next calls
	gate    chan struct{}      // when set, Up waits for it to close (or for cancellation)
	started chan string        // when set, receives "up <stack>" as an Up begins
	preview []engine.Step
	// decisions are those of the last Up that had any.
	decisions map[string]engine.Decision
	// seq numbers the stacks' changes: a stack's version is the number of its last one.
	seq int
}

type fakeStack struct {
	tags    map[string]string
	outputs program.Outputs
	ready   bool
	version int
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{stacks: map[string]*fakeStack{}, errs: map[string][]error{}}
}

// secretOutput is the value of every stack's secret output; it must never show anywhere.
const secretOutput = "s3cret-output-value"

func (f *fakeEngine) begin(op engine.OpKind, stack string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := string(op) + " " + stack
	f.calls = append(f.calls, call)
	if q := f.errs[call]; len(q) > 0 {
		f.errs[call] = q[1:]
		return q[0]
	}
	return nil
}

func (f *fakeEngine) fail(call string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[call] = append(f.errs[call], errs...)
}

// ops lists the calls that run an operation (not the reads).
func (f *fakeEngine) ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if !strings.HasPrefix(c, string(engine.OpStatus)) && !strings.HasPrefix(c, string(engine.OpOutputs)) && !strings.HasPrefix(c, string(engine.OpList)) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeEngine) Up(ctx context.Context, req engine.Request) (*engine.Result, error) {
	if f.started != nil {
		f.started <- "up " + req.Stack
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			f.begin(engine.OpUp, req.Stack)
			return nil, &engine.OpError{Op: engine.OpUp, Stack: req.Stack, Kind: engine.ErrCanceled}
		}
	}
	if err := f.begin(engine.OpUp, req.Stack); err != nil {
		return &engine.Result{Stack: req.Stack, Operation: engine.OpUp}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(req.Decisions) > 0 {
		f.decisions = req.Decisions
	}
	st := f.stacks[req.Stack]
	created := st == nil
	if created {
		st = &fakeStack{tags: map[string]string{}}
		f.stacks[req.Stack] = st
	}
	if st.tags[engine.TagManagedBy] == "" {
		st.tags[engine.TagManagedBy] = string(req.ManagedBy)
	}
	for k, v := range req.Tags {
		st.tags[k] = v
	}
	st.ready = true
	f.seq++
	st.version = f.seq
	if st.outputs == nil {
		st.outputs = program.Outputs{
			"host":     program.NewOutput(req.Stack+".svc", false),
			"port":     program.NewOutput(5432.0, false),
			"password": program.NewOutput(secretOutput, true),
		}
		if strings.HasPrefix(req.Stack, stackname.LevelTenant+".") {
			st.outputs = tenantStackOutputs(st.outputs)
		}
	}
	ch := engine.Changes{engine.StepSame: 3}
	if created {
		ch = engine.Changes{engine.StepCreate: 3}
	}
	return &engine.Result{Stack: req.Stack, Operation: engine.OpUp, Changes: ch, Outputs: st.outputs}, nil
}

func (f *fakeEngine) Preview(_ context.Context, req engine.Request) (*engine.Result, error) {
	if err := f.begin(engine.OpPreview, req.Stack); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &engine.Result{Stack: req.Stack, Operation: engine.OpPreview, Steps: f.preview}, nil
}

func (f *fakeEngine) Refresh(_ context.Context, req engine.Request) (*engine.Result, error) {
	if err := f.begin(engine.OpRefresh, req.Stack); err != nil {
		return nil, err
	}
	return &engine.Result{Stack: req.Stack, Operation: engine.OpRefresh}, nil
}

func (f *fakeEngine) Destroy(_ context.Context, req engine.Request) (*engine.Result, error) {
	if err := f.begin(engine.OpDestroy, req.Stack); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stacks[req.Stack] == nil {
		return nil, &engine.OpError{Op: engine.OpDestroy, Stack: req.Stack, Kind: engine.ErrNotFound}
	}
	f.stacks[req.Stack].ready = false
	f.seq++
	f.stacks[req.Stack].version = f.seq
	return &engine.Result{Stack: req.Stack, Operation: engine.OpDestroy, Changes: engine.Changes{engine.StepDelete: 3}}, nil
}

func (f *fakeEngine) Remove(_ context.Context, stack string, _ bool) error {
	if err := f.begin(engine.OpRemove, stack); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.stacks, stack)
	return nil
}

func (f *fakeEngine) Outputs(_ context.Context, stack string) (program.Outputs, error) {
	f.begin(engine.OpOutputs, stack)
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.stacks[stack]
	if st == nil {
		return nil, &engine.OpError{Op: engine.OpOutputs, Stack: stack, Kind: engine.ErrNotFound}
	}
	return st.outputs, nil
}

// Tags is Status's tags (the runner's door check reads only those).
func (f *fakeEngine) Tags(ctx context.Context, stack string) (map[string]string, error) {
	st, err := f.Status(ctx, stack)
	if err != nil {
		return nil, err
	}
	return st.Tags, nil
}

func (f *fakeEngine) Status(_ context.Context, stack string) (*engine.StackStatus, error) {
	f.begin(engine.OpStatus, stack)
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.stacks[stack]
	if st == nil {
		return nil, &engine.OpError{Op: engine.OpStatus, Stack: stack, Kind: engine.ErrNotFound}
	}
	tags := map[string]string{}
	for k, v := range st.tags {
		tags[k] = v
	}
	return &engine.StackStatus{Stack: stack, ManagedBy: engine.ManagedBy(tags[engine.TagManagedBy]), Tags: tags, Ready: st.ready}, nil
}

func (f *fakeEngine) List(_ context.Context, prefix string) ([]engine.StackSummary, error) {
	f.begin(engine.OpList, prefix)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.StackSummary
	for name := range f.stacks {
		if strings.HasPrefix(name, prefix) {
			out = append(out, engine.StackSummary{Name: name})
		}
	}
	return out, nil
}

// put makes a stack as another door would.
func (f *fakeEngine) put(stack string, by engine.ManagedBy, tags map[string]string, outs program.Outputs) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := map[string]string{engine.TagManagedBy: string(by)}
	for k, v := range tags {
		t[k] = v
	}
	f.seq++
	f.stacks[stack] = &fakeStack{tags: t, outputs: outs, ready: true, version: f.seq}
}

// StackVersion is the real engine's cheap change token (a file:// backend's): it changes
// whenever the stack does, none for a missing stack, and is not a logged call (it runs no CLI
// process).
func (f *fakeEngine) StackVersion(_ context.Context, stack string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st := f.stacks[stack]; st != nil {
		return fmt.Sprint(st.version), true
	}
	return "", false
}

// count counts the calls logged as call, e.g. "outputs cluster.main".
func (f *fakeEngine) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == call {
			n++
		}
	}
	return n
}

// unversioned hides the fake's StackVersion, as an engine that cannot tell a stack's version:
// only runner.Engine's methods are promoted.
type unversioned struct{ runner.Engine }

// reOutputErr matches stacks.TenantOutputsFromStack's complaints about one output.
var reOutputErr = regexp.MustCompile(`output "([^"]+)" (is missing|is not a secret|.*want an integer|.*want a bool|.*want a string)`)

// tenantStackOutputs completes outs until stacks.TenantOutputsFromStack accepts them (a
// personal tenant's member stack reads its shared stack's outputs), whatever fields the
// tenant outputs gain later.
func tenantStackOutputs(outs program.Outputs) program.Outputs {
	for range 500 {
		_, err := stacks.TenantOutputsFromStack(outs)
		if err == nil {
			return outs
		}
		m := reOutputErr.FindStringSubmatch(err.Error())
		if m == nil {
			panic(err)
		}
		switch k := m[1]; {
		case m[2] == "is not a secret":
			outs[k] = program.NewOutput(secretOutput, true)
		case strings.HasSuffix(m[2], "integer"):
			outs[k] = program.NewOutput(1.0, false)
		case strings.HasSuffix(m[2], "bool"):
			outs[k] = program.NewOutput(true, false)
		default:
			outs[k] = program.NewOutput("v-"+k, false)
		}
	}
	panic("tenant outputs never complete")
}

// fakeParents reads parent readiness from the fake engine; the programs never run, so the
// parents' contents do not matter.
type fakeParents struct{ eng *fakeEngine }

func (p fakeParents) ready(stack string) error {
	p.eng.mu.Lock()
	defer p.eng.mu.Unlock()
	if st := p.eng.stacks[stack]; st == nil || !st.ready {
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
	eng    *fakeEngine
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
	h := &harness{t: t, c: b.Build(), eng: newFakeEngine(), jobs: newJobs(), recs: map[string]*reconciler{},
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
	for _, s := range append(secrets, secretOutput) {
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
		Spec: v1alpha1.TFRClusterSpec{Domain: "tfrs.example.com"}}
}

func newTenant(ns, name, cluster string) *v1alpha1.TFRTenant {
	return &v1alpha1.TFRTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, UID: uid(ns + name)},
		Spec: v1alpha1.TFRTenantSpec{ClusterRef: cluster, Type: v1alpha1.TenantEnterprise}}
}

func newServer(ns, name, tenant string) *v1alpha1.TFRServer {
	return &v1alpha1.TFRServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, UID: uid(ns + name)},
		Spec: v1alpha1.TFRServerSpec{TenantRef: tenant, RobotID: "r-" + name, RobotType: "chat", Image: "ghcr.io/tfrs-io/tfrobot:1.0.0"}}
}

func uid(s string) types.UID { return types.UID(fmt.Sprintf("uid-%s", s)) }

var errBoom = errors.New("boom")
