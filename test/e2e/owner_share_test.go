//go:build e2e

package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// TestPersonalOwnerShare runs personal robots through the runner (the path of every door) on
// a cluster whose spec.personal.ownerShare is 2 robots and 1 CPU per owner. What the runner
// counts is what the API server holds: alice's robots are refused, at spec.tenantRef and
// before anything changes, once they would pass her share, by count or by CPU; bob's robots
// in the same namespace are not hers; a change that fits goes through.
func TestPersonalOwnerShare(t *testing.T) {
	e := newEnv(t, 20*time.Minute)
	ctx := e.ctx
	cs, err := e.cp.Client()
	require.NoError(t, err)

	run, op := personalJobType(t, e, func(tc *v1alpha1.TFRCluster) {
		tc.Spec.Personal.OwnerShare = v1alpha1.OwnerShare{Robots: ptr.To(int32(2)), CPU: ptr.To(resource.MustParse("1"))}
	}, "alice", "bob")

	// robot is owner's robot chat/id whose two workers each hold cpu per replica.
	robot := func(owner, id, cpu string, apiReplicas int32) *v1alpha1.TFRServer {
		s := ownedRobot(owner, id)
		s.Spec.InitJobs = v1alpha1.InitJobs{DBInit: ptr.To(false), MinIOInit: ptr.To(false), GrafanaSA: ptr.To(false)}
		limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		s.Spec.APIWorker = v1alpha1.WorkloadSpec{Replicas: ptr.To(apiReplicas), Resources: corev1.ResourceRequirements{Limits: limits}}
		s.Spec.RobotWorker = v1alpha1.WorkloadSpec{Replicas: ptr.To(int32(1)), Resources: corev1.ResourceRequirements{Limits: limits}}
		return s
	}
	refused := func(s *v1alpha1.TFRServer, rule string) {
		t.Helper()
		_, err := run.Up(ctx, s, op)
		var inv *kinds.InvalidError
		require.True(t, errors.As(err, &inv), "%s: want a refusal, got %v", s.Name, err)
		for _, fe := range inv.Errors {
			require.Equal(t, "spec.tenantRef", fe.Field)
		}
		require.Contains(t, err.Error(), "spec.personal.ownerShare."+rule)
	}
	apiReplicas := func(id string) int32 {
		t.Helper()
		d, err := cs.AppsV1().Deployments("personal-chat").Get(ctx, server.Robot{Type: "chat", ID: id}.APIName(), metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, server.OwnerLabelValue("tenant.tfrs-system.alice"), d.Labels[server.LabelRobotOwner], "alice's Deployment carries her mark")
		return *d.Spec.Replicas
	}

	// alice: two robots of 2×250m fill her robots and half her CPU.
	for _, id := range []string{"r-1", "r-2"} {
		_, err := run.Up(ctx, robot("alice", id, "250m", 1), op)
		require.NoError(t, err, "alice's %s", id)
	}
	// A third robot: over the count (and not created).
	refused(robot("alice", "r-3", "100m", 1), "robots")
	_, err = cs.AppsV1().Deployments("personal-chat").Get(ctx, server.Robot{Type: "chat", ID: "r-3"}.APIName(), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the refused robot's Deployment exists: %v", err)
	// bob's robots are not alice's.
	_, err = run.Up(ctx, robot("bob", "r-9", "500m", 1), op)
	require.NoError(t, err, "bob's robot counts against bob only")
	// r-1 with a second API replica: 3×250m + 500m = 1250m > 1: refused, the Deployment as it was.
	refused(robot("alice", "r-1", "250m", 2), "cpu")
	require.Equal(t, int32(1), apiReplicas("r-1"))
	// r-1 with two replicas of 100m: 3×100m + 500m = 800m: it fits.
	_, err = run.Up(ctx, robot("alice", "r-1", "100m", 2), op)
	require.NoError(t, err)
	require.Equal(t, int32(2), apiReplicas("r-1"))
	// A robot gone frees its place.
	_, err = run.Destroy(ctx, robot("alice", "r-2", "250m", 1), op)
	require.NoError(t, err)
	_, err = run.Up(ctx, robot("alice", "r-3", "100m", 1), op)
	require.NoError(t, err, "a destroyed robot no longer counts")

	// Two TFRS processes (two runners: no lock in common but the owner's Lease) bring up
	// alice's last free place at the same moment: exactly one gets it, the other is refused
	// once the first has finished.
	_, err = run.Destroy(ctx, robot("alice", "r-3", "100m", 1), op)
	require.NoError(t, err)
	errs := make(chan error, 2)
	for _, id := range []string{"r-4", "r-5"} {
		other := runner.New(e.eng, runner.Options{Kubeconfig: e.cfg["kubernetes:kubeconfig"].Value})
		go func() { _, err := other.Up(ctx, robot("alice", id, "100m", 1), op); errs <- err }()
	}
	var passed, refusedAtOnce int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			passed++
		case strings.Contains(err.Error(), "spec.personal.ownerShare.robots"):
			refusedAtOnce++
		default:
			t.Fatalf("unexpected: %v", err)
		}
	}
	require.Equal(t, [2]int{1, 1}, [2]int{passed, refusedAtOnce}, "one robot passes, one is refused")
}

// personalJobType brings the stand-in cluster, changed by edit, up with the real engine, then
// the personal tenants owners of job type chat through a runner (the path of every door),
// and returns that runner and the CLI door.
func personalJobType(t *testing.T, e *env, edit func(*v1alpha1.TFRCluster), owners ...string) (*runner.Runner, runner.Op) {
	t.Helper()
	tc := standInCluster(t)
	edit(tc)
	require.Empty(t, tc.Validate())
	cstack, err := stackname.Cluster(tc.Name)
	require.NoError(t, err)
	_, err = e.eng.Up(e.ctx, engine.Request{Stack: cstack, Program: stacks.Cluster(stacks.ClusterInput{Cluster: tc}), ManagedBy: engine.ManagedByCLI, Config: e.cfg})
	require.NoError(t, err)
	run := runner.New(e.eng, runner.Options{Kubeconfig: e.cfg["kubernetes:kubeconfig"].Value})
	op := runner.Op{Door: engine.ManagedByCLI}
	for _, owner := range owners {
		_, err := run.Up(e.ctx, serverTenant(t, tc.Name, owner, v1alpha1.TenantPersonal), op)
		require.NoError(t, err, "personal tenant %s", owner)
	}
	return run, op
}
