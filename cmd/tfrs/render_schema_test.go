//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/manifest"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// TestRenderedResourcesPassUpstreamSchemas renders every example and every variant (both
// tenant types, every ingress mode and TLS issuer, servers with and without init jobs,
// personal robots) with no cluster, then applies every rendered object with server-side
// dry-run to a local control plane holding the real upstream CRDs of the pinned versions:
// not one rejection. Charts and manifests come from the stand-ins (no downloads); everything
// else is the example as a user would apply it.
func TestRenderedResourcesPassUpstreamSchemas(t *testing.T) {
	cp := testenv.ControlPlane(t)
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent")) // the render sees no cluster

	variants := map[string][]v1alpha1.Object{
		"examples":     exampleObjects(t, "*.yaml"),
		"examples-dev": exampleObjects(t, filepath.Join("dev", "*.yaml")),
		"ingress-tls":  ingressTLSVariants(t),
	}
	// Servers without init jobs: the dev example's second robot.
	for _, o := range variants["examples-dev"] {
		if s, ok := o.(*v1alpha1.TFRServer); ok && s.Name == "robot-bob" {
			s.Spec.InitJobs = v1alpha1.InitJobs{DBInit: ptr.To(false), MinIOInit: ptr.To(false), GrafanaSA: ptr.To(false)}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cp.RESTConfig)
	require.NoError(t, err)
	disco, err := discovery.NewDiscoveryClientForConfig(cp.RESTConfig)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))

	checked := map[string]bool{}
	for _, k := range testenv.CustomResourceKinds {
		checked[k] = true
	}
	count := map[string]int{}
	names := make([]string, 0, len(variants))
	for n := range variants {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		dir := t.TempDir()
		file := writeObjects(t, dir, variants[name])
		out := filepath.Join(dir, "out")
		code, stdout := runCaptured(t, "render", "-f", file, "-o", out)
		require.Equal(t, 0, code, "render %s: %s", name, stdout)

		objs := renderedObjects(t, out)
		require.NotEmpty(t, objs, name)
		checkTenantNetworkPolicies(t, name, objs)
		for _, o := range objs {
			if o.GetKind() == "Namespace" {
				_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.GetName()}}, metav1.CreateOptions{})
				if !apierrors.IsAlreadyExists(err) {
					require.NoError(t, err)
				}
			}
		}
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			key := gvk.GroupVersion().String() + " " + gvk.Kind
			custom := strings.Contains(gvk.Group, ".") && !strings.HasSuffix(gvk.Group, ".k8s.io")
			if custom {
				if !checked[key] {
					t.Errorf("%s: the programs create %s, which this test does not check: add it to testenv.CustomResourceKinds", name, key)
				}
				count[key]++
			}
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			require.NoError(t, err, "%s: %s is not served by the control plane", name, key)
			ri := dyn.Resource(m.Resource)
			var r dynamic.ResourceInterface = ri
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				r = ri.Namespace(o.GetNamespace())
			} else {
				o.SetNamespace("") // the provider writes "default" into cluster-scoped objects' files
			}
			_, err = r.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "tfrs-schema-test", Force: true, DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Errorf("%s: %s %s/%s rejected: %v", name, key, o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	var summary []string
	for _, k := range testenv.CustomResourceKinds {
		if count[k] == 0 {
			t.Errorf("no variant renders %s: cover it, or drop it from testenv.CustomResourceKinds", k)
		}
		summary = append(summary, fmt.Sprintf("%s ×%d", k, count[k]))
	}
	t.Logf("custom resources checked against the real CRDs: %s", strings.Join(summary, ", "))
}

// checkTenantNetworkPolicies fails for a rendered tenant namespace (one labelled with its
// tenant type) that lacks the NetworkPolicies walling it in: a tenant without them is caught.
func checkTenantNetworkPolicies(t *testing.T, variant string, objs []*unstructured.Unstructured) {
	t.Helper()
	policies := map[string]map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "NetworkPolicy" && o.GetAPIVersion() == "networking.k8s.io/v1" {
			if policies[o.GetNamespace()] == nil {
				policies[o.GetNamespace()] = map[string]bool{}
			}
			policies[o.GetNamespace()][o.GetName()] = true
		}
	}
	// A namespace without a MinIO Tenant (its object storage is external) has no policy for
	// the MinIO operator; every other tenant namespace has them all.
	minio := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "Tenant" && o.GetAPIVersion() == "minio.min.io/v2" {
			minio[o.GetNamespace()] = true
		}
	}
	for _, o := range objs {
		if o.GetKind() != "Namespace" || o.GetLabels()[stacks.LabelTenantType] == "" {
			continue
		}
		ns := o.GetName()
		want := []string{tenant.NetworkPolicyDefaultDeny, tenant.NetworkPolicyAllowTenant}
		for _, p := range tenant.OperatorPeers {
			if p.Role == clusterns.RoleMinIOOperator && !minio[ns] {
				if policies[ns][p.Policy] {
					t.Errorf("%s: tenant namespace %s has no MinIO but a NetworkPolicy %s", variant, ns, p.Policy)
				}
				continue
			}
			want = append(want, p.Policy)
		}
		for _, w := range want {
			if !policies[ns][w] {
				t.Errorf("%s: tenant namespace %s has no NetworkPolicy %s (has %v)", variant, ns, w, policies[ns])
			}
		}
	}
}

// exampleObjects decodes the examples matching glob (under examples/), with their charts and
// manifests pointed at the stand-ins: every other field as the user wrote it.
func exampleObjects(t *testing.T, glob string) []v1alpha1.Object {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "examples", glob))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []v1alpha1.Object
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		b = []byte(strings.ReplaceAll(string(b), "${TFRS_STANDINS}", filepath.Join(root, "stacks", "testdata")))
		objs, err := manifest.Decode(strings.NewReader(string(b)))
		require.NoError(t, err, f)
		out = append(out, objs...)
	}
	for _, o := range out {
		standInSources(o)
	}
	return out
}

// ingressTLSVariants are clusters for the ingress modes and TLS issuers the examples leave
// out (NodePort + SelfSigned and TKECLB + ACME are examples), each with a tenant.
func ingressTLSVariants(t *testing.T) []v1alpha1.Object {
	t.Helper()
	desk := &v1alpha1.TFRCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(v1alpha1.KindTFRCluster)},
		ObjectMeta: metav1.ObjectMeta{Name: "desk"},
		Spec: v1alpha1.TFRClusterSpec{
			Domain:  "tfrobot.desk",
			Ingress: v1alpha1.IngressSpec{Mode: v1alpha1.IngressDockerDesktop},
			TLS:     v1alpha1.TLSSpec{Issuer: v1alpha1.TLSCA, CA: &v1alpha1.CAIssuer{SecretName: "desk-ca"}},
		},
	}
	tenant := testenv.StandInTenant("tfrs-system", "desk-team", "desk")
	objs := []v1alpha1.Object{desk, tenant}
	for _, o := range objs {
		standInSources(o)
	}
	return objs
}

// standInSources points an object's charts and manifests at the stand-ins, keeping values.
func standInSources(o v1alpha1.Object) {
	local := func(src *v1alpha1.ComponentSource, path string) {
		src.ChartRepo, src.ManifestURL, src.Version = "", "", ""
		src.LocalPath = path
	}
	switch x := o.(type) {
	case *v1alpha1.TFRCluster:
		root := testenv.StandIns("cluster")
		s := &x.Spec
		local(&s.CertManager, filepath.Join(root, "charts", "cert-manager"))
		local(&s.Istio, filepath.Join(root, "charts", "istio"))
		local(&s.IstioIngress, filepath.Join(root, "charts", "gateway"))
		local(&s.MinIOOperator, filepath.Join(root, "charts", "minio-operator"))
		local(&s.CNPGOperator, filepath.Join(root, "manifests", "cnpg.yaml"))
		local(&s.RabbitMQOperator, filepath.Join(root, "manifests", "rabbitmq"))
		// A personal tenant's middleware is the cluster's.
		charts := filepath.Join(testenv.StandIns("tenant"), "charts")
		local(&s.Personal.Middleware.Jaeger.ComponentSource, filepath.Join(charts, "jaeger"))
		local(&s.Personal.Middleware.Grafana.ComponentSource, filepath.Join(charts, "grafana"))
		for jt, m := range s.Personal.JobTypes {
			local(&m.Jaeger.ComponentSource, filepath.Join(charts, "jaeger"))
			local(&m.Grafana.ComponentSource, filepath.Join(charts, "grafana"))
			s.Personal.JobTypes[jt] = m
		}
	case *v1alpha1.TFRTenant:
		if x.Spec.Type == v1alpha1.TenantPersonal {
			return // its middleware is the cluster's, above
		}
		root := filepath.Join(testenv.StandIns("tenant"), "charts")
		local(&x.Spec.Jaeger.ComponentSource, filepath.Join(root, "jaeger"))
		local(&x.Spec.Grafana.ComponentSource, filepath.Join(root, "grafana"))
	}
}

// writeObjects writes objects as one multi-document YAML file.
func writeObjects(t *testing.T, dir string, objs []v1alpha1.Object) string {
	t.Helper()
	var docs []string
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		require.NoError(t, err)
		docs = append(docs, string(b))
	}
	path := filepath.Join(dir, "crs.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600))
	return path
}

// renderedObjects reads every manifest a render wrote (one object per file).
func renderedObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "*.yaml"))
	require.NoError(t, err)
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		o := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(b, &o.Object), f)
		out = append(out, o)
	}
	return out
}
