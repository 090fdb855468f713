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

// TestRenderStandIns renders a cluster and its tenant with the real programs, engine and
// provider, and no cluster at all: CRDs land in 0-crd/, everything else in 1-manifest/, the
// tenant's images take the cluster's mirror (the parent's outputs flowed), Helm v4 charts
// render, and --omit-secrets drops the Secrets with their generated credentials.
func TestRenderStandIns(t *testing.T) {
	// No cluster may be reached: point KUBECONFIG at nothing for this process too.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	tmp := t.TempDir()
	file := standInCRs(t, tmp, "")
	out := filepath.Join(tmp, "out")
	stale := filepath.Join(out, "cluster.e2e", "1-manifest", "stale.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(stale), 0o755))
	require.NoError(t, os.WriteFile(stale, []byte("kind: Stale\n"), 0o600))

	code, stdout := runCaptured(t, "render", "-f", file, "-o", out, "--omit-secrets")
	require.Equal(t, 0, code, stdout)
	require.Contains(t, stdout, "TFRCluster e2e:")
	require.Contains(t, stdout, "TFRTenant tfrs-system/acme:")
	require.NoFileExists(t, stale, "a stack's directory is replaced")

	cluster := filepath.Join(out, "cluster.e2e")
	crds, err := filepath.Glob(filepath.Join(cluster, "0-crd", "*customresourcedefinition*clusters.postgresql.cnpg.io.yaml"))
	require.NoError(t, err)
	require.Len(t, crds, 1, "the CNPG CRD renders into 0-crd/")
	require.FileExists(t, filepath.Join(cluster, "1-manifest", "v1-namespace-default-istio-system.yaml"))

	tenant := filepath.Join(out, "tenant.tfrs-system.acme", "1-manifest")
	pg, err := os.ReadFile(filepath.Join(tenant, "postgresql.cnpg.io_v1-cluster-acme-acme-pg.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(pg), "kind: Cluster")
	prom, err := os.ReadFile(filepath.Join(tenant, "apps_v1-deployment-acme-prometheus.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(prom), "image: mirror.example.com/", "the tenant renders with its cluster's image mirror")
	grafana, err := filepath.Glob(filepath.Join(tenant, "apps_v1-deployment-acme-*grafana*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, grafana, "the Helm v4 chart renders")
	secrets, err := filepath.Glob(filepath.Join(out, "*", "1-manifest", "v1-secret-*.yaml"))
	require.NoError(t, err)
	require.Empty(t, secrets, "--omit-secrets leaves no generated credential on disk")
}
