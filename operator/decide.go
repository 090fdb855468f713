package operator

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/approval"
)

// action is what a reconcile does after looking at an object that has no operation running.
type action int

const (
	// actNone: the stack already matches the spec and nothing it depends on moved. No engine
	// operation runs; the object is looked at again after verdict.After.
	actNone action = iota
	// actUp starts an up.
	actUp
	// actDriftCheck starts a refresh followed by a preview.
	actDriftCheck
	// actBackoff: the last attempt failed; the next one waits until verdict.After has passed.
	actBackoff
	// actWaitParent: an up is due but a parent custom resource is not Ready yet.
	actWaitParent
	// actPlan: an up is due and spec.approval may hold it: preview with a saved plan, then
	// either wait for approval or apply exactly that plan (gate, approval.go).
	actPlan
	// actApply applies the approved pending plan.
	actApply
	// actAwait: a saved plan waits for approval; nothing runs.
	actAwait
	// actSuspended: spec.suspend is true; nothing runs, whatever else is due.
	actSuspended
)

func (a action) String() string {
	switch a {
	case actUp:
		return "up"
	case actDriftCheck:
		return "drift-check"
	case actBackoff:
		return "backoff"
	case actWaitParent:
		return "wait-for-parent"
	case actPlan:
		return "plan"
	case actApply:
		return "apply-approved-plan"
	case actAwait:
		return "await-approval"
	case actSuspended:
		return "suspended"
	default:
		return "none"
	}
}

// Why an up runs; recorded in the stack history message and the Progressing event.
const (
	whyFirst   = "first up"
	whySpec    = "spec changed"
	whyRetry   = "retry"
	whyRequest = "reconcile requested"
	whyParent  = "parent outputs changed"
	whyDrift   = "drift remediation"
	whyApprove = "plan approved"
)

// facts are everything a decision depends on, gathered by the core from the object, its
// parents' custom resources and the in-memory failure count. decide is a pure function of them.
type facts struct {
	Now        time.Time
	Generation int64
	Status     *v1alpha1.StackStatus
	// Request is the tfrs.io/reconcile-request annotation ("" when absent).
	Request string
	// ParentDigest combines the OutputsDigest of everything the object consumes; ParentKnown
	// is false when it could not be read this time (no decision is taken on it then).
	ParentDigest string
	ParentKnown  bool
	// ParentWaiting, when set, says which parent custom resource is not Ready.
	ParentWaiting string
	Drift         v1alpha1.DriftDetectionSpec
	// Failures counts the consecutive failed attempts of this object (in memory: a restart
	// starts over, which only means one early retry).
	Failures int
	// Approval is spec.approval.mode (defaulted); Approve the tfrs.io/approve annotation.
	Approval v1alpha1.ApprovalMode
	Approve  string
	// Suspended is spec.suspend.
	Suspended bool
}

// timing holds the intervals decisions use (see Options for their meaning).
type timing struct {
	Resync, ParentPoll, BackoffBase, BackoffMax time.Duration
}

// backoff is the wait before attempt n+1 after n consecutive failures: base·2^(n-1), capped.
func (t timing) backoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := t.BackoffBase
	for i := 1; i < n && d < t.BackoffMax; i++ {
		d *= 2
	}
	return min(d, t.BackoffMax)
}

// verdict is a decision: what to do, why, and when to look again.
type verdict struct {
	Action action
	Why    string
	After  time.Duration
	// Stale: status.pendingPlan no longer applies (the spec moved on, or a reconcile request
	// asks for a fresh plan); it is discarded before the action starts.
	Stale bool
	// Ignored is an approval that names no pending plan: it changes nothing but an Event.
	Ignored string
}

// decide says whether the object needs an engine operation now. An up runs only when
//   - the spec changed (metadata.generation moved past status.observedGeneration),
//   - the last up of this generation did not succeed (retried with capped exponential backoff),
//   - the reconcile-request annotation has a value not handled yet,
//   - a parent's outputs changed (its digest differs from the one the last up ran against),
//   - drift was found and autoRemediate is on;
//
// a drift check runs when its interval has passed since the last check or up. Anything else —
// in particular a periodic resync of an unchanged object — runs nothing.
//
// With spec.approval other than Auto an up of a stack that holds resources goes through a saved
// plan (actPlan), and while a plan waits for approval nothing else runs (decidePending).
//
// A suspended object runs nothing at all: what is due stays due, and runs once spec.suspend is
// cleared. A pending plan is not touched (clearing spec.suspend is a spec change, which then
// discards it as any other does).
func decide(f facts, t timing) verdict {
	if f.Suspended {
		return verdict{Action: actSuspended, After: t.Resync}
	}
	if p := f.Status.PendingPlan; p != nil {
		if v, ok := decidePending(f, t, p); ok {
			return v
		}
		v := decideRun(f, t)
		v.Stale = true
		return v
	}
	v := decideRun(f, t)
	if f.Approve != "" {
		v.Ignored = f.Approve // no plan waits: whatever it names is not pending
	}
	return v
}

// decidePending decides for an object whose saved plan waits: apply it once approved, wait
// otherwise. It gives up the plan (ok false: decideRun decides, the plan is discarded) when
// the spec moved past the plan's generation or a reconcile request asks for a new plan.
func decidePending(f facts, t timing, p *v1alpha1.PendingPlan) (verdict, bool) {
	st := f.Status
	if p.Generation != f.Generation || (f.Request != "" && f.Request != st.LastHandledReconcileRequest) {
		return verdict{}, false
	}
	if f.Approve != p.ID {
		v := verdict{Action: actAwait, After: t.Resync}
		if f.Approve != "" {
			v.Ignored = f.Approve
		}
		return v, true
	}
	if f.ParentWaiting != "" {
		return verdict{Action: actWaitParent, Why: f.ParentWaiting, After: t.ParentPoll}, true
	}
	// An approved apply that failed (a lock held elsewhere, the API server away) is retried
	// with the usual backoff, on the same plan.
	if last := finishedAt(st); f.Failures > 0 && !last.IsZero() {
		if rest := t.backoff(f.Failures) - f.Now.Sub(last); rest > 0 {
			return verdict{Action: actBackoff, Why: whyApprove, After: rest}, true
		}
	}
	return verdict{Action: actApply, Why: whyApprove}, true
}

// decideRun is the decision without a pending plan.
func decideRun(f facts, t timing) verdict {
	st := f.Status
	why, backoff := "", time.Duration(0)
	switch {
	case f.Request != "" && f.Request != st.LastHandledReconcileRequest:
		why = whyRequest // a human asked: no backoff
	case st.ObservedGeneration != f.Generation:
		why = whySpec
		if st.ObservedGeneration == 0 {
			why = whyFirst // also after a restart that cut the first up short
		}
	case !converged(st, f.Generation):
		why = whyRetry
		wait := t.backoff(f.Failures)
		if readyReason(st) == v1alpha1.ReasonWaitingForParent {
			wait = t.ParentPoll // not a failure: look again at the parent's pace
		}
		if last := finishedAt(st); !last.IsZero() {
			if rest := wait - f.Now.Sub(last); rest > 0 {
				backoff = rest
			}
		}
	case f.ParentKnown && f.ParentDigest != st.ParentDigest:
		why = whyParent
	case isTrue(st, v1alpha1.ConditionDrifted) && f.Drift.AutoRemediate:
		why = whyDrift
	}
	if why != "" {
		switch {
		case f.ParentWaiting != "":
			return verdict{Action: actWaitParent, Why: f.ParentWaiting, After: t.ParentPoll}
		case backoff > 0:
			return verdict{Action: actBackoff, Why: why, After: backoff}
		case needsPlan(f.Approval, st):
			return verdict{Action: actPlan, Why: why}
		default:
			return verdict{Action: actUp, Why: why}
		}
	}
	if period := f.Drift.Period(); period > 0 && f.ParentWaiting == "" {
		due := driftBaseline(st).Add(period)
		if !f.Now.Before(due) {
			return verdict{Action: actDriftCheck, Why: "drift check due"}
		}
		return verdict{Action: actNone, After: min(due.Sub(f.Now), t.Resync)}
	}
	return verdict{Action: actNone, After: t.Resync}
}

// needsPlan: approval.NeedsPlan, where an up completed when the status has its outputs' digest.
func needsPlan(mode v1alpha1.ApprovalMode, st *v1alpha1.StackStatus) bool {
	return approval.NeedsPlan(mode, st.OutputsDigest != "")
}

// converged: the last up of the current generation succeeded.
func converged(st *v1alpha1.StackStatus, gen int64) bool {
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

func readyReason(st *v1alpha1.StackStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

func isTrue(st *v1alpha1.StackStatus, typ string) bool {
	return meta.IsStatusConditionTrue(st.Conditions, typ)
}

// finishedAt is when the last operation ended (zero when none did).
func finishedAt(st *v1alpha1.StackStatus) time.Time {
	if op := st.LastOperation; op != nil && op.FinishedAt != nil {
		return op.FinishedAt.Time
	}
	return time.Time{}
}

// driftBaseline is when the stack was last known to match: the later of the last drift check
// and the end of the last successful up (which puts everything back anyway).
func driftBaseline(st *v1alpha1.StackStatus) time.Time {
	var t time.Time
	if st.LastDriftCheck != nil {
		t = st.LastDriftCheck.Time
	}
	if op := st.LastOperation; op != nil && op.Kind == v1alpha1.OperationUp && op.Result == v1alpha1.OperationSucceeded {
		if end := finishedAt(st); end.After(t) {
			t = end
		}
	}
	return t
}
