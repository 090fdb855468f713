package operator

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

var testTiming = timing{Resync: 10 * time.Minute, ParentPoll: 10 * time.Second, BackoffBase: 10 * time.Second, BackoffMax: 5 * time.Minute}

func TestBackoffIsExponentialAndCapped(t *testing.T) {
	got := []time.Duration{}
	for n := 0; n <= 8; n++ {
		got = append(got, testTiming.backoff(n))
	}
	assert.Equal(t, []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}, got)
}

// status builds a StackStatus: ready for generation gen (0: no Ready condition), finished at
// end (zero: no last operation).
func status(gen int64, ready metav1.ConditionStatus, reason string, end time.Time) *v1alpha1.StackStatus {
	st := &v1alpha1.StackStatus{ObservedGeneration: gen}
	if gen > 0 {
		setPhase(st, gen, phase{ready: ready, reason: reason})
	}
	if !end.IsZero() {
		res := v1alpha1.OperationSucceeded
		if ready != metav1.ConditionTrue {
			res = v1alpha1.OperationFailed
		}
		st.LastOperation = &v1alpha1.Operation{Kind: v1alpha1.OperationUp, Result: res, FinishedAt: ptrTime(end)}
	}
	return st
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	readyAt := func(end time.Time, mut ...func(*v1alpha1.StackStatus)) *v1alpha1.StackStatus {
		st := status(3, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, end)
		st.ParentDigest = "p1"
		for _, m := range mut {
			m(st)
		}
		return st
	}
	off := v1alpha1.DriftDetectionSpec{Enabled: ptr.To(false)}
	hourly := v1alpha1.DriftDetectionSpec{}
	base := func(st *v1alpha1.StackStatus, mut ...func(*facts)) facts {
		f := facts{Now: now, Generation: 3, Status: st, ParentDigest: "p1", ParentKnown: true, Drift: off}
		for _, m := range mut {
			m(&f)
		}
		return f
	}
	cases := []struct {
		name   string
		f      facts
		action action
		why    string
		after  time.Duration
	}{
		{"new object: first up", base(&v1alpha1.StackStatus{}), actUp, whyFirst, 0},
		{"unchanged resync runs nothing", base(readyAt(ago(time.Minute))), actNone, "", 10 * time.Minute},
		{"spec changed", base(readyAt(ago(time.Minute)), func(f *facts) { f.Generation = 4 }), actUp, whySpec, 0},
		{"spec changed while backing off runs now", base(status(3, metav1.ConditionFalse, v1alpha1.ReasonUpdateFailed, ago(time.Second)),
			func(f *facts) { f.Generation, f.Failures = 4, 3 }), actUp, whySpec, 0},
		{"interrupted run (restart): Ready Unknown retries at once", base(status(3, metav1.ConditionUnknown, v1alpha1.ReasonProgressing, time.Time{})), actUp, whyRetry, 0},
		{"failed: backoff not over", base(status(3, metav1.ConditionFalse, v1alpha1.ReasonUpdateFailed, ago(5*time.Second)),
			func(f *facts) { f.Failures = 2 }), actBackoff, whyRetry, 15 * time.Second},
		{"failed: backoff over", base(status(3, metav1.ConditionFalse, v1alpha1.ReasonUpdateFailed, ago(25*time.Second)),
			func(f *facts) { f.Failures = 2 }), actUp, whyRetry, 0},
		{"conflict after restart (no count): retry", base(status(3, metav1.ConditionFalse, v1alpha1.ReasonUpdateConflict, ago(time.Second))), actUp, whyRetry, 0},
		{"parent stack not ready: poll, not backoff", base(status(3, metav1.ConditionFalse, v1alpha1.ReasonWaitingForParent, ago(4*time.Second)),
			func(f *facts) { f.Failures = 5 }), actBackoff, whyRetry, 6 * time.Second},
		{"reconcile request", base(readyAt(ago(time.Minute)), func(f *facts) { f.Request = "r1" }), actUp, whyRequest, 0},
		{"reconcile request already handled", base(readyAt(ago(time.Minute), func(st *v1alpha1.StackStatus) { st.LastHandledReconcileRequest = "r1" }),
			func(f *facts) { f.Request = "r1" }), actNone, "", 10 * time.Minute},
		{"reconcile request skips the backoff", base(status(3, metav1.ConditionFalse, v1alpha1.ReasonUpdateFailed, ago(time.Second)),
			func(f *facts) { f.Request, f.Failures = "r2", 4 }), actUp, whyRequest, 0},
		{"parent outputs changed", base(readyAt(ago(time.Minute)), func(f *facts) { f.ParentDigest = "p2" }), actUp, whyParent, 0},
		{"parent digest unknown: no decision on it", base(readyAt(ago(time.Minute)), func(f *facts) { f.ParentDigest, f.ParentKnown = "", false }), actNone, "", 10 * time.Minute},
		{"up due but parent CR not Ready", base(&v1alpha1.StackStatus{}, func(f *facts) { f.ParentWaiting = "waiting for TFRCluster main to be Ready" }),
			actWaitParent, "waiting for TFRCluster main to be Ready", 10 * time.Second},
		{"drift check not due", base(readyAt(ago(20*time.Minute)), func(f *facts) { f.Drift = hourly }), actNone, "", 10 * time.Minute},
		{"drift check due soon", base(readyAt(ago(55*time.Minute)), func(f *facts) { f.Drift = hourly }), actNone, "", 5 * time.Minute},
		{"drift check due", base(readyAt(ago(61*time.Minute)), func(f *facts) { f.Drift = hourly }), actDriftCheck, "drift check due", 0},
		{"drift check counts from the last check", base(readyAt(ago(3*time.Hour), func(st *v1alpha1.StackStatus) { st.LastDriftCheck = ptrTime(ago(10 * time.Minute)) }),
			func(f *facts) { f.Drift = hourly }), actNone, "", 10 * time.Minute},
		{"drift check waits for a parent", base(readyAt(ago(2*time.Hour)), func(f *facts) { f.Drift, f.ParentWaiting = hourly, "x" }), actNone, "", 10 * time.Minute},
		{"interval 0s is off", base(readyAt(ago(2*time.Hour)), func(f *facts) {
			f.Drift = v1alpha1.DriftDetectionSpec{Interval: &metav1.Duration{}}
		}), actNone, "", 10 * time.Minute},
		{"drifted, report only", base(readyAt(ago(time.Minute), drifted), func(f *facts) { f.Drift = hourly }), actNone, "", 10 * time.Minute},
		{"drifted, auto-remediate", base(readyAt(ago(time.Minute), drifted), func(f *facts) {
			f.Drift = v1alpha1.DriftDetectionSpec{AutoRemediate: true}
		}), actUp, whyDrift, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := decide(tc.f, testTiming)
			assert.Equal(t, tc.action, v.Action, "action %s, want %s", v.Action, tc.action)
			if tc.why != "" {
				assert.Equal(t, tc.why, v.Why)
			}
			assert.Equal(t, tc.after, v.After)
		})
		// Whatever is due, a suspended object runs nothing and is looked at again at the
		// resync pace (its spec change brings it back at once).
		t.Run(tc.name+"/suspended", func(t *testing.T) {
			f := tc.f
			f.Suspended = true
			v := decide(f, testTiming)
			assert.Equal(t, actSuspended, v.Action, "action %s", v.Action)
			assert.Equal(t, testTiming.Resync, v.After)
			assert.Empty(t, v.Ignored)
			assert.False(t, v.Stale, "a pending plan is kept for after the suspension")
		})
	}
}

func drifted(st *v1alpha1.StackStatus) {
	st.Conditions = append(st.Conditions, metav1.Condition{Type: v1alpha1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDriftDetected})
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err               error
		reason            string
		stalled, backsOff bool
	}{
		{&kinds.InvalidError{Errors: field.ErrorList{field.Required(field.NewPath("spec", "image"), "")}}, v1alpha1.ReasonInvalidSpec, true, true},
		{&kinds.ParentError{Stack: "cluster.x"}, v1alpha1.ReasonWaitingForParent, false, false},
		{&runner.DependentsError{Stack: "tenant.a.b"}, v1alpha1.ReasonDependentsExist, false, false},
		{&runner.ManagedElsewhereError{Stack: "s", ManagedBy: engine.ManagedByAPI}, v1alpha1.ReasonManagedElsewhere, true, true},
		{&engine.OpError{Kind: engine.ErrConflict}, v1alpha1.ReasonUpdateConflict, false, true},
		{&engine.OpError{Kind: engine.ErrPendingNeedsDecision}, v1alpha1.ReasonPendingOperationNeedsDecision, true, true},
		{&engine.OpError{Kind: engine.ErrFailed}, v1alpha1.ReasonUpdateFailed, true, true},
		{fmt.Errorf("wrapped: %w", errors.New("anything else")), v1alpha1.ReasonUpdateFailed, true, true},
	}
	for _, tc := range cases {
		f := classify(tc.err)
		assert.Equal(t, tc.reason, f.reason, "%v", tc.err)
		assert.Equal(t, tc.stalled, f.stalled, "%v stalled", tc.err)
		assert.Equal(t, tc.backsOff, f.backoff, "%v backoff", tc.err)
	}
}

func TestOutputsNeverShowSecrets(t *testing.T) {
	out := &runner.Outcome{Target: kinds.Target{Stack: "tenant.a.b"}, Stacks: []runner.StackResult{{Stack: "tenant.a.b", Result: &engine.Result{
		Outputs: program.Outputs{
			"host":     program.NewOutput("pg.a.svc", false),
			"port":     program.NewOutput(5432.0, false),
			"password": program.NewOutput("hunter2-hunter2", true),
		}}}}}
	plain := plainOutputs(out)
	assert.Equal(t, map[string]string{"host": "pg.a.svc", "port": "5432"}, plain)

	d1 := outputsDigest(out)
	require.Len(t, d1, 16)
	assert.NotContains(t, d1, "hunter2")
	// A rotated password changes the digest, so children run again.
	out.Stacks[0].Result.Outputs["password"] = program.NewOutput("rotated-rotated", true)
	assert.NotEqual(t, d1, outputsDigest(out))
	assert.Equal(t, digestOf("tenant.a.b", out.Stacks[0].Result.Outputs), outputsDigest(out), "engine reads and up results digest alike")
}

func TestRedactor(t *testing.T) {
	r := redactor{"sk-live-123456", "abc"}
	assert.Equal(t, "key [secret] leaked; abc stays (too short to hide safely)", r.clean("key sk-live-123456 leaked; abc stays (too short to hide safely)"))
	long := r.clean(strings.Repeat("x", 3*maxMessage))
	assert.LessOrEqual(t, len(long), maxMessage+len("…"))
}

func TestDriftReport(t *testing.T) {
	d := driftOf([]engine.Step{
		{URN: "urn:pulumi:tenant.a.b::tfrs::pulumi:pulumi:Stack::tfrs-tenant.a.b", Type: "pulumi:pulumi:Stack", Op: engine.StepSame},
		{URN: "urn:pulumi:tenant.a.b::tfrs::tfrs:tenant:Redis$kubernetes:apps/v1:Deployment::redis", Type: "kubernetes:apps/v1:Deployment", Op: engine.StepUpdate,
			Diffs: []string{"spec.replicas", "spec.template.spec.containers[0].image", "metadata.labels", "metadata.annotations"}},
		{URN: "urn:pulumi:tenant.a.b::tfrs::kubernetes:core/v1:ConfigMap::cfg", Type: "kubernetes:core/v1:ConfigMap", Op: engine.StepCreate},
		{URN: "urn:pulumi:tenant.a.b::tfrs::kubernetes:core/v1:Service::svc", Type: "kubernetes:core/v1:Service", Op: engine.StepSame},
	})
	require.True(t, d.drifted())
	assert.Equal(t, []string{
		"update kubernetes:apps/v1:Deployment redis (spec.replicas, spec.template.spec.containers[0].image, metadata.labels, …)",
		"create kubernetes:core/v1:ConfigMap cfg",
	}, d.Changes)
	assert.Contains(t, d.message(), "2 resource(s) differ from the spec")
	assert.False(t, driftOf(nil).drifted())

	many := &driftReport{}
	for i := range 15 {
		many.Changes = append(many.Changes, fmt.Sprintf("update t r%d", i))
	}
	assert.Contains(t, many.message(), "and 5 more")
}

func TestApplyConflictsAreDrift(t *testing.T) {
	// The provider's message for a field another manager took (kubectl scale), as the engine
	// passes it on.
	msg := `preview tenant.default.acme: stack operation failed: error: Preview failed: 1 error occurred:
	* the Kubernetes API server reported that "acme/redis" failed to fully initialize or become live: Server-Side Apply field conflict detected. See https://www.pulumi.com/registry/packages/kubernetes/how-to-guides/managing-resources-with-server-side-apply/#handle-field-conflicts-on-existing-resources for troubleshooting help.
The resource managed by field manager "pulumi-kubernetes-3eb11e13" had an apply conflict: Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas; error: preview failed`
	assert.Equal(t, []string{`conflict acme/redis: conflict with "kubectl" using apps/v1: .spec.replicas`}, applyConflicts(msg))
	assert.Empty(t, applyConflicts("preview x: stack operation failed: something else"))
}

func TestPredicateOwnChanges(t *testing.T) {
	base := newCluster("main")
	base.ResourceVersion = "1"
	upd := func(mut func(c *v1alpha1.TFRCluster)) bool {
		n := base.DeepCopy()
		n.ResourceVersion = "2"
		mut(n)
		return ownChanges.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n})
	}
	assert.True(t, ownChanges.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: base.DeepCopy()}), "a resync (same resourceVersion) is looked at")
	assert.True(t, upd(func(c *v1alpha1.TFRCluster) { c.Generation++ }), "spec change")
	assert.True(t, upd(func(c *v1alpha1.TFRCluster) {
		c.Annotations = map[string]string{v1alpha1.AnnotationReconcileRequest: "x"}
	}), "annotation")
	assert.True(t, upd(func(c *v1alpha1.TFRCluster) { c.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), "deletion")
	assert.True(t, upd(func(c *v1alpha1.TFRCluster) { c.Finalizers = []string{Finalizer} }), "finalizers")
	assert.False(t, upd(func(c *v1alpha1.TFRCluster) { c.Status.OutputsDigest = "new" }), "the operator's own status patch")
	assert.False(t, upd(func(c *v1alpha1.TFRCluster) { c.Labels = map[string]string{"team": "a"} }), "a label")
}
