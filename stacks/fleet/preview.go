// Package fleet runs one question over many stacks: what would this build's programs change
// across the fleet (Preview)? Each object is proven unchanged from its recorded inputs when it
// can be (runner.Unchanged: no Pulumi process), and previewed for real otherwise, a bounded
// number at once; the answer is one Report, per stack and grouped by change, for a terminal,
// a pull-request comment (Markdown) or a program (JSON).
package fleet

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Runner is what a fleet preview needs of *runner.Runner.
type Runner interface {
	Unchanged(ctx context.Context, obj v1alpha1.Object) (bool, error)
	Preview(ctx context.Context, obj v1alpha1.Object, op runner.Op) (*runner.Outcome, error)
}

var _ Runner = (*runner.Runner)(nil)

// Options of a fleet preview.
type Options struct {
	// Parallel bounds the objects looked at at once (default 4); the engine's own limit on
	// Pulumi processes applies within it.
	Parallel int
	// Full previews every object for real: no proof from recorded inputs.
	Full bool
	// Done, when set, is called after each object (from several goroutines, one at a time).
	Done func(e Entry, done, total int)
	// Check, when set, runs first for each object: an error makes the object an error entry
	// without anything read or previewed (a door's own refusals, such as its source policy).
	Check func(ctx context.Context, obj v1alpha1.Object) error
}

// Status is what a fleet preview found for one object.
type Status string

// The statuses, from the most to the least severe change; Unchanged, Suspended and Error are
// not changes.
const (
	StatusReplace   Status = "replace"
	StatusDelete    Status = "delete"
	StatusUpdate    Status = "update"
	StatusCreate    Status = "create"
	StatusUnchanged Status = "unchanged"
	StatusSuspended Status = "suspended"
	StatusError     Status = "error"
)

// Entry is one object's part of a fleet preview.
type Entry struct {
	Target kinds.Target `json:"target"`
	Status Status       `json:"status"`
	// Proven: reported unchanged from its recorded inputs, without running Pulumi.
	Proven bool `json:"proven,omitempty"`
	// DataLoss: a change replaces or deletes stateful data.
	DataLoss bool `json:"dataLoss,omitempty"`
	// Report is the object's preview (nil when proven, suspended or refused before it ran).
	Report *diff.Report `json:"report,omitempty"`
	// Error is why it could not be previewed (Status error) or why it was skipped.
	Error string `json:"error,omitempty"`
	// Seconds is how long the object took.
	Seconds float64 `json:"seconds"`
}

// Preview looks at every object with r and returns the report, entries in the order of objs.
// An object that fails is an entry with its error: the others are still worth reviewing.
func Preview(ctx context.Context, r Runner, objs []v1alpha1.Object, opts Options) *Report {
	start := time.Now()
	n := opts.Parallel
	if n <= 0 {
		n = 4
	}
	ctx = runner.WithReadMemo(ctx) // each parent stack is read once for the whole report
	entries := make([]Entry, len(objs))
	var (
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, n)
	for i, obj := range objs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
				entries[i] = one(ctx, r, obj, opts)
			case <-ctx.Done():
				entries[i] = failed(obj, time.Now(), ctx.Err())
			}
			if opts.Done != nil {
				mu.Lock()
				done++
				opts.Done(entries[i], done, len(objs))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return newReport(entries, time.Since(start))
}

// one looks at one object: suspended, proven unchanged, or previewed.
func one(ctx context.Context, r Runner, obj v1alpha1.Object, opts Options) Entry {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return failed(obj, start, err)
	}
	if opts.Check != nil {
		if err := opts.Check(ctx, obj); err != nil {
			return failed(obj, start, err)
		}
	}
	t, err := kinds.TargetOf(obj)
	if err != nil {
		return failed(obj, start, err)
	}
	if err := runner.CheckSuspended(obj); err != nil {
		return Entry{Target: t, Status: StatusSuspended, Error: err.Error(), Seconds: since(start)}
	}
	if !opts.Full {
		ok, err := r.Unchanged(ctx, obj)
		if err != nil {
			return failed(obj, start, err)
		}
		if ok {
			return Entry{Target: t, Status: StatusUnchanged, Proven: true, Seconds: since(start)}
		}
	}
	out, err := r.Preview(ctx, obj, runner.Op{})
	rep := diff.FromOutcome(out)
	rep.Target, rep.Operation = t, engine.OpPreview
	e := Entry{Target: t, Report: rep, Status: statusOf(rep), DataLoss: rep.HasDataLoss(), Seconds: since(start)}
	if err != nil {
		rep.Error = err.Error()
		e.Status, e.Error = StatusError, err.Error()
	}
	return e
}

func failed(obj v1alpha1.Object, start time.Time, err error) Entry {
	t, terr := kinds.TargetOf(obj)
	if terr != nil {
		err = errors.Join(err, terr)
		t = kinds.Target{Kind: obj.KindName(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	}
	return Entry{Target: t, Status: StatusError, Error: err.Error(), Seconds: since(start)}
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }

// statusOf is the most severe change of a report.
func statusOf(rep *diff.Report) Status {
	st := StatusUnchanged
	for _, c := range rep.Changes {
		if s := stepStatus(c.Op); severity(s) < severity(st) {
			st = s
		}
	}
	return st
}

func stepStatus(op engine.StepOp) Status {
	switch op {
	case engine.StepReplace:
		return StatusReplace
	case engine.StepDelete:
		return StatusDelete
	case engine.StepCreate:
		return StatusCreate
	default:
		return StatusUpdate
	}
}

// severity orders statuses, the most severe change first.
func severity(s Status) int {
	for i, x := range []Status{StatusReplace, StatusDelete, StatusUpdate, StatusCreate, StatusUnchanged} {
		if s == x {
			return i
		}
	}
	return len(s) + 100
}

// Changed reports whether the status is a change.
func (s Status) Changed() bool { return severity(s) < severity(StatusUnchanged) }
