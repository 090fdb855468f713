package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The approval gate (spec.approval). An up that needs a plan (decide: actPlan) previews with
// saved plans; gate() then says whether the change waits. A waiting change stores its plans
// in the state backend (planBook), shows in status.pendingPlan with Approved=False /
// AwaitingApproval, and runs nothing until the tfrs.io/approve annotation names its id: then
// exactly those plans are applied (actApply). A change that need not wait is applied at once
// with the plans just saved, so what runs is what the gate looked at — a data-losing step
// that appears between the preview and the up is refused by Pulumi, never run.

// Reasons a plan waits (PendingPlan.Reason).
const (
	waitManual   = "Manual"
	waitDataLoss = "DataLoss"
)

// reasonApprovalIgnored is the Event reason of an approval that names no pending plan.
const reasonApprovalIgnored = "ApprovalIgnored"

// gate says whether a previewed change waits for approval and why ("" applies it now).
// Manual holds every change; OnDataLoss the ones that replace or delete stateful data. A
// preview that changes nothing (a parent's outputs moved, a reconcile request) has nothing to
// review and applies.
func gate(mode v1alpha1.ApprovalMode, rep *diff.Report) string {
	switch {
	case mode == v1alpha1.ApprovalAuto || !rep.HasChanges():
		return ""
	case mode == v1alpha1.ApprovalManual:
		return waitManual
	case rep.HasDataLoss():
		return waitDataLoss
	}
	return ""
}

// maxDataLossList bounds status.pendingPlan.dataLoss (the API allows 64 entries).
const maxDataLossList = 64

// pendingPlanOf is what status shows of a waiting plan set: ids, counts, resource types and
// names — never a property value.
func pendingPlanOf(id string, gen int64, why string, rep *diff.Report, now metav1.Time) *v1alpha1.PendingPlan {
	p := &v1alpha1.PendingPlan{ID: id, Generation: gen, Reason: why, CreatedAt: now, Changes: map[string]int32{}}
	for op, n := range rep.Counts() {
		p.Changes[string(op)] = int32(n)
	}
	for _, c := range rep.DataLoss {
		if len(p.DataLoss) == maxDataLossList {
			break
		}
		p.DataLoss = append(p.DataLoss, fmt.Sprintf("%s %s %s", c.Op, c.Type, c.Name))
	}
	return p
}

// planStore is what the gate needs of the engine: its plan store and the backend bucket,
// where the operator keeps which plans make up a pending plan set.
type planStore interface {
	StorePlan(ctx context.Context, p *engine.Plan) error
	LoadPlan(ctx context.Context, stack, id string) (*engine.Plan, error)
	DiscardPlans(ctx context.Context, stack string, keep ...string) error
	Bucket(ctx context.Context) (*blob.Bucket, error)
}

var _ planStore = (*engine.Engine)(nil)

// errNoPlanStore: the operator's engine keeps no saved plans, so it cannot gate anything; a
// mode other than Auto then fails rather than apply unreviewed.
var errNoPlanStore = errors.New("this operator's engine cannot save plans; spec.approval.mode must be Auto")

// planSet is one pending approval: a plan per stack the preview ran (a personal tenant that
// drives its job type's shared stack has two), under one id. A single plan's id is its own
// (content-derived); a set's id is derived from its plans' ids.
type planSet struct {
	ID    string            `json:"id"`
	Plans map[string]string `json:"plans"` // stack → plan id
}

func newPlanSet(plans map[string]*engine.Plan) planSet {
	s := planSet{Plans: map[string]string{}}
	var lines []string
	for stack, p := range plans {
		s.Plans[stack] = p.ID
		s.ID = p.ID
		lines = append(lines, stack+"="+p.ID)
	}
	if len(lines) > 1 {
		sort.Strings(lines)
		sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		s.ID = hex.EncodeToString(sum[:8])
	}
	return s
}

// planBook keeps the pending plan sets in the state backend: the plans where the engine
// keeps them (tfrs/plans/<stack>/<id>.json), the set of each object under its own stack
// (tfrs/operator/approvals/<stack>.json). An object has at most one pending set, so a new
// one replaces the last. Every replica reads the same book.
type planBook struct{ store planStore }

func setKey(own string) string { return "tfrs/operator/approvals/" + own + ".json" }

// propose stores plans as own's pending set, discarding the set it replaces.
func (b planBook) propose(ctx context.Context, own string, plans map[string]*engine.Plan) (planSet, error) {
	if b.store == nil {
		return planSet{}, errNoPlanStore
	}
	if err := b.discard(ctx, own); err != nil {
		return planSet{}, err
	}
	for _, p := range plans {
		if err := b.store.StorePlan(ctx, p); err != nil {
			return planSet{}, err
		}
	}
	s := newPlanSet(plans)
	data, err := json.Marshal(s)
	if err != nil {
		return planSet{}, err
	}
	bkt, err := b.store.Bucket(ctx)
	if err != nil {
		return planSet{}, err
	}
	return s, bkt.WriteAll(ctx, setKey(own), data, nil)
}

// read returns own's pending set (ok false when there is none).
func (b planBook) read(ctx context.Context, own string) (planSet, bool, error) {
	var s planSet
	if b.store == nil {
		return s, false, errNoPlanStore
	}
	bkt, err := b.store.Bucket(ctx)
	if err != nil {
		return s, false, err
	}
	data, err := bkt.ReadAll(ctx, setKey(own))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	return s, true, json.Unmarshal(data, &s)
}

// load returns the plans of own's pending set id; engine.ErrPlanNotFound when id is not the
// pending set (discarded, replaced, or never saved).
func (b planBook) load(ctx context.Context, own, id string) (map[string]*engine.Plan, error) {
	s, ok, err := b.read(ctx, own)
	if err != nil {
		return nil, err
	}
	if !ok || s.ID != id {
		return nil, fmt.Errorf("%w: %s has no pending plan %s", engine.ErrPlanNotFound, own, id)
	}
	plans := map[string]*engine.Plan{}
	for stack, pid := range s.Plans {
		p, err := b.store.LoadPlan(ctx, stack, pid)
		if err != nil {
			return nil, err
		}
		plans[stack] = p
	}
	return plans, nil
}

// discard removes own's pending set and the plans in it.
func (b planBook) discard(ctx context.Context, own string) error {
	s, ok, err := b.read(ctx, own)
	if err != nil || !ok {
		return err
	}
	var errs []error
	for stack := range s.Plans {
		errs = append(errs, b.store.DiscardPlans(ctx, stack))
	}
	if bkt, err := b.store.Bucket(ctx); err != nil {
		errs = append(errs, err)
	} else if err := bkt.Delete(ctx, setKey(own)); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// plansOf collects the plans a preview saved; a stack it ran without one is an error (the
// engine must save a plan for every stack it previews with SavePlans).
func plansOf(out *runner.Outcome) (map[string]*engine.Plan, error) {
	plans := map[string]*engine.Plan{}
	for _, s := range out.Stacks {
		if s.Result == nil || s.Result.Plan == nil {
			return nil, fmt.Errorf("the preview of stack %s saved no plan", s.Stack)
		}
		plans[s.Stack] = s.Result.Plan
	}
	if len(plans) == 0 {
		return nil, errors.New("the preview ran no stack, so there is no plan to review")
	}
	return plans, nil
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
	plans, err := plansOf(out)
	if err != nil {
		return err
	}
	rep := diff.FromOutcome(out)
	if why := gate(j.mode, rep); why != "" {
		set, err := r.plans.propose(ctx, t.Stack, plans)
		if err != nil {
			return fmt.Errorf("store the plan: %w", err)
		}
		j.proposal = pendingPlanOf(set.ID, j.gen, why, rep, metav1.NewTime(r.now().Truncate(1e9)))
		j.outcome = out
		return nil
	}
	op.Plans = plans
	j.outcome, err = r.runner.Up(ctx, obj, op)
	return err
}

// applyApproved is the job of actApply: the approved set's plans, exactly.
func (r *reconciler) applyApproved(ctx context.Context, obj v1alpha1.Object, t kinds.Target, j *job, op runner.Op) error {
	plans, err := r.plans.load(ctx, t.Stack, j.approved)
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

func waitText(p *v1alpha1.PendingPlan) string {
	if p.Reason == waitDataLoss {
		return "spec.approval.mode OnDataLoss: stateful data would be replaced or deleted"
	}
	return "spec.approval.mode Manual"
}

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
	if err := r.plans.discard(ctx, own); err != nil && !errors.Is(err, errNoPlanStore) {
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
