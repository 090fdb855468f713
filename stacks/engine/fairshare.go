package engine

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
)

// Fair share of the engine.
//
// Every operation that runs a CLI process takes one of Options.MaxConcurrent global slots.
// Without more, whoever asks first holds them: one team's operations that never finish once
// held every slot while an admin's short operation waited. So each operation also belongs to
// a share (ShareOf: the tenant's namespace, or the platform's own share), and a share may run
// at most Options.MaxPerNamespace operations at once. With the default (MaxConcurrent-1) no
// one share can hold every slot: an operation of any other share always finds one.
//
// A share at its cap waits in the queue without holding a global slot, so it blocks no one;
// when a slot frees, the waiting operation whose share runs the fewest operations goes first
// (ties in arrival order). That is nextAdmit, a pure decision; fairQueue is the waiting
// machinery around it. How long an operation may hold its slot is its deadline (deadline.go).
//
// All three doors (operator, HTTP API, CLI) run through one Engine per process, so this is
// the one place the limit is kept; processes do not share it (each has its own slots).

// ShareAdmin is the platform's share: cluster stacks, the shared stacks of personal job
// types and any stack outside the tenant levels. It is not "admin" because "admin" is a valid
// namespace name: a tenant namespace called admin must not share (or take) the platform's
// slots. A leading underscore cannot start a DNS-1123 label, so no namespace is ever "_admin".
const ShareAdmin = "_admin"

// ShareOf is the share an operation on stack counts against: for tenant.<ns>.<name> and
// server.<ns>.<name> stacks the namespace <ns> (a tenant's servers count with the tenant);
// for everything else ShareAdmin. It is the one place that decides.
//
// The namespace is read from the name itself, which is safe: every door builds stack names
// with package stackname from the object's namespace, and a shortened name (stackname.shorten)
// keeps "<level>.<ns>." whole, because that prefix is at most 71 characters of the 89 kept.
// A personal tenant's stacks count with its job type's namespace (the stack name does not
// carry the robot's owner); the job type's shared stack (stackname.PersonalShared) is
// provisioned by the platform for every user of the job type, so it is the platform's.
func ShareOf(stack string) string {
	level, rest, _ := strings.Cut(stack, ".")
	if level != stackname.LevelTenant && level != stackname.LevelServer {
		return ShareAdmin
	}
	ns, _, ok := strings.Cut(rest, ".")
	if !ok || ns == "" {
		return ShareAdmin // not a valid tenant name: Validate refuses it before it runs
	}
	if jobType, personal := strings.CutPrefix(ns, stackname.PersonalNamespacePrefix); personal && level == stackname.LevelTenant {
		if shared, err := stackname.PersonalShared(jobType); err == nil && shared == stack {
			return ShareAdmin
		}
	}
	return ns
}

// DefaultMaxPerNamespace is the per-share cap for a global limit of parallel operations:
// one less than the global limit (at least 1). The choice over parallel/2: both keep one
// share from holding every slot when parallel >= 2, which is the property asked for; one
// less keeps a lone busy tenant's throughput (3 of the default 4, not 2) and still leaves a
// slot that only another share can take. What it cannot do is keep two misbehaving shares
// from filling the rest: their operations end at their deadlines (deadline.go). With
// parallel 1 there is nothing to share and the cap is 1.
func DefaultMaxPerNamespace(parallel int) int { return max(1, parallel-1) }

// nextAdmit decides which waiting operation takes a free slot: the index into waiting (the
// shares of the waiting operations, in arrival order), or -1 when none may start. None may
// start when every global slot is taken; a share already running perShare operations is
// passed over (it never blocks the others); among the rest the share running the fewest
// operations goes first, and the earliest arrival among equals.
func nextAdmit(waiting []string, running map[string]int, total, global, perShare int) int {
	if total >= global {
		return -1
	}
	best := -1
	for i, share := range waiting {
		n := running[share]
		if n >= perShare {
			continue
		}
		if best < 0 || n < running[waiting[best]] {
			best = i
		}
	}
	return best
}

// fairQueue is the waiting machinery around nextAdmit: it counts running operations per share
// and admits waiting ones as slots free.
type fairQueue struct {
	global, perShare int

	mu      sync.Mutex
	total   int
	running map[string]int
	waiting []*ticket // arrival order
}

// ticket is one waiting operation; ready is closed when it is admitted.
type ticket struct {
	share string
	ready chan struct{}
}

func newFairQueue(global, perShare int) *fairQueue {
	return &fairQueue{global: global, perShare: perShare, running: map[string]int{}}
}

// errQueueClosed: the engine closed while the operation waited.
var errQueueClosed = errors.New("engine closed")

// wait queues an operation of share and returns once it may run; release gives its slot back
// (once, however often it is called). ctx ending or closed closing first returns ctx.Err() or
// errQueueClosed, and nothing is held.
func (q *fairQueue) wait(ctx context.Context, closed <-chan struct{}, share string) (release func(), err error) {
	t := &ticket{share: share, ready: make(chan struct{})}
	q.mu.Lock()
	q.waiting = append(q.waiting, t)
	q.dispatchLocked()
	q.mu.Unlock()
	select {
	case <-t.ready:
		var once sync.Once
		return func() { once.Do(func() { q.release(share) }) }, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed:
		err = errQueueClosed
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := indexOf(q.waiting, t); i >= 0 {
		q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
		return nil, err
	}
	// Admitted in the meantime: hand the slot on.
	q.releaseLocked(share)
	return nil, err
}

func (q *fairQueue) release(share string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.releaseLocked(share)
}

func (q *fairQueue) releaseLocked(share string) {
	q.total--
	if q.running[share]--; q.running[share] <= 0 {
		delete(q.running, share)
	}
	q.dispatchLocked()
}

// dispatchLocked admits waiting operations while nextAdmit names one.
func (q *fairQueue) dispatchLocked() {
	for {
		shares := make([]string, len(q.waiting))
		for i, t := range q.waiting {
			shares[i] = t.share
		}
		i := nextAdmit(shares, q.running, q.total, q.global, q.perShare)
		if i < 0 {
			return
		}
		t := q.waiting[i]
		q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
		q.total++
		q.running[t.share]++
		close(t.ready)
	}
}

// shareLoad is what one share runs and waits for, for the metrics.
type shareLoad struct{ running, waiting int }

// snapshot returns the load of every share that runs or waits for something.
func (q *fairQueue) snapshot() map[string]shareLoad {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[string]shareLoad{}
	for s, n := range q.running {
		l := out[s]
		l.running = n
		out[s] = l
	}
	for _, t := range q.waiting {
		l := out[t.share]
		l.waiting++
		out[t.share] = l
	}
	return out
}

func indexOf(ts []*ticket, t *ticket) int {
	for i, x := range ts {
		if x == t {
			return i
		}
	}
	return -1
}
