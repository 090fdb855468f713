package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// standInCRs writes a TFRCluster and an enterprise TFRTenant whose every source points at the
// project's offline stand-ins (stacks/testdata), with extra appended to the tenant's spec.
// The tenant comes first: the commands must order the documents themselves.
func standInCRs(t *testing.T, dir, extra string) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", "stacks", "testdata"))
	require.NoError(t, err)
	doc := strings.NewReplacer("ROOT", root, "EXTRA", extra).Replace(`apiVersion: tfrs.io/v1alpha1
kind: TFRTenant
metadata: {name: acme, namespace: tfrs-system}
spec:
  clusterRef: e2e
  type: enterprise
  namespace: acme
  jaeger: {localPath: ROOT/tenant/charts/jaeger}
  grafana: {localPath: ROOT/tenant/charts/grafana}
EXTRA
---
apiVersion: tfrs.io/v1alpha1
kind: TFRCluster
metadata: {name: e2e}
spec:
  domain: tfrobot.test
  ingress: {mode: NodePort}
  imageRegistry:
    registry: mirror.example.com
  certManager: {localPath: ROOT/cluster/charts/cert-manager}
  istio: {localPath: ROOT/cluster/charts/istio}
  istioIngress: {localPath: ROOT/cluster/charts/gateway}
  minioOperator: {localPath: ROOT/cluster/charts/minio-operator}
  cnpgOperator: {localPath: ROOT/cluster/manifests/cnpg.yaml}
  rabbitmqOperator: {localPath: ROOT/cluster/manifests/rabbitmq}
`)
	path := filepath.Join(dir, "crs.yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	return path
}

// TestDefaultKubeVersion keeps render's default Kubernetes version at the minor of the client
// libraries TFRS is built with (go.mod's k8s.io/api v0.X is Kubernetes 1.X).
func TestDefaultKubeVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "k8s.io/api" {
			minor := strings.Split(strings.TrimPrefix(f[1], "v0."), ".")[0]
			require.Equal(t, "v1."+minor+".0", defaultKubeVersion)
			return
		}
	}
	t.Fatal("go.mod requires no k8s.io/api")
}

// runStderr runs the CLI in-process and returns its exit code and what it wrote to stderr.
func runStderr(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var code int
	out := capture(t, &os.Stderr, func() { code, _ = runCaptured(t, args...) })
	return code, out
}
