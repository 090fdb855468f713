package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// fake is the runner over a fake engine: the engine half (Status, Tags, Outputs, List and the
// stacks behind them) is package enginetest's, the runner half here. Up makes a stack ready,
// and every call, the runner's ("Up tenant.ns.x") and the engine's ("status tenant.ns.x"),
// is logged in one log so a test can assert that a bad request started nothing.
type fake struct {
	*enginetest.Engine

	mu         sync.Mutex
	upErr      error
	previewErr error
	destroyErr error
	dependents []string
	// personalMode, when set, is the approval mode of personal tenants (their cluster's).
	personalMode v1alpha1.ApprovalMode
	// gate, when set, holds Up and Destroy until it opens or their context ends.
	gate *enginetest.Gate
	// upOutputs are the outputs Up gives the stack.
	upOutputs program.Outputs
	// previewSteps are the steps Preview reports.
	previewSteps []engine.Step

	// The saved-plan store (engine.StorePlan …) by stack and id, the plans each Up applied
	// (nil: a plain up), and planRefuse: Pulumi refusing a step of a plan (ErrPlanMismatch).
	plans      map[string]map[string]*engine.Plan
	upPlans    []map[string]*engine.Plan
	planRefuse bool
	planSeq    int
	// previewNothing makes Preview cover no stack (a personal tenant before its shared stack).
	previewNothing bool
}

func newFake() *fake { return &fake{Engine: enginetest.New()} }

// record logs a runner call ("Up", "Preview", "Destroy", "Dependents") of stack.
func (f *fake) record(call, stack string) {
	f.Record(enginetest.Call{Op: engine.OpKind(call), Stack: stack})
}

func (f *fake) count(prefix string) int {
	n := 0
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// addStack puts a stack in the backend as another door made it.
func (f *fake) addStack(name string, by engine.ManagedBy, ready bool, tags map[string]string) {
	f.Put(name, enginetest.Stack{Tags: enginetest.Tags(by, tags), Ready: ready,
		Last: &engine.HistoryEntry{Kind: "update", Result: "succeeded", Started: time.Now()}})
}

func (f *fake) wait(ctx context.Context, stack string) error {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate == nil {
		return nil
	}
	if err := gate.Wait(ctx, stack); err != nil {
		return errors.Join(&engine.OpError{Op: engine.OpUp, Stack: stack, Kind: engine.ErrCanceled}, err)
	}
	return nil
}

func (f *fake) Up(ctx context.Context, obj v1alpha1.Object, op runner.Op) (*runner.Outcome, error) {
	t, err := kinds.TargetOf(obj)
	if err != nil {
		return nil, err
	}
	f.record("Up", t.Stack)
	f.mu.Lock()
	f.upPlans = append(f.upPlans, op.Plans)
	refuse := f.planRefuse
	f.mu.Unlock()
	if op.Plans != nil {
		// What the runner checks before anything runs: a plan for this spec, on every stack.
		_, prepared, err := kinds.Prepare(obj)
		if err != nil {
			return nil, err
		}
		digest, err := runner.SpecDigest(prepared)
		if err != nil {
			return nil, err
		}
		p := op.Plans[t.Stack]
		if p == nil || p.Meta[runner.PlanMetaSpec] != digest {
			return nil, &runner.PlanMismatchError{Stack: t.Stack, Reason: "the spec changed since the plan was saved"}
		}
		if refuse {
			return &runner.Outcome{Target: t}, &engine.OpError{Op: engine.OpUp, Stack: t.Stack, Kind: engine.ErrPlanMismatch, Detail: "resource violates plan"}
		}
	}
	if op.Sink != nil {
		op.Sink(engine.Event{Time: time.Now(), Stack: t.Stack, Operation: engine.OpUp, Kind: engine.EventStart, Message: "up " + t.Stack})
	}
	if err := f.wait(ctx, t.Stack); err != nil {
		return &runner.Outcome{Target: t}, err
	}
	step := engine.Step{URN: "urn:pulumi:" + t.Stack + "::tfrs::kubernetes:core/v1:ConfigMap::cm", Type: "kubernetes:core/v1:ConfigMap", Op: engine.StepCreate, Done: true}
	if op.Sink != nil {
		op.Sink(engine.Event{Time: time.Now(), Stack: t.Stack, Operation: engine.OpUp, Kind: engine.EventStepDone, URN: step.URN, Type: step.Type, Op: step.Op})
	}
	f.mu.Lock()
	upErr, outs := f.upErr, f.upOutputs
	f.mu.Unlock()
	res := &engine.Result{Stack: t.Stack, Operation: engine.OpUp, Changes: engine.Changes{engine.StepCreate: 1}, Steps: []engine.Step{step}}
	if upErr == nil {
		tags := map[string]string{}
		if t.Parent != "" {
			tags[engine.TagParent] = t.Parent
		}
		f.Put(t.Stack, enginetest.Stack{Tags: enginetest.Tags(op.Door, tags), Outputs: outs, Ready: true,
			Last: &engine.HistoryEntry{Kind: "update", Result: "succeeded", Started: time.Now(), Message: op.Message}})
		res.Outputs = outs
	} else {
		res.Steps[0].Failed = true
	}
	return &runner.Outcome{Target: t, Stacks: []runner.StackResult{{Stack: t.Stack, Result: res}}}, upErr
}

func (f *fake) Preview(ctx context.Context, obj v1alpha1.Object, op runner.Op) (*runner.Outcome, error) {
	t, err := kinds.TargetOf(obj)
	if err != nil {
		return nil, err
	}
	f.record("Preview", t.Stack)
	f.mu.Lock()
	steps, perr, nothing := f.previewSteps, f.previewErr, f.previewNothing
	f.mu.Unlock()
	if nothing {
		return &runner.Outcome{Target: t}, nil
	}
	if perr != nil {
		return &runner.Outcome{Target: t}, perr
	}
	res := &engine.Result{Stack: t.Stack, Operation: engine.OpPreview, Changes: engine.Changes{}, Steps: steps}
	for _, s := range steps {
		res.Changes[s.Op]++
	}
	if op.SavePlans {
		_, prepared, err := kinds.Prepare(obj)
		if err != nil {
			return nil, err
		}
		digest, err := runner.SpecDigest(prepared)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		f.planSeq++
		seq := f.planSeq
		f.mu.Unlock()
		res.Plan = &engine.Plan{Format: 1, ID: fmt.Sprintf("%016x", 0xabc0000+seq), Stack: t.Stack,
			Meta: map[string]string{runner.PlanMetaSpec: digest}, Pulumi: json.RawMessage(`{}`)}
		// As the engine: a plan preview of a missing stack creates its empty, untagged record.
		if _, ok := f.Stack(t.Stack); !ok {
			f.Put(t.Stack, enginetest.Stack{})
		}
	}
	return &runner.Outcome{Target: t, Stacks: []runner.StackResult{{Stack: t.Stack, Result: res}}}, nil
}

func (f *fake) Destroy(ctx context.Context, obj v1alpha1.Object, _ runner.Op) (*runner.Outcome, error) {
	t, err := kinds.TargetOf(obj)
	if err != nil {
		return nil, err
	}
	f.record("Destroy", t.Stack)
	if err := f.wait(ctx, t.Stack); err != nil {
		return &runner.Outcome{Target: t}, err
	}
	f.mu.Lock()
	derr := f.destroyErr
	f.mu.Unlock()
	if derr != nil {
		return &runner.Outcome{Target: t}, derr
	}
	f.Drop(t.Stack)
	res := &engine.Result{Stack: t.Stack, Operation: engine.OpDestroy, Changes: engine.Changes{engine.StepDelete: 1}}
	return &runner.Outcome{Target: t, Stacks: []runner.StackResult{{Stack: t.Stack, Result: res}}}, nil
}

func (f *fake) StorePlan(_ context.Context, p *engine.Plan) error {
	f.record("StorePlan", p.Stack)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.plans == nil {
		f.plans = map[string]map[string]*engine.Plan{}
	}
	if f.plans[p.Stack] == nil {
		f.plans[p.Stack] = map[string]*engine.Plan{}
	}
	f.plans[p.Stack][p.ID] = p
	return nil
}

func (f *fake) LoadPlan(_ context.Context, stack, id string) (*engine.Plan, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.plans[stack][id]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%w: %s has no plan %s", engine.ErrPlanNotFound, stack, id)
}

func (f *fake) DiscardPlans(_ context.Context, stack string, keep ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.plans[stack] {
		if !slices.Contains(keep, id) {
			delete(f.plans[stack], id)
		}
	}
	return nil
}

// savedPlans are the ids of the plans stored for stack.
func (f *fake) savedPlans(stack string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id := range f.plans[stack] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Approval: the object's own mode, or, when the test set one, personalMode for a personal
// tenant (the runner's reads its cluster stack's spec.personal).
func (f *fake) Approval(_ context.Context, obj v1alpha1.Object) (v1alpha1.ApprovalMode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x, ok := obj.(*v1alpha1.TFRTenant); ok && x.Spec.Type == v1alpha1.TenantPersonal && f.personalMode != "" {
		return f.personalMode, nil
	}
	return obj.Approval(), nil
}

func (f *fake) Dependents(_ context.Context, t kinds.Target) ([]string, error) {
	f.record("Dependents", t.Stack)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dependents, nil
}

const (
	adminToken  = "admin-token-0123456789abcdef"
	readerToken = "reader-token-0123456789abcdef"
)

// harness is a server over a fake, with helpers to call it.
type harness struct {
	t     *testing.T
	f     *fake
	s     *Server
	specs *MemorySpecStore
	logs  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newHarness(t *testing.T, opts ...func(*Config)) *harness {
	t.Helper()
	return newHarnessOn(t, newStackedFake(), opts...)
}

// newStackedFake is the fake every harness starts from.
func newStackedFake() *fake {
	f := newFake()
	// The cluster "dev" and the tenant tfrs-system/acme exist and are ready (made by the CLI).
	f.addStack("cluster.dev", engine.ManagedByCLI, true, nil)
	f.addStack("tenant.tfrs-system.acme", engine.ManagedByCLI, true, map[string]string{engine.TagParent: "cluster.dev"})
	f.upOutputs = program.Outputs{
		"postgresHost":     program.NewOutput("acme-pg-rw", false),
		"postgresPort":     program.NewOutput(5432.0, false),
		"postgresPassword": program.NewOutput("s3cr3t-pg-password-value", true),
	}
	return f
}

// newHarnessOn serves f: several harnesses on one fake are replicas of one deployment.
func newHarnessOn(t *testing.T, f *fake, opts ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, f: f, specs: NewMemorySpecStore(), logs: &syncBuffer{}}
	cfg := Config{
		Runner: f, Engine: f, Specs: h.specs,
		Tokens: []Token{{Name: "root", Role: RoleAdmin, Value: adminToken}, {Name: "viewer", Role: RoleReadOnly, Value: readerToken}},
		Logger: slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		// Short enough for tests; the defaults are minutes.
		HeartbeatInterval: 50 * time.Millisecond, CancelWait: 5 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.s = New(cfg)
	t.Cleanup(func() {
		f.mu.Lock()
		if f.gate != nil {
			f.gate.Open()
		}
		f.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.s.Shutdown(ctx)
	})
	return h
}

// req is one request; body may be a string, []byte or a value to encode as JSON.
type req struct {
	method, path string
	body         any
	token        string
	contentType  string
	header       map[string]string
}

func (h *harness) do(r req) *httptest.ResponseRecorder {
	h.t.Helper()
	return serve(h, newRawRequest(h.t, r, nil))
}

func serve(h *harness, hr *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.s.Handler().ServeHTTP(w, hr)
	return w
}

// newRawRequest builds the request of r; rd, when set, is the body as is.
func newRawRequest(t *testing.T, r req, rd io.Reader) *http.Request {
	t.Helper()
	switch b := r.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(enc)
	}
	hr := httptest.NewRequest(r.method, r.path, rd)
	if rd != nil {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		if ct != "-" {
			hr.Header.Set("Content-Type", ct)
		}
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	return hr
}

// admin calls with the admin token.
func (h *harness) admin(method, path string, body any) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.do(req{method: method, path: path, body: body, token: adminToken})
}

func decodeJSON[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v), "body: %s", w.Body.String())
	return v
}

func problemOfResponse(t *testing.T, w *httptest.ResponseRecorder) Problem {
	t.Helper()
	require.Equal(t, ProblemContentType, w.Header().Get("Content-Type"), "body: %s", w.Body.String())
	p := decodeJSON[Problem](t, w)
	require.Equal(t, w.Code, p.Status)
	return p
}

// waitOperation polls an operation until it ends.
func (h *harness) waitOperation(id string) OperationView {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		w := h.admin(http.MethodGet, operationPath(id), nil)
		require.Equal(h.t, http.StatusOK, w.Code, w.Body.String())
		v := decodeJSON[OperationView](h.t, w)
		if v.State.terminal() {
			return v
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("operation %s did not end", id)
	return OperationView{}
}

// hold makes Up and Destroy wait until release is called.
func (h *harness) hold() (release func()) {
	gate := enginetest.NewGate()
	h.f.mu.Lock()
	h.f.gate = gate
	h.f.mu.Unlock()
	return gate.Open
}

func tenantBody(name string) map[string]any {
	return map[string]any{
		"apiVersion": "tfrs.io/v1alpha1", "kind": "TFRTenant",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"clusterRef": "dev", "type": "enterprise", "namespace": name},
	}
}

func serverBody(name string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"robotId": name, "robotType": "chat", "image": "tfrobot/server:1.0.0",
			"secretData": map[string]string{"OPENAI_API_KEY": "sk-live-do-not-leak-0123456789"},
			"confzData":  "[redis]\ndb = 2\n"},
	}
}

const tenantsPath = "/v1/namespaces/tfrs-system/tenants"

// Unchanged proves nothing: every object of a fleet preview is previewed.
func (f *fake) Unchanged(context.Context, v1alpha1.Object) (bool, error) { return false, nil }
