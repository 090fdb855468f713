package operator

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/approval"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The approval gate (spec.approval) as the operator shows it; the rule and the store are
// package approval's. An up that needs a plan (decide: actPlan) previews with saved plans;
// approval.Gate then says whether the change waits. A waiting change stores its plans in the
// state backend (approval.Store), shows in status.pendingPlan with Approved=False /
// AwaitingApproval, and runs nothing until the tfrs.io/approve annotation names its id: then
// exactly those plans are applied (actApply). A change that need not wait is applied at once
// with the plans just saved, so what runs is what the gate looked at — a data-losing step
// that appears between the preview and the up is refused by Pulumi, never run.

// reasonApprovalIgnored is the Event reason of an approval that names no pending plan.
const reasonApprovalIgnored = "ApprovalIgnored"

// pendingPlanOf is what status shows of a waiting plan set: ids, counts, resource types and
// names — never a property value.
func pendingPlanOf(rec *approval.Record, now metav1.Time) *v1alpha1.PendingPlan {
	p := &v1alpha1.PendingPlan{ID: rec.ID, Generation: rec.Generation, Reason: string(rec.Reason), CreatedAt: now,
		Changes: map[string]int32{}, DataLoss: rec.DataLoss}
	for op, n := range rec.Changes {
		p.Changes[string(op)] = int32(n)
	}
	return p
}

// planOrApply is the job of actPlan: preview with saved plans, then either propose them
// (j.proposal) or apply exactly them.
func (r *reconciler) planOrApply(ctx context.Context, obj v1alpha1.Object, t kinds.Target, j *job, op runner.Op) error {
	pre := op
	pre.SavePlans, pre.Message = true, "tfrs operator: plan ("+j.why+")"
	// status.lastOperation.progress counts the resources an up has done; a preview's events
	// would count the same resources twice.
	pre.Sink = nil
	out, err := r.runner.Preview(ctx, obj, pre)
	if err != nil {
		return err
	}
	plans, err := approval.Collect(out)
	if err != nil {
		return err
	}
	rep := diff.FromOutcome(out)
	if why := approval.Gate(j.mode, rep); why != "" {
		now := r.now().Truncate(1e9)
		rec := approval.NewRecord(t.Stack, plans, why, rep, j.gen, now)
		if err := r.plans.Propose(ctx, rec, plans); err != nil {
			return fmt.Errorf("store the plan: %w", err)
		}
		j.proposal = pendingPlanOf(rec, metav1.NewTime(now))
		j.outcome = out
		return nil
	}
	op.Plans = plans
	j.outcome, err = r.runner.Up(ctx, obj, op)
	return err
}

// applyApproved is the job of actApply: the approved set's plans, exactly.
func (r *reconciler) applyApproved(ctx context.Context, obj v1alpha1.Object, t kinds.Target, j *job, op runner.Op) error {
	plans, err := r.plans.Load(ctx, t.Stack, j.approved)
	if err != nil {
		// Gone, or not readable as the plan that was reviewed (its content no longer matches
		// its id): never apply anything else, propose a new plan instead.
		return fmt.Errorf("%w: %w", engine.ErrPlanMismatch, err)
	}
	op.Plans = plans
	j.outcome, err = r.runner.Up(ctx, obj, op)
	return err
}

// collectProposal records a plan set that waits for approval. The generation and the
// reconcile request count as handled: the operator did what they asked up to the approval.
func (r *reconciler) collectProposal(obj v1alpha1.Object, j *job) {
	st := obj.GetStackStatus()
	p := j.proposal
	st.ObservedGeneration, st.LastHandledReconcileRequest = j.gen, j.request
	st.PendingPlan = p
	msg := fmt.Sprintf("plan %s waits for approval (%s): %s", p.ID, waitText(p), planCounts(p))
	if len(p.DataLoss) > 0 {
		msg += "; it would lose the data of: " + strings.Join(p.DataLoss, ", ")
	}
	msg += fmt.Sprintf("; approve it with `kubectl annotate %s %s %s=%s`", strings.ToLower(string(obj.KindName())), obj.GetName(), v1alpha1.AnnotationApprove, p.ID)
	st.LastOperation = &v1alpha1.Operation{Kind: v1alpha1.OperationPreview, StartedAt: ptrTime(j.started), FinishedAt: ptrTime(j.finished),
		Result: v1alpha1.OperationSucceeded, Message: msg}
	r.jobs.recordResult(obj.GetStackStatus().StackName, false)
	setApproved(st, j.gen, metav1.ConditionFalse, v1alpha1.ReasonAwaitingApproval, msg)
	setPhase(st, j.gen, phase{ready: metav1.ConditionFalse, reason: v1alpha1.ReasonAwaitingApproval, message: msg})
	r.event(obj, corev1.EventTypeNormal, v1alpha1.ReasonAwaitingApproval, "Plan", msg)
}

func waitText(p *v1alpha1.PendingPlan) string { return approval.Explain(approval.Reason(p.Reason)) }

// planCounts is "2 create, 1 update" in a fixed order.
func planCounts(p *v1alpha1.PendingPlan) string {
	var parts []string
	for _, op := range []engine.StepOp{engine.StepCreate, engine.StepUpdate, engine.StepReplace, engine.StepDelete} {
		if n := p.Changes[string(op)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, op))
		}
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}

func setApproved(st *v1alpha1.StackStatus, gen int64, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionApproved, Status: status,
		ObservedGeneration: gen, Reason: reason, Message: msg})
}

// collectStale handles a plan Pulumi (or the runner) refused: the program would now do
// something else. The plans are discarded and the next reconcile proposes a new one; the
// refusal counts for the backoff, so a plan that can never hold does not loop hot.
func (r *reconciler) collectStale(ctx context.Context, obj v1alpha1.Object, t kinds.Target, j *job) {
	st := obj.GetStackStatus()
	st.ObservedGeneration, st.LastHandledReconcileRequest = j.gen, j.request
	msg := "the saved plan no longer matches what the program would do (the spec, a parent's outputs or the cluster changed); it was discarded and a new plan is proposed: " + staleCause(j.err)
	r.dropPending(ctx, obj, t, "", msg)
	st.LastOperation = operation(v1alpha1.OperationUp, j, j.outcome, msg)
	r.jobs.recordResult(t.Stack, true)
	setPhase(st, j.gen, phase{ready: metav1.ConditionFalse, reason: v1alpha1.ReasonPlanStale, message: msg, reconciling: true})
}

// reViolation finds the resources Pulumi named when it refused a step outside the plan.
var reViolation = regexp.MustCompile(`resource (urn:pulumi:\S+?) violates plan`)

// staleCause says why a plan was refused without quoting Pulumi's diff, whose property values
// may be secret: the runner's own reason, or the resources that left the plan.
func staleCause(err error) string {
	var pm *runner.PlanMismatchError
	if errors.As(err, &pm) {
		return pm.Error()
	}
	var names []string
	seen := map[string]bool{}
	for _, m := range reViolation.FindAllStringSubmatch(err.Error(), -1) {
		if !seen[m[1]] && len(names) < 10 {
			seen[m[1]] = true
			_, name := diff.ParseURN(m[1])
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "Pulumi refused a step outside the plan"
	}
	return "Pulumi refused steps outside the plan for: " + strings.Join(names, ", ")
}

// discardPlans drops own's pending set, bounded like every engine read in Reconcile.
func (r *reconciler) discardPlans(ctx context.Context, own string) {
	ctx, cancel := context.WithTimeout(ctx, r.readTO)
	defer cancel()
	if err := r.plans.Discard(ctx, own); err != nil && !errors.Is(err, approval.ErrNoPlanStore) {
		ctrl.LoggerFrom(ctx).Error(err, "discard the saved plans", "stack", own)
	}
}

// dropPending discards the pending plan set (a stale one, or one a new plan replaces) and
// says so; old names the pending plan id being dropped ("" when status has none).
func (r *reconciler) dropPending(ctx context.Context, obj v1alpha1.Object, t kinds.Target, old, msg string) {
	st := obj.GetStackStatus()
	r.discardPlans(ctx, t.Stack)
	if old != "" {
		msg = fmt.Sprintf("plan %s: %s", old, msg)
	}
	st.PendingPlan = nil
	setApproved(st, obj.GetGeneration(), metav1.ConditionFalse, v1alpha1.ReasonPlanStale, msg)
	r.event(obj, corev1.EventTypeWarning, v1alpha1.ReasonPlanStale, "Plan", msg)
}

// collectApplied finishes a successful up that ran saved plans: the set is used up.
func (r *reconciler) collectApplied(ctx context.Context, obj v1alpha1.Object, t kinds.Target, j *job) {
	st := obj.GetStackStatus()
	if j.approved == "" && meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionApproved) == nil {
		return // nothing ever waited: status looks as it did before approvals
	}
	msg := "no approval needed: the plan loses no data"
	if j.approved != "" {
		msg = fmt.Sprintf("approved plan %s applied: %s", j.approved, changeSummary(j.outcome))
		r.discardPlans(ctx, t.Stack)
		r.clearApproval(ctx, obj)
		r.event(obj, corev1.EventTypeNormal, v1alpha1.ReasonPlanApplied, "Up", msg)
	}
	st.PendingPlan = nil
	setApproved(st, j.gen, metav1.ConditionTrue, v1alpha1.ReasonPlanApplied, msg)
}

// ignoreApproval reports an approval that names no pending plan and removes it: it changes
// nothing, and a stale annotation must not approve a later plan by accident.
func (r *reconciler) ignoreApproval(ctx context.Context, obj v1alpha1.Object, id string) {
	pending := "no plan is pending"
	if p := obj.GetStackStatus().PendingPlan; p != nil {
		pending = "the pending plan is " + p.ID
	}
	if !engine.ValidPlanID(id) {
		id = fmt.Sprintf("%q (not a plan id: 16 hex digits)", truncate(id, 40))
	}
	r.event(obj, corev1.EventTypeWarning, reasonApprovalIgnored, "Approve",
		fmt.Sprintf("%s=%s ignored: %s; nothing changed", v1alpha1.AnnotationApprove, id, pending))
	r.clearApproval(ctx, obj)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// clearApproval removes the approve annotation: an approval is for one plan, never a
// standing order.
func (r *reconciler) clearApproval(ctx context.Context, obj v1alpha1.Object) {
	patch := client.RawPatch(client.Merge.Type(), fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, v1alpha1.AnnotationApprove))
	stub := r.kind.newObj()
	stub.SetNamespace(obj.GetNamespace())
	stub.SetName(obj.GetName())
	if err := r.client.Patch(ctx, stub, patch); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "remove the approve annotation")
	}
}
