//go:build integration

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
)

// clusterSecret is the value of a Secret in the cluster that a pull request's chart tries to
// read with Helm's lookup (lower-case: it must fit a resource name).
const clusterSecret = "fakeclustersecret42"

// lookupTemplate reads the Secret with lookup and writes what it found into a ConfigMap's
// name and data: wherever the value could reach the report.
const lookupTemplate = `{{- $s := lookup "v1" "Secret" "default" "target" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: leak{{ dig "data" "token" "" $s | b64dec }}
data:
  found: {{ dig "data" "token" "" $s | b64dec | quote }}
`

// TestUntrustedPreviewEndToEnd runs the real CLI against a local control plane: a cluster is
// up, then a pull request's tenant with a local chart that uses lookup on a Secret of the
// cluster is previewed. The trusted preview shows the Secret's value (lookup works: the test
// can fail); the untrusted one renders the chart through the provider shim with lookup
// stubbed, so neither the value nor the passphrase appears on stdout or stderr. Then the
// trial's attack (a link to the passphrase file read by .Files.Get) is refused.
func TestUntrustedPreviewEndToEnd(t *testing.T) {
	cp := testenv.ControlPlane(t)
	cs, err := cp.Client()
	require.NoError(t, err)
	_, err = cs.CoreV1().Secrets("default").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "target"}, StringData: map[string]string{"token": clusterSecret},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	root, _, secret := hostileCheckout(t)
	t.Setenv("TFRS_PASSPHRASE_FILE", secret)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-fake-secret-for-"+t.Name())
	state := t.TempDir()
	common := []string{"--state-dir", state, "--kubeconfig", cp.KubeconfigPath}

	// The cluster, from the stand-ins (trusted: the platform team's own files).
	all, err := os.ReadFile(standInCRs(t, t.TempDir(), ""))
	require.NoError(t, err)
	_, clusterDoc, ok := strings.Cut(string(all), "---\n")
	require.True(t, ok)
	clusterFile := filepath.Join(t.TempDir(), "cluster.yaml")
	require.NoError(t, os.WriteFile(clusterFile, []byte(clusterDoc), 0o600))
	code, out := runCaptured(t, append([]string{"up", "-f", clusterFile, "-o", "json"}, common...)...)
	require.Equal(t, 0, code, out)

	// The pull request: Grafana's local chart uses lookup (and has no link yet).
	grafana := filepath.Join(root, "charts", "grafana")
	require.NoError(t, os.RemoveAll(filepath.Join(grafana, "files")))
	require.NoError(t, os.Remove(filepath.Join(grafana, "templates", "leak.yaml")))
	require.NoError(t, os.WriteFile(filepath.Join(grafana, "templates", "lookup.yaml"), []byte(lookupTemplate), 0o644))
	t.Chdir(root)

	preview := func(extra ...string) (int, string, string) {
		var code int
		var out string
		errOut := capture(t, &os.Stderr, func() {
			code, out = runCaptured(t, append(append([]string{"preview", "-f", "deploy/tenant.yaml", "-o", "json", "--progress"}, extra...), common...)...)
		})
		return code, out, errOut
	}

	// Control: the trusted preview's lookup reaches the real API server. The tenant's provider
	// acts as the tenant's applier, so it either reads the Secret or is refused by RBAC; both
	// show the lookup left the process.
	code, out, errOut := preview("--read-only")
	require.True(t, strings.Contains(out, "leak"+clusterSecret) || strings.Contains(out+errOut, "forbidden"),
		"the trusted preview's lookup reaches the cluster (control); code %d\nstdout: %s\nstderr: %s", code, out, errOut)

	code, out, errOut = preview("--untrusted")
	require.Contains(t, []int{0, exitChanges}, code, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, out, "leak", "the chart rendered, through the shim")
	require.NotContains(t, out+errOut, "forbidden", "lookup never reached the API server")
	for _, s := range []string{clusterSecret, fakePassphrase, "aws-fake-secret-for-"} {
		require.NotContains(t, out, s)
		require.NotContains(t, errOut, s)
	}

	// The trial's attack: a link to the passphrase file, read by .Files.Get.
	require.NoError(t, os.MkdirAll(filepath.Join(grafana, "files"), 0o755))
	require.NoError(t, os.Symlink(secret, filepath.Join(grafana, "files", "env")))
	require.NoError(t, os.WriteFile(filepath.Join(grafana, "templates", "leak.yaml"), []byte(
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Files.Get \"files/env\" | trim | quote }}}\n"), 0o644))
	code, out, errOut = preview("--untrusted", "-o", "markdown")
	require.Equal(t, exitFailure, code, out)
	require.Contains(t, errOut, filepath.Join("charts", "grafana", "files", "env")+": is a symlink")
	requireNoSecret(t, out, errOut)
}
