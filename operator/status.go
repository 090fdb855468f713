package operator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// phase is one consistent set of the kstatus conditions: Ready always, and at most one of
// Reconciling (the operator is still working towards the spec on its own) and Stalled (it
// cannot get there without a change or a human).
type phase struct {
	ready       metav1.ConditionStatus
	reason      string
	message     string
	reconciling bool
	stalled     bool
}

func setPhase(st *v1alpha1.StackStatus, gen int64, p phase) {
	set := func(typ string, status metav1.ConditionStatus) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status,
			ObservedGeneration: gen, Reason: p.reason, Message: p.message})
	}
	set(v1alpha1.ConditionReady, p.ready)
	if p.reconciling {
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReconciling)
	}
	if p.stalled {
		set(v1alpha1.ConditionStalled, metav1.ConditionTrue)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
	}
}

// failure is how an error from the runner or the engine shows in status, and what follows.
type failure struct {
	reason  string
	stalled bool // needs a change or a human; otherwise the operator retries on its own
	backoff bool // counts as a failure for the exponential backoff
}

// classify maps the runner's and the engine's sentinel errors to a condition reason.
func classify(err error) failure {
	switch {
	case errors.Is(err, kinds.ErrInvalid):
		// Found by a run: the spec against the cluster as it is (a namespace someone else
		// holds), which can change without a spec change, so it is retried — with backoff,
		// never in a loop that hides the refusal behind Progressing.
		return failure{reason: v1alpha1.ReasonInvalidSpec, stalled: true, backoff: true}
	case errors.Is(err, kinds.ErrParentNotReady):
		return failure{reason: v1alpha1.ReasonWaitingForParent}
	case errors.Is(err, runner.ErrDependentsExist):
		return failure{reason: v1alpha1.ReasonDependentsExist}
	case errors.Is(err, runner.ErrManagedElsewhere):
		return failure{reason: v1alpha1.ReasonManagedElsewhere, stalled: true, backoff: true}
	case errors.Is(err, engine.ErrConflict):
		return failure{reason: v1alpha1.ReasonUpdateConflict, backoff: true}
	case errors.Is(err, engine.ErrPendingNeedsDecision):
		return failure{reason: v1alpha1.ReasonPendingOperationNeedsDecision, stalled: true, backoff: true}
	default:
		return failure{reason: v1alpha1.ReasonUpdateFailed, stalled: true, backoff: true}
	}
}

// supportCondition sets the Supported condition from an up's support findings
// (stacks/support.go): False, with the first finding's reason and every message, while a
// component runs outside its upstream support; True again once none does. Only a cluster has
// findings, so an object that never had one gets no condition. Reports whether it changed.
func supportCondition(st *v1alpha1.StackStatus, gen int64, out *runner.Outcome) (metav1.Condition, bool) {
	c := metav1.Condition{Type: v1alpha1.ConditionSupported, ObservedGeneration: gen}
	if out == nil || len(out.Support) == 0 {
		if meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSupported) == nil {
			return c, false
		}
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonWithinSupport, "every component runs inside its upstream support"
	} else {
		msgs := make([]string, 0, len(out.Support))
		for _, f := range out.Support {
			msgs = append(msgs, f.Message)
		}
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, out.Support[0].Reason, strings.Join(msgs, "; ")
	}
	return c, meta.SetStatusCondition(&st.Conditions, c)
}

// canceled: the job was stopped (operator shutdown, or the object is being deleted), not failed.
func canceled(err error) bool { return errors.Is(err, engine.ErrCanceled) }

// operation summarises a finished job for status.lastOperation.
func operation(kind v1alpha1.OperationKind, j *job, out *runner.Outcome, msg string) *v1alpha1.Operation {
	op := &v1alpha1.Operation{Kind: kind, StartedAt: ptrTime(j.started), FinishedAt: ptrTime(j.finished), Message: msg}
	switch {
	case j.err == nil:
		op.Result = v1alpha1.OperationSucceeded
	case canceled(j.err):
		op.Result = v1alpha1.OperationCancelled
	default:
		op.Result = v1alpha1.OperationFailed
	}
	if ch := out.Changes(); len(ch) > 0 {
		op.Changes = &v1alpha1.ChangeCounts{
			Create: int32(ch[engine.StepCreate]), Update: int32(ch[engine.StepUpdate]),
			Replace: int32(ch[engine.StepReplace]), Delete: int32(ch[engine.StepDelete]), Same: int32(ch[engine.StepSame]),
		}
	}
	return op
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}

// changeSummary is "2 created, 1 updated" ("no changes" when nothing changed).
func changeSummary(out *runner.Outcome) string {
	ch := out.Changes()
	var parts []string
	for _, s := range []struct {
		op   engine.StepOp
		verb string
	}{{engine.StepCreate, "created"}, {engine.StepUpdate, "updated"}, {engine.StepReplace, "replaced"}, {engine.StepDelete, "deleted"}} {
		if n := ch[s.op]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s.verb))
		}
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}

// plainOutputs are the object's own stack outputs that may be shown: secret outputs are left
// out entirely (not even their names carry a value). Non-string values are JSON.
func plainOutputs(out *runner.Outcome) map[string]string {
	res := out.Own()
	if res == nil || len(res.Outputs) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, k := range res.Outputs.Keys() {
		o := res.Outputs[k]
		if o.Secret {
			continue
		}
		if s, ok := o.Value.(string); ok {
			m[k] = s
			continue
		}
		b, err := json.Marshal(o.Value)
		if err != nil {
			continue
		}
		m[k] = string(b)
	}
	return m
}

// outputsDigest is a truncated SHA-256 over every output of every stack the operation ran (a
// personal tenant's shared stack too), secrets included: a rotated password must change it so
// that children run again. It is one-way and mixes all values, so it reveals none of them.
func outputsDigest(out *runner.Outcome) string {
	if out == nil {
		return ""
	}
	h := sha256.New()
	stacks := append([]runner.StackResult(nil), out.Stacks...)
	sort.Slice(stacks, func(i, j int) bool { return stacks[i].Stack < stacks[j].Stack })
	for _, s := range stacks {
		if s.Result == nil {
			continue
		}
		runner.HashOutputs(h, s.Stack, s.Result.Outputs)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// digestOf is outputsDigest for outputs read from the engine (a parent made over HTTP).
func digestOf(stack string, outs program.Outputs) string {
	h := sha256.New()
	runner.HashOutputs(h, stack, outs)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// combineDigests folds the digests of several parents into one ("" for none).
func combineDigests(ds []string) string {
	if len(ds) == 0 {
		return ""
	}
	if len(ds) == 1 {
		return ds[0]
	}
	h := sha256.Sum256([]byte(strings.Join(ds, ",")))
	return hex.EncodeToString(h[:])[:16]
}

// redactor hides values the spec holds in plain text (a server's secretData, a registry
// password) from every message the operator writes: status, events and logs. The engine
// already redacts the secrets it knows; this is the second line for the ones it may not.
type redactor []string

const redacted = "[secret]"

// maxMessage keeps condition messages and events readable (the API allows 32 KiB).
const maxMessage = 2048

func (r redactor) clean(s string) string {
	for _, v := range r {
		if len(v) >= 4 { // shorter values would blank out ordinary words
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	if len(s) > maxMessage {
		s = s[:maxMessage] + "…"
	}
	return s
}
