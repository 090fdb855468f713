//go:build integration

package config_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
)

// TestReplicasOnControlPlane applies config/replicas to a real kube-apiserver (server-side
// dry-run first, then for real) and waits until both Deployments report two available
// replicas. kwok simulates the kubelet: "available" means accepted, scheduled and reported
// Ready by the simulated node, never that the image ran.
func TestReplicasOnControlPlane(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	require.NoError(t, err, "kubectl must be on PATH")
	cp := controlplane.StartT(t)
	run := func(stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "kubectl %v: %s", args, out)
		return string(out)
	}
	objs := build(t, "replicas")
	var manifest strings.Builder
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		require.NoError(t, err)
		manifest.WriteString("---\n")
		manifest.Write(b)
	}
	// The namespace first: a dry-run creates nothing, so the objects in it would find none.
	run("", "create", "namespace", namespace)
	out := run(manifest.String(), "apply", "--server-side", "--dry-run=server", "-f", "-")
	require.Equal(t, len(objs), strings.Count(out, "(server dry run)"), out)

	// What the user creates beforehand (README "Replicas").
	run("", "-n", namespace, "create", "secret", "generic", "tfrs-passphrase", "--from-literal=passphrase=config-test")
	run("", "-n", namespace, "create", "secret", "generic", "tfrs-backend",
		"--from-literal=url=s3://tfrs-state?endpoint=minio.storage:9000&s3ForcePathStyle=true&region=us-east-1",
		"--from-literal=AWS_ACCESS_KEY_ID=id", "--from-literal=AWS_SECRET_ACCESS_KEY=secret")
	// CRDs first, then the rest (kubectl apply -k does the same ordering by kind).
	run(manifest.String(), "apply", "--server-side", "-f", "-")
	run("", "-n", namespace, "wait", "--for=condition=Available", "--timeout=90s", "deployment/tfrs-operator", "deployment/tfrs-api")

	cs, err := cp.Client()
	require.NoError(t, err)
	ctx := context.Background()
	for _, name := range []string{"tfrs-operator", "tfrs-api"} {
		require.Eventually(t, func() bool {
			d, err := cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
			return err == nil && d.Status.AvailableReplicas == 2
		}, 90*time.Second, time.Second, "%s: two available replicas", name)
		pdb, err := cs.PolicyV1().PodDisruptionBudgets(namespace).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			pdb, err = cs.PolicyV1().PodDisruptionBudgets(namespace).Get(ctx, name, metav1.GetOptions{})
			return err == nil && pdb.Status.ExpectedPods == 2 && pdb.Status.DisruptionsAllowed == 1
		}, 60*time.Second, time.Second, "%s: the budget sees two pods and allows one disruption", name)
	}
	_, err = cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, "tfrs-state", metav1.GetOptions{})
	require.Error(t, err, "no file-state claim")
}
