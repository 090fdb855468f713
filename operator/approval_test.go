package operator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/approval"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
)

// The approval gate's decisions, as facts → verdict.
func TestDecideApproval(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const planID, otherID = "0123456789abcdef", "fedcba9876543210"
	// applied: generation 3 is up and Ready; the stack holds resources (it has outputs).
	applied := func(mut ...func(*v1alpha1.StackStatus)) *v1alpha1.StackStatus {
		st := status(3, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, now.Add(-time.Minute))
		st.ParentDigest, st.OutputsDigest = "p1", "o1"
		for _, m := range mut {
			m(st)
		}
		return st
	}
	// waiting: a plan for generation 3 waits for approval.
	waiting := func(mut ...func(*v1alpha1.StackStatus)) *v1alpha1.StackStatus {
		return applied(append([]func(*v1alpha1.StackStatus){func(st *v1alpha1.StackStatus) {
			st.PendingPlan = &v1alpha1.PendingPlan{ID: planID, Generation: 3, Reason: string(approval.ReasonManual)}
			setPhase(st, 3, phase{ready: metav1.ConditionFalse, reason: v1alpha1.ReasonAwaitingApproval})
		}}, mut...)...)
	}
	f := func(mode v1alpha1.ApprovalMode, gen int64, st *v1alpha1.StackStatus, mut ...func(*facts)) facts {
		x := facts{Now: now, Generation: gen, Status: st, ParentDigest: "p1", ParentKnown: true,
			Drift: v1alpha1.DriftDetectionSpec{Enabled: ptr.To(false)}, Approval: mode}
		for _, m := range mut {
			m(&x)
		}
		return x
	}
	approve := func(id string) func(*facts) { return func(x *facts) { x.Approve = id } }
	cases := []struct {
		name    string
		f       facts
		action  action
		why     string
		stale   bool
		ignored string
	}{
		// Which ups go through a plan.
		{"Auto: a spec change is a plain up", f(v1alpha1.ApprovalAuto, 4, applied()), actUp, whySpec, false, ""},
		{"OnDataLoss: the first up cannot lose data, plain up", f(v1alpha1.ApprovalOnDataLoss, 1, &v1alpha1.StackStatus{}), actUp, whyFirst, false, ""},
		{"OnDataLoss: a spec change of a stack with resources plans", f(v1alpha1.ApprovalOnDataLoss, 4, applied()), actPlan, whySpec, false, ""},
		{"Manual: even the first up plans", f(v1alpha1.ApprovalManual, 1, &v1alpha1.StackStatus{}), actPlan, whyFirst, false, ""},
		{"Manual: a parent's new outputs plan", f(v1alpha1.ApprovalManual, 3, applied(), func(x *facts) { x.ParentDigest = "p2" }), actPlan, whyParent, false, ""},
		{"OnDataLoss: drift remediation goes through the gate", f(v1alpha1.ApprovalOnDataLoss, 3, applied(func(st *v1alpha1.StackStatus) {
			st.Conditions = append(st.Conditions, metav1.Condition{Type: v1alpha1.ConditionDrifted, Status: metav1.ConditionTrue})
		}), func(x *facts) { x.Drift.AutoRemediate = true }), actPlan, whyDrift, false, ""},
		{"Manual: nothing due, nothing runs", f(v1alpha1.ApprovalManual, 3, applied()), actNone, "", false, ""},

		// A waiting plan.
		{"waiting, no approval: nothing runs", f(v1alpha1.ApprovalManual, 3, waiting()), actAwait, "", false, ""},
		{"waiting, drift remediation due: still waits", f(v1alpha1.ApprovalManual, 3, waiting(func(st *v1alpha1.StackStatus) {
			st.Conditions = append(st.Conditions, metav1.Condition{Type: v1alpha1.ConditionDrifted, Status: metav1.ConditionTrue})
		}), func(x *facts) { x.Drift.AutoRemediate = true }), actAwait, "", false, ""},
		{"approved: apply it", f(v1alpha1.ApprovalManual, 3, waiting(), approve(planID)), actApply, whyApprove, false, ""},
		{"approved, parent not Ready: wait for it", f(v1alpha1.ApprovalManual, 3, waiting(), approve(planID),
			func(x *facts) { x.ParentWaiting = "waiting for TFRCluster c" }), actWaitParent, "waiting for TFRCluster c", false, ""},
		{"another id: ignored, still waits", f(v1alpha1.ApprovalManual, 3, waiting(), approve(otherID)), actAwait, "", false, otherID},
		{"garbage id: ignored", f(v1alpha1.ApprovalManual, 3, waiting(), approve("yes please")), actAwait, "", false, "yes please"},
		{"spec edited while waiting: stale, plan again", f(v1alpha1.ApprovalManual, 4, waiting()), actPlan, whySpec, true, ""},
		{"spec edited with the approval: stale, the approval is not applied", f(v1alpha1.ApprovalManual, 4, waiting(), approve(planID)), actPlan, whySpec, true, ""},
		{"switched to Auto while waiting: stale, plain up", f(v1alpha1.ApprovalAuto, 4, waiting()), actUp, whySpec, true, ""},
		{"a reconcile request asks for a new plan", f(v1alpha1.ApprovalManual, 3, waiting(), func(x *facts) { x.Request = "again" }), actPlan, whyRequest, true, ""},

		// An approval with no plan waiting.
		{"approval without a pending plan: ignored", f(v1alpha1.ApprovalManual, 3, applied(), approve(planID)), actNone, "", false, planID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := decide(tc.f, testTiming)
			assert.Equal(t, tc.action.String(), v.Action.String())
			assert.Equal(t, tc.why, v.Why)
			assert.Equal(t, tc.stale, v.Stale, "stale")
			assert.Equal(t, tc.ignored, v.Ignored, "ignored")
		})
	}

	t.Run("a failed approved apply retries with backoff", func(t *testing.T) {
		st := waiting(func(st *v1alpha1.StackStatus) {
			st.LastOperation = &v1alpha1.Operation{Kind: v1alpha1.OperationUp, Result: v1alpha1.OperationFailed, FinishedAt: ptrTime(now.Add(-3 * time.Second))}
		})
		v := decide(f(v1alpha1.ApprovalManual, 3, st, approve(planID), func(x *facts) { x.Failures = 1 }), testTiming)
		assert.Equal(t, actBackoff.String(), v.Action.String())
		assert.Equal(t, 7*time.Second, v.After)
		v = decide(f(v1alpha1.ApprovalManual, 3, st, approve(planID), func(x *facts) { x.Failures = 1; x.Now = now.Add(10 * time.Second) }), testTiming)
		assert.Equal(t, actApply.String(), v.Action.String())
	})
}

// status.pendingPlan shows a waiting record: its id, counts and data-loss list. (The gate
// rule itself is tested in stacks/approval.)
func TestPendingPlanOf(t *testing.T) {
	change := func(op engine.StepOp, typ string) diff.Change {
		c := diff.Change{Stack: "tenant.default.acme", Op: op, Type: typ, Name: "x"}
		c.DataLoss = diff.IsDataLoss(c)
		return c
	}
	rep := &diff.Report{}
	for _, c := range []diff.Change{change(engine.StepUpdate, "kubernetes:apps/v1:Deployment"),
		change(engine.StepReplace, diff.TypePVC), change(engine.StepDelete, diff.TypeCNPGCluster)} {
		rep.Changes = append(rep.Changes, c)
		if c.DataLoss {
			rep.DataLoss = append(rep.DataLoss, c)
		}
	}
	own := &engine.Plan{ID: "0123456789abcdef", Stack: "tenant.default.acme"}
	rec := approval.NewRecord(own.Stack, map[string]*engine.Plan{own.Stack: own}, approval.ReasonDataLoss, rep, 4, time.Unix(0, 0))
	p := pendingPlanOf(rec, metav1.NewTime(time.Unix(0, 0)))
	assert.Equal(t, "0123456789abcdef", p.ID)
	assert.Equal(t, int64(4), p.Generation)
	assert.Equal(t, string(approval.ReasonDataLoss), p.Reason)
	assert.Equal(t, map[string]int32{"update": 1, "replace": 1, "delete": 1}, p.Changes)
	assert.Equal(t, []string{"replace " + diff.TypePVC + " x", "delete " + diff.TypeCNPGCluster + " x"}, p.DataLoss)
	assert.Equal(t, "1 update, 1 replace, 1 delete", planCounts(p))
	assert.Equal(t, "spec.approval.mode OnDataLoss: stateful data would be replaced or deleted", waitText(p))
}

// memPlans is an in-memory plan store over a memblob bucket.
type memPlans struct {
	plans map[string]*engine.Plan // stack/id
	bkt   *blob.Bucket
}

func (m *memPlans) StorePlan(_ context.Context, p *engine.Plan) error {
	m.plans[p.Stack+"/"+p.ID] = p
	return nil
}

func (m *memPlans) LoadPlan(_ context.Context, stack, id string) (*engine.Plan, error) {
	if p, ok := m.plans[stack+"/"+id]; ok {
		return p, nil
	}
	return nil, engine.ErrPlanNotFound
}

func (m *memPlans) DiscardPlans(_ context.Context, stack string, keep ...string) error {
	for k := range m.plans {
		if strings.HasPrefix(k, stack+"/") {
			delete(m.plans, k)
		}
	}
	return nil
}

func (m *memPlans) Bucket(context.Context) (*blob.Bucket, error) { return m.bkt, nil }

// planningEngine adds saved plans to the fake engine: a Preview with SavePlan saves a plan of
// the steps it reports (steps, for the stacks named there), an Up with a plan records it and,
// when refuse is set, fails as Pulumi does when the program would leave the plan.
type planningEngine struct {
	*enginetest.Engine
	*memPlans
	mu      sync.Mutex
	steps   map[string][]engine.Step // per stack, what a preview reports
	refuse  bool
	applied []string // ids of the plans Ups ran with
	n       int
}

func (p *planningEngine) Preview(ctx context.Context, req engine.Request) (*engine.Result, error) {
	res, err := p.Engine.Preview(ctx, req)
	if err != nil || !req.SavePlan {
		return res, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	res.Steps = p.steps[req.Stack]
	res.Plan = &engine.Plan{ID: fmt.Sprintf("%016x", p.n), Stack: req.Stack, Meta: req.PlanMeta}
	return res, nil
}

func (p *planningEngine) Up(ctx context.Context, req engine.Request) (*engine.Result, error) {
	if req.Plan != nil {
		p.mu.Lock()
		p.applied = append(p.applied, req.Plan.ID)
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			return nil, fmt.Errorf("%w: resource violates plan", engine.ErrPlanMismatch)
		}
	}
	return p.Engine.Up(ctx, req)
}

// usePlans runs the reconcilers on the planning engine.
func (h *harness) usePlans() *planningEngine {
	pe := &planningEngine{Engine: h.eng, memPlans: &memPlans{plans: map[string]*engine.Plan{}, bkt: memblob.OpenBucket(nil)},
		steps: map[string][]engine.Step{}}
	h.useEngine(pe)
	for _, r := range h.recs {
		r.plans = approval.NewStore(pe, engine.ManagedByOperator)
	}
	return pe
}

func hasEvent(evs []string, reason string) bool {
	for _, e := range evs {
		if strings.Contains(e, " "+reason+" ") {
			return true
		}
	}
	return false
}

// The gate in the reconcile core: a Manual cluster plans, runs nothing, applies exactly the
// approved plan once; a plan the up refuses is discarded and proposed again; OnDataLoss
// applies a loss-free plan at once and holds a data-losing one.
func TestApprovalGateInTheCore(t *testing.T) {
	c := newCluster("main")
	c.Spec.Approval.Mode = v1alpha1.ApprovalManual
	h := newHarness(t, c)
	pe := h.usePlans()
	create := engine.Step{URN: "urn:pulumi:cluster.main::tfrs::kubernetes:core/v1:Namespace::istio-system", Type: diff.TypeNamespace, Op: engine.StepCreate}
	pe.steps["cluster.main"] = []engine.Step{create}

	h.settle(c)
	h.get(c)
	p := c.Status.PendingPlan
	require.NotNil(t, p, "status: %+v", c.Status.Conditions)
	assert.Equal(t, string(approval.ReasonManual), p.Reason)
	assert.Equal(t, map[string]int32{"create": 1}, p.Changes)
	assert.Equal(t, []string{"preview cluster.main"}, h.eng.Ops(), "a Manual first up only plans")
	assert.Equal(t, v1alpha1.ReasonAwaitingApproval, cond(c, v1alpha1.ConditionApproved).Reason)
	assert.True(t, hasEvent(h.drainEvents(), v1alpha1.ReasonAwaitingApproval))

	// A resync runs nothing while the plan waits; a wrong id neither.
	h.advance(time.Hour)
	update(t, h, c, func() { c.Annotations = map[string]string{v1alpha1.AnnotationApprove: "00000000000000ff"} })
	h.settle(c)
	h.get(c)
	assert.Equal(t, []string{"preview cluster.main"}, h.eng.Ops())
	assert.Equal(t, p.ID, c.Status.PendingPlan.ID)
	assert.NotContains(t, c.Annotations, v1alpha1.AnnotationApprove)
	assert.True(t, hasEvent(h.drainEvents(), reasonApprovalIgnored))

	update(t, h, c, func() { c.Annotations = map[string]string{v1alpha1.AnnotationApprove: p.ID} })
	h.settle(c)
	h.get(c)
	assert.Equal(t, []string{p.ID}, pe.applied, "the up ran exactly the approved plan")
	assert.Equal(t, metav1.ConditionTrue, cond(c, v1alpha1.ConditionReady).Status)
	assert.Equal(t, v1alpha1.ReasonPlanApplied, cond(c, v1alpha1.ConditionApproved).Reason)
	assert.Nil(t, c.Status.PendingPlan)
	assert.NotContains(t, c.Annotations, v1alpha1.AnnotationApprove)
	assert.Empty(t, pe.plans, "an applied plan is discarded")
	h.settle(c)
	assert.Equal(t, []string{p.ID}, pe.applied, "never applied twice")

	// The program now leaves the plan: refused, discarded, proposed again.
	update(t, h, c, func() { c.Spec.Domain = "other.example.com"; bumpGeneration(c) })
	h.settle(c)
	h.get(c)
	p2 := c.Status.PendingPlan
	require.NotNil(t, p2)
	pe.refuse = true
	update(t, h, c, func() { c.Annotations = map[string]string{v1alpha1.AnnotationApprove: p2.ID} })
	h.settle(c)
	h.get(c)
	assert.Nil(t, c.Status.PendingPlan)
	assert.Equal(t, v1alpha1.ReasonPlanStale, cond(c, v1alpha1.ConditionReady).Reason)
	assert.Equal(t, v1alpha1.ReasonPlanStale, cond(c, v1alpha1.ConditionApproved).Reason)
	assert.True(t, hasEvent(h.drainEvents(), v1alpha1.ReasonPlanStale))
	assert.Empty(t, pe.plans)
	pe.refuse = false
	h.advance(time.Minute) // the refusal counts for the backoff
	h.settle(c)
	h.get(c)
	p3 := c.Status.PendingPlan
	require.NotNil(t, p3, "a new plan is proposed")
	assert.NotEqual(t, p2.ID, p3.ID)

	// OnDataLoss: a loss-free change applies at once, through its plan; a data-losing one waits.
	update(t, h, c, func() { c.Spec.Approval.Mode = v1alpha1.ApprovalOnDataLoss; bumpGeneration(c) })
	h.settle(c)
	h.get(c)
	assert.Nil(t, c.Status.PendingPlan, "the stale Manual plan is gone and nothing is lost")
	assert.Equal(t, metav1.ConditionTrue, cond(c, v1alpha1.ConditionReady).Status)
	assert.Len(t, pe.applied, 3, "applied through the plan just saved")

	tn := newTenant("acme", "acme", "main")
	tn.Spec.Approval = v1alpha1.ApprovalSpec{} // the default, OnDataLoss
	require.NoError(t, h.c.Create(context.Background(), tn))
	h.settle(tn)
	h.get(tn)
	assert.Equal(t, metav1.ConditionTrue, cond(tn, v1alpha1.ConditionReady).Status)
	assert.Len(t, pe.applied, 3, "a first up cannot lose data: a plain up")
	pe.steps["tenant.acme.acme"] = []engine.Step{{URN: "urn:pulumi:tenant.acme.acme::tfrs::tfrs:tenant:TimescaleDB$kubernetes:postgresql.cnpg.io/v1:Cluster::timescaledb-cluster",
		Type: diff.TypeCNPGCluster, Op: engine.StepDelete}}
	update(t, h, tn, func() { tn.Spec.TimescaleDB.Enabled = ptr.To(false); bumpGeneration(tn) })
	h.settle(tn)
	h.get(tn)
	require.NotNil(t, tn.Status.PendingPlan)
	assert.Equal(t, string(approval.ReasonDataLoss), tn.Status.PendingPlan.Reason)
	assert.Equal(t, []string{"delete " + diff.TypeCNPGCluster + " timescaledb-cluster"}, tn.Status.PendingPlan.DataLoss)
	assert.Len(t, pe.applied, 3)
}

// A refused plan is reported by resource name, never by Pulumi's diff (its values may be
// secret).
func TestStaleCause(t *testing.T) {
	err := fmt.Errorf("%w: error: resource urn:pulumi:tenant.a.b::tfrs::tfrs:tenant:Redis$kubernetes:core/v1:Secret::redis-auth violates plan: properties changed: ~~data[{password:hunter2-secret}]", engine.ErrPlanMismatch)
	got := staleCause(err)
	assert.Equal(t, "Pulumi refused steps outside the plan for: redis-auth", got)
	assert.NotContains(t, got, "hunter2")
	assert.Equal(t, "Pulumi refused a step outside the plan", staleCause(engine.ErrPlanMismatch))
}
