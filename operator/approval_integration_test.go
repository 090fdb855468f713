//go:build integration

package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks/approval"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// The approval gate on the local control plane with the real engine: a Manual cluster (Helm
// charts) and a Manual lean tenant create nothing until approved, then exactly what was
// planned; an edit that comes with the approval discards the plan and proposes a new one; an
// approval of another id changes nothing; under OnDataLoss an edit that replaces a PVC waits
// while a resource-limit edit and a PostgreSQL size change apply at once.
func TestApprovalGate(t *testing.T) {
	e := integrationEnv(t)
	ctx := context.Background()
	op := e.startOperator(t, 0)
	t.Cleanup(op.stop)
	cl := testenv.StandInCluster("gate")
	cl.Spec.Approval.Mode = v1alpha1.ApprovalManual
	tn := testenv.Lean(testenv.StandInTenant(itNamespace, "gated", cl.Name))
	tn.Spec.Approval.Mode = v1alpha1.ApprovalManual
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}
	pendingFor := func(obj v1alpha1.Object, gen int64) func() bool {
		return func() bool {
			p, c := obj.GetStackStatus().PendingPlan, cond(obj, v1alpha1.ConditionApproved)
			return p != nil && p.Generation == gen && obj.GetGeneration() == gen && c != nil &&
				c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonAwaitingApproval
		}
	}
	annotate := func(obj v1alpha1.Object, id string, edit func()) {
		t.Helper()
		require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[v1alpha1.AnnotationApprove] = id
		obj.SetAnnotations(a)
		if edit != nil {
			edit()
		}
		require.NoError(t, e.c.Update(ctx, obj))
	}
	// applied checks that the up ran exactly the planned steps.
	applied := func(t *testing.T, obj v1alpha1.Object, p *v1alpha1.PendingPlan) {
		st := obj.GetStackStatus()
		require.NotNil(t, st.LastOperation.Changes)
		ch := st.LastOperation.Changes
		assert.Equal(t, map[string]int32{"create": p.Changes["create"], "update": p.Changes["update"], "replace": p.Changes["replace"], "delete": p.Changes["delete"]},
			map[string]int32{"create": ch.Create, "update": ch.Update, "replace": ch.Replace, "delete": ch.Delete}, "the up ran the planned steps")
		assert.Nil(t, st.PendingPlan)
		c := cond(obj, v1alpha1.ConditionApproved)
		require.NotNil(t, c)
		assert.Equal(t, metav1.ConditionTrue, c.Status)
		assert.Equal(t, v1alpha1.ReasonPlanApplied, c.Reason)
		assert.NotContains(t, obj.GetAnnotations(), v1alpha1.AnnotationApprove, "an approval is used once")
	}
	events := func(name, reason string) []string {
		evs, err := e.cs.EventsV1().Events("").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		var out []string
		for _, ev := range evs.Items {
			if ev.Regarding.Name == name && ev.Reason == reason {
				out = append(out, ev.Note)
			}
		}
		return out
	}
	var plan *v1alpha1.PendingPlan

	step("a Manual cluster plans and creates nothing", func(t *testing.T) {
		require.NoError(t, e.c.Create(ctx, cl))
		timed(t, "cluster plan", func() { e.waitFor(t, cl, 5*time.Minute, "a pending plan", pendingFor(cl, 1)) })
		plan = cl.Status.PendingPlan
		t.Logf("cluster plan %s: %v", plan.ID, plan.Changes)
		assert.NotZero(t, plan.Changes["create"])
		assert.Equal(t, string(approval.ReasonManual), plan.Reason)
		assert.Equal(t, v1alpha1.ReasonAwaitingApproval, cond(cl, v1alpha1.ConditionReady).Reason)
		res, err := op.eng.Resources(ctx, "cluster.gate")
		require.NoError(t, err)
		assert.Empty(t, res, "nothing created before the approval")
		assert.NotEmpty(t, events(cl.Name, v1alpha1.ReasonAwaitingApproval))
	})

	step("approving it applies exactly the plan (Helm charts included)", func(t *testing.T) {
		annotate(cl, plan.ID, nil)
		timed(t, "cluster up with the approved plan", func() {
			e.waitFor(t, cl, 8*time.Minute, "Ready", readyIs(cl, metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		})
		applied(t, cl, plan)
		assert.NotEmpty(t, events(cl.Name, v1alpha1.ReasonPlanApplied))
	})

	step("a Manual tenant plans and creates nothing", func(t *testing.T) {
		require.NoError(t, e.c.Create(ctx, tn))
		timed(t, "tenant plan", func() { e.waitFor(t, tn, 5*time.Minute, "a pending plan", pendingFor(tn, 1)) })
		plan = tn.Status.PendingPlan
		t.Logf("tenant plan %s: %v", plan.ID, plan.Changes)
		_, err := e.cs.CoreV1().Namespaces().Get(ctx, "gated", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the tenant namespace waits for the approval: %v", err)
	})

	step("an edit that comes with the approval: discarded, a new plan", func(t *testing.T) {
		old := plan
		annotate(tn, old.ID, func() { tn.Spec.Redis.Image = "redis/redis-stack-server:7.4.0-v4" })
		timed(t, "new plan", func() { e.waitFor(t, tn, 5*time.Minute, "a new pending plan", pendingFor(tn, 2)) })
		plan = tn.Status.PendingPlan
		assert.NotEqual(t, old.ID, plan.ID)
		stale := events(tn.Name, v1alpha1.ReasonPlanStale)
		require.NotEmpty(t, stale)
		assert.Contains(t, stale[0], old.ID)
		assert.NotContains(t, tn.Annotations, v1alpha1.AnnotationApprove)
		_, err := e.cs.CoreV1().Namespaces().Get(ctx, "gated", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the stale approval applied nothing: %v", err)
	})

	step("an approval of another id changes nothing", func(t *testing.T) {
		const other = "00000000deadbeef"
		annotate(tn, other, nil)
		e.waitFor(t, tn, time.Minute, "the annotation handled", func() bool { return tn.Annotations[v1alpha1.AnnotationApprove] == "" })
		ign := events(tn.Name, reasonApprovalIgnored)
		require.NotEmpty(t, ign)
		assert.Contains(t, ign[0], other)
		assert.Contains(t, ign[0], plan.ID)
		assert.Equal(t, plan, tn.Status.PendingPlan)
	})

	step("approving the new plan applies exactly it", func(t *testing.T) {
		annotate(tn, plan.ID, nil)
		timed(t, "tenant up with the approved plan", func() {
			e.waitFor(t, tn, 8*time.Minute, "Ready", readyIs(tn, metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		})
		applied(t, tn, plan)
		_, err := e.cs.CoreV1().Namespaces().Get(ctx, "gated", metav1.GetOptions{})
		require.NoError(t, err)
	})

	// OnDataLoss from here on: edits that lose nothing apply at once through their plan.
	edit := func(t *testing.T, what string, fn func()) {
		require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(tn), tn))
		fn()
		require.NoError(t, e.c.Update(ctx, tn))
		gen := tn.Generation
		timed(t, what, func() {
			e.waitFor(t, tn, 5*time.Minute, "Ready for the edit", func() bool {
				return tn.Status.ObservedGeneration == gen && readyIs(tn, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)()
			})
		})
		assert.Nil(t, tn.Status.PendingPlan)
	}
	step("OnDataLoss: a resource-limit edit applies without waiting", func(t *testing.T) {
		edit(t, "switch to OnDataLoss", func() { tn.Spec.Approval.Mode = v1alpha1.ApprovalOnDataLoss })
		edit(t, "redis memory limit", func() {
			tn.Spec.Redis.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("768Mi")}
		})
		assert.NotZero(t, tn.Status.LastOperation.Changes.Update)
		edit(t, "postgresql size 10Gi → 12Gi", func() { tn.Spec.PostgreSQL.Size = ptrQ("12Gi") })
		assert.Zero(t, tn.Status.LastOperation.Changes.Replace, "a CNPG Cluster's size is an in-place update")
		assert.NotZero(t, tn.Status.LastOperation.Changes.Update)
		// What the plan costs: the same kind of edit as a plain up (Auto), for the log.
		edit(t, "switch to Auto", func() { tn.Spec.Approval.Mode = v1alpha1.ApprovalAuto })
		edit(t, "redis memory limit, plain up (Auto)", func() {
			tn.Spec.Redis.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("640Mi")}
		})
		edit(t, "back to OnDataLoss", func() { tn.Spec.Approval.Mode = v1alpha1.ApprovalOnDataLoss })
		edit(t, "redis memory limit, preview + up --plan (OnDataLoss)", func() {
			tn.Spec.Redis.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("704Mi")}
		})
		// New RBAC in the gate's preview: Prometheus brings a Role and a RoleBinding to it, whose
		// server-side dry run must pass while the Role does not exist yet.
		edit(t, "prometheus on (a new Role and RoleBinding), through the gate", func() { tn.Spec.Prometheus.Enabled = ptr.To(true) })
		assert.NotZero(t, tn.Status.LastOperation.Changes.Create)
		_, err := e.cs.RbacV1().RoleBindings("gated").Get(ctx, "prometheus", metav1.GetOptions{})
		require.NoError(t, err, "the planned Prometheus RoleBinding exists")
	})

	// A PVC's storage class or access mode is immutable: the provider does not plan a replace
	// for it, the API server's dry run refuses the change (the preview fails, nothing waits).
	// What loses data in the tenant program is removing a data-bearing component: switching
	// TimescaleDB off deletes its CNPG Cluster.
	step("OnDataLoss: switching TimescaleDB on applies, switching it off waits", func(t *testing.T) {
		edit(t, "timescaledb on (a create)", func() { tn.Spec.TimescaleDB.Enabled = ptr.To(true) })
		assert.NotZero(t, tn.Status.LastOperation.Changes.Create)
		require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(tn), tn))
		tn.Spec.TimescaleDB.Enabled = ptr.To(false)
		require.NoError(t, e.c.Update(ctx, tn))
		timed(t, "data-loss plan", func() { e.waitFor(t, tn, 5*time.Minute, "a pending plan", pendingFor(tn, tn.Generation)) })
		p := tn.Status.PendingPlan
		t.Logf("data-loss plan %s: %v %v", p.ID, p.Changes, p.DataLoss)
		assert.Equal(t, string(approval.ReasonDataLoss), p.Reason)
		assert.Contains(t, strings.Join(p.DataLoss, "\n"), "delete "+diff.TypeCNPGCluster+" ")
		msg := cond(tn, v1alpha1.ConditionApproved).Message
		assert.Contains(t, msg, "kubectl annotate tfrtenant gated tfrs.io/approve="+p.ID)
		assert.False(t, strings.Contains(msg, "password"), "no values in the message: %s", msg)
		res, err := op.eng.Resources(ctx, "tenant."+itNamespace+".gated")
		require.NoError(t, err)
		assert.Contains(t, fmt.Sprint(res), diff.TypeCNPGCluster, "the TimescaleDB cluster is still there")
	})

	step("deleting objects with a pending plan destroys them", func(t *testing.T) {
		require.NoError(t, e.c.Delete(ctx, tn))
		timed(t, "tenant destroyed", func() { e.waitGone(t, tn, 5*time.Minute) })
		require.NoError(t, e.c.Delete(ctx, cl))
		timed(t, "cluster destroyed", func() { e.waitGone(t, cl, 5*time.Minute) })
		_, err := approval.NewStore(op.eng, engine.ManagedByOperator).Pending(ctx, "tenant."+itNamespace+".gated")
		assert.ErrorIs(t, err, approval.ErrNoPending, "the destroyed tenant's pending plan is gone")
	})
}

func ptrQ(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
