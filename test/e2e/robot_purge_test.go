//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestPersonalRobotDataPurge deletes a personal robot of a job type whose deletionPolicy is
// Delete through the runner (the path of every door), with the real engine and provider on a
// local control plane: its workers go first, then the purge Job runs to completion (the
// simulated kubelet completes it; what its containers do is unit-tested), then the stack is
// destroyed and removed, leaving nothing of the robot in the namespace. Another robot of the
// same owner keeps running, untouched.
func TestPersonalRobotDataPurge(t *testing.T) {
	e := newEnv(t, 20*time.Minute)
	ctx := e.ctx
	cs, err := e.cp.Client()
	require.NoError(t, err)

	run, op := personalJobType(t, e, func(tc *v1alpha1.TFRCluster) {
		tc.Spec.Personal.Middleware.DeletionPolicy = v1alpha1.DeletionDelete
	}, "alice")

	robot := func(id string) *v1alpha1.TFRServer {
		s := ownedRobot("alice", id)
		s.Spec.InitJobs = v1alpha1.InitJobs{DBInit: ptr.To(false), MinIOInit: ptr.To(false), GrafanaSA: ptr.To(false)}
		return s
	}
	for _, id := range []string{"r-1", "r-2"} {
		_, err := run.Up(ctx, robot(id), op)
		require.NoError(t, err, id)
	}
	purges, err := run.PurgesRobotData(ctx, robot("r-1"))
	require.NoError(t, err)
	require.True(t, purges, "the job type deletes robot data")

	out, err := run.Destroy(ctx, robot("r-1"), op)
	require.NoError(t, err)
	require.Len(t, out.Stacks, 3, "stop, purge, destroy")
	steps := func(i int, typ string, op engine.StepOp) []string {
		var names []string
		for _, s := range out.Stacks[i].Result.Steps {
			if s.Type == typ && s.Op == op {
				names = append(names, s.URN[strings.LastIndex(s.URN, "::")+2:])
			}
		}
		return names
	}
	require.ElementsMatch(t, []string{"api-worker-deployment", "robot-worker-deployment"},
		steps(0, "kubernetes:apps/v1:Deployment", engine.StepDelete), "the first stage stops the robot's workers")
	require.Empty(t, steps(0, "kubernetes:batch/v1:Job", engine.StepCreate), "no Job runs while the workers may still write")
	require.Equal(t, []string{stacks.ServerDataPurge + "-job"}, steps(1, "kubernetes:batch/v1:Job", engine.StepCreate),
		"the second stage runs the purge Job, awaited to completion")
	require.Contains(t, steps(2, "kubernetes:batch/v1:Job", engine.StepDelete), stacks.ServerDataPurge+"-job")

	// Nothing of r-1 is left in the namespace; r-2 runs on.
	ns := "personal-chat"
	sel := labels.SelectorFromSet(labels.Set{server.LabelInstance: "chat-r-1"}).String()
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	require.NoError(t, err)
	require.Empty(t, deps.Items)
	jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	require.NoError(t, err)
	require.Empty(t, jobs.Items)
	secrets, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	require.NoError(t, err)
	require.Empty(t, secrets.Items)
	_, err = cs.AppsV1().Deployments(ns).Get(ctx, server.Robot{Type: "chat", ID: "r-2"}.APIName(), metav1.GetOptions{})
	require.NoError(t, err, "the owner's other robot is untouched")
	_, err = e.eng.Status(ctx, out.Target.Stack)
	require.ErrorIs(t, err, engine.ErrNotFound, "the robot's stack is removed")
}
