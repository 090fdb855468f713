package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// OperationKind is what an operation does to its resource.
type OperationKind string

// Operation kinds.
const (
	OpCreate OperationKind = "create"
	OpUpdate OperationKind = "update"
	OpDelete OperationKind = "delete"
	// OpApply applies a saved plan (POST …/apply).
	OpApply OperationKind = "apply"
)

// OperationState is where an operation is. Pending lasts only while the request that made
// the operation checks the stack; the operation then runs or disappears. AwaitingApproval
// ends a create or update whose saved plan waits for approval (spec.approval): the operation
// is over and holds no stack; the apply of its plan is an operation of its own.
type OperationState string

// Operation states.
const (
	StatePending   OperationState = "pending"
	StateRunning   OperationState = "running"
	StateSucceeded OperationState = "succeeded"
	StateFailed    OperationState = "failed"
	StateCanceled  OperationState = "canceled"
	// StateAwaitingApproval: the operation saved a plan instead of applying it (Plan names it).
	StateAwaitingApproval OperationState = "awaiting-approval"
)

func (s OperationState) terminal() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCanceled || s == StateAwaitingApproval
}

// ErrOperationEnded refuses to cancel an operation that already ended.
var ErrOperationEnded = errors.New("operation already ended")

// ResourceRef names an operation's resource.
type ResourceRef struct {
	Kind      v1alpha1.Kind `json:"kind"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name"`
	Href      string        `json:"href"`
}

// OperationResult is what a finished operation did. On failure it holds what was done before
// the failure.
type OperationResult struct {
	// Changes is the structured diff of what was applied.
	Changes *diff.Report `json:"changes,omitempty"`
	// Outputs are the resource's stack outputs after an up; secret values are RedactedValue.
	Outputs map[string]any `json:"outputs,omitempty"`
}

// OperationLinks are the operation's URLs.
type OperationLinks struct {
	Self     string `json:"self"`
	Events   string `json:"events"`
	Cancel   string `json:"cancel"`
	Resource string `json:"resource"`
}

// OperationView is the JSON form of an operation.
type OperationView struct {
	ID              string           `json:"id"`
	Kind            OperationKind    `json:"kind"`
	State           OperationState   `json:"state"`
	Resource        ResourceRef      `json:"resource"`
	Stacks          []string         `json:"stacks"`
	CreatedAt       time.Time        `json:"createdAt"`
	StartedAt       time.Time        `json:"startedAt,omitzero"`
	EndedAt         time.Time        `json:"endedAt,omitzero"`
	CancelRequested bool             `json:"cancelRequested,omitempty"`
	Events          int64            `json:"events"`
	Result          *OperationResult `json:"result,omitempty"`
	Error           *Problem         `json:"error,omitempty"`
	// Plan is the saved plan the operation waits on (awaiting-approval) or applied.
	Plan  *OperationPlan `json:"plan,omitempty"`
	Links OperationLinks `json:"links"`
}

type sseEvent struct {
	seq  int64
	name string
	data []byte
}

// Operation is one asynchronous stack operation. Its context is the registry's, never a
// request's: a client that disconnects leaves it running; only an explicit cancel or the
// server's shutdown (after its grace period) ends it early.
type Operation struct {
	id        string
	kind      OperationKind
	resource  ResourceRef
	stacks    []string // stacks held: the target's own, and a personal tenant's shared one
	created   time.Time
	principal string
	requestID string

	mu              sync.Mutex
	state           OperationState
	started, ended  time.Time
	cancelRequested bool
	shutdown        bool
	cancel          context.CancelFunc
	result          *OperationResult
	problem         *Problem
	plan            *OperationPlan
	events          []sseEvent
	eventBytes      int64 // data bytes of events
	maxEvents       int   // bounds of events: older ones are dropped, and a subscriber that
	maxEventBytes   int64 // asks for them is told how many it missed
	firstSeq        int64 // seq of events[0]
	nextSeq         int64
	changed         chan struct{} // closed and replaced on every new event and on the end

	// With an OperationStore: the last seq written to the backend and the first one kept
	// there, and the persister's stop and done signals (see registry.persist).
	persisted, persistedFirst int64
	persistStop, persistDone  chan struct{}
}

func operationPath(id string) string { return "/v1/operations/" + id }

// view snapshots the operation.
func (o *Operation) view() OperationView {
	o.mu.Lock()
	defer o.mu.Unlock()
	self := operationPath(o.id)
	return OperationView{
		ID: o.id, Kind: o.kind, State: o.state, Resource: o.resource, Stacks: append([]string(nil), o.stacks...),
		CreatedAt: o.created, StartedAt: o.started, EndedAt: o.ended, CancelRequested: o.cancelRequested,
		Events: o.nextSeq - 1, Result: o.result, Error: o.problem, Plan: o.plan,
		Links: OperationLinks{Self: self, Events: self + "/events", Cancel: self + "/cancel", Resource: o.resource.Href},
	}
}

// setPlan names the plan the operation applies or waits on, and tells the event stream.
func (o *Operation) setPlan(p *OperationPlan) {
	o.mu.Lock()
	o.plan = p
	o.mu.Unlock()
	o.publish("plan", p)
}

// sink receives the engine's progress events. It must not block (the engine's event stream
// waits for it): it only appends to the buffer and wakes subscribers.
func (o *Operation) sink(ev engine.Event) { o.publish("progress", ev) }

func (o *Operation) publish(name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return // engine events and state records always encode
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, sseEvent{seq: o.nextSeq, name: name, data: data})
	o.eventBytes += eventSize(data)
	o.nextSeq++
	drop := 0
	for len(o.events)-drop > 1 && (len(o.events)-drop > o.maxEvents || o.eventBytes > o.maxEventBytes) {
		o.eventBytes -= eventSize(o.events[drop].data)
		drop++
	}
	if drop > 0 {
		o.events = o.events[drop:]
		o.firstSeq += int64(drop)
		if cap(o.events) > 2*len(o.events)+64 {
			o.events = append([]sseEvent(nil), o.events...) // let the dropped ones go
		}
	}
	close(o.changed)
	o.changed = make(chan struct{})
}

// eventSize is what an event counts against the byte bounds: its data and a fixed overhead.
func eventSize(data []byte) int64 { return int64(len(data)) + 64 }

// size is the bytes the operation's events hold.
func (o *Operation) size() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.eventBytes
}

// since returns the events after seq `after`, how many were dropped before them, whether the
// operation has ended, and a channel closed on the next change.
func (o *Operation) since(after int64) (evs []sseEvent, missed int64, done bool, changed <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	start := after + 1 - o.firstSeq
	if start < 0 {
		missed, start = -start, 0
	}
	if start < int64(len(o.events)) {
		evs = append(evs, o.events[start:]...)
	}
	return evs, missed, o.state.terminal(), o.changed
}

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

var reOperationID = regexp.MustCompile(`^[0-9a-f]{24}$`)

func newOperationID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// reserve creates a pending operation holding the stacks, or fails with a *BusyError naming
// the operation that holds one of them (ErrShuttingDown once the server is closing). The
// caller either starts it or releases it.
func (r *registry) reserve(kind OperationKind, res ResourceRef, stacks []string, principal, requestID string) (*Operation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
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

// opHandle is an operation as a request sees it: one this replica runs (*Operation), or one
// another replica runs, followed through the backend (*remoteOp).
type opHandle interface {
	view() OperationView
	// since returns the events after seq `after`, how many before them are gone, whether the
	// operation has ended, and a channel that fires when it is worth asking again.
	since(after int64) (evs []sseEvent, missed int64, done bool, changed <-chan struct{})
	requestCancel() error
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

// cancel asks a running operation to stop. The engine then interrupts the Pulumi CLI
// gracefully; what it leaves pending is recovered by the next operation on the stack.
func (o *Operation) requestCancel() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.state.terminal() {
		return ErrOperationEnded
	}
	o.cancelRequested = true
	if o.cancel != nil {
		o.cancel()
	}
	return nil
}

// cancelWanted: a cancel was asked for already.
func (o *Operation) cancelWanted() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cancelRequested
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

// redactOutputs turns stack outputs into response values, secrets replaced.
func redactOutputs(outs program.Outputs) map[string]any {
	m := make(map[string]any, len(outs))
	for k, o := range outs {
		if o.Secret {
			m[k] = RedactedValue
			continue
		}
		m[k] = o.Value
	}
	return m
}

// accepted answers 202 with the operation and its URL.
func accepted(c echo.Context, op *Operation) error {
	c.Response().Header().Set(echo.HeaderLocation, operationPath(op.id))
	return c.JSON(http.StatusAccepted, op.view())
}

// getOperation: GET /v1/operations/{id}.
func (s *Server) getOperation(c echo.Context) error {
	op, err := s.ops.get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, op.view())
}

// cancelOperation: POST /v1/operations/{id}/cancel. Cancel is asynchronous: 202 with the
// operation, whose state turns canceled once the engine has stopped.
func (s *Server) cancelOperation(c echo.Context) error {
	op, err := s.ops.get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	if err := op.requestCancel(); err != nil {
		return err
	}
	s.log.Info("operation cancel requested", "operation", c.Param("id"), "principal", principalOf(c), "requestId", requestIDOf(c))
	return c.JSON(http.StatusAccepted, op.view())
}

// streamRetryAfter is the Retry-After of a stream refused over the per-token cap.
const streamRetryAfter = 5 * time.Second

// operationEvents: GET /v1/operations/{id}/events, Server-Sent Events (at most
// Config.MaxStreamsPerToken at once per token). It replays the
// operation's buffered events (after Last-Event-ID when the client reconnects), follows new
// ones, and ends with a `done` event holding the final operation. Leaving (a client
// disconnect, the server closing the stream at shutdown) never touches the operation.
func (s *Server) operationEvents(c echo.Context) error {
	op, err := s.ops.get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	release, ok := s.limits.openStream(principalOf(c))
	if !ok {
		return &RateLimitError{RetryAfter: streamRetryAfter, Kind: ErrTooManyStreams}
	}
	defer release()
	var after int64
	if v := c.Request().Header.Get("Last-Event-ID"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			after = n
		}
	}
	ctx := c.Request().Context()
	w := c.Response()
	rc := http.NewResponseController(w)
	// The stream outlives the server's read and write timeouts: lift them, and bound each
	// write instead, so a client that stops reading cannot hold the handler forever.
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // no proxy buffering (nginx)
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte("retry: 3000\n\n")) {
		return nil
	}
	heartbeat := time.NewTicker(s.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	for {
		evs, missed, done, changed := op.since(after)
		var buf []byte
		if missed > 0 {
			buf = fmt.Appendf(buf, "event: gap\ndata: {\"missed\":%d}\n\n", missed)
		}
		for _, ev := range evs {
			buf = fmt.Appendf(buf, "id: %d\nevent: %s\ndata: %s\n\n", ev.seq, ev.name, ev.data)
			after = ev.seq
		}
		if done {
			final, err := json.Marshal(op.view())
			if err != nil {
				return nil
			}
			buf = fmt.Appendf(buf, "event: done\ndata: %s\n\n", final)
			write(buf)
			return nil
		}
		if len(buf) > 0 && !write(buf) {
			return nil
		}
		select {
		case <-changed:
		case <-heartbeat.C:
			if !write([]byte(": keep-alive\n\n")) {
				return nil
			}
		case <-ctx.Done():
			return nil
		case <-s.closing:
			// Shutdown after the grace period: the client reconnects elsewhere with
			// Last-Event-ID, or reads the final state with GET.
			write([]byte("event: shutdown\ndata: {}\n\n"))
			return nil
		}
	}
}
