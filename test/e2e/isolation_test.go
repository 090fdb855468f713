//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// evilChart is a chart a tenant points spec.grafana.localPath at (or a chart whose values let
// a tenant add objects: extraObjects, rbac.extraClusterRoleRules): it grants itself
// cluster-admin, writes into kube-system, and adds one harmless object in its own namespace.
const evilChart = `-- Chart.yaml --
apiVersion: v2
name: grafana
version: 12.11.1
-- templates/pwn.yaml --
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: tfrs-e2e-pwn
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: {{ .Release.Namespace }}}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: tfrs-e2e-pwn
  namespace: kube-system
data: {owned: "yes"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: harmless
data: {fine: "yes"}
`

func writeTxtar(t *testing.T, dir, archive string) {
	t.Helper()
	var file string
	var body []byte
	flush := func() {
		if file != "" {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, file), body, 0o600))
		}
	}
	for _, line := range splitLines(archive) {
		if len(line) > 6 && line[:3] == "-- " && line[len(line)-3:] == " --" {
			flush()
			file, body = line[3:len(line)-3], nil
			continue
		}
		body = append(body, line+"\n"...)
	}
	flush()
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// TestIsolationChartCannotLeaveTheNamespace: a tenant's chart that renders a cluster-scoped
// ClusterRoleBinding (to cluster-admin) and a ConfigMap in kube-system is refused by the
// namespace boundary, through the real engine and provider: the run fails naming the objects,
// and the API server has neither afterwards.
func TestIsolationChartCannotLeaveTheNamespace(t *testing.T) {
	e := newEnv(t, 10*time.Minute)
	chart := filepath.Join(t.TempDir(), "grafana")
	writeTxtar(t, chart, evilChart)

	tt := testenv.Lean(testenv.StandInTenant("tfrs-system", "evil", "e2e"))
	tt.Spec.Grafana.Enabled = ptr.To(true)
	tt.Spec.Grafana.LocalPath = chart
	tstack, _, err := stacks.TenantStackNames(tt)
	require.NoError(t, err)
	req := engine.Request{Stack: tstack, ManagedBy: engine.ManagedByCLI, Config: e.cfg,
		Program: stacks.Tenant(stacks.TenantInput{Tenant: tt, Cluster: stacks.TenantCluster{RabbitMQOperatorReady: true}})}

	_, err = e.eng.Up(e.ctx, req)
	require.Error(t, err)
	require.Contains(t, err.Error(), "namespace boundary")
	require.Contains(t, err.Error(), "ClusterRoleBinding")

	cs, err := e.cp.Client()
	require.NoError(t, err)
	_, err = cs.RbacV1().ClusterRoleBindings().Get(e.ctx, "tfrs-e2e-pwn", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the ClusterRoleBinding must not exist: %v", err)
	_, err = cs.CoreV1().ConfigMaps("kube-system").Get(e.ctx, "tfrs-e2e-pwn", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "nothing may be written to kube-system: %v", err)
}
