//go:build integration

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

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
	crdFiles, _ := filepath.Glob(filepath.Join(cluster, "0-crd", "*"))
	require.Empty(t, crdFiles, "the stand-ins ship no CRDs (tests install the real upstream ones)")
	require.FileExists(t, filepath.Join(cluster, "1-manifest", "v1-namespace-default-istio-system.yaml"))
	require.FileExists(t, filepath.Join(cluster, "1-manifest", "v1-namespace-default-cnpg-system.yaml"), "a manifest component renders")

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

// TestRenderKubeVersion: a chart that requires a Kubernetes newer than Helm's no-cluster
// default (v1.20, as the Jaeger chart's kubeVersion ">= 1.21" does) renders, because render
// tells charts the Kubernetes version TFRS supports; --kube-version picks another one, and a
// version the chart does not accept fails naming the constraint.
func TestRenderKubeVersion(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	tmp := t.TempDir()
	chart := filepath.Join(tmp, "jaeger")
	require.NoError(t, os.CopyFS(chart, os.DirFS(filepath.Join("..", "..", "stacks", "testdata", "tenant", "charts", "jaeger"))))
	meta, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(chart, "Chart.yaml"), append(meta, []byte("kubeVersion: \">= 1.21.0-0\"\n")...), 0o600))
	file := filepath.Join(tmp, "tenant.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`apiVersion: tfrs.io/v1alpha1
kind: TFRTenant
metadata: {name: acme, namespace: tfrs-system}
spec:
  clusterRef: absent
  type: enterprise
  grafana: {enabled: false}
  jaeger: {localPath: `+chart+`}
`), 0o600))

	code, stdout := runCaptured(t, "render", "-f", file, "-o", filepath.Join(tmp, "out"))
	require.Equal(t, 0, code, stdout)
	deployments, err := filepath.Glob(filepath.Join(tmp, "out", "tenant.tfrs-system.acme", "1-manifest", "apps_v1-deployment-acme-*jaeger*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, deployments, "the chart rendered")

	code, stderr := runStderr(t, "render", "-f", file, "-o", filepath.Join(tmp, "old"), "--kube-version", "v1.20.0")
	require.NotEqual(t, 0, code, stderr)
	require.Contains(t, stderr, "chart requires kubeVersion: >= 1.21.0-0 which is incompatible with Kubernetes v1.20.0")

	code, stderr = runStderr(t, "render", "-f", file, "-o", filepath.Join(tmp, "bad"), "--kube-version", "one-point-thirty")
	require.Equal(t, 1, code, stderr) // a usage error
	require.Contains(t, stderr, "--kube-version")
}

// TestRenderPasswordSecretRef: a cluster whose registry password comes from a Secret (as in
// examples/cluster.yaml) renders with no cluster to read it from: the pull Secret carries a
// placeholder that names the Secret, render says so, and --omit-secrets leaves it out.
func TestRenderPasswordSecretRef(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	tmp := t.TempDir()
	root, err := filepath.Abs(filepath.Join("..", "..", "stacks", "testdata", "cluster"))
	require.NoError(t, err)
	file := filepath.Join(tmp, "cluster.yaml")
	require.NoError(t, os.WriteFile(file, []byte(strings.ReplaceAll(`apiVersion: tfrs.io/v1alpha1
kind: TFRCluster
metadata: {name: dev}
spec:
  domain: tfrobot.local
  ingress: {mode: NodePort}
  imageRegistry:
    credentials:
      name: tfrobot
      server: registry.example.com
      username: robot
      passwordSecretRef: {name: tfrobot-registry, namespace: default, key: password}
  certManager: {localPath: ROOT/charts/cert-manager}
  istio: {localPath: ROOT/charts/istio}
  istioIngress: {localPath: ROOT/charts/gateway}
  minioOperator: {localPath: ROOT/charts/minio-operator}
  cnpgOperator: {localPath: ROOT/manifests/cnpg.yaml}
  rabbitmqOperator: {localPath: ROOT/manifests/rabbitmq}
`, "ROOT", root)), 0o600))

	code, stdout := runCaptured(t, "render", "-f", file, "-o", filepath.Join(tmp, "out"))
	require.Equal(t, 0, code, stdout)
	require.Contains(t, stdout, "placeholder password")
	require.Contains(t, stdout, "default/tfrobot-registry key password")
	secrets, err := filepath.Glob(filepath.Join(tmp, "out", "cluster.dev", "1-manifest", "v1-secret-*tfrobot-pull-secret.yaml"))
	require.NoError(t, err)
	require.Len(t, secrets, 1, "the pull Secret renders")
	b, err := os.ReadFile(secrets[0])
	require.NoError(t, err)
	var secret struct{ Data map[string][]byte }
	require.NoError(t, yaml.Unmarshal(b, &secret))
	require.Contains(t, string(secret.Data[".dockerconfigjson"]), "RENDERED-WITHOUT-CLUSTER(Secret default/tfrobot-registry key password)")

	code, stdout = runCaptured(t, "render", "-f", file, "-o", filepath.Join(tmp, "omitted"), "--omit-secrets")
	require.Equal(t, 0, code, stdout)
	require.NotContains(t, stdout, "placeholder password")
	secrets, err = filepath.Glob(filepath.Join(tmp, "omitted", "cluster.dev", "1-manifest", "v1-secret-*.yaml"))
	require.NoError(t, err)
	require.Empty(t, secrets)
}
