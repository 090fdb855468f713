package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"regexp"
	"sync"
	"time"

	"github.com/tfrs-io/tfrs-operator/stacks/fleet"
)

// One operation: its kinds and states, what it holds while it runs, its id and its cancel,
// and opHandle, an operation as a request sees it (this replica's or another's). Its event
// buffer is in events.go, the set of operations in registry.go, its JSON in views.go and its
// handlers in operations.go and sse.go.

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
	fleet           *fleet.Report // a fleet preview's report, set by its work
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

var reOperationID = regexp.MustCompile(`^[0-9a-f]{24}$`)

func newOperationID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// setPlan names the plan the operation applies or waits on, and tells the event stream.
func (o *Operation) setPlan(p *OperationPlan) {
	o.mu.Lock()
	o.plan = p
	o.mu.Unlock()
	o.publish("plan", p)
}

// setFleet keeps a fleet preview's report for the operation's result.
func (o *Operation) setFleet(r *fleet.Report) {
	o.mu.Lock()
	o.fleet = r
	o.mu.Unlock()
}

// currentState is the operation's state now.
func (o *Operation) currentState() OperationState {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.state
}

// owner is the principal that started the operation.
func (o *Operation) owner() string { return o.principal }

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

// opHandle is an operation as a request sees it: one this replica runs (*Operation), or one
// another replica runs, followed through the backend (*remoteOp).
type opHandle interface {
	view() OperationView
	// since returns the events after seq `after`, how many before them are gone, whether the
	// operation has ended, and a channel that fires when it is worth asking again.
	since(after int64) (evs []sseEvent, missed int64, done bool, changed <-chan struct{})
	requestCancel() error
	// owner is the principal that started it.
	owner() string
}
