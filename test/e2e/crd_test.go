//go:build e2e

// Package e2e holds tests that drive the project the way a user does, against the local
// control plane: kubectl, the tfrs binary, the HTTP API.
package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
)

// kubectl runs kubectl against the control plane and returns combined output.
func kubectl(t *testing.T, cp *controlplane.ControlPlane, stdin string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	require.NoError(t, err, "kubectl must be on PATH")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestCRDsWithKubectl is the user's view of the CRDs: they install with kubectl, the examples
// apply, `kubectl get` shows the printer columns, and an invalid object is refused with the
// offending field named.
func TestCRDsWithKubectl(t *testing.T) {
	cp := controlplane.StartT(t)
	root := filepath.Join("..", "..")

	out, err := kubectl(t, cp, "", "apply", "--server-side", "-f", filepath.Join(root, "config", "crd", "bases"))
	require.NoError(t, err, out)
	out, err = kubectl(t, cp, "", "wait", "--for=condition=Established", "--timeout=60s",
		"crd/tfrclusters.tfrs.io", "crd/tfrtenants.tfrs.io", "crd/tfrservers.tfrs.io")
	require.NoError(t, err, out)

	out, err = kubectl(t, cp, "", "create", "namespace", "tfrs-system")
	require.NoError(t, err, out)
	for _, f := range []string{"cluster.yaml", "tenant-enterprise.yaml", "tenant-personal.yaml", "server.yaml"} {
		out, err = kubectl(t, cp, "", "apply", "-f", filepath.Join(root, "examples", f))
		require.NoError(t, err, out)
	}

	out, err = kubectl(t, cp, "", "get", "tfrclusters")
	require.NoError(t, err, out)
	require.Regexp(t, `NAME\s+DOMAIN\s+INGRESS\s+READY\s+REASON\s+SUSPENDED\s+AGE`, out)
	require.Regexp(t, `dev\s+tfrobot\.local\s+NodePort`, out)

	out, err = kubectl(t, cp, "", "get", "tfrt", "-n", "tfrs-system")
	require.NoError(t, err, out)
	require.Regexp(t, `NAME\s+TYPE\s+JOB\s+NAMESPACE\s+READY\s+REASON\s+SUSPENDED\s+AGE`, out)
	require.Regexp(t, `acme\s+enterprise`, out)
	require.Regexp(t, `chat\s+personal\s+chat`, out)

	out, err = kubectl(t, cp, "", "get", "tfrsv", "-n", "tfrs-system")
	require.NoError(t, err, out)
	require.Regexp(t, `NAME\s+TENANT\s+ROBOT\s+TYPE\s+READY\s+REASON\s+SUSPENDED\s+AGE`, out)
	require.Regexp(t, `helper-bot\s+acme\s+helper-bot\s+chat`, out)

	// spec.suspend shows in its column.
	out, err = kubectl(t, cp, "", "patch", "tfrtenant", "acme", "-n", "tfrs-system", "--type", "merge", "-p", `{"spec":{"suspend":true}}`)
	require.NoError(t, err, out)
	out, err = kubectl(t, cp, "", "get", "tfrt", "acme", "-n", "tfrs-system")
	require.NoError(t, err, out)
	require.Regexp(t, `acme\s+enterprise\s+.*\btrue\b`, out)

	// One `kubectl get` over the category lists all three kinds.
	out, err = kubectl(t, cp, "", "get", "tfrs", "-A")
	require.NoError(t, err, out)
	require.Contains(t, out, "tfrcluster.tfrs.io/dev")
	require.Contains(t, out, "tfrserver.tfrs.io/helper-bot")

	invalid := map[string]string{
		"spec.robotId": `apiVersion: tfrs.io/v1alpha1
kind: TFRServer
metadata: {name: bad-robot, namespace: tfrs-system}
spec: {tenantRef: acme, robotId: Robot_1, robotType: chat, image: "img:1"}`,
		"spec.type": `apiVersion: tfrs.io/v1alpha1
kind: TFRTenant
metadata: {name: bad-type, namespace: tfrs-system}
spec: {clusterRef: dev, type: family}`,
		"spec.apiWorker.replicas": `apiVersion: tfrs.io/v1alpha1
kind: TFRServer
metadata: {name: bad-replicas, namespace: tfrs-system}
spec: {tenantRef: acme, robotId: bot, robotType: chat, image: "img:1", apiWorker: {replicas: -1}}`,
	}
	for fieldPath, doc := range invalid {
		out, err = kubectl(t, cp, doc, "apply", "-f", "-")
		require.Error(t, err, "%s must be refused:\n%s", fieldPath, out)
		require.Contains(t, out, fieldPath, "the refusal must name the field")
	}
}
