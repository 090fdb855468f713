//go:build integration

package operator

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestLeaderPods: with the operator's own RBAC on the real API server, only the elected
// replica claims leadership, and a Pod counts as gone only when it is deleted or its name
// belongs to a Pod with another UID.
func TestLeaderPods(t *testing.T) {
	e := integrationEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := e.asServiceAccount(operatorSA)

	start := func() (engine.PodProbe, context.CancelFunc, chan error) {
		mo := ManagerOptions{MetricsBindAddress: "0", HealthProbeBindAddress: "0",
			LeaderElection: true, LeaderElectionNamespace: "tfrs-system", Identity: NewIdentity()}
		mgr, err := NewManager(cfg, mo)
		require.NoError(t, err)
		mctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		return NewLeaderPods(mgr, mo), stop, done
	}
	leader, stopLeader, leaderDone := start()
	require.Eventually(t, func() bool { return leader.Leading(ctx) }, time.Minute, 200*time.Millisecond, "the only replica is elected")
	standby, stopStandby, standbyDone := start()
	time.Sleep(2 * time.Second)
	assert.False(t, standby.Leading(ctx), "a standby never breaks another pod's lock")
	defer func() { stopStandby(); <-standbyDone }()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tfrs-lost-replica", Namespace: itNamespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tfrs", Image: "tfrs"}}}}
	require.NoError(t, e.c.Create(ctx, pod))
	ref := engine.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}

	gone, err := leader.PodGone(ctx, ref)
	require.NoError(t, err)
	assert.False(t, gone, "the Pod exists: its lock is live")
	other := ref
	other.UID = "a-previous-pod-of-that-name"
	gone, err = leader.PodGone(ctx, other)
	require.NoError(t, err)
	assert.True(t, gone, "same name, another UID: the recorded pod is gone")

	require.NoError(t, e.c.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	}, time.Minute, 200*time.Millisecond)
	gone, err = leader.PodGone(ctx, ref)
	require.NoError(t, err)
	assert.True(t, gone, "deleted: gone")

	// Losing the Lease ends the claim at once, before the process exits.
	stopLeader()
	<-leaderDone
	assert.False(t, leader.Leading(ctx))
	require.Eventually(t, func() bool { return standby.Leading(ctx) }, time.Minute, 200*time.Millisecond, "the standby takes over")

	off := NewLeaderPods(nil, ManagerOptions{})
	assert.False(t, off.Leading(ctx), "without leader election nobody breaks other pods' locks")
}

// TestAPILockLease: `tfrs serve --leader-elect` replicas, with the API's own RBAC
// (config/api/rbac.yaml) on the real API server: exactly one holds the tfrs-api-locks Lease
// and may judge other pods' locks; when it stops, it releases the Lease and another takes it.
func TestAPILockLease(t *testing.T) {
	e := integrationEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, f := range []string{"service_account.yaml", "rbac.yaml"} {
		out, err := exec.CommandContext(ctx, "kubectl", "--kubeconfig", e.cp.KubeconfigPath, "apply", "-f",
			filepath.Join(testenv.RepoRoot(), "config", "api", f)).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	cfg := e.asServiceAccount("system:serviceaccount:tfrs-system:tfrs-api")
	log := slog.New(slog.DiscardHandler)
	start := func() (engine.PodProbe, context.CancelFunc) {
		lctx, stop := context.WithCancel(ctx)
		p, err := StartAPILockLease(lctx, cfg, "tfrs-system", "", log)
		require.NoError(t, err)
		return p, stop
	}
	a, stopA := start()
	b, stopB := start()
	defer stopB()
	require.Eventually(t, func() bool { return a.Leading(ctx) || b.Leading(ctx) }, time.Minute, 200*time.Millisecond, "one replica is elected")
	holder, stopHolder, other := a, stopA, b
	if b.Leading(ctx) {
		holder, stopHolder, other = b, stopB, a
	}
	time.Sleep(3 * time.Second) // more than a retry period: the other one tried and lost
	require.True(t, holder.Leading(ctx))
	require.False(t, other.Leading(ctx), "never two holders")

	// Its reads of pods work with the API's RBAC: a missing Pod is gone.
	gone, err := holder.PodGone(ctx, engine.PodRef{Namespace: "tfrs-system", Name: "tfrs-api-no-such-pod", UID: "u"})
	require.NoError(t, err)
	require.True(t, gone)

	stopHolder()
	require.Eventually(t, func() bool { return !holder.Leading(ctx) && other.Leading(ctx) }, 30*time.Second, 200*time.Millisecond,
		"a stopped holder releases the Lease and the other takes over")
	stopA()
}

// TestLostLeaseWindsDown: leadership is a fence. When the Lease is taken away, controller-
// runtime's Start returns at once without waiting for the stack operations; WindDown then
// cancels them and returns only after they have ended (the engine's cancel path: the CLI gets
// SIGINT and its grace). Here a job stands in for an operation that needs 2 s to stop.
func TestLostLeaseWindsDown(t *testing.T) {
	e := integrationEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := e.asServiceAccount(operatorSA)
	const ns = "tfrs-system"
	mo := ManagerOptions{MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionNamespace: ns, Identity: NewIdentity()}
	mgr, err := NewManager(cfg, mo)
	require.NoError(t, err)
	op := &Operator{jobs: newJobs()}
	require.NoError(t, mgr.Add(op.jobs))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	probe := NewLeaderPods(mgr, mo)
	require.Eventually(t, func() bool { return probe.Leading(ctx) }, time.Minute, 200*time.Millisecond)

	var stopped time.Time
	canceled := make(chan struct{})
	op.jobs.start("tenant.ns.a", &job{}, func(jctx context.Context, _ *job) {
		<-jctx.Done()
		close(canceled)
		time.Sleep(2 * time.Second) // the CLI saving its state after SIGINT
		stopped = time.Now()
	}, func() {})

	// Another holder takes the Lease (as after this process stalled past its term).
	var l coordinationv1.Lease
	require.NoError(t, e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: LeaderElectionID}, &l))
	l.Spec.HolderIdentity = ptr.To("another-replica")
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	require.NoError(t, e.c.Update(ctx, &l))

	var startErr error
	select {
	case startErr = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the manager did not stop after losing its Lease")
	}
	require.ErrorContains(t, startErr, "leader election lost")
	returned := time.Now()
	require.False(t, probe.Leading(ctx), "a replica that lost the Lease never breaks locks")
	op.WindDown()
	select {
	case <-canceled:
	default:
		t.Fatal("the running operation was not canceled")
	}
	require.False(t, stopped.IsZero(), "WindDown returned before the operation had ended")
	t.Logf("Start returned %s before the operation had stopped; WindDown waited for it", stopped.Sub(returned).Round(time.Millisecond))
	require.Zero(t, op.Running())
}
