package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/stacks/approval"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Finalizer keeps a custom resource until its stack is destroyed.
const Finalizer = "tfrs.io/stack"

// reconciler is the one stack-reconcile core; each of the three controllers is an instance
// of it with its kind.
type reconciler struct {
	kind    *kind
	client  client.Client
	runner  *runner.Runner
	jobs    *jobs
	digests *parentCache // parent stacks' digests (parentcache.go), shared like jobs
	events  events.EventRecorder
	wake    chan event.GenericEvent
	timing  timing
	poll    time.Duration // look at a running job again after this, should its wake be lost
	readTO  time.Duration // bound on a synchronous engine read in Reconcile
	failing *failingSet
	// revisions count the objects by status.revision (the stacks-by-revision gauge);
	// revision is this build's, recorded by every up that succeeds.
	revisions *revisionSet
	revision  func() *v1alpha1.Revision
	now       func() time.Time
	sources   *sourcepolicy.Policy // nil: no source policy check here
	// progressInterval bounds the status patches of a running operation's progress (progress.go).
	progressInterval time.Duration
	progressEvents   *eventThrottle  // Progress Events per object, across its jobs
	plans            *approval.Store // pending plan sets of the approval gate (approval.go)
}

// Reconcile: get → finalizer → deferred status patch → delete path or apply path. It never
// waits for the engine: operations run as jobs (jobs.go) whose end wakes the object again.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	obj := r.kind.newObj()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		if !obj.GetDeletionTimestamp().IsZero() {
			return ctrl.Result{}, nil // our part of the deletion is done
		}
		// The finalizer goes on before any stack exists, so no stack outlives its object.
		controllerutil.AddFinalizer(obj, Finalizer)
		if err := r.client.Update(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	base := obj.DeepCopyObject().(v1alpha1.Object)
	defer func() {
		if perr := r.patchStatus(ctx, base, obj); perr != nil && err == nil {
			err = perr
		}
		if controllerutil.ContainsFinalizer(obj, Finalizer) { // not released (gone) in this pass
			r.revisions.set(key(obj), obj.GetStackStatus().Revision)
		}
	}()
	if !obj.GetDeletionTimestamp().IsZero() {
		return r.finalize(ctx, obj)
	}
	return r.apply(ctx, obj)
}

// patchStatus writes the status when it changed (a merge patch: no conflict with writers of
// the spec). A deleted object has no status to write.
func (r *reconciler) patchStatus(ctx context.Context, base, obj v1alpha1.Object) error {
	keepProgress(base, obj)
	patch := client.MergeFrom(base)
	data, err := patch.Data(obj)
	if err != nil || string(data) == "{}" {
		return err
	}
	return client.IgnoreNotFound(r.client.Status().Patch(ctx, obj, patch))
}

// apply brings the object's stack to its spec when decide() says so.
func (r *reconciler) apply(ctx context.Context, obj v1alpha1.Object) (ctrl.Result, error) {
	st, gen := obj.GetStackStatus(), obj.GetGeneration()
	t, _, err := kinds.Prepare(obj)
	if err == nil && r.sources != nil {
		if errs := r.sources.Check(obj); len(errs) > 0 {
			err = &kinds.InvalidError{Errors: errs}
		}
	}
	if err != nil {
		// Nothing runs for an invalid spec; the next spec change brings the object back.
		st.ObservedGeneration = gen
		r.setPhase(obj, phase{ready: metav1.ConditionFalse, reason: v1alpha1.ReasonInvalidSpec,
			message: r.clean(obj, err.Error()), stalled: true}, corev1.EventTypeWarning, "Validate")
		return ctrl.Result{}, nil
	}
	st.StackName = t.Stack
	if j := r.jobs.get(t.Stack); j != nil {
		if !j.isDone() {
			return ctrl.Result{RequeueAfter: r.poll}, nil
		}
		r.collect(ctx, obj, t, j)
	}
	f, err := r.facts(ctx, obj, t)
	if err != nil {
		return ctrl.Result{}, err
	}
	v := decide(f, r.timing)
	log := ctrl.LoggerFrom(ctx).WithValues("stack", t.Stack)
	r.setSuspended(obj, v.Action == actSuspended, "no up or drift check runs until spec.suspend is cleared")
	if v.Ignored != "" {
		r.ignoreApproval(ctx, obj, v.Ignored)
	}
	if p := st.PendingPlan; v.Stale && p != nil {
		why := "a reconcile request asked for a new plan"
		if p.Generation != gen {
			why = fmt.Sprintf("the spec changed (generation %d, the plan was taken for %d)", gen, p.Generation)
		}
		r.dropPending(ctx, obj, t, p.ID, why+"; it was discarded and a new plan is proposed")
		if f.Approve != "" {
			r.clearApproval(ctx, obj) // it approved the discarded plan
		}
	}
	switch v.Action {
	case actUp, actPlan, actApply:
		log.Info("starting up", "why", v.Why, "gate", v.Action.String())
		r.startUp(obj, t, f, v)
		return ctrl.Result{RequeueAfter: r.poll}, nil
	case actAwait:
		log.V(1).Info("plan waits for approval", "plan", st.PendingPlan.ID)
	case actDriftCheck:
		log.Info("starting drift check")
		r.startDrift(obj, t)
		return ctrl.Result{RequeueAfter: r.poll}, nil
	case actWaitParent:
		r.setPhase(obj, phase{ready: metav1.ConditionFalse, reason: v1alpha1.ReasonWaitingForParent,
			message: v.Why, reconciling: true}, corev1.EventTypeNormal, "Up")
	case actBackoff:
		log.V(1).Info("waiting before retrying", "after", v.After)
	case actSuspended:
		log.V(1).Info("suspended")
	case actNone:
		resyncSkips.WithLabelValues(string(r.kind.name())).Inc()
	}
	return ctrl.Result{RequeueAfter: v.After}, nil
}

// setSuspended shows spec.suspend in the status: the Suspended condition while it holds (with
// an Event when it starts), none once it is cleared.
func (r *reconciler) setSuspended(obj v1alpha1.Object, on bool, msg string) {
	st := obj.GetStackStatus()
	if !on {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionSuspended)
		return
	}
	c := metav1.Condition{Type: v1alpha1.ConditionSuspended, Status: metav1.ConditionTrue, ObservedGeneration: obj.GetGeneration(),
		Reason: v1alpha1.ReasonSuspended, Message: "spec.suspend is true: " + msg}
	if prev := meta.FindStatusCondition(st.Conditions, c.Type); prev == nil || prev.Message != c.Message {
		r.event(obj, corev1.EventTypeNormal, v1alpha1.ReasonSuspended, "Suspend", c.Message)
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// facts gathers what decide() needs; reading the parents' digests is the only I/O and goes
// to the cache, except for a parent made outside the operator (read from the engine, bounded).
func (r *reconciler) facts(ctx context.Context, obj v1alpha1.Object, t kinds.Target) (facts, error) {
	f := facts{
		Now: r.now(), Generation: obj.GetGeneration(), Status: obj.GetStackStatus(),
		Request: obj.GetAnnotations()[v1alpha1.AnnotationReconcileRequest],
		Drift:   obj.GetDriftDetection(), Failures: r.jobs.failures(t.Stack), ParentKnown: true,
		Approval: obj.Approval(), Approve: obj.GetAnnotations()[v1alpha1.AnnotationApprove],
		Suspended: obj.Suspended(),
	}
	if g := r.kind.gate; g != nil {
		var err error
		if f.Approval, f.Drift, err = g(ctx, r.client, obj); err != nil {
			return f, err
		}
	}
	parents, err := r.kind.parents(ctx, r.client, obj, t)
	if err != nil {
		return f, err
	}
	var digests []string
	for _, p := range parents {
		if p.obj != nil {
			if !converged(p.obj.GetStackStatus(), p.obj.GetGeneration()) && f.ParentWaiting == "" {
				f.ParentWaiting = fmt.Sprintf("waiting for %s %s to be Ready", p.obj.KindName(), key(p.obj))
			}
			digests = append(digests, p.obj.GetStackStatus().OutputsDigest)
			continue
		}
		d, err := r.stackDigest(ctx, p.stack)
		if err != nil {
			// Unknown this time (the engine is busy or the read failed): decide on the rest.
			ctrl.LoggerFrom(ctx).V(1).Info("parent stack digest unavailable", "stack", p.stack, "error", r.clean(obj, err.Error()))
			f.ParentKnown = false
			continue
		}
		digests = append(digests, d)
	}
	f.ParentDigest = combineDigests(digests)
	return f, nil
}

// stackDigest returns a parent stack's outputs digest, from the operator's cache when the stack
// did not change (parentcache.go), else read from the engine. The read shares the engine's
// concurrency limit with running operations, so it is bounded: a busy engine must not hold a
// worker.
func (r *reconciler) stackDigest(ctx context.Context, stack string) (string, error) {
	if stack == "" {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.readTO)
	defer cancel()
	return r.digests.digest(ctx, r.runner.Engine(), stack, r.now())
}

func key(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// startUp runs an up as a job on a snapshot of the object: a plain one (actUp), one through
// the approval gate (actPlan), or the approved plan (actApply).
func (r *reconciler) startUp(obj v1alpha1.Object, t kinds.Target, f facts, v verdict) {
	st, why := obj.GetStackStatus(), v.Why
	j := &job{kind: jobUp, uid: obj.GetUID(), gen: obj.GetGeneration(), why: why, request: f.Request,
		parentDigest: f.ParentDigest, decision: pendingDecision(obj), gated: v.Action == actPlan, mode: f.Approval}
	if v.Action == actApply {
		j.approved, j.request = st.PendingPlan.ID, st.LastHandledReconcileRequest
	}
	if !f.ParentKnown {
		j.parentDigest = st.ParentDigest // unknown now: keep what the last up ran against
	}
	snapshot := obj.DeepCopyObject().(v1alpha1.Object)
	r.start(t, j, func(ctx context.Context, j *job) {
		op := r.op(snapshot, why, j.sink)
		switch {
		case j.approved != "":
			j.err = r.applyApproved(ctx, snapshot, t, j, op)
		case j.gated:
			j.err = r.planOrApply(ctx, snapshot, t, j, op)
		default:
			j.outcome, j.err = r.up(ctx, snapshot, op, j.decision)
		}
	}, obj)
	msg := "up running: " + why
	switch v.Action {
	case actPlan:
		msg = "plan running (spec.approval." + string(f.Approval) + "): " + why
	case actApply:
		msg = "applying the approved plan " + j.approved
	}
	if prev := readyReason(st); why == whyRetry && prev != "" && prev != v1alpha1.ReasonProgressing {
		msg += " (the last attempt ended with " + prev + ")" // keep the cause visible while retrying
	}
	st.LastOperation = &v1alpha1.Operation{Kind: v1alpha1.OperationUp, StartedAt: ptrTime(j.started)}
	r.setPhase(obj, phase{ready: metav1.ConditionUnknown, reason: v1alpha1.ReasonProgressing,
		message: msg, reconciling: true}, corev1.EventTypeNormal, "Up")
}

// up runs the object's up; with a pending-decision annotation it resolves an interrupted create
// of a data-bearing resource the way the human chose and runs once more.
func (r *reconciler) up(ctx context.Context, obj v1alpha1.Object, op runner.Op, decision string) (*runner.Outcome, error) {
	out, err := r.runner.Up(ctx, obj, op)
	var oe *engine.OpError
	if decision != "" && errors.Is(err, engine.ErrPendingNeedsDecision) && errors.As(err, &oe) {
		op.Decisions = map[string]engine.Decision{}
		for _, p := range oe.Pending {
			op.Decisions[p.URN] = engine.Decision(decision)
		}
		out, err = r.runner.Up(ctx, obj, op)
	}
	return out, err
}

// op is the runner operation of an up of obj.
func (r *reconciler) op(obj v1alpha1.Object, why string, sink engine.Sink) runner.Op {
	return runner.Op{Door: engine.ManagedByOperator, Sink: sink, Message: fmt.Sprintf("tfrs operator: %s (generation %d)", why, obj.GetGeneration())}
}

// startDrift runs a drift check as a job. Conditions other than Drifted stay: the object is
// still Ready while it is being checked.
func (r *reconciler) startDrift(obj v1alpha1.Object, t kinds.Target) {
	j := &job{kind: jobDrift, uid: obj.GetUID(), gen: obj.GetGeneration()}
	snapshot := obj.DeepCopyObject().(v1alpha1.Object)
	r.start(t, j, func(ctx context.Context, j *job) {
		j.drift, j.err = checkDrift(ctx, r.runner, snapshot, runner.Op{Door: engine.ManagedByOperator, Sink: j.sink, Message: "tfrs operator: drift check"})
	}, obj)
}

// startDestroy runs the object's destroy as a job.
func (r *reconciler) startDestroy(obj v1alpha1.Object, t kinds.Target) {
	j := &job{kind: jobDestroy, uid: obj.GetUID(), gen: obj.GetGeneration()}
	snapshot := obj.DeepCopyObject().(v1alpha1.Object)
	r.start(t, j, func(ctx context.Context, j *job) {
		j.outcome, j.err = r.runner.Destroy(ctx, snapshot, runner.Op{Door: engine.ManagedByOperator, Sink: j.sink, Message: "tfrs operator: custom resource deleted"})
		if j.err == nil && snapshot.GetStackStatus().PendingPlan != nil {
			// A plan of a destroyed stack can never apply.
			if err := r.plans.Discard(ctx, t.Stack); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "discard the pending plans of a destroyed stack", "stack", t.Stack)
			}
		}
	}, obj)
	obj.GetStackStatus().LastOperation = &v1alpha1.Operation{Kind: v1alpha1.OperationDestroy, StartedAt: ptrTime(j.started)}
	r.setPhase(obj, phase{ready: metav1.ConditionFalse, reason: v1alpha1.ReasonDeleting,
		message: "destroy running", reconciling: true}, corev1.EventTypeNormal, "Destroy")
}

// start hands a job to the table, with the in-flight gauge and a wake-up of the object when it
// ends (through the controller's channel source; the poll requeue covers a lost one). The
// stacks the job may have changed (a personal tenant's up or destroy also runs its shared
// stack) lose their cached digests before anyone can see the job done. The job's progress
// reporter (progress.go) is its sink; its last write happens before the job is done.
func (r *reconciler) start(t kinds.Target, j *job, fn func(context.Context, *job), obj v1alpha1.Object) {
	kind := string(r.kind.name())
	stub := r.kind.newObj()
	stub.SetNamespace(obj.GetNamespace())
	stub.SetName(obj.GetName())
	rep := r.newProgress(obj.DeepCopyObject().(v1alpha1.Object), j.kind, t.Stack)
	j.sink = rep.sink
	r.jobs.start(t.Stack, j, func(ctx context.Context, j *job) {
		operationsInFlight.WithLabelValues(kind).Inc()
		defer operationsInFlight.WithLabelValues(kind).Dec()
		defer r.digests.forget(t.Stack, t.Shared)
		rep.start(ctx, j.started)
		defer func() { rep.finish(j.err == nil) }()
		fn(ctx, j)
	}, func() {
		select {
		case r.wake <- event.GenericEvent{Object: stub}:
		default:
		}
	})
}

// collect applies a finished job's result to the status, the metrics and the events.
func (r *reconciler) collect(ctx context.Context, obj v1alpha1.Object, t kinds.Target, j *job) {
	r.jobs.take(t.Stack)
	if j.uid != obj.GetUID() {
		return // a job of a deleted object of the same name
	}
	result := resultLabel(j.err)
	operationsTotal.WithLabelValues(string(r.kind.name()), string(j.kind), result).Inc()
	operationDuration.WithLabelValues(string(r.kind.name()), string(j.kind), result).Observe(j.finished.Sub(j.started).Seconds())
	if canceled(j.err) {
		obj.GetStackStatus().LastOperation = operation(opKind(j.kind), j, j.outcome, "canceled")
		return // shutdown or deletion: not a failure; decide() runs it again
	}
	switch j.kind {
	case jobUp:
		r.collectUp(ctx, obj, t, j)
	case jobDrift:
		r.collectDrift(obj, j)
	}
}

func opKind(k jobKind) v1alpha1.OperationKind {
	if k == jobDestroy {
		return v1alpha1.OperationDestroy
	}
	return v1alpha1.OperationUp
}

func resultLabel(err error) string {
	switch {
	case err == nil:
		return "succeeded"
	case canceled(err):
		return "canceled"
	default:
		return strings.ToLower(classify(err).reason)
	}
}

func (r *reconciler) collectUp(ctx context.Context, obj v1alpha1.Object, t kinds.Target, j *job) {
	st := obj.GetStackStatus()
	// The generation and the reconcile request the job ran are handled, whatever the result:
	// decide() then retries with backoff, or moves on to a newer generation or request.
	st.ObservedGeneration = j.gen
	st.LastHandledReconcileRequest = j.request
	switch {
	case j.err == nil && j.proposal != nil:
		r.collectProposal(obj, j)
		return
	case errors.Is(j.err, engine.ErrPlanMismatch) && (j.gated || j.approved != ""):
		r.collectStale(ctx, obj, t, j)
		return
	case j.err != nil:
		r.fail(obj, t, j, "Up")
		return
	}
	summary := changeSummary(j.outcome)
	st.LastOperation = operation(v1alpha1.OperationUp, j, j.outcome, summary)
	st.ManagedBy = v1alpha1.ManagedByOperator
	st.Outputs = plainOutputs(j.outcome)
	st.OutputsDigest = outputsDigest(j.outcome)
	st.ParentDigest = j.parentDigest
	if r.revision != nil {
		st.Revision = r.revision().DeepCopy() // also on the stack, as tags (stacks/revision.go)
	}
	r.kind.ready(obj)
	r.jobs.recordResult(t.Stack, false)
	r.failing.set(key(obj), false)
	// Ready refers to the generation the up applied: a newer one is still to run.
	setPhase(st, j.gen, phase{ready: metav1.ConditionTrue, reason: v1alpha1.ReasonSucceeded, message: "up succeeded: " + summary})
	r.event(obj, corev1.EventTypeNormal, v1alpha1.ReasonSucceeded, "Up", "up succeeded ("+j.why+"): "+summary)
	if meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDrifted) != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionDrifted, Status: metav1.ConditionFalse,
			ObservedGeneration: j.gen, Reason: v1alpha1.ReasonNoDrift, Message: "up brought the resources back to the spec"})
	}
	if c, changed := supportCondition(st, j.gen, j.outcome); changed && c.Status == metav1.ConditionFalse {
		r.event(obj, corev1.EventTypeWarning, c.Reason, "Up", c.Message)
	}
	if j.decision != "" {
		r.clearDecision(ctx, obj)
	}
	if j.gated || j.approved != "" {
		r.collectApplied(ctx, obj, t, j)
	}
}

// fail reports a failed up or destroy. Transient causes (a lock held elsewhere, a parent not
// ready yet) keep the object Reconciling; the rest stall it until the backoff retry or a change.
func (r *reconciler) fail(obj v1alpha1.Object, t kinds.Target, j *job, action string) {
	st := obj.GetStackStatus()
	f := classify(j.err)
	msg := r.clean(obj, j.err.Error())
	if f.reason == v1alpha1.ReasonPendingOperationNeedsDecision {
		msg += fmt.Sprintf("; set the annotation %s=%s (take the existing object over) or =%s (leave it unmanaged) to continue",
			v1alpha1.AnnotationPendingDecision, v1alpha1.PendingDecisionAdopt, v1alpha1.PendingDecisionForget)
	}
	st.LastOperation = operation(opKind(j.kind), j, j.outcome, msg)
	if f.backoff {
		r.jobs.recordResult(t.Stack, true)
	}
	r.failing.set(key(obj), f.stalled || f.backoff)
	setPhase(st, j.gen, phase{ready: metav1.ConditionFalse, reason: f.reason, message: msg,
		reconciling: !f.stalled, stalled: f.stalled})
	typ := corev1.EventTypeWarning
	if f.reason == v1alpha1.ReasonWaitingForParent || f.reason == v1alpha1.ReasonDependentsExist {
		typ = corev1.EventTypeNormal
	}
	r.event(obj, typ, f.reason, action, msg)
}

func (r *reconciler) collectDrift(obj v1alpha1.Object, j *job) {
	st := obj.GetStackStatus()
	st.LastDriftCheck = ptrTime(j.finished)
	c := metav1.Condition{Type: v1alpha1.ConditionDrifted, ObservedGeneration: j.gen}
	switch {
	case j.err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonDriftCheckFailed, r.clean(obj, j.err.Error())
	case j.drift.drifted():
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonDriftDetected, r.clean(obj, j.drift.message())
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonNoDrift, j.drift.message()
	}
	if meta.SetStatusCondition(&st.Conditions, c) && c.Status != metav1.ConditionFalse {
		r.event(obj, corev1.EventTypeWarning, c.Reason, "DriftCheck", c.Message)
	}
}

// finalize is the delete path: wait for children, destroy the stack (the runner removes it
// afterwards), then let the object go.
func (r *reconciler) finalize(ctx context.Context, obj v1alpha1.Object) (ctrl.Result, error) {
	st := obj.GetStackStatus()
	t, err := kinds.TargetOf(obj)
	if err != nil {
		return ctrl.Result{}, r.release(ctx, obj, "its names cannot name a stack, so none exists")
	}
	if j := r.jobs.get(t.Stack); j != nil {
		if !j.isDone() {
			if j.kind != jobDestroy {
				j.cancel() // an up or a drift check of an object being deleted is moot
			}
			return ctrl.Result{RequeueAfter: r.poll}, nil
		}
		if j.kind == jobDestroy && j.uid == obj.GetUID() {
			return r.collectDestroy(ctx, obj, t, j)
		}
		r.collect(ctx, obj, t, j)
	}
	children, err := r.kind.children(ctx, r.client, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(children) > 0 {
		r.setPhase(obj, phase{ready: metav1.ConditionFalse, reason: v1alpha1.ReasonDependentsExist,
			message: "waiting for dependents to be deleted first: " + strings.Join(children, ", "), reconciling: true},
			corev1.EventTypeNormal, "Destroy")
		return ctrl.Result{RequeueAfter: r.timing.ParentPoll}, nil
	}
	if st.StackName == "" && st.LastOperation == nil {
		return ctrl.Result{}, r.release(ctx, obj, "no stack was ever created for it")
	}
	// A suspended object is not destroyed either: its deletion waits until spec.suspend is
	// cleared (an update of an object being deleted is allowed). Data is never removed while
	// someone asked for nothing to run.
	suspended := obj.Suspended()
	r.setSuspended(obj, suspended, "its deletion waits; clear spec.suspend to destroy its stack")
	if suspended {
		r.setPhase(obj, phase{ready: metav1.ConditionFalse, reason: v1alpha1.ReasonSuspended,
			message: "deletion waits: spec.suspend is true; clear it to destroy the stack"}, corev1.EventTypeNormal, "Destroy")
		return ctrl.Result{RequeueAfter: r.timing.Resync}, nil
	}
	if op := st.LastOperation; op != nil && op.Kind == v1alpha1.OperationDestroy && op.Result == v1alpha1.OperationFailed && op.FinishedAt != nil {
		if wait := r.timing.backoff(r.jobs.failures(t.Stack)) - r.now().Sub(op.FinishedAt.Time); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	ctrl.LoggerFrom(ctx).Info("starting destroy", "stack", t.Stack)
	r.startDestroy(obj, t)
	return ctrl.Result{RequeueAfter: r.poll}, nil
}

// collectDestroy applies a finished destroy: on success the finalizer goes.
func (r *reconciler) collectDestroy(ctx context.Context, obj v1alpha1.Object, t kinds.Target, j *job) (ctrl.Result, error) {
	r.jobs.take(t.Stack)
	result := resultLabel(j.err)
	operationsTotal.WithLabelValues(string(r.kind.name()), string(j.kind), result).Inc()
	operationDuration.WithLabelValues(string(r.kind.name()), string(j.kind), result).Observe(j.finished.Sub(j.started).Seconds())
	switch {
	case j.err == nil:
		r.event(obj, corev1.EventTypeNormal, v1alpha1.ReasonSucceeded, "Destroy", "destroy succeeded: "+changeSummary(j.outcome)+"; stack removed")
		return ctrl.Result{}, r.release(ctx, obj, "")
	case canceled(j.err):
		return ctrl.Result{RequeueAfter: r.poll}, nil
	case errors.Is(j.err, runner.ErrManagedElsewhere):
		// The operator never took the stack over, so it does not destroy it either.
		return ctrl.Result{}, r.release(ctx, obj, r.clean(obj, j.err.Error())+"; the stack was left in place")
	}
	r.fail(obj, t, j, "Destroy")
	if errors.Is(j.err, runner.ErrDependentsExist) {
		return ctrl.Result{RequeueAfter: r.timing.ParentPoll}, nil
	}
	return ctrl.Result{RequeueAfter: r.timing.backoff(r.jobs.failures(t.Stack))}, nil
}

// release removes the finalizer: the object is gone once the API server sees it.
func (r *reconciler) release(ctx context.Context, obj v1alpha1.Object, note string) error {
	if note != "" {
		r.event(obj, corev1.EventTypeNormal, v1alpha1.ReasonDeleting, "Destroy", "nothing to destroy: "+note)
	}
	if t, err := kinds.TargetOf(obj); err == nil {
		r.jobs.recordResult(t.Stack, false)
	}
	r.failing.set(key(obj), false)
	r.revisions.forget(key(obj))
	controllerutil.RemoveFinalizer(obj, Finalizer)
	return client.IgnoreNotFound(r.client.Update(ctx, obj))
}

// pendingDecision is the valid value of the pending-decision annotation, if any.
func pendingDecision(obj v1alpha1.Object) string {
	switch d := obj.GetAnnotations()[v1alpha1.AnnotationPendingDecision]; d {
	case v1alpha1.PendingDecisionAdopt, v1alpha1.PendingDecisionForget:
		return d
	default:
		return ""
	}
}

// clearDecision removes the pending-decision annotation once applied: a decision is for one
// interrupted run, never a standing order for the next.
func (r *reconciler) clearDecision(ctx context.Context, obj v1alpha1.Object) {
	patch := client.RawPatch(client.Merge.Type(), fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, v1alpha1.AnnotationPendingDecision))
	stub := r.kind.newObj()
	stub.SetNamespace(obj.GetNamespace())
	stub.SetName(obj.GetName())
	if err := r.client.Patch(ctx, stub, patch); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "remove the pending-decision annotation")
	}
}

// setPhase sets the conditions for the object's current generation and records an event when
// the Ready reason or message changed (so repeated reconciles do not repeat the event).
func (r *reconciler) setPhase(obj v1alpha1.Object, p phase, eventType, action string) {
	st := obj.GetStackStatus()
	before := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	same := before != nil && before.Reason == p.reason && before.Message == p.message
	setPhase(st, obj.GetGeneration(), p)
	if !same {
		r.event(obj, eventType, p.reason, action, p.message)
	}
}

func (r *reconciler) event(obj v1alpha1.Object, eventType, reason, action, note string) {
	if r.events != nil {
		r.events.Eventf(obj, nil, eventType, reason, action, "%s", r.clean(obj, note))
	}
}

// clean hides the spec's plain-text secrets and bounds the length of a message.
func (r *reconciler) clean(obj v1alpha1.Object, msg string) string {
	var secrets []string
	obj.VisitSecrets(func(_ *field.Path, v string) string {
		secrets = append(secrets, v)
		return v
	})
	return redactor(secrets).clean(msg)
}
