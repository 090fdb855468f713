package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The registry of operations: one operation per stack in this server, their start, end and
// retention, the look-up of one by id or by stack (here, else in the backend's
// OperationStore), and shutdown. Apart from the operation itself (operation.go) and from the
// HTTP side (launch.go, operations.go, sse.go): it knows nothing of requests.

// registry tracks operations and enforces one operation per stack in this server. The check
// is synchronous at request time (reserve), so of two concurrent requests for one stack
// exactly one gets an operation and the other a 409, before anything runs; the engine's own
// per-stack slot and the backend lock still guard against other processes.
type registry struct {
	mu      sync.Mutex
	ops     map[string]*Operation
	ended   []*Operation // finished, oldest first, for pruning
	holders map[string]*Operation
	latest  map[string]*Operation // stack → its most recent started operation
	closed  bool

	base context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	ret        retention
	endedBytes int64 // event bytes of the ended operations kept
	log        *slog.Logger
	m          *metrics
	store      *OperationStore // nil: operations live in this process only
}

// retention bounds the operation store: the finished operations kept (count, age, event
// bytes of all of them) and each operation's event buffer (events, bytes).
type retention struct {
	count      int
	ttl        time.Duration
	bytes      int64
	events     int
	eventBytes int64
}

func newRegistry(ret retention, store *OperationStore, log *slog.Logger, m *metrics) *registry {
	// Operations outlive the requests that start them, so their context is rooted here, at
	// the server, and ended only by cancel or shutdown.
	base, stop := context.WithCancel(context.Background())
	return &registry{
		ops: map[string]*Operation{}, holders: map[string]*Operation{}, latest: map[string]*Operation{},
		base: base, stop: stop, ret: ret, log: log, m: m, store: store,
	}
}

// reserve creates a pending operation holding the stacks, or fails with a *BusyError naming
// the operation that holds one of them (ErrShuttingDown once the server is closing). The
// caller either starts it or releases it.
func (r *registry) reserve(kind OperationKind, res ResourceRef, stacks []string, principal, requestID string) (*Operation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reserveLocked(kind, res, stacks, principal, requestID)
}

func (r *registry) reserveLocked(kind OperationKind, res ResourceRef, stacks []string, principal, requestID string) (*Operation, error) {
	if r.closed {
		return nil, ErrShuttingDown
	}
	for _, st := range stacks {
		if h := r.holders[st]; h != nil {
			return nil, &BusyError{Stack: st, Operation: h.id}
		}
	}
	op := &Operation{
		id: newOperationID(), kind: kind, resource: res, stacks: stacks, created: time.Now(),
		principal: principal, requestID: requestID, state: StatePending, nextSeq: 1, firstSeq: 1,
		changed: make(chan struct{}), maxEvents: r.ret.events, maxEventBytes: r.ret.eventBytes,
	}
	for _, st := range stacks {
		r.holders[st] = op
	}
	r.ops[op.id] = op
	r.wg.Add(1) // under mu and before closed is set: shutdown waits for it
	r.pruneLocked(time.Now())
	return op, nil
}

// release drops a reserved operation that never started.
func (r *registry) release(op *Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if op.state != StatePending {
		return
	}
	r.unholdLocked(op)
	delete(r.ops, op.id)
	r.wg.Done()
}

func (r *registry) unholdLocked(op *Operation) {
	for _, st := range op.stacks {
		if r.holders[st] == op {
			delete(r.holders, st)
		}
	}
}

// work is an operation's body: the runner call and whatever follows a success.
type work func(ctx context.Context, sink engine.Sink) (*runner.Outcome, error)

// start runs a reserved operation in the background.
func (r *registry) start(op *Operation, fn work) {
	ctx, cancel := context.WithCancel(r.base)
	r.mu.Lock()
	for _, st := range op.stacks {
		r.latest[st] = op
	}
	r.mu.Unlock()
	op.mu.Lock()
	op.state, op.started, op.cancel = StateRunning, time.Now(), cancel
	if op.cancelRequested {
		cancel() // canceled while its request was still checking the stack
	}
	op.mu.Unlock()
	op.publish("state", map[string]OperationState{"state": StateRunning})
	r.persistStart(op)
	r.m.operationStarted(op.kind)
	r.log.Info("operation started", "operation", op.id, "kind", op.kind, "resource", op.resource.Href,
		"principal", op.principal, "requestId", op.requestID)
	go func() {
		defer r.wg.Done()
		defer cancel()
		out, err := fn(ctx, op.sink)
		r.finish(op, out, err)
	}()
}

// finish records the outcome, frees the stacks and wakes subscribers.
func (r *registry) finish(op *Operation, out *runner.Outcome, err error) {
	res := &OperationResult{}
	if out != nil {
		res.Changes = diff.FromOutcome(out)
		if own := out.Own(); own != nil && len(own.Outputs) > 0 {
			res.Outputs = redactOutputs(own.Outputs)
		}
	}
	state := StateSucceeded
	var p *Problem
	op.mu.Lock()
	cancelRequested, shutdown := op.cancelRequested, op.shutdown
	res.Fleet = op.fleet
	op.mu.Unlock()
	var wait *awaitingApproval
	if errors.As(err, &wait) {
		state, err = StateAwaitingApproval, nil
		op.mu.Lock()
		op.plan = wait.plan
		op.mu.Unlock()
	}
	if err != nil {
		state = StateFailed
		pr, internal := problemOf(err)
		pr.Instance = operationPath(op.id)
		if internal {
			pr.ErrorID = newErrorID()
			r.log.Error("operation failed internally", "operation", op.id, "errorId", pr.ErrorID, "err", err)
		}
		if errors.Is(err, engine.ErrCanceled) || errors.Is(err, context.Canceled) {
			state = StateCanceled
			pr = newProblem(http.StatusConflict, "canceled", "Canceled", "the operation was canceled on request; the next operation on the stack recovers anything it left pending")
			if shutdown && !cancelRequested {
				pr.Detail = "the server shut down before the operation ended; the next operation on the stack recovers anything it left pending"
			}
			pr.Instance = operationPath(op.id)
		}
		for _, st := range out.Steps() {
			if st.Failed {
				pr.FailedResources = append(pr.FailedResources, st.URN)
			}
		}
		p = &pr
	}
	// The stacks are free before anyone can see the end: a client that waits for this
	// operation and then starts the next one on the stack must not be told it is busy.
	r.mu.Lock()
	r.unholdLocked(op)
	r.mu.Unlock()
	now := time.Now()
	op.mu.Lock()
	op.state, op.ended, op.result, op.problem = state, now, res, p
	dur := now.Sub(op.started)
	op.mu.Unlock()
	op.publish("state", map[string]OperationState{"state": state})
	r.persistEnd(op)

	r.mu.Lock()
	r.ended = append(r.ended, op)
	r.endedBytes += op.size()
	r.pruneLocked(now)
	r.mu.Unlock()
	r.m.operationEnded(op.kind, state, dur)
	r.log.Info("operation ended", "operation", op.id, "kind", op.kind, "resource", op.resource.Href,
		"state", state, "duration", dur.Round(time.Millisecond))
}

// pruneLocked forgets the oldest finished operations while they are past the retention
// count, age or bytes.
func (r *registry) pruneLocked(now time.Time) {
	for len(r.ended) > 0 {
		op := r.ended[0]
		op.mu.Lock()
		old := now.Sub(op.ended) > r.ret.ttl
		op.mu.Unlock()
		if len(r.ended) <= r.ret.count && !old && r.endedBytes <= r.ret.bytes {
			return
		}
		r.endedBytes -= op.size()
		r.ended[0] = nil
		r.ended = r.ended[1:]
		delete(r.ops, op.id)
		r.forgetStored(op.id)
		for _, st := range op.stacks {
			if r.latest[st] == op {
				delete(r.latest, st)
			}
		}
	}
}

// get finds an operation: in this process, else (with a store) in the backend.
func (r *registry) get(ctx context.Context, id string) (opHandle, error) {
	if !reOperationID.MatchString(id) {
		return nil, &NotFoundError{What: "operation"}
	}
	r.mu.Lock()
	op, ok := r.ops[id]
	r.mu.Unlock()
	if ok {
		return op, nil
	}
	if r.store != nil {
		rec, err := r.store.get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("operation store: %w", err)
		}
		if rec != nil {
			return &remoteOp{s: r.store, id: id, rec: *rec}, nil
		}
	}
	return nil, &NotFoundError{What: "operation " + id}
}

// latestFor returns the most recent operation on a stack still remembered, or nil: the one
// holding it here, else the backend's latest (any replica's), else this replica's latest.
func (r *registry) latestFor(ctx context.Context, stack string) opHandle {
	r.mu.Lock()
	held, latest := r.holders[stack], r.latest[stack]
	r.mu.Unlock()
	if held != nil {
		return held
	}
	if r.store != nil {
		if rec, err := r.store.latest(ctx, stack); err == nil && rec != nil {
			r.mu.Lock()
			op, ok := r.ops[rec.View.ID]
			r.mu.Unlock()
			if ok {
				return op
			}
			return &remoteOp{s: r.store, id: rec.View.ID, rec: *rec} // the record just read
		}
	}
	if latest != nil {
		return latest
	}
	return nil
}

// busyElsewhere: another replica runs an operation on one of the stacks (its record says so
// and is alive). Checked before reserve, so the 409 names that operation at request time; the
// engine's backend lock still decides when two replicas ask at the same moment.
func (r *registry) busyElsewhere(ctx context.Context, stacks []string) error {
	if r.store == nil {
		return nil
	}
	for _, st := range stacks {
		rec, err := r.store.latest(ctx, st)
		if err != nil {
			return fmt.Errorf("operation store: %w", err)
		}
		if rec != nil && !r.store.mine(rec) && !r.store.viewOf(rec).State.terminal() {
			return &BusyError{Stack: st, Operation: rec.View.ID}
		}
	}
	return nil
}

// close refuses new operations; running ones go on.
func (r *registry) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// wait blocks until every operation ended or ctx is done; it reports whether all ended.
func (r *registry) wait(ctx context.Context) bool {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// cancelAll cancels every running operation (server shutdown past its grace period).
func (r *registry) cancelAll() {
	r.mu.Lock()
	for _, op := range r.ops {
		op.mu.Lock()
		if !op.state.terminal() {
			op.shutdown = true
		}
		op.mu.Unlock()
	}
	r.mu.Unlock()
	r.stop()
}

func (r *registry) running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, op := range r.ops {
		op.mu.Lock()
		if !op.state.terminal() {
			n++
		}
		op.mu.Unlock()
	}
	return n
}
