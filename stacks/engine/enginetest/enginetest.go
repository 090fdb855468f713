// Package enginetest is an in-memory stand-in for *engine.Engine, for the tests of the packages
// that drive it (the runner, the operator, the HTTP API and the CLI), in the way
// controller-runtime's client/fake stands in for a Kubernetes client.
//
// Stacks are records in memory. Programs never run: an up makes the stack ready and gives it
// outputs (NewOutputs, by default DefaultOutputs), a destroy makes it not ready, a remove
// deletes it. Every call is logged in order ("up cluster.main", "status tenant.ns.x",
// "list tenant."), with its request. Per-test hooks shape what the calls do: Hook fails calls,
// Fail queues errors for the next calls of one kind, Steps sets the steps an operation reports,
// Hold holds calls at a gate for concurrency tests. An Engine is safe for concurrent use; set
// its hook fields before the calls that read them start.
//
// The package does not import the runner (whose tests use it); the runner's tests assert that
// *Engine satisfies runner.Engine.
package enginetest

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// Stack is one stack's state.
type Stack struct {
	// Tags are the stack tags, engine.TagManagedBy included (see Tags).
	Tags map[string]string
	// Outputs are the stack outputs; nil until an up gives the stack some.
	Outputs program.Outputs
	// Ready: the last update or destroy was an update, and it succeeded.
	Ready bool
	// Last is the most recent operation, as Status reports it.
	Last *engine.HistoryEntry
}

// Call is one logged call.
type Call struct {
	Op engine.OpKind
	// Stack is the stack the call is about; a List's is its prefix.
	Stack string
	// Request is the request of an up, preview, refresh or destroy; nil for the other calls.
	Request *engine.Request
}

// String is how the log shows the call: "up cluster.main".
func (c Call) String() string { return string(c.Op) + " " + c.Stack }

// read reports whether the call only reads (Status, Tags, Outputs, List).
func (c Call) read() bool {
	return c.Op == engine.OpStatus || c.Op == engine.OpOutputs || c.Op == engine.OpList
}

// Engine is the fake engine. The zero value is not usable; call New.
type Engine struct {
	// Hook, when set, runs at the start of every call, once it is logged (and past the gate,
	// see Hold); an error it returns fails the call. It must not block unless the test means it
	// to, and may call the Engine.
	Hook func(ctx context.Context, c Call) error
	// Steps, when set, gives the steps an up, preview, refresh or destroy reports, failed or
	// not; nil reports none.
	Steps func(c Call) []engine.Step
	// NewOutputs gives the outputs an up leaves on a stack that has none; nil: DefaultOutputs.
	// It runs with the Engine locked and must not call it.
	NewOutputs func(stack string) program.Outputs
	// Resources is how many resources every stack holds: an up reports them created on a new
	// stack and unchanged on an existing one, a destroy reports them deleted. Zero means one.
	Resources int

	mu     sync.Mutex
	stacks map[string]*record
	log    []Call
	fails  map[string][]error
	gate   *Gate
	held   map[engine.OpKind]bool
	seq    int // numbers the stacks' changes: a stack's version is the number of its last one
}

type record struct {
	Stack
	version int
}

// New returns an Engine without stacks.
func New() *Engine {
	return &Engine{stacks: map[string]*record{}, fails: map[string][]error{}}
}

// begin logs c, waits at the gate when c is held, and returns the error the call fails with:
// a queued one (see Fail) or the hook's. canceled says the call's context ended at the gate.
func (e *Engine) begin(ctx context.Context, c Call) (canceled bool, err error) {
	e.mu.Lock()
	e.log = append(e.log, c)
	if q := e.fails[c.String()]; len(q) > 0 {
		e.fails[c.String()], err = q[1:], q[0]
	}
	gate := e.gate
	if !e.held[c.Op] {
		gate = nil
	}
	hook := e.Hook
	e.mu.Unlock()
	if gate != nil {
		if gate.Wait(ctx, c.String()) != nil {
			return true, &engine.OpError{Op: c.Op, Stack: c.Stack, Kind: engine.ErrCanceled}
		}
	}
	if hook != nil {
		if herr := hook(ctx, c); err == nil {
			err = herr
		}
	}
	return false, err
}

// operate runs an up, preview, refresh or destroy: a failed one returns its result (stack,
// operation, steps) with the error; a canceled one no result. apply changes the state, with
// the Engine locked.
func (e *Engine) operate(ctx context.Context, op engine.OpKind, req engine.Request, apply func(*engine.Result) error) (*engine.Result, error) {
	c := Call{Op: op, Stack: req.Stack, Request: &req}
	canceled, err := e.begin(ctx, c)
	if canceled {
		return nil, err
	}
	res := &engine.Result{Stack: req.Stack, Operation: op}
	if e.Steps != nil {
		res.Steps = append([]engine.Step(nil), e.Steps(c)...)
	}
	if err != nil {
		return res, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := apply(res); err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) resources() int {
	if e.Resources == 0 {
		return 1
	}
	return e.Resources
}

// changed numbers a change of st.
func (e *Engine) changed(st *record) {
	e.seq++
	st.version = e.seq
}

func succeeded(kind, message string) *engine.HistoryEntry {
	now := time.Now()
	return &engine.HistoryEntry{Kind: kind, Result: "succeeded", Started: now, Ended: now, Message: message}
}

// Up creates the stack when missing, records req.ManagedBy as its managed-by tag when it has
// none, calls req.Admit with the tags (its error is Up's), records req.Tags and
// req.AppliedTags, and makes it ready with outputs (see NewOutputs).
func (e *Engine) Up(ctx context.Context, req engine.Request) (*engine.Result, error) {
	return e.operate(ctx, engine.OpUp, req, func(res *engine.Result) error {
		st := e.stacks[req.Stack]
		created := st == nil
		if created {
			st = &record{Stack: Stack{Tags: map[string]string{}}}
			e.stacks[req.Stack] = st
		}
		if st.Tags[engine.TagManagedBy] == "" && req.ManagedBy != "" {
			st.Tags[engine.TagManagedBy] = string(req.ManagedBy)
		}
		// The owner is settled (the fake is locked): admit or refuse before anything else.
		if req.Admit != nil {
			if err := req.Admit(maps.Clone(st.Tags)); err != nil {
				return err
			}
		}
		maps.Copy(st.Tags, req.Tags)
		maps.Copy(st.Tags, req.AppliedTags) // the fake's up always succeeds
		st.Ready, st.Last = true, succeeded("update", req.Message)
		e.changed(st)
		if st.Outputs == nil {
			newOutputs := e.NewOutputs
			if newOutputs == nil {
				newOutputs = DefaultOutputs
			}
			st.Outputs = newOutputs(req.Stack)
		}
		res.Changes = engine.Changes{engine.StepSame: e.resources()}
		if created {
			res.Changes = engine.Changes{engine.StepCreate: e.resources()}
		}
		res.Outputs = maps.Clone(st.Outputs)
		return nil
	})
}

// Preview changes nothing.
func (e *Engine) Preview(ctx context.Context, req engine.Request) (*engine.Result, error) {
	return e.operate(ctx, engine.OpPreview, req, func(*engine.Result) error { return nil })
}

// Refresh changes nothing; a missing stack is engine.ErrNotFound.
func (e *Engine) Refresh(ctx context.Context, req engine.Request) (*engine.Result, error) {
	return e.operate(ctx, engine.OpRefresh, req, func(*engine.Result) error {
		_, err := e.find(engine.OpRefresh, req.Stack)
		return err
	})
}

// Destroy makes the stack not ready and drops its outputs; a missing stack is
// engine.ErrNotFound.
func (e *Engine) Destroy(ctx context.Context, req engine.Request) (*engine.Result, error) {
	return e.operate(ctx, engine.OpDestroy, req, func(res *engine.Result) error {
		st, err := e.find(engine.OpDestroy, req.Stack)
		if err != nil {
			return err
		}
		st.Ready, st.Outputs, st.Last = false, nil, succeeded("destroy", req.Message)
		e.changed(st)
		res.Changes = engine.Changes{engine.StepDelete: e.resources()}
		return nil
	})
}

// Remove deletes the stack (a missing one is no error).
func (e *Engine) Remove(ctx context.Context, stack string, _ bool) error {
	if _, err := e.begin(ctx, Call{Op: engine.OpRemove, Stack: stack}); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.stacks, stack)
	return nil
}

// find returns the stack's record, or an engine.ErrNotFound of op. The Engine is locked.
func (e *Engine) find(op engine.OpKind, stack string) (*record, error) {
	st := e.stacks[stack]
	if st == nil {
		return nil, &engine.OpError{Op: op, Stack: stack, Kind: engine.ErrNotFound}
	}
	return st, nil
}

// read logs a read of stack and returns a copy of its state.
func (e *Engine) read(ctx context.Context, op engine.OpKind, stack string) (Stack, error) {
	if _, err := e.begin(ctx, Call{Op: op, Stack: stack}); err != nil {
		return Stack{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st, err := e.find(op, stack)
	if err != nil {
		return Stack{}, err
	}
	return st.copy(), nil
}

func (s *Stack) copy() Stack {
	cp := *s
	cp.Tags, cp.Outputs = maps.Clone(s.Tags), maps.Clone(s.Outputs)
	if s.Last != nil {
		last := *s.Last
		cp.Last = &last
	}
	return cp
}

// Outputs returns the stack's outputs.
func (e *Engine) Outputs(ctx context.Context, stack string) (program.Outputs, error) {
	st, err := e.read(ctx, engine.OpOutputs, stack)
	return st.Outputs, err
}

// Status returns the stack's tags, managed-by, last operation and readiness.
func (e *Engine) Status(ctx context.Context, stack string) (*engine.StackStatus, error) {
	st, err := e.read(ctx, engine.OpStatus, stack)
	if err != nil {
		return nil, err
	}
	if st.Tags == nil {
		st.Tags = map[string]string{}
	}
	return &engine.StackStatus{Stack: stack, ManagedBy: engine.ManagedBy(st.Tags[engine.TagManagedBy]),
		Tags: st.Tags, Last: st.Last, Ready: st.Ready}, nil
}

// Tags is Status's tags (logged as a status call).
func (e *Engine) Tags(ctx context.Context, stack string) (map[string]string, error) {
	st, err := e.Status(ctx, stack)
	if err != nil {
		return nil, err
	}
	return st.Tags, nil
}

// List returns the stacks whose names start with prefix, by name.
func (e *Engine) List(ctx context.Context, prefix string) ([]engine.StackSummary, error) {
	if _, err := e.begin(ctx, Call{Op: engine.OpList, Stack: prefix}); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []engine.StackSummary
	for name := range e.stacks {
		if strings.HasPrefix(name, prefix) {
			out = append(out, engine.StackSummary{Name: name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// TaggedStacks returns, by name, the stacks whose names start with prefix and whose tag key
// equals value; it is logged as a list of prefix (the real one is one backend listing).
func (e *Engine) TaggedStacks(ctx context.Context, prefix, key, value string) ([]string, error) {
	if _, err := e.begin(ctx, Call{Op: engine.OpList, Stack: prefix}); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for name, st := range e.stacks {
		if v, ok := st.Tags[key]; ok && v == value && strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// StackVersion is the real engine's cheap change token: it changes whenever the stack does
// (an up, a destroy, a Put; not an Edit), there is none for a missing stack, and it is not a
// logged call (the real one runs no CLI process).
func (e *Engine) StackVersion(_ context.Context, stack string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.stacks[stack]; st != nil {
		return fmt.Sprint(st.version), true
	}
	return "", false
}

// Put makes or replaces a stack, as another door would (no call is logged); its version
// changes.
func (e *Engine) Put(name string, s Stack) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := &record{Stack: s.copy()}
	if st.Tags == nil {
		st.Tags = map[string]string{}
	}
	e.changed(st)
	e.stacks[name] = st
}

// Edit changes a stack in place, as a write the engine cannot see would: no call is logged
// and its version stays. It reports whether the stack exists. fn runs with the Engine locked
// and must not call it.
func (e *Engine) Edit(name string, fn func(*Stack)) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stacks[name]
	if st != nil {
		fn(&st.Stack)
	}
	return st != nil
}

// Drop deletes a stack, as another process would (no call is logged).
func (e *Engine) Drop(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.stacks, name)
}

// Stack returns a copy of a stack's state (no call is logged).
func (e *Engine) Stack(name string) (Stack, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stacks[name]
	if st == nil {
		return Stack{}, false
	}
	return st.copy(), true
}

// Fail makes the next len(errs) calls shown as call ("up cluster.main") fail, one error each,
// in order.
func (e *Engine) Fail(call string, errs ...error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fails[call] = append(e.fails[call], errs...)
}

// FailOn is a Hook that fails every call of ops on stack (on any stack when stack is "")
// with err.
func FailOn(err error, stack string, ops ...engine.OpKind) func(context.Context, Call) error {
	return func(_ context.Context, c Call) error {
		for _, op := range ops {
			if c.Op == op && (stack == "" || c.Stack == stack) {
				return err
			}
		}
		return nil
	}
}

// Hold makes the calls of ops wait, once logged, until the returned gate opens; a call whose
// context ends first fails with engine.ErrCanceled and changes nothing. It replaces the gate
// of an earlier Hold.
func (e *Engine) Hold(ops ...engine.OpKind) *Gate {
	g := NewGate()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gate, e.held = g, map[engine.OpKind]bool{}
	for _, op := range ops {
		e.held[op] = true
	}
	return g
}

// Record logs a call made around the Engine, e.g. by a runner-level fake built on it, so
// that one log holds every call in order. c.Op need not be an engine.OpKind ("Up").
func (e *Engine) Record(c Call) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, c)
}

// Log returns the logged calls, in order.
func (e *Engine) Log() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.log...)
}

// Calls returns the logged calls as strings ("up cluster.main"), in order.
func (e *Engine) Calls() []string {
	return e.calls(func(Call) bool { return true })
}

// Ops returns the logged calls but the reads (status, outputs, list): those that run an
// operation.
func (e *Engine) Ops() []string {
	return e.calls(func(c Call) bool { return !c.read() })
}

// CallsOf returns the logged calls of ops, in order.
func (e *Engine) CallsOf(ops ...engine.OpKind) []string {
	return e.calls(func(c Call) bool {
		for _, op := range ops {
			if c.Op == op {
				return true
			}
		}
		return false
	})
}

func (e *Engine) calls(keep func(Call) bool) []string {
	var out []string
	for _, c := range e.Log() {
		if keep(c) {
			out = append(out, c.String())
		}
	}
	return out
}

// Count counts the logged calls shown as call ("outputs cluster.main").
func (e *Engine) Count(call string) int {
	return len(e.calls(func(c Call) bool { return c.String() == call }))
}

// Request returns the request of the last call shown as call ("up tenant.ns.x"); the zero
// Request when there is none.
func (e *Engine) Request(call string) engine.Request {
	var req engine.Request
	for _, c := range e.Log() {
		if c.String() == call && c.Request != nil {
			req = *c.Request
		}
	}
	return req
}

// Reset forgets the logged calls.
func (e *Engine) Reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = nil
}
