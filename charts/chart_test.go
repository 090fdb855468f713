//go:build integration

// Package charts tests the Helm chart charts/tfrs: lint, what it renders (security context,
// probes, versioned image, RBAC equal to config/rbac, CRDs equal to config/crd/bases and kept),
// the values it refuses, that its copies of config/ are fresh, and, on the local control plane,
// a server-side dry-run of what it renders and a real install, upgrade and uninstall.
package charts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

const (
	namespace = "tfrs-system"
	release   = "tfrs"
	image     = "ghcr.io/tfrs-io/tfrs:v0.9.0"
)

// defaults are the fewest values an install needs: the passphrase Secret's name.
var defaults = []string{"--set", "passphrase.existingSecret=tfrs-passphrase"}

// s3API is the other shape: s3:// state, two operator replicas, the HTTP API with TLS, the
// ServiceMonitors, the dashboard and the alerts.
const s3API = `
backend:
  type: s3
  s3:
    url: s3://tfrs-state?endpoint=minio.storage:9000&s3ForcePathStyle=true&region=us-east-1
    existingSecret: tfrs-s3
passphrase:
  value: chart-test-passphrase
operator:
  replicas: 2
api:
  enabled: true
  tokens:
    existingSecret: tfrs-api-tokens
  tls:
    secretName: tfrs-api-tls
metrics:
  serviceMonitor:
    enabled: true
    apiBearerTokenSecret:
      name: tfrs-metrics-token
monitoring:
  dashboard:
    enabled: true
  prometheusRule:
    enabled: true
`

// replicasS3 is README "Replicas": two operators with leader election and two API replicas
// on one s3:// state. The api block comes last (a test appends to it).
const replicasS3 = `
backend:
  type: s3
  s3:
    url: s3://tfrs-state?endpoint=minio.storage:9000&s3ForcePathStyle=true&region=us-east-1
    existingSecret: tfrs-s3
passphrase:
  existingSecret: tfrs-passphrase
operator:
  replicas: 2
api:
  enabled: true
  replicas: 2
  tokens:
    existingSecret: tfrs-api-tokens
`

func helmBin(t *testing.T) string {
	t.Helper()
	bin, err := tools.Bin("helm")
	require.NoError(t, err)
	return bin
}

// helm runs helm with its own scratch config, cache and data dirs.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmBin(t), args...)
	home := helmHome(t)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

var helmHomes = map[*testing.T]string{}

func helmHome(t *testing.T) string {
	if h, ok := helmHomes[t]; ok {
		return h
	}
	h := t.TempDir()
	helmHomes[t] = h
	t.Cleanup(func() { delete(helmHomes, t) })
	return h
}

func valuesFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// render runs helm template and decodes every object.
func render(t *testing.T, args ...string) (string, []*unstructured.Unstructured) {
	t.Helper()
	out, err := helm(t, append([]string{"template", release, chart(), "-n", namespace}, args...)...)
	require.NoError(t, err, out)
	return out, decode(t, out)
}

func decode(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var m map[string]any
		err := d.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string, into any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			b, err := yaml.Marshal(o.Object)
			require.NoError(t, err)
			require.NoError(t, yaml.UnmarshalStrict(b, into), "%s %s", kind, name)
			return
		}
	}
	t.Fatalf("%s %s not rendered", kind, name)
}

func kinds(objs []*unstructured.Unstructured) map[string]int {
	n := map[string]int{}
	for _, o := range objs {
		n[o.GetKind()]++
	}
	return n
}

func TestChartLint(t *testing.T) {
	out, err := helm(t, append([]string{"lint", "--strict", chart()}, defaults...)...)
	require.NoError(t, err, out)
	out, err = helm(t, "lint", "--strict", chart(), "-f", valuesFile(t, s3API))
	require.NoError(t, err, out)
	out, err = helm(t, "lint", "--strict", chart(), "-f", valuesFile(t, replicasS3))
	require.NoError(t, err, out)
}

// checkPods: non-root, read-only root file system, no privilege escalation, no capabilities,
// both probes, the versioned image, and every writable mount an emptyDir or a claim.
func checkPods(t *testing.T, objs []*unstructured.Unstructured, manifest string, deployments ...string) {
	t.Helper()
	require.False(t, latestImage.MatchString(manifest), "an image reference with the tag latest")
	require.Equal(t, len(deployments), kinds(objs)["Deployment"])
	for _, name := range deployments {
		var d appsv1.Deployment
		find(t, objs, "Deployment", name, &d)
		pod := d.Spec.Template.Spec
		require.NotNil(t, pod.SecurityContext, name)
		require.True(t, *pod.SecurityContext.RunAsNonRoot, name)
		require.NotZero(t, *pod.SecurityContext.RunAsUser, name)
		require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
		require.Equal(t, d.Spec.Selector.MatchLabels, filter(d.Spec.Template.Labels, d.Spec.Selector.MatchLabels), name)
		volumes := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			volumes[v.Name] = v
		}
		require.Len(t, pod.Containers, 1)
		c := pod.Containers[0]
		require.Equal(t, image, c.Image, name)
		sc := c.SecurityContext
		require.NotNil(t, sc, name)
		require.True(t, *sc.ReadOnlyRootFilesystem, name)
		require.False(t, *sc.AllowPrivilegeEscalation, name)
		require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, name)
		require.NotNil(t, c.LivenessProbe, name)
		require.NotNil(t, c.ReadinessProbe, name)
		require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path, name)
		require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, name)
		ports := map[string]bool{}
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
		require.True(t, ports[c.LivenessProbe.HTTPGet.Port.StrVal], "%s: probe port %s", name, c.LivenessProbe.HTTPGet.Port.StrVal)
		require.NotEmpty(t, c.Resources.Requests, name)
		writable := map[string]bool{}
		for _, m := range c.VolumeMounts {
			v, ok := volumes[m.Name]
			require.True(t, ok, "%s: mount %s has no volume", name, m.Name)
			if !m.ReadOnly {
				require.True(t, v.EmptyDir != nil || v.PersistentVolumeClaim != nil, "%s: writable mount %s is %+v", name, m.Name, v.VolumeSource)
				writable[m.MountPath] = true
			}
		}
		// What the engine and the CLI write: the state dir (PULUMI_HOME, workspaces), TMPDIR, HOME.
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		for _, k := range []string{"TFRS_STATE_DIR", "TMPDIR", "HOME"} {
			require.True(t, writable[env[k]], "%s: %s=%s is not on a writable volume", name, k, env[k])
		}
		// The pod's identity, recorded beside the backend locks it takes (engine: lockowners.go).
		fields := map[string]string{}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				fields[e.Name] = e.ValueFrom.FieldRef.FieldPath
			}
		}
		require.Equal(t, map[string]string{"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name", "POD_UID": "metadata.uid"},
			filter(fields, map[string]string{"POD_NAMESPACE": "", "POD_NAME": "", "POD_UID": ""}), "%s: downward API identity", name)
	}
}

var latestImage = regexp.MustCompile(`(?m)image:\s*"?\S+:latest"?\s*$`)

func filter(m, keys map[string]string) map[string]string {
	out := map[string]string{}
	for k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// rules reads the rules of one role in a config/rbac file.
func rules(t *testing.T, file, kind, name string) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(), "config", "rbac", file))
	require.NoError(t, err)
	objs := decode(t, string(b))
	var r struct {
		Rules []rbacv1.PolicyRule `json:"rules"`
	}
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			bb, err := yaml.Marshal(o.Object)
			require.NoError(t, err)
			require.NoError(t, yaml.Unmarshal(bb, &r))
			require.NotEmpty(t, r.Rules)
			return r.Rules
		}
	}
	t.Fatalf("%s: no %s %s", file, kind, name)
	return nil
}

// checkRBAC: the chart's roles hold exactly config/rbac's rules.
func checkRBAC(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, c := range []struct{ file, kind, name, rendered string }{
		{"role.yaml", "ClusterRole", "tfrs-manager", "tfrs-manager"},
		{"role.yaml", "Role", "tfrs-manager", "tfrs-manager"},
		{"provisioner_role.yaml", "ClusterRole", "tfrs-provisioner", "tfrs-provisioner"},
	} {
		var got struct {
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		var obj map[string]any
		find(t, objs, c.kind, c.rendered, &obj)
		b, _ := yaml.Marshal(obj)
		require.NoError(t, yaml.Unmarshal(b, &got))
		require.Equal(t, rules(t, c.file, c.kind, c.name), got.Rules, "%s %s differs from config/rbac/%s", c.kind, c.rendered, c.file)
	}
	var crb rbacv1.ClusterRoleBinding
	find(t, objs, "ClusterRoleBinding", "tfrs-provisioner", &crb)
	require.Contains(t, crb.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: "tfrs-operator", Namespace: namespace})
	var rb rbacv1.RoleBinding
	find(t, objs, "RoleBinding", "tfrs-manager", &rb)
	require.Equal(t, namespace, rb.Namespace)
}

// checkCRDs: exactly config/crd/bases, each kept on uninstall.
func checkCRDs(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root(), "config", "crd", "bases", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	require.Equal(t, len(files), kinds(objs)["CustomResourceDefinition"])
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var want, got apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.UnmarshalStrict(b, &want))
		find(t, objs, "CustomResourceDefinition", want.Name, &got)
		require.Equal(t, want.Spec, got.Spec, want.Name)
		require.Equal(t, "keep", got.Annotations["helm.sh/resource-policy"], want.Name)
	}
}

func TestChartRendersDefaults(t *testing.T) {
	manifest, objs := render(t, defaults...)
	checkPods(t, objs, manifest, "tfrs-operator")
	checkRBAC(t, objs)
	checkCRDs(t, objs)

	var d appsv1.Deployment
	find(t, objs, "Deployment", "tfrs-operator", &d)
	c := d.Spec.Template.Spec.Containers[0]
	require.Equal(t, appsv1.RecreateDeploymentStrategyType, d.Spec.Strategy.Type, "RWO state: Recreate")
	require.Contains(t, c.Args, "--passphrase-file=/etc/tfrs/passphrase/passphrase")
	require.Contains(t, c.Args, "--leader-elect")
	require.Contains(t, c.Env, corev1.EnvVar{Name: "TFRS_BACKEND", Value: "file:///var/lib/tfrs-state/backend"})
	var pvc corev1.PersistentVolumeClaim
	find(t, objs, "PersistentVolumeClaim", "tfrs-state", &pvc)
	require.Equal(t, "keep", pvc.Annotations["helm.sh/resource-policy"])
	var svc corev1.Service
	find(t, objs, "Service", "tfrs-operator-metrics", &svc)
	require.Equal(t, d.Spec.Selector.MatchLabels, svc.Spec.Selector)

	n := kinds(objs)
	require.Equal(t, 1, n["NetworkPolicy"])
	for _, k := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap", "Secret"} {
		require.Zero(t, n[k], k)
	}
}

func TestChartRendersS3WithAPI(t *testing.T) {
	manifest, objs := render(t, "-f", valuesFile(t, s3API))
	checkPods(t, objs, manifest, "tfrs-operator", "tfrs-api")
	checkRBAC(t, objs)
	checkCRDs(t, objs)

	var op, api appsv1.Deployment
	find(t, objs, "Deployment", "tfrs-operator", &op)
	find(t, objs, "Deployment", "tfrs-api", &api)
	require.EqualValues(t, 2, *op.Spec.Replicas)
	require.NotEqual(t, appsv1.RecreateDeploymentStrategyType, op.Spec.Strategy.Type)
	for _, d := range []appsv1.Deployment{op, api} {
		c := d.Spec.Template.Spec.Containers[0]
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		require.Equal(t, "s3://tfrs-state?endpoint=minio.storage:9000&s3ForcePathStyle=true&region=us-east-1", env["TFRS_BACKEND"].Value)
		require.Equal(t, "tfrs-s3", env["AWS_SECRET_ACCESS_KEY"].ValueFrom.SecretKeyRef.Name)
		require.Equal(t, "AWS_SECRET_ACCESS_KEY", env["AWS_SECRET_ACCESS_KEY"].ValueFrom.SecretKeyRef.Key)
		for _, v := range d.Spec.Template.Spec.Volumes {
			require.NotEqual(t, "state", v.Name, "no state volume on s3")
		}
	}
	c := api.Spec.Template.Spec.Containers[0]
	require.Equal(t, "serve", c.Args[0])
	for _, a := range []string{"--listen=:8080", "--leader-elect", "--token-file=/etc/tfrs/tokens/tokens", "--tls-cert=/etc/tfrs/tls/tls.crt"} {
		require.Contains(t, c.Args, a)
	}
	noSpecDir(t, c)
	require.Equal(t, corev1.URISchemeHTTPS, c.ReadinessProbe.HTTPGet.Scheme)
	require.Equal(t, "tfrs-api", api.Spec.Template.Spec.ServiceAccountName)

	// The passphrase Secret the chart created is kept, and holds the value.
	var sec corev1.Secret
	find(t, objs, "Secret", "tfrs-passphrase", &sec)
	require.Equal(t, "keep", sec.Annotations["helm.sh/resource-policy"])
	require.Equal(t, "chart-test-passphrase", string(sec.Data["passphrase"]))
	// The API keeps its specs and operation records in the backend: no claim of its own.
	require.Zero(t, kinds(objs)["PersistentVolumeClaim"])

	// The API reviews tokens and access, and applies with the provisioner role.
	var auth rbacv1.ClusterRole
	find(t, objs, "ClusterRole", "tfrs-api-auth", &auth)
	require.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}, auth.Rules)
	var crb rbacv1.ClusterRoleBinding
	find(t, objs, "ClusterRoleBinding", "tfrs-provisioner", &crb)
	require.Contains(t, crb.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: "tfrs-api", Namespace: namespace})

	// ServiceMonitors: the operator's metrics port, the API's with a bearer token over HTTPS.
	var smOp, smAPI map[string]any
	find(t, objs, "ServiceMonitor", "tfrs-operator", &smOp)
	find(t, objs, "ServiceMonitor", "tfrs-api", &smAPI)
	ep := smAPI["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	require.Equal(t, "https", ep["scheme"])
	require.Equal(t, "tfrs-metrics-token", ep["authorization"].(map[string]any)["credentials"].(map[string]any)["name"])
	require.Equal(t, "metrics", smOp["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)["port"])

	// The dashboard and the alerts are config/monitoring's.
	var cm corev1.ConfigMap
	find(t, objs, "ConfigMap", "tfrs-dashboard", &cm)
	require.Equal(t, "1", cm.Labels["grafana_dashboard"])
	dash, err := os.ReadFile(filepath.Join(root(), "config", "monitoring", "tfrs-dashboard.json"))
	require.NoError(t, err)
	require.JSONEq(t, string(dash), cm.Data["tfrs-dashboard.json"])
	var rule, want map[string]any
	find(t, objs, "PrometheusRule", "tfrs", &rule)
	b, err := os.ReadFile(filepath.Join(root(), "config", "monitoring", "prometheusrule.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &want))
	require.Equal(t, want["spec"], rule["spec"])

	require.Equal(t, 2, kinds(objs)["NetworkPolicy"])
}

// TestChartRendersReplicas: two operators and two APIs on s3 — a Lease fences each set, a
// budget lets a drain take one pod of each at a time, the pods prefer different nodes, the API
// keeps nothing on a volume of its own, and its account may hold the Lease tfrs-api-locks and
// read the pods whose locks it breaks.
func TestChartRendersReplicas(t *testing.T) {
	manifest, objs := render(t, "-f", valuesFile(t, replicasS3))
	checkPods(t, objs, manifest, "tfrs-operator", "tfrs-api")
	checkRBAC(t, objs)
	require.Zero(t, kinds(objs)["PersistentVolumeClaim"])

	var op, api appsv1.Deployment
	find(t, objs, "Deployment", "tfrs-operator", &op)
	find(t, objs, "Deployment", "tfrs-api", &api)
	for _, d := range []appsv1.Deployment{op, api} {
		require.EqualValues(t, 2, *d.Spec.Replicas, d.Name)
		require.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type, d.Name)
		require.Zero(t, d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue(), "%s: the new pod is up before an old one goes", d.Name)
		c := d.Spec.Template.Spec.Containers[0]
		require.Contains(t, c.Args, "--leader-elect", d.Name)
		require.Contains(t, c.Args, "--leader-election-namespace="+namespace, d.Name)
		for _, v := range d.Spec.Template.Spec.Volumes {
			require.Nil(t, v.PersistentVolumeClaim, "%s: volume %s; on s3 every volume is scratch", d.Name, v.Name)
		}

		aff := d.Spec.Template.Spec.Affinity
		require.NotNil(t, aff, d.Name)
		require.Empty(t, aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "%s: soft, a one-node cluster runs them all", d.Name)
		terms := aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		require.Len(t, terms, 1, d.Name)
		require.Equal(t, "kubernetes.io/hostname", terms[0].PodAffinityTerm.TopologyKey, d.Name)
		require.Equal(t, d.Spec.Selector.MatchLabels, terms[0].PodAffinityTerm.LabelSelector.MatchLabels, "%s: spreads its own pods", d.Name)

		var pdb policyv1.PodDisruptionBudget
		find(t, objs, "PodDisruptionBudget", d.Name, &pdb)
		require.Equal(t, namespace, pdb.Namespace)
		require.Nil(t, pdb.Spec.MinAvailable, d.Name)
		require.EqualValues(t, 1, pdb.Spec.MaxUnavailable.IntValue(), d.Name)
		require.Equal(t, d.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels, d.Name)
	}
	require.Equal(t, 2, kinds(objs)["PodDisruptionBudget"])
	noSpecDir(t, api.Spec.Template.Spec.Containers[0])

	var role rbacv1.Role
	find(t, objs, "Role", "tfrs-api-locks", &role)
	require.Equal(t, namespace, role.Namespace)
	require.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
	}, role.Rules)
	var rb rbacv1.RoleBinding
	find(t, objs, "RoleBinding", "tfrs-api-locks", &rb)
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tfrs-api-locks"}, rb.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "tfrs-api", Namespace: namespace}}, rb.Subjects)

	// One replica each: no budget (it would block every drain), the anti-affinity still there
	// for a later `kubectl scale`; the user's own affinity replaces the default.
	_, objs = render(t, "-f", valuesFile(t, replicasS3), "--set", "operator.replicas=1", "--set", "api.replicas=1",
		"--set", "api.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
		"--set", "api.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists")
	require.Zero(t, kinds(objs)["PodDisruptionBudget"])
	op, api = appsv1.Deployment{}, appsv1.Deployment{} // find decodes into what it is given
	find(t, objs, "Deployment", "tfrs-operator", &op)
	find(t, objs, "Deployment", "tfrs-api", &api)
	require.NotNil(t, op.Spec.Template.Spec.Affinity.PodAntiAffinity)
	require.Nil(t, api.Spec.Template.Spec.Affinity.PodAntiAffinity, "the user's affinity, not merged with the default")
	require.Equal(t, "pool", api.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key)
	require.Contains(t, api.Spec.Template.Spec.Containers[0].Args, "--leader-elect", "always, harmless with one replica")
}

// TestChartRefusesCarelessValues: each mistake fails the render, naming the value.
func TestChartRefusesCarelessValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "passphrase: set passphrase.existingSecret"},
		{[]string{"--set", "passphrase.value=x", "--set", "image.tag=latest"}, "image.tag: a versioned tag, never latest"},
		{[]string{"--set", "passphrase.value=x", "--set", "backend.type=gcs"}, `backend.type: must be file or s3, not "gcs"`},
		{[]string{"--set", "passphrase.value=x", "--set", "backend.type=s3"}, "backend.s3.url"},
		{[]string{"--set", "passphrase.value=x", "--set", "backend.type=s3", "--set", "backend.s3.url=s3://b"}, "backend.s3.existingSecret"},
		{[]string{"--set", "passphrase.value=x", "--set", "operator.replicas=2"}, "operator.replicas: more than one replica on the file backend"},
		{[]string{"--set", "passphrase.value=x", "--set", "operator.replicas=0"}, "operator.replicas: at least 1, not 0"},
		{[]string{"-f", valuesFile(t, replicasS3), "--set", "operator.leaderElect=false"}, "operator.replicas: more than one replica needs operator.leaderElect=true"},
		{[]string{"--set", "passphrase.value=x", "--set", "api.enabled=true", "--set", "api.replicas=2"}, "api.replicas: more than one API replica on the file backend"},
		{[]string{"-f", valuesFile(t, replicasS3), "--set", "api.replicas=0"}, "api.replicas: at least 1, not 0"},
		{[]string{"-f", valuesFile(t, replicasS3), "--set", "api.persistence.existingClaim=tfrs-api-specs"}, "api.persistence: removed; the API keeps its specs and operation records in the state backend"},
		{[]string{"--set", "passphrase.value=x", "--set", "api.enabled=true"}, "api.enabled: the API shares the operator's state"},
		{[]string{"--set", "passphrase.value=x", "--set", "api.enabled=true", "--set", "persistence.accessModes={ReadWriteMany}"}, "api.tokens.existingSecret"},
		{[]string{"--set", "passphrase.value=x", "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.service.enabled=false"}, "metrics.serviceMonitor.enabled: needs metrics.service.enabled"},
	} {
		out, err := helm(t, append([]string{"template", release, chart(), "-n", namespace}, c.args...)...)
		require.Error(t, err, "%v rendered:\n%.500s", c.args, out)
		require.Contains(t, out, c.want, c.args)
	}
	// The file backend on a ReadWriteMany volume takes the API and replicas.
	_, objs := render(t, "--set", "passphrase.value=x", "--set", "api.enabled=true", "--set", "persistence.accessModes={ReadWriteMany}",
		"--set", "api.tokens.existingSecret=tokens", "--set", "operator.replicas=2", "--set", "api.replicas=2")
	var op, api appsv1.Deployment
	find(t, objs, "Deployment", "tfrs-operator", &op)
	find(t, objs, "Deployment", "tfrs-api", &api)
	require.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, op.Spec.Strategy.Type, "RWX state: the leader Lease fences a rolling update")
	for _, d := range []appsv1.Deployment{op, api} {
		claims := map[string]string{}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claims[v.Name] = v.PersistentVolumeClaim.ClaimName
			}
		}
		require.Equal(t, map[string]string{"state": "tfrs-state"}, claims, "%s: the shared state is its only claim", d.Name)
	}
	noSpecDir(t, api.Spec.Template.Spec.Containers[0])
	require.Equal(t, 2, kinds(objs)["PodDisruptionBudget"])
	// An older release's values carry the removed api.persistence defaults (helm upgrade
	// --reuse-values): they render; only a claim the user named is refused.
	_, objs = render(t, "-f", valuesFile(t, replicasS3+"  persistence:\n    existingClaim: \"\"\n    accessModes: [ReadWriteOnce]\n    size: 1Gi\n"))
	require.Equal(t, 2, kinds(objs)["Deployment"])
}

func noSpecDir(t *testing.T, c corev1.Container) {
	t.Helper()
	for _, a := range c.Args {
		require.False(t, strings.HasPrefix(a, "--spec-dir"), "the API keeps its specs in the state backend: %s", a)
	}
	for _, e := range c.Env {
		require.NotEqual(t, "TFRS_SPEC_DIR", e.Name)
	}
}

// kubectl runs kubectl against the control plane.
func kubectl(t *testing.T, cp *controlplane.ControlPlane, stdin string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	require.NoError(t, err, "kubectl must be on PATH")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// withoutKinds drops the prometheus-operator objects: their CRDs are not on the local control
// plane (no upstream copy in ../shared/upstream), so they are checked by template only.
func withoutKinds(t *testing.T, objs []*unstructured.Unstructured, drop ...string) string {
	t.Helper()
	var b strings.Builder
	for _, o := range objs {
		if contains(drop, o.GetKind()) {
			continue
		}
		y, err := yaml.Marshal(o.Object)
		require.NoError(t, err)
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestChartOnControlPlane: what the chart renders is accepted by a real kube-apiserver
// (server-side dry-run of both value sets), and a real helm install, upgrade and uninstall
// behave: objects present, CRDs established, a changed CRD upgraded, CRDs and state kept.
// kwok simulates the kubelet, so "installed" means accepted, scheduled and reported Ready by
// the simulated node, never a container run.
func TestChartOnControlPlane(t *testing.T) {
	cp := controlplane.StartT(t)
	ctx := context.Background()
	out, err := kubectl(t, cp, "", "create", "namespace", namespace)
	require.NoError(t, err, out)

	// 1. Dry-run on the server. The CRDs go first: the server checks objects against them.
	_, def := render(t, defaults...)
	_, s3 := render(t, "-f", valuesFile(t, s3API))
	_, replicas := render(t, "-f", valuesFile(t, replicasS3))
	for name, objs := range map[string][]*unstructured.Unstructured{"defaults": def, "s3+api": s3, "replicas": replicas} {
		out, err := kubectl(t, cp, withoutKinds(t, objs, "ServiceMonitor", "PrometheusRule"), "apply", "--server-side", "--dry-run=server", "-f", "-")
		require.NoError(t, err, "%s: %s", name, out)
		require.Contains(t, out, "deployment.apps/tfrs-operator serverside-applied (server dry run)", name)
		require.Equal(t, len(objs)-kinds(objs)["ServiceMonitor"]-kinds(objs)["PrometheusRule"], strings.Count(out, "(server dry run)"), name)
	}

	// 2. Install (file state, the chart-made passphrase Secret) and wait for the Deployment.
	kc := []string{"--kubeconfig", cp.KubeconfigPath, "-n", namespace}
	out, err = helm(t, append([]string{"install", release, chart(), "--set", "passphrase.value=chart-test", "--wait", "--timeout", "3m"}, kc...)...)
	require.NoError(t, err, out)
	cs, err := cp.Client()
	require.NoError(t, err)
	d, err := cs.AppsV1().Deployments(namespace).Get(ctx, "tfrs-operator", metav1.GetOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 1, d.Status.AvailableReplicas)
	require.Equal(t, image, d.Spec.Template.Spec.Containers[0].Image)
	_, err = cs.CoreV1().ServiceAccounts(namespace).Get(ctx, "tfrs-operator", metav1.GetOptions{})
	require.NoError(t, err)
	for _, n := range []string{"tfrs-manager", "tfrs-provisioner"} {
		_, err = cs.RbacV1().ClusterRoles().Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err, n)
		crb, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err, n)
		require.Equal(t, "tfrs-operator", crb.Subjects[0].Name)
	}
	_, err = cs.RbacV1().RoleBindings(namespace).Get(ctx, "tfrs-manager", metav1.GetOptions{})
	require.NoError(t, err)
	pvc, err := cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, "tfrs-state", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.ClaimBound, pvc.Status.Phase)
	ext, err := apiextensionsclient.NewForConfig(cp.RESTConfig)
	require.NoError(t, err)
	crds := []string{"tfrclusters.tfrs.io", "tfrtenants.tfrs.io", "tfrservers.tfrs.io"}
	for _, n := range crds {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err, n)
		require.True(t, established(crd), n)
	}
	// A custom resource in them survives everything below.
	out, err = kubectl(t, cp, "", "apply", "-f", filepath.Join(root(), "examples", "cluster.yaml"))
	require.NoError(t, err, out)

	// 3. Upgrade with a changed CRD (a chart copy whose TFRServer CRD has one more printer
	// column) and the API enabled: the CRD on the server changes, the CR stays.
	changed := copyChart(t)
	crdFile := filepath.Join(changed, "files", "crds", "tfrs.io_tfrservers.yaml")
	b, err := os.ReadFile(crdFile)
	require.NoError(t, err)
	require.Contains(t, string(b), "additionalPrinterColumns:\n")
	b = bytes.Replace(b, []byte("additionalPrinterColumns:\n"), []byte("additionalPrinterColumns:\n    - jsonPath: .metadata.uid\n      name: UpgradedUID\n      type: string\n"), 1)
	require.NoError(t, os.WriteFile(crdFile, b, 0o600))
	out, err = helm(t, append([]string{"upgrade", release, changed, "--reuse-values", "--set", "api.enabled=true", "--set", "api.tokens.existingSecret=tfrs-api-tokens",
		"--set", "persistence.accessModes={ReadWriteMany}", "--set", "persistence.existingClaim=tfrs-state"}, kc...)...)
	require.NoError(t, err, out)
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "tfrservers.tfrs.io", metav1.GetOptions{})
	require.NoError(t, err)
	var cols []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	require.Contains(t, cols, "UpgradedUID", "helm upgrade updated the CRD")
	_, err = cs.AppsV1().Deployments(namespace).Get(ctx, "tfrs-api", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().ClusterRoles().Get(ctx, "tfrs-api-auth", metav1.GetOptions{})
	require.NoError(t, err)

	// 4. Uninstall: the workloads and RBAC go; the CRDs, the CR, the state claim (it was
	// adopted as existingClaim, so it is kept as any unmanaged object) and the passphrase stay.
	out, err = helm(t, append([]string{"uninstall", release, "--wait", "--timeout", "2m"}, kc...)...)
	require.NoError(t, err, out)
	_, err = cs.AppsV1().Deployments(namespace).Get(ctx, "tfrs-operator", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "operator Deployment removed: %v", err)
	_, err = cs.RbacV1().ClusterRoles().Get(ctx, "tfrs-provisioner", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "ClusterRole removed: %v", err)
	for _, n := range crds {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err, "CRD %s kept on uninstall", n)
		require.Nil(t, crd.DeletionTimestamp, n)
	}
	out, err = kubectl(t, cp, "", "get", "tfrclusters", "-o", "name")
	require.NoError(t, err, out)
	require.Contains(t, out, "tfrcluster.tfrs.io/")
	_, err = cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, "tfrs-state", metav1.GetOptions{})
	require.NoError(t, err, "state claim kept")
	_, err = cs.CoreV1().Secrets(namespace).Get(ctx, "tfrs-passphrase", metav1.GetOptions{})
	require.NoError(t, err, "passphrase Secret kept")

	// 5. Installing again adopts the kept CRDs (same release name and namespace).
	out, err = helm(t, append([]string{"install", release, chart(), "--set", "passphrase.existingSecret=tfrs-passphrase", "--set", "persistence.existingClaim=tfrs-state"}, kc...)...)
	require.NoError(t, err, out)
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// copyChart copies charts/tfrs into a temporary directory.
func copyChart(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "tfrs")
	err := filepath.Walk(chart(), func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(chart(), p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	require.NoError(t, err)
	return dst
}
