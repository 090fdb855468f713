package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// metricValue reads a counter or gauge (prometheus' testutil pulls a module this build lacks).
func metricValue(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

func update(t *testing.T, h *harness, obj client.Object, mut func()) {
	t.Helper()
	h.get(obj)
	mut()
	require.NoError(t, h.c.Update(context.Background(), obj))
}

// bumpGeneration does what the API server does on a spec change (the fake client does not).
func bumpGeneration(obj client.Object) { obj.SetGeneration(obj.GetGeneration() + 1) }

func TestClusterGoesReadyAndResyncRunsNothing(t *testing.T) {
	c := newCluster("main")
	h := newHarness(t, c)

	h.settle(c)
	h.get(c)
	assert.Contains(t, c.Finalizers, Finalizer)
	ready := cond(c, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status, ready.Message)
	assert.Equal(t, v1alpha1.ReasonSucceeded, ready.Reason)
	assert.Nil(t, cond(c, v1alpha1.ConditionReconciling))
	assert.Nil(t, cond(c, v1alpha1.ConditionStalled))
	st := c.Status.StackStatus
	assert.EqualValues(t, 1, st.ObservedGeneration)
	assert.Equal(t, "cluster.main", st.StackName)
	assert.Equal(t, v1alpha1.ManagedByOperator, st.ManagedBy)
	assert.Equal(t, map[string]string{"host": "cluster.main.svc", "port": "5432"}, st.Outputs, "only non-secret outputs")
	assert.NotEmpty(t, st.OutputsDigest)
	require.NotNil(t, st.LastOperation)
	assert.Equal(t, v1alpha1.OperationSucceeded, st.LastOperation.Result)
	assert.EqualValues(t, 3, st.LastOperation.Changes.Create)
	assert.Equal(t, []string{"up cluster.main"}, h.eng.Ops())
	evs := h.drainEvents()
	assert.Len(t, evs, 2, "%v", evs)
	assert.Contains(t, evs[0], "Normal Progressing")
	assert.Contains(t, evs[1], "Normal Succeeded")
	h.requireNoSecret(c, evs)

	// A periodic resync of an unchanged object runs nothing and counts a skip.
	skips := metricValue(resyncSkips.WithLabelValues("TFRCluster"))
	res := h.reconcile(c)
	res2 := h.reconcile(c)
	assert.Equal(t, []string{"up cluster.main"}, h.eng.Ops(), "a resync must not run an operation")
	assert.Equal(t, skips+2, metricValue(resyncSkips.WithLabelValues("TFRCluster")))
	assert.Equal(t, 10*time.Minute, res.RequeueAfter)
	assert.Equal(t, res, res2)
	assert.Empty(t, h.drainEvents())

	// A spec change runs exactly one up.
	update(t, h, c, func() { c.Spec.Domain = "new.example.com"; bumpGeneration(c) })
	h.settle(c)
	h.get(c)
	assert.EqualValues(t, 2, c.Status.ObservedGeneration)
	assert.Equal(t, metav1.ConditionTrue, cond(c, v1alpha1.ConditionReady).Status)
	assert.EqualValues(t, 2, cond(c, v1alpha1.ConditionReady).ObservedGeneration)
	assert.Equal(t, []string{"up cluster.main", "up cluster.main"}, h.eng.Ops())

	// The reconcile-request annotation runs one up, echoed in status.
	update(t, h, c, func() { c.Annotations = map[string]string{v1alpha1.AnnotationReconcileRequest: "2026-01-01T12:00:00Z"} })
	h.settle(c)
	h.reconcile(c)
	h.get(c)
	assert.Equal(t, "2026-01-01T12:00:00Z", c.Status.LastHandledReconcileRequest)
	assert.Len(t, h.eng.Ops(), 3)
}

func TestInvalidSpecStallsWithoutRunning(t *testing.T) {
	s := newServer("acme", "robot", "acme")
	s.Spec.ConfzData = "[postgresql]\nport = = 5432\n"
	s.Spec.SecretData = map[string]string{"OPENAI_API_KEY": "sk-very-secret-key"}
	h := newHarness(t, s)
	res := h.settle(s)
	h.get(s)
	assert.Zero(t, res.RequeueAfter, "an invalid spec waits for a spec change")
	stalled := cond(s, v1alpha1.ConditionStalled)
	require.NotNil(t, stalled)
	assert.Equal(t, v1alpha1.ReasonInvalidSpec, stalled.Reason)
	assert.Contains(t, stalled.Message, "spec.confzData")
	assert.Equal(t, metav1.ConditionFalse, cond(s, v1alpha1.ConditionReady).Status)
	assert.EqualValues(t, 1, s.Status.ObservedGeneration)
	assert.Empty(t, h.eng.Ops(), "no engine run for an invalid spec")
	assert.Empty(t, h.eng.Calls())
	evs := h.drainEvents()
	require.Len(t, evs, 1)
	assert.Contains(t, evs[0], "Warning InvalidSpec")
	h.requireNoSecret(s, evs, "sk-very-secret-key")
}

func TestChildWaitsForParentAndRerunsWhenItsOutputsChange(t *testing.T) {
	c := newCluster("main")
	tn := newTenant("acme", "acme", "main")
	s := newServer("acme", "robot", "acme")
	h := newHarness(t, c, tn, s)

	// Children first: nothing runs while their parents are not Ready.
	h.settle(s)
	h.settle(tn)
	for _, o := range []v1alpha1.Object{tn, s} {
		h.get(o)
		r := cond(o, v1alpha1.ConditionReady)
		require.NotNil(t, r)
		assert.Equal(t, v1alpha1.ReasonWaitingForParent, r.Reason, "%T", o)
		assert.Equal(t, metav1.ConditionTrue, cond(o, v1alpha1.ConditionReconciling).Status)
		assert.Nil(t, cond(o, v1alpha1.ConditionStalled))
	}
	assert.Contains(t, cond(tn, v1alpha1.ConditionReady).Message, "TFRCluster main")
	assert.Empty(t, h.eng.Ops())

	h.settle(c)
	h.settle(tn)
	h.settle(s)
	assert.Equal(t, []string{"up cluster.main", "up tenant.acme.acme", "up server.acme.robot"}, h.eng.Ops())
	h.get(c)
	h.get(tn)
	assert.Equal(t, c.Status.OutputsDigest, tn.Status.ParentDigest)
	assert.Equal(t, "acme", tn.Status.TargetNamespace)

	// Resyncs of all three run nothing.
	for _, o := range []client.Object{c, tn, s} {
		h.reconcile(o)
	}
	assert.Len(t, h.eng.Ops(), 3)

	// The cluster's outputs change: its tenant runs again, and then — because the tenant's
	// outputs changed too — the server.
	h.eng.Edit("cluster.main", func(s *enginetest.Stack) { s.Outputs = program.Outputs{"host": program.NewOutput("moved", false)} })
	h.eng.Edit("tenant.acme.acme", func(s *enginetest.Stack) { s.Outputs = program.Outputs{"host": program.NewOutput("moved-too", false)} })
	update(t, h, c, func() {
		c.Annotations = map[string]string{v1alpha1.AnnotationReconcileRequest: "1"}
	})
	h.settle(c)
	h.settle(tn)
	h.settle(s)
	assert.Equal(t, []string{"up cluster.main", "up tenant.acme.acme", "up server.acme.robot",
		"up cluster.main", "up tenant.acme.acme", "up server.acme.robot"}, h.eng.Ops())
	h.settle(tn)
	h.settle(s)
	assert.Len(t, h.eng.Ops(), 6, "and then nothing more")
}

func TestParentMadeOverHTTPIsReadFromTheEngine(t *testing.T) {
	s := newServer("acme", "robot", "acme") // no TFRTenant: the tenant was made over HTTP
	h := newHarness(t, s)

	h.settle(s)
	h.get(s)
	r := cond(s, v1alpha1.ConditionReady)
	assert.Equal(t, v1alpha1.ReasonWaitingForParent, r.Reason, r.Message)
	assert.Contains(t, r.Message, "tenant.acme.acme")
	res := h.reconcile(s)
	assert.Equal(t, 10*time.Second, res.RequeueAfter, "a missing parent stack is polled, not retried at once")
	assert.Empty(t, h.eng.Ops(), "the runner found the parent missing before any up")

	h.put("tenant.acme.acme", engine.ManagedByAPI, nil, program.Outputs{"host": program.NewOutput("a", false)})
	h.advance(11 * time.Second)
	h.settle(s)
	h.get(s)
	assert.Equal(t, metav1.ConditionTrue, cond(s, v1alpha1.ConditionReady).Status)
	assert.Len(t, h.eng.Ops(), 1)
	h.reconcile(s)
	assert.Len(t, h.eng.Ops(), 1, "same parent outputs: nothing runs")

	h.put("tenant.acme.acme", engine.ManagedByAPI, nil, program.Outputs{"host": program.NewOutput("b", false)})
	h.settle(s)
	assert.Len(t, h.eng.Ops(), 2, "the HTTP tenant's outputs changed: the server runs again")
}

func TestConflictBacksOffThenConverges(t *testing.T) {
	c := newCluster("main")
	h := newHarness(t, c)
	conflict := &engine.OpError{Op: engine.OpUp, Stack: "cluster.main", Kind: engine.ErrConflict, Detail: "locked by someone@host pid 42"}
	h.eng.Fail("up cluster.main", conflict, conflict)

	res := h.settle(c)
	h.get(c)
	r := cond(c, v1alpha1.ConditionReady)
	assert.Equal(t, v1alpha1.ReasonUpdateConflict, r.Reason)
	assert.Contains(t, r.Message, "locked by")
	assert.Equal(t, metav1.ConditionTrue, cond(c, v1alpha1.ConditionReconciling).Status, "a conflict resolves itself")
	assert.Nil(t, cond(c, v1alpha1.ConditionStalled))
	assert.Equal(t, 10*time.Second, res.RequeueAfter)

	h.reconcile(c)
	assert.Len(t, h.eng.Ops(), 1, "no retry before the backoff")
	h.advance(10 * time.Second)
	res = h.settle(c)
	assert.Len(t, h.eng.Ops(), 2)
	assert.Equal(t, 20*time.Second, res.RequeueAfter, "the backoff doubles")
	assert.Equal(t, 1.0, metricValue(stacksFailing.WithLabelValues("TFRCluster")))

	h.advance(20 * time.Second)
	h.settle(c)
	h.get(c)
	assert.Equal(t, metav1.ConditionTrue, cond(c, v1alpha1.ConditionReady).Status)
	assert.Len(t, h.eng.Ops(), 3)
	assert.Equal(t, 0.0, metricValue(stacksFailing.WithLabelValues("TFRCluster")))
}

func TestFailureStallsAndRedactsSpecSecrets(t *testing.T) {
	c := newCluster("main")
	c.Spec.ImageRegistry = &v1alpha1.ImageRegistrySpec{Credentials: &v1alpha1.RegistryCredentials{
		Server: "r.example.com", Username: "u", Password: "registry-password-1"}}
	h := newHarness(t, c)
	h.eng.Fail("up cluster.main", &engine.OpError{Op: engine.OpUp, Stack: "cluster.main", Kind: engine.ErrFailed,
		Detail: "secret registry-password-1 rejected"})
	before := metricValue(operationsTotal.WithLabelValues("TFRCluster", "up", "updatefailed"))

	h.settle(c)
	h.get(c)
	stalled := cond(c, v1alpha1.ConditionStalled)
	require.NotNil(t, stalled)
	assert.Equal(t, v1alpha1.ReasonUpdateFailed, stalled.Reason)
	assert.Contains(t, stalled.Message, "[secret] rejected")
	assert.Equal(t, v1alpha1.OperationFailed, c.Status.LastOperation.Result)
	assert.Equal(t, before+1, metricValue(operationsTotal.WithLabelValues("TFRCluster", "up", "updatefailed")))
	evs := h.drainEvents()
	assert.True(t, strings.Contains(strings.Join(evs, "\n"), "Warning UpdateFailed"), "%v", evs)
	h.requireNoSecret(c, evs, "registry-password-1")
}

func TestStackManagedElsewhereIsNeverTakenOver(t *testing.T) {
	c := newCluster("main")
	h := newHarness(t, c)
	h.put("cluster.main", engine.ManagedByAPI, nil, nil)

	h.settle(c)
	h.get(c)
	stalled := cond(c, v1alpha1.ConditionStalled)
	require.NotNil(t, stalled)
	assert.Equal(t, v1alpha1.ReasonManagedElsewhere, stalled.Reason)
	assert.Contains(t, stalled.Message, "managed by api")

	// Deleting the CR leaves the other door's stack alone.
	require.NoError(t, h.c.Delete(context.Background(), c))
	h.settle(c)
	assert.True(t, apierrors.IsNotFound(h.c.Get(context.Background(), client.ObjectKeyFromObject(c), c)))
	assert.NotContains(t, strings.Join(h.eng.Ops(), ","), "destroy")
	_, err := h.eng.Status(context.Background(), "cluster.main")
	assert.NoError(t, err, "the stack is still there")
}

func TestDeleteWaitsForChildrenThenDestroysInOrder(t *testing.T) {
	ctx := context.Background()
	c := newCluster("main")
	tn := newTenant("acme", "acme", "main")
	h := newHarness(t, c, tn)
	h.settle(c)
	h.settle(tn)

	require.NoError(t, h.c.Delete(ctx, c))
	res := h.settle(c)
	h.get(c)
	r := cond(c, v1alpha1.ConditionReady)
	assert.Equal(t, v1alpha1.ReasonDependentsExist, r.Reason)
	assert.Contains(t, r.Message, "TFRTenant acme/acme")
	assert.Contains(t, c.Finalizers, Finalizer)
	assert.Equal(t, 10*time.Second, res.RequeueAfter)
	assert.NotContains(t, strings.Join(h.eng.Ops(), ","), "destroy")

	require.NoError(t, h.c.Delete(ctx, tn))
	h.settle(tn)
	assert.True(t, apierrors.IsNotFound(h.c.Get(ctx, client.ObjectKeyFromObject(tn), tn)), "the tenant is gone")
	h.settle(c)
	assert.True(t, apierrors.IsNotFound(h.c.Get(ctx, client.ObjectKeyFromObject(c), c)), "then the cluster")
	assert.Equal(t, []string{"up cluster.main", "up tenant.acme.acme",
		"destroy tenant.acme.acme", "remove tenant.acme.acme", "destroy cluster.main", "remove cluster.main"}, h.eng.Ops())
}

func TestDeleteWaitsForDependentStacksOfOtherDoors(t *testing.T) {
	ctx := context.Background()
	c := newCluster("main")
	tn := newTenant("acme", "acme", "main")
	h := newHarness(t, c, tn)
	h.settle(c)
	h.settle(tn)
	// A server made over HTTP on the CR tenant.
	h.put("server.acme.web", engine.ManagedByAPI, map[string]string{engine.TagParent: "tenant.acme.acme"}, nil)

	require.NoError(t, h.c.Delete(ctx, tn))
	h.settle(tn)
	h.get(tn)
	r := cond(tn, v1alpha1.ConditionReady)
	assert.Equal(t, v1alpha1.ReasonDependentsExist, r.Reason)
	assert.Contains(t, r.Message, "server.acme.web")
	assert.NotContains(t, strings.Join(h.eng.Ops(), ","), "destroy tenant")

	h.eng.Drop("server.acme.web")
	h.settle(tn)
	assert.True(t, apierrors.IsNotFound(h.c.Get(ctx, client.ObjectKeyFromObject(tn), tn)))
}

func TestDeleteCancelsARunningUp(t *testing.T) {
	ctx := context.Background()
	c := newCluster("main")
	h := newHarness(t, c)
	gate := h.eng.Hold(engine.OpUp)
	h.reconcile(c)
	<-gate.Entered
	h.get(c)
	assert.Equal(t, metav1.ConditionUnknown, cond(c, v1alpha1.ConditionReady).Status)
	assert.Equal(t, v1alpha1.ReasonProgressing, cond(c, v1alpha1.ConditionReconciling).Reason)
	assert.Equal(t, 1, h.jobs.running())

	require.NoError(t, h.c.Delete(ctx, c))
	h.settle(c)
	assert.True(t, apierrors.IsNotFound(h.c.Get(ctx, client.ObjectKeyFromObject(c), c)))
	assert.Equal(t, []string{"up cluster.main", "destroy cluster.main"}, h.eng.Ops(),
		"the canceled up made no stack, so destroy finds nothing to remove")
}

func TestDriftDetection(t *testing.T) {
	c := newCluster("main")
	h := newHarness(t, c)
	h.settle(c)
	h.drainEvents()

	h.reconcile(c)
	assert.Len(t, h.eng.Ops(), 1, "no drift check before the interval")

	drift := []engine.Step{{URN: "urn:pulumi:cluster.main::tfrs::kubernetes:core/v1:Secret::pull", Type: "kubernetes:core/v1:Secret",
		Op: engine.StepUpdate, Diffs: []string{"data.password"}}}
	h.eng.Steps = func(c enginetest.Call) []engine.Step {
		if c.Op != engine.OpPreview {
			return nil
		}
		return drift
	}
	h.advance(61 * time.Minute)
	h.settle(c)
	h.get(c)
	assert.Equal(t, []string{"up cluster.main", "refresh cluster.main", "preview cluster.main"}, h.eng.Ops())
	d := cond(c, v1alpha1.ConditionDrifted)
	require.NotNil(t, d)
	assert.Equal(t, metav1.ConditionTrue, d.Status)
	assert.Equal(t, "1 resource(s) differ from the spec: update kubernetes:core/v1:Secret pull (data.password)", d.Message)
	assert.Equal(t, metav1.ConditionTrue, cond(c, v1alpha1.ConditionReady).Status, "drift does not make the object unready")
	require.NotNil(t, c.Status.LastDriftCheck)
	assert.Contains(t, strings.Join(h.drainEvents(), "\n"), "Warning DriftDetected")

	// Report only: nothing runs until the next check.
	h.reconcile(c)
	assert.Len(t, h.eng.Ops(), 3)

	// With autoRemediate the drift is put right by an up.
	update(t, h, c, func() { c.Spec.DriftDetection.AutoRemediate = true })
	h.settle(c)
	h.get(c)
	assert.Equal(t, "up cluster.main", h.eng.Ops()[3])
	assert.Equal(t, metav1.ConditionFalse, cond(c, v1alpha1.ConditionDrifted).Status)

	// Off: never checked.
	update(t, h, c, func() { c.Spec.DriftDetection.Enabled = new(false) })
	h.advance(5 * time.Hour)
	h.settle(c)
	assert.Len(t, h.eng.Ops(), 4)
}

func TestPendingDecisionFromAnnotation(t *testing.T) {
	tn := newTenant("acme", "acme", "main")
	c := newCluster("main")
	h := newHarness(t, c, tn)
	h.settle(c)
	pending := &engine.OpError{Op: engine.OpUp, Stack: "tenant.acme.acme", Kind: engine.ErrPendingNeedsDecision,
		Pending: []engine.PendingOp{{URN: "urn:pulumi:tenant.acme.acme::tfrs::kubernetes:core/v1:PersistentVolumeClaim::data", Op: "creating", DataBearing: true}}}
	h.eng.Fail("up tenant.acme.acme", pending, pending)

	h.settle(tn)
	h.get(tn)
	stalled := cond(tn, v1alpha1.ConditionStalled)
	require.NotNil(t, stalled)
	assert.Equal(t, v1alpha1.ReasonPendingOperationNeedsDecision, stalled.Reason)
	assert.Contains(t, stalled.Message, v1alpha1.AnnotationPendingDecision+"=adopt")

	update(t, h, tn, func() { tn.Annotations = map[string]string{v1alpha1.AnnotationPendingDecision: "adopt"} })
	h.advance(time.Hour)
	h.settle(tn)
	h.get(tn)
	assert.Equal(t, metav1.ConditionTrue, cond(tn, v1alpha1.ConditionReady).Status)
	assert.Equal(t, map[string]engine.Decision{"urn:pulumi:tenant.acme.acme::tfrs::kubernetes:core/v1:PersistentVolumeClaim::data": engine.DecisionAdopt}, h.decisions())
	assert.NotContains(t, tn.Annotations, v1alpha1.AnnotationPendingDecision, "a decision is used once")
}

func TestPersonalTenantsWaitForTheSharedStackOwner(t *testing.T) {
	c := newCluster("main")
	older := newTenant("a", "alice", "main")
	younger := newTenant("b", "bob", "main")
	for i, tn := range []*v1alpha1.TFRTenant{older, younger} {
		tn.Spec.Type, tn.Spec.JobType = v1alpha1.TenantPersonal, "chat"
		tn.Spec.Approval = v1alpha1.ApprovalSpec{} // the cluster's spec.personal.approval applies
		tn.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC))
	}
	h := newHarness(t, c, older, younger)
	h.settle(c)

	h.settle(younger)
	h.get(younger)
	assert.Contains(t, cond(younger, v1alpha1.ConditionReady).Message, "TFRTenant a/alice")
	assert.Equal(t, []string{"up cluster.main"}, h.eng.Ops(), "the member waits for the owner")

	h.settle(older)
	h.settle(younger)
	assert.Equal(t, []string{"up cluster.main", "up tenant.personal-chat._shared", "up tenant.a.alice", "up tenant.b.bob"}, h.eng.Ops(),
		"the owner brings the shared stack up; the member only its own")
}

func TestFailedReconcileRequestIsRetriedWithBackoff(t *testing.T) {
	c := newCluster("main")
	h := newHarness(t, c)
	h.settle(c)
	conflict := &engine.OpError{Op: engine.OpUp, Stack: "cluster.main", Kind: engine.ErrConflict, Detail: "locked"}
	h.eng.Fail("up cluster.main", conflict)

	update(t, h, c, func() { c.Annotations = map[string]string{v1alpha1.AnnotationReconcileRequest: "now"} })
	res := h.settle(c)
	h.get(c)
	assert.Equal(t, "now", c.Status.LastHandledReconcileRequest, "attempted counts as handled")
	assert.Equal(t, v1alpha1.ReasonUpdateConflict, cond(c, v1alpha1.ConditionReady).Reason)
	assert.Equal(t, 10*time.Second, res.RequeueAfter)
	assert.Len(t, h.eng.Ops(), 2, "no immediate retry of the request")

	h.advance(10 * time.Second)
	h.reconcile(c)
	h.get(c)
	assert.Contains(t, cond(c, v1alpha1.ConditionReady).Message, "the last attempt ended with UpdateConflict")
	h.settle(c)
	h.get(c)
	assert.Equal(t, metav1.ConditionTrue, cond(c, v1alpha1.ConditionReady).Status)
}

// TestRevisionRecordedAndCounted: an up that succeeds records this build's revision in
// status.revision, and the stacks-by-revision gauge counts the object under it (under
// "none" before), until the object is gone.
func TestRevisionRecordedAndCounted(t *testing.T) {
	ctx := context.Background()
	c := newCluster("rev")
	h := newHarness(t, c)
	rev := v1alpha1.Revision{ID: "0123456789ab", Version: "v1.0.0", Commit: "fedcba"}
	for _, r := range h.recs {
		r.revision = func() *v1alpha1.Revision { return &rev }
	}
	gauge := func(id string) float64 { return metricValue(stacksByRevision.WithLabelValues("TFRCluster", id)) }
	h.settle(c)
	h.get(c)
	require.Equal(t, &rev, c.Status.Revision)
	assert.Equal(t, 1.0, gauge(rev.ID))
	assert.Zero(t, gauge("none"), "counted once, under its revision")

	// A newer build's up moves it.
	next := v1alpha1.Revision{ID: "ba9876543210", Version: "v1.1.0"}
	for _, r := range h.recs {
		r.revision = func() *v1alpha1.Revision { return &next }
	}
	update(t, h, c, func() { c.Spec.Domain = "next.example.com"; bumpGeneration(c) })
	h.settle(c)
	h.get(c)
	require.Equal(t, &next, c.Status.Revision)
	assert.Equal(t, 1.0, gauge(next.ID))
	assert.Zero(t, gauge(rev.ID))

	require.NoError(t, h.c.Delete(ctx, c))
	h.settle(c)
	assert.Zero(t, gauge(next.ID), "a deleted object is not counted")
}

// A suspended object runs nothing: not a parent cascade, a reconcile request nor its destroy
// (a due drift check: TestDecide); its status says so. Clearing spec.suspend runs what was due.
func TestSuspendedObjectRunsNothing(t *testing.T) {
	ctx := context.Background()
	c := newCluster("main")
	tn := newTenant("acme", "acme", "main")
	h := newHarness(t, c, tn)
	h.settle(c)
	h.settle(tn)
	require.Equal(t, []string{"up cluster.main", "up tenant.acme.acme"}, h.eng.Ops())
	h.drainEvents()

	update(t, h, tn, func() { tn.Spec.Suspend = true; bumpGeneration(tn) })
	// The cluster's outputs change and a reconcile is requested.
	h.eng.Edit("cluster.main", func(s *enginetest.Stack) { s.Outputs = program.Outputs{"host": program.NewOutput("moved", false)} })
	update(t, h, c, func() { c.Annotations = map[string]string{v1alpha1.AnnotationReconcileRequest: "1"} })
	h.settle(c)
	h.drainEvents() // the cluster's
	update(t, h, tn, func() { tn.Annotations = map[string]string{v1alpha1.AnnotationReconcileRequest: "1"} })
	res := h.settle(tn)
	assert.Equal(t, []string{"up cluster.main", "up tenant.acme.acme", "up cluster.main"}, h.eng.Ops(), "nothing runs on the suspended tenant")
	assert.Equal(t, 10*time.Minute, res.RequeueAfter)
	h.get(tn)
	s := cond(tn, v1alpha1.ConditionSuspended)
	require.NotNil(t, s)
	assert.Equal(t, metav1.ConditionTrue, s.Status)
	assert.Equal(t, v1alpha1.ReasonSuspended, s.Reason)
	assert.Contains(t, s.Message, "spec.suspend is true")
	assert.Equal(t, metav1.ConditionTrue, cond(tn, v1alpha1.ConditionReady).Status, "Ready keeps what the last up found")
	assert.EqualValues(t, 1, tn.Status.ObservedGeneration, "the suspended generation is not handled")
	evs := h.drainEvents()
	assert.Len(t, evs, 1, "one event when the suspension starts: %v", evs)
	assert.Contains(t, strings.Join(evs, "\n"), "Normal Suspended")

	// Its deletion waits too.
	require.NoError(t, h.c.Delete(ctx, tn))
	h.settle(tn)
	h.get(tn)
	assert.Contains(t, tn.Finalizers, Finalizer)
	r := cond(tn, v1alpha1.ConditionReady)
	assert.Equal(t, v1alpha1.ReasonSuspended, r.Reason)
	assert.Contains(t, r.Message, "deletion waits")
	assert.Len(t, h.eng.Ops(), 3, "no destroy while suspended")

	// Cleared: the destroy runs, and the object goes.
	update(t, h, tn, func() { tn.Spec.Suspend = false; bumpGeneration(tn) })
	h.settle(tn)
	assert.True(t, apierrors.IsNotFound(h.c.Get(ctx, client.ObjectKeyFromObject(tn), tn)))
	assert.Equal(t, []string{"up cluster.main", "up tenant.acme.acme", "up cluster.main", "destroy tenant.acme.acme", "remove tenant.acme.acme"}, h.eng.Ops())
}

// Clearing spec.suspend runs the up that was due, and removes the Suspended condition.
func TestResumeRunsWhatWasDue(t *testing.T) {
	c := newCluster("main")
	c.Spec.Suspend = true
	h := newHarness(t, c)
	h.settle(c)
	assert.Empty(t, h.eng.Ops(), "a new suspended object is not even created")
	h.get(c)
	require.NotNil(t, cond(c, v1alpha1.ConditionSuspended))

	update(t, h, c, func() { c.Spec.Suspend = false; bumpGeneration(c) })
	h.settle(c)
	h.get(c)
	assert.Equal(t, []string{"up cluster.main"}, h.eng.Ops())
	assert.Nil(t, cond(c, v1alpha1.ConditionSuspended))
	assert.Equal(t, metav1.ConditionTrue, cond(c, v1alpha1.ConditionReady).Status)
}
