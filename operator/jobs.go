package operator

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// jobKind is the engine work a job does.
type jobKind string

const (
	jobUp      jobKind = "up"
	jobDestroy jobKind = "destroy"
	jobDrift   jobKind = "drift"
)

// job is one engine operation running (or finished and not yet collected) for one object.
// Reconcile never waits for it: it starts the job, returns, and collects the result on a later
// reconcile (woken by the job's completion event).
type job struct {
	kind jobKind
	uid  types.UID // the object's; a recreated object of the same name never collects it
	gen  int64     // the generation the job runs
	why  string
	// What the job ran against, written to status when it succeeds.
	request, parentDigest string
	decision              string // the pending decision applied, if any
	// The approval gate (approval.go): gated runs a preview with saved plans first; approved
	// is the pending plan set applied.
	gated    bool
	approved string
	mode     v1alpha1.ApprovalMode // the approval mode the gate applies (facts.Approval)
	sink     engine.Sink           // the job's progress reporter
	started  time.Time
	cancel   context.CancelFunc
	done     chan struct{}

	// Set by the goroutine before done is closed.
	finished time.Time
	outcome  *runner.Outcome
	drift    *driftReport
	proposal *v1alpha1.PendingPlan // the plan set that now waits for approval
	err      error
}

func (j *job) isDone() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// jobs is the operation table: at most one job per stack, keyed by the object's own stack
// name. It also counts consecutive failures per stack for the backoff. Jobs run on a context of
// their own, canceled when the manager stops (Start returns after they wound down), so a
// job outlives the reconcile that started it but never the process.
type jobs struct {
	now    func() time.Time
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	byKey  map[string]*job
	failed map[string]int
}

func newJobs() *jobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &jobs{now: time.Now, ctx: ctx, stop: cancel, byKey: map[string]*job{}, failed: map[string]int{}}
}

// Start implements manager.Runnable: it blocks until the manager stops, then cancels the jobs
// and waits for them. A canceled up leaves the stack for the engine's crash recovery; the next
// leader runs it again because status.observedGeneration did not advance.
func (t *jobs) Start(ctx context.Context) error {
	<-ctx.Done()
	t.stop()
	t.wg.Wait()
	return nil
}

// NeedLeaderElection: only the leader runs stack operations.
func (t *jobs) NeedLeaderElection() bool { return true }

func (t *jobs) get(key string) *job {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byKey[key]
}

// start runs fn in a goroutine as key's job and calls wake when it is done. The caller has
// checked that key has no job.
func (t *jobs) start(key string, j *job, fn func(ctx context.Context, j *job), wake func()) {
	ctx, cancel := context.WithCancel(t.ctx)
	j.cancel, j.done, j.started = cancel, make(chan struct{}), t.now()
	t.mu.Lock()
	t.byKey[key] = j
	t.mu.Unlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer cancel()
		fn(ctx, j)
		j.finished = t.now()
		close(j.done)
		wake()
	}()
}

// take removes key's finished job.
func (t *jobs) take(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byKey, key)
}

// failures returns the consecutive failures of key.
func (t *jobs) failures(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed[key]
}

// recordResult counts a failure or resets the count after a success.
func (t *jobs) recordResult(key string, failed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if failed {
		t.failed[key]++
	} else {
		delete(t.failed, key)
	}
}

// running counts jobs not finished yet (tests).
func (t *jobs) running() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, j := range t.byKey {
		if !j.isDone() {
			n++
		}
	}
	return n
}
