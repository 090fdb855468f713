package stacks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
)

const (
	clusterTestProject = "tfrs"
	clusterTestStack   = "cluster.test"
)

// newClusterMocks records a cluster program run; a read Secret (the registry password ref)
// answers with a password.
func newClusterMocks() *recordingMocks {
	return &recordingMocks{stack: clusterTestStack, prefix: "tfrs:cluster:", secretData: map[string]string{"password": "hunter2"}}
}

func sortEdges(e []GraphEdge) {
	sort.Slice(e, func(i, j int) bool {
		if e[i].From != e[j].From {
			return e[i].From < e[j].From
		}
		return e[i].To < e[j].To
	})
}

func plainInputs(pm resource.PropertyMap) map[string]any { return pm.MapRepl(nil, unwrapSecrets) }

func unwrapSecrets(v resource.PropertyValue) (any, bool) {
	if v.IsSecret() {
		return v.SecretValue().Element.MapRepl(nil, unwrapSecrets), true
	}
	return nil, false
}

func dig(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("dig %v: %T is not a map", path, v)
		}
		v = m[k]
	}
	return v
}

func check(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// runCluster runs the program under mocks and returns the registrations, the recorded graph
// and the resolved outputs.
func runCluster(t *testing.T, tc *v1alpha1.TFRCluster) (*recordingMocks, *Graph, map[string]any) {
	t.Helper()
	m := newClusterMocks()
	g := &Graph{}
	var (
		wg      sync.WaitGroup
		outputs map[string]any
		secret  map[string]bool
	)
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		outs, err := clusterProgram(ctx, ClusterInput{Cluster: tc, Graph: g})
		if err != nil {
			return err
		}
		outputs, secret = map[string]any{}, map[string]bool{}
		var mu sync.Mutex
		for k, v := range outs {
			wg.Add(1)
			o := pulumi.ToOutput(v)
			o.ApplyT(func(x any) any {
				mu.Lock()
				outputs[k] = x
				secret[k] = pulumi.IsSecret(o)
				mu.Unlock()
				wg.Done()
				return x
			})
		}
		return nil
	}, pulumi.WithMocks(clusterTestProject, clusterTestStack, m))
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !secret[ClusterOutputDockerConfigJSON] {
		t.Errorf("%s is not a secret output", ClusterOutputDockerConfigJSON)
	}
	for k, s := range secret {
		if s && k != ClusterOutputDockerConfigJSON {
			t.Errorf("output %s is secret", k)
		}
	}
	return m, g, outputs
}

func newTestCluster(mut func(*v1alpha1.TFRClusterSpec)) *v1alpha1.TFRCluster {
	tc := &v1alpha1.TFRCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod"},
		Spec: v1alpha1.TFRClusterSpec{
			Domain: "tfr.example.com",
			ImageRegistry: &v1alpha1.ImageRegistrySpec{Credentials: &v1alpha1.RegistryCredentials{
				Name: "ccr", Server: "ccr.ccs.tencentyun.com", Username: "robot", Password: "s3cret",
			}},
		},
	}
	if mut != nil {
		mut(&tc.Spec)
	}
	return tc
}

var allClusterComponents = map[string]string{
	ClusterCertManager:           cluster.CertManagerType,
	ClusterIstio:                 cluster.IstioType,
	ClusterIstioIngress:          cluster.IstioIngressType,
	ClusterGateway:               cluster.GatewayType,
	ClusterEnvoyFilterCookie:     cluster.EnvoyFilterCookieType,
	ClusterEnvoyFilterLuaRouting: cluster.EnvoyFilterLuaRoutingType,
	ClusterVirtualService:        cluster.ClusterVirtualServiceType,
	ClusterIstioTelemetry:        cluster.IstioTelemetryType,
	ClusterCNPGOperator:          cluster.CNPGOperatorType,
	ClusterMinIOOperator:         cluster.MinIOOperatorType,
	ClusterRabbitMQOperator:      cluster.RabbitMQOperatorType,
	ClusterImageRegistry:         cluster.ImageRegistryType,
	ClusterOwnership:             cluster.OwnershipType,
}

// The seeds' graph, written out edge by edge.
var seedEdges = []GraphEdge{
	{ClusterCertManager, ClusterIstio},
	{ClusterIstio, ClusterIstioIngress},
	{ClusterIstioIngress, ClusterGateway},
	{ClusterGateway, ClusterVirtualService},
	{ClusterIstio, ClusterEnvoyFilterCookie},
	{ClusterEnvoyFilterCookie, ClusterVirtualService},
	{ClusterIstio, ClusterEnvoyFilterLuaRouting},
	{ClusterIstio, ClusterIstioTelemetry},
}

func TestClusterEveryComponentPerIngressMode(t *testing.T) {
	annotations := map[string]string{"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-1"}
	for _, tc := range []struct {
		name     string
		ingress  v1alpha1.IngressSpec
		svcType  string
		address  string
		ports    [2]float64
		nodePort bool
	}{
		{"TKECLB", v1alpha1.IngressSpec{Mode: v1alpha1.IngressTKECLB, ServiceAnnotations: annotations}, "LoadBalancer", "", [2]float64{80, 443}, false},
		{"NodePort default", v1alpha1.IngressSpec{}, "NodePort", "", [2]float64{30080, 30443}, true},
		{"NodePort fixed", v1alpha1.IngressSpec{Mode: v1alpha1.IngressNodePort, HTTPPort: ptr.To[int32](31080), HTTPSPort: ptr.To[int32](31443)}, "NodePort", "", [2]float64{31080, 31443}, true},
		{"DockerDesktop", v1alpha1.IngressSpec{Mode: v1alpha1.IngressDockerDesktop}, "LoadBalancer", "localhost", [2]float64{80, 443}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, g, out := runCluster(t, newTestCluster(func(s *v1alpha1.TFRClusterSpec) { s.Ingress = tc.ingress }))

			comps := m.components()
			got := map[string]string{}
			for id, r := range comps {
				got[id] = r.Type
				if r.Parent != "" && resource.URN(r.Parent).QualifiedType() != resource.RootStackType {
					t.Errorf("%s is not a top-level component", id)
				}
			}
			check(t, "components", got, allClusterComponents)
			if len(g.Nodes) != len(allClusterComponents) || len(g.Skipped) != 0 {
				t.Errorf("graph nodes %d skipped %v", len(g.Nodes), g.Skipped)
			}
			// Every other resource sits under exactly one component.
			urns := m.byURN()
			for _, r := range m.regs {
				if _, ok := comps[r.Name]; ok && strings.HasPrefix(r.Type, "tfrs:cluster:") {
					continue
				}
				if o := m.owner(urns, r); !strings.HasPrefix(o.Type, "tfrs:cluster:") {
					t.Errorf("%s %s is outside every component", r.Type, r.Name)
				}
			}

			svc := plainInputs(m.find(t, "kubernetes:core/v1:Service", "").Inputs)
			check(t, "service type", dig(t, svc, "spec", "type"), tc.svcType)
			if tc.ingress.ServiceAnnotations != nil {
				check(t, "annotations", dig(t, svc, "metadata", "annotations"), map[string]any{"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-1"})
			}
			var nodePorts []any
			for _, p := range dig(t, svc, "spec", "ports").([]any) {
				if np, ok := p.(map[string]any)["nodePort"]; ok {
					nodePorts = append(nodePorts, np)
				}
			}
			if tc.nodePort {
				check(t, "node ports", nodePorts, []any{tc.ports[0], tc.ports[1]})
			} else if nodePorts != nil {
				t.Errorf("node ports %v outside NodePort mode", nodePorts)
			}

			gw := plainInputs(m.find(t, "kubernetes:networking.istio.io/v1:Gateway", "").Inputs)
			check(t, "gateway host", dig(t, gw, "spec", "servers").([]any)[1].(map[string]any)["hosts"], []any{"api.tfr.example.com"})
			vs := plainInputs(m.find(t, "kubernetes:networking.istio.io/v1:VirtualService", "").Inputs)
			check(t, "vs gateway", dig(t, vs, "spec", "gateways"), []any{"istio-ingress/tfrs-api"})
			iss := plainInputs(m.find(t, "kubernetes:cert-manager.io/v1:ClusterIssuer", "").Inputs)
			check(t, "issuer", dig(t, iss, "spec"), map[string]any{"selfSigned": map[string]any{}})
			pull := plainInputs(m.find(t, "kubernetes:core/v1:Secret", "").Inputs)
			check(t, "pull secret", dig(t, pull, "metadata"), map[string]any{"name": "ccr-pull-secret", "namespace": PullSecretNamespace})

			wantCfg, _ := cluster.DockerConfigJSON("ccr.ccs.tencentyun.com", "robot", "s3cret")
			check(t, "outputs", out, map[string]any{
				ClusterOutputDomain:                "tfr.example.com",
				ClusterOutputAPIHost:               "api.tfr.example.com",
				ClusterOutputIngressMode:           string(map[bool]v1alpha1.IngressMode{true: v1alpha1.IngressNodePort, false: tc.ingress.Mode}[tc.ingress.Mode == ""]),
				ClusterOutputIngressAddress:        tc.address,
				ClusterOutputIngressHTTPPort:       int(tc.ports[0]),
				ClusterOutputIngressHTTPSPort:      int(tc.ports[1]),
				ClusterOutputImageRegistry:         "",
				ClusterOutputPullSecretName:        "ccr-pull-secret",
				ClusterOutputPullSecretNamespace:   PullSecretNamespace,
				ClusterOutputDockerConfigJSON:      wantCfg,
				ClusterOutputCNPGOperatorReady:     true,
				ClusterOutputMinIOOperatorReady:    true,
				ClusterOutputRabbitMQOperatorReady: true,
				ClusterOutputReservedNamespaces:    []string{},
				ClusterOutputPersonal:              defaultPersonalJSON(t),
				ClusterOutputTenancy:               "{}", // no spec.tenancy: the built-in policy (tenancy.go)
				// No spec.egress and, under mocks, no API server read (egress.go).
				ClusterOutputEgress:                     `{"spec":{},"apiServer":{}}`,
				ClusterOutputTenantPullSecretsNamespace: "",
			})
		})
	}
}

func TestClusterEdgesAreExactlyTheSeeds(t *testing.T) {
	m, g, _ := runCluster(t, newTestCluster(nil))
	want := append([]GraphEdge(nil), seedEdges...)
	sortEdges(want)
	// As registered (DependsOn URNs in the RegisterResource requests)…
	check(t, "registered edges", m.edges(), want)
	// …as recorded for `tfrs graph`…
	check(t, "recorded edges", g.Edges(), want)
	// …and as ClusterGraph reports them.
	cg, err := ClusterGraph(newTestCluster(nil))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "ClusterGraph edges", cg.Edges(), want)
	var ids []string
	for _, n := range cg.Nodes {
		ids = append(ids, n.ID)
		check(t, n.ID+" type", n.Type, allClusterComponents[n.ID])
	}
	if len(ids) != len(allClusterComponents) {
		t.Errorf("ClusterGraph nodes %v", ids)
	}
	// The operators and the registry depend on nothing, and nothing depends on them.
	for _, id := range []string{ClusterCNPGOperator, ClusterMinIOOperator, ClusterRabbitMQOperator, ClusterImageRegistry} {
		for _, e := range m.edges() {
			if e.From == id || e.To == id {
				t.Errorf("unexpected edge %v", e)
			}
		}
	}
}

func TestClusterGraphReadsSecretRef(t *testing.T) {
	tc := newTestCluster(func(s *v1alpha1.TFRClusterSpec) {
		s.ImageRegistry.Credentials.Password = ""
		s.ImageRegistry.Credentials.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "reg", Namespace: "ops", Key: "token"}
	})
	g, err := ClusterGraph(tc)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != len(allClusterComponents) {
		t.Errorf("nodes %v", g.Nodes)
	}
	b, err := json.Marshal(g)
	if err != nil || !strings.Contains(string(b), `"id":"envoyfilter-lua-routing","type":"tfrs:cluster:EnvoyFilterLuaRouting","dependsOn":["istio"]`) {
		t.Errorf("graph JSON %s %v", b, err)
	}
}

func TestClusterPasswordFromSecret(t *testing.T) {
	m, _, out := runCluster(t, newTestCluster(func(s *v1alpha1.TFRClusterSpec) {
		s.ImageRegistry.Credentials.Password = ""
		s.ImageRegistry.Credentials.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "reg", Namespace: "ops"}
	}))
	want, _ := cluster.DockerConfigJSON("ccr.ccs.tencentyun.com", "robot", "hunter2")
	check(t, "dockerconfigjson", out[ClusterOutputDockerConfigJSON], want)
	found := false
	for _, r := range m.regs {
		if r.Name == "image-registry-password" {
			found = true
		}
	}
	if !found {
		t.Error("referenced Secret not read")
	}
}

func TestClusterDisablingRemovesDependants(t *testing.T) {
	off := func(c *v1alpha1.ComponentSource) { c.Enabled = ptr.To(false) }
	istioChain := []string{ClusterIstio, ClusterIstioIngress, ClusterGateway, ClusterEnvoyFilterCookie, ClusterEnvoyFilterLuaRouting, ClusterVirtualService, ClusterIstioTelemetry}
	for _, tc := range []struct {
		name    string
		mut     func(*v1alpha1.TFRClusterSpec)
		removed []string
	}{
		{"cert-manager", func(s *v1alpha1.TFRClusterSpec) { off(&s.CertManager) }, append([]string{ClusterCertManager}, istioChain...)},
		{"istio", func(s *v1alpha1.TFRClusterSpec) { off(&s.Istio) }, istioChain},
		{"istio-ingress", func(s *v1alpha1.TFRClusterSpec) { off(&s.IstioIngress) }, []string{ClusterIstioIngress, ClusterGateway, ClusterVirtualService}},
		{"cnpg", func(s *v1alpha1.TFRClusterSpec) { off(&s.CNPGOperator) }, []string{ClusterCNPGOperator}},
		{"minio", func(s *v1alpha1.TFRClusterSpec) { off(&s.MinIOOperator) }, []string{ClusterMinIOOperator}},
		{"rabbitmq", func(s *v1alpha1.TFRClusterSpec) { off(&s.RabbitMQOperator) }, []string{ClusterRabbitMQOperator}},
		{"no credentials", func(s *v1alpha1.TFRClusterSpec) { s.ImageRegistry = nil }, []string{ClusterImageRegistry}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, g, out := runCluster(t, newTestCluster(tc.mut))
			want := map[string]string{}
			for id, typ := range allClusterComponents {
				if !contains(tc.removed, id) {
					want[id] = typ
				}
			}
			got := map[string]string{}
			for id, r := range m.components() {
				got[id] = r.Type
			}
			check(t, "components", got, want)

			// Nothing of a removed component is registered.
			urns := m.byURN()
			for _, r := range m.regs {
				if o := m.owner(urns, r); contains(tc.removed, o.Name) {
					t.Errorf("%s %s of removed %s registered", r.Type, r.Name, o.Name)
				}
			}
			// The remaining edges are the seeds' edges between remaining components.
			var wantEdges []GraphEdge
			for _, e := range seedEdges {
				if !contains(tc.removed, e.From) && !contains(tc.removed, e.To) {
					wantEdges = append(wantEdges, e)
				}
			}
			sortEdges(wantEdges)
			check(t, "edges", m.edges(), wantEdges)

			var skipped []string
			for _, s := range g.Skipped {
				skipped = append(skipped, s.ID)
				if s.Reason == "" {
					t.Errorf("%s skipped without a reason", s.ID)
				}
			}
			sort.Strings(skipped)
			removed := append([]string(nil), tc.removed...)
			sort.Strings(removed)
			check(t, "skipped", skipped, removed)

			// Outputs of removed components fall back to their zero values.
			for id, key := range map[string]string{ClusterCNPGOperator: ClusterOutputCNPGOperatorReady, ClusterMinIOOperator: ClusterOutputMinIOOperatorReady, ClusterRabbitMQOperator: ClusterOutputRabbitMQOperatorReady} {
				check(t, key, out[key], !contains(tc.removed, id))
			}
			if contains(tc.removed, ClusterIstioIngress) {
				check(t, "ingress port", out[ClusterOutputIngressHTTPPort], 0)
			}
			if contains(tc.removed, ClusterImageRegistry) {
				check(t, "pull secret", out[ClusterOutputPullSecretName], "")
				check(t, "dockerconfigjson", out[ClusterOutputDockerConfigJSON], "")
			}
		})
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func TestClusterMirrorOverrides(t *testing.T) {
	values := func(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
	m, _, out := runCluster(t, newTestCluster(func(s *v1alpha1.TFRClusterSpec) {
		s.ImageRegistry.Registry = "mirror.example.cn/tfrs"
		s.CertManager = v1alpha1.ComponentSource{ChartRepo: "https://charts.mirror.example.cn/jetstack", Version: "v1.17.0", Values: values(`{"replicaCount":2}`)}
		s.Istio = v1alpha1.ComponentSource{ChartRepo: "oci://mirror.example.cn/istio-charts/"}
		s.IstioIngress = v1alpha1.ComponentSource{LocalPath: "/opt/charts/gateway", Version: "9.9.9"}
		s.CNPGOperator = v1alpha1.ComponentSource{ManifestURL: "https://mirror.example.cn/cnpg/cnpg-1.30.0.yaml"}
		s.MinIOOperator = v1alpha1.ComponentSource{Version: "6.0.3"}
		s.RabbitMQOperator = v1alpha1.ComponentSource{ManifestURL: "file:///opt/manifests/rabbitmq/"}
	}))
	chart := func(name string) map[string]any {
		return plainInputs(m.find(t, "kubernetes:helm.sh/v4:Chart", name).Inputs)
	}
	cm := chart("cert-manager-chart")
	check(t, "cert-manager repo", dig(t, cm, "repositoryOpts", "repo"), "https://charts.mirror.example.cn/jetstack")
	check(t, "cert-manager chart", cm["chart"], "cert-manager")
	check(t, "cert-manager version", cm["version"], "v1.17.0")
	check(t, "cert-manager image", dig(t, cm, "values", "image", "repository"), "mirror.example.cn/tfrs/jetstack/cert-manager-controller")
	check(t, "cert-manager webhook image", dig(t, cm, "values", "webhook", "image", "repository"), "mirror.example.cn/tfrs/jetstack/cert-manager-webhook")
	check(t, "cert-manager spec values", dig(t, cm, "values", "replicaCount"), 2.0)
	check(t, "cert-manager own values kept", dig(t, cm, "values", "crds", "enabled"), true)

	for _, n := range []string{"base", "istiod"} {
		c := chart("istio-" + n)
		check(t, n+" chart", c["chart"], "oci://mirror.example.cn/istio-charts/"+n)
		check(t, n+" version", c["version"], pinnedSources[ClusterIstio].Version)
		if _, ok := c["repositoryOpts"]; ok {
			t.Errorf("%s: oci chart with a repository", n)
		}
	}
	check(t, "istio hub", dig(t, chart("istio-istiod"), "values", "global", "hub"), "mirror.example.cn/tfrs/istio")

	// istio-ingress follows Istio's version override unless it has its own.
	m2, _, _ := runCluster(t, newTestCluster(func(s *v1alpha1.TFRClusterSpec) { s.Istio.Version = "1.25.1" }))
	for _, n := range []string{"istio-base", "istio-istiod", "istio-ingress-chart"} {
		check(t, n+" follows istio", plainInputs(m2.find(t, "kubernetes:helm.sh/v4:Chart", n).Inputs)["version"], "1.25.1")
	}

	gw := chart("istio-ingress-chart")
	check(t, "gateway local path", gw["chart"], "/opt/charts/gateway")
	if _, ok := gw["version"]; ok {
		t.Error("local chart carries a version")
	}

	mo := chart("minio-operator-chart")
	check(t, "minio repo", dig(t, mo, "repositoryOpts", "repo"), "https://operator.min.io")
	check(t, "minio version", mo["version"], "6.0.3")
	check(t, "minio image", dig(t, mo, "values", "operator", "image", "repository"), "mirror.example.cn/tfrs/minio/operator")

	cf := func(name string) *registration { return m.find(t, "kubernetes:yaml/v2:ConfigFile", name) }
	check(t, "cnpg file", plainInputs(cf("cnpg-operator-manifest").Inputs)["file"], "https://mirror.example.cn/cnpg/cnpg-1.30.0.yaml")
	check(t, "rabbitmq cluster file", plainInputs(cf("rabbitmq-operator-cluster-operator").Inputs)["file"], "/opt/manifests/rabbitmq/cluster-operator.yml")
	check(t, "rabbitmq topology file", plainInputs(cf("rabbitmq-operator-topology-operator").Inputs)["file"], "/opt/manifests/rabbitmq/messaging-topology-operator-with-certmanager.yaml")
	for _, n := range []string{"cnpg-operator-manifest", "rabbitmq-operator-cluster-operator", "rabbitmq-operator-topology-operator"} {
		if cf(n).Transforms != 2 {
			t.Errorf("%s: %d transforms, want the namespace's platform role and the image mirror", n, cf(n).Transforms)
		}
	}
	check(t, "imageRegistry output", out[ClusterOutputImageRegistry], "mirror.example.cn/tfrs")
}

func TestClusterPinnedSources(t *testing.T) {
	m, _, _ := runCluster(t, newTestCluster(nil))
	for name, want := range map[string][3]string{
		"cert-manager-chart":   {"cert-manager", "https://charts.jetstack.io", "v1.21.2"},
		"istio-base":           {"base", istioChartRepo, "1.32.0"},
		"istio-istiod":         {"istiod", istioChartRepo, "1.32.0"},
		"istio-cni":            {"cni", istioChartRepo, "1.32.0"},
		"istio-ingress-chart":  {"gateway", istioChartRepo, "1.32.0"},
		"minio-operator-chart": {"operator", "https://operator.min.io", "7.1.1"},
	} {
		c := plainInputs(m.find(t, "kubernetes:helm.sh/v4:Chart", name).Inputs)
		check(t, name, [3]string{c["chart"].(string), dig(t, c, "repositoryOpts", "repo").(string), c["version"].(string)}, want)
		if v, ok := c["values"].(map[string]any); ok {
			if _, has := v["global"]; has && name == "istio-istiod" {
				t.Error("mirror values without a mirror")
			}
		}
	}
	for name, want := range map[string]string{
		"cnpg-operator-manifest":              "https://github.com/cloudnative-pg/cloudnative-pg/releases/download/v1.30.0/cnpg-1.30.0.yaml",
		"rabbitmq-operator-cluster-operator":  "https://github.com/rabbitmq/cluster-operator/releases/download/v2.22.3/cluster-operator.yml",
		"rabbitmq-operator-topology-operator": "https://github.com/rabbitmq/messaging-topology-operator/releases/download/v1.20.1/messaging-topology-operator-with-certmanager.yaml",
	} {
		r := m.find(t, "kubernetes:yaml/v2:ConfigFile", name)
		check(t, name, plainInputs(r.Inputs)["file"], want)
		if r.Transforms != 1 { // the namespace's platform role (clusterns.Labels) only
			t.Errorf("%s: %d transforms without a mirror, want the platform role's only", name, r.Transforms)
		}
	}
}

func TestResolveSources(t *testing.T) {
	// The version override follows the primary artifact only.
	refs, err := resolveManifests(ClusterRabbitMQOperator, v1alpha1.ComponentSource{Version: "v2.22.2"})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "cluster operator", refs[0].File, "https://github.com/rabbitmq/cluster-operator/releases/download/v2.22.2/cluster-operator.yml")
	check(t, "topology operator keeps its pin", refs[1].File, "https://github.com/rabbitmq/messaging-topology-operator/releases/download/v1.20.1/messaging-topology-operator-with-certmanager.yaml")

	refs, err = resolveManifests(ClusterCNPGOperator, v1alpha1.ComponentSource{LocalPath: "/m/cnpg.yaml", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "cnpg local", refs[0].File, "/m/cnpg.yaml")
	refs, err = resolveManifests(ClusterCNPGOperator, v1alpha1.ComponentSource{ManifestURL: "file:///m/cnpg.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "cnpg file url", refs[0].File, "/m/cnpg.yaml")

	charts, err := resolveCharts(ClusterIstio, v1alpha1.ComponentSource{LocalPath: "/c/istio", Values: &apiextensionsv1.JSON{Raw: []byte(`{"pilot":{"replicaCount":3}}`)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "istio base local", charts[0], cluster.ChartRef{Chart: "/c/istio/base"})
	check(t, "istiod local takes the values", charts[1], cluster.ChartRef{Chart: "/c/istio/istiod", Values: map[string]any{"pilot": map[string]any{"replicaCount": 3.0}}})

	for _, bad := range []struct {
		id  string
		src v1alpha1.ComponentSource
	}{
		{ClusterCNPGOperator, v1alpha1.ComponentSource{ChartRepo: "https://charts.example.com"}},
		{ClusterCertManager, v1alpha1.ComponentSource{ManifestURL: "https://example.com/cm.yaml"}},
		{ClusterCertManager, v1alpha1.ComponentSource{Values: &apiextensionsv1.JSON{Raw: []byte(`[1]`)}}},
		{ClusterRabbitMQOperator, v1alpha1.ComponentSource{ManifestURL: "file://host/x"}},
	} {
		var err error
		if pinnedSources[bad.id].Kind == SourceHelm {
			_, err = resolveCharts(bad.id, bad.src, "")
		} else {
			_, err = resolveManifests(bad.id, bad.src)
		}
		if err == nil {
			t.Errorf("%s %+v accepted", bad.id, bad.src)
		}
	}
	// And the program refuses them before registering anything.
	err = pulumi.RunErr(Cluster(ClusterInput{Cluster: newTestCluster(func(s *v1alpha1.TFRClusterSpec) {
		s.CNPGOperator.ChartRepo = "https://charts.example.com"
	})}), pulumi.WithMocks(clusterTestProject, clusterTestStack, newClusterMocks()))
	if err == nil || !strings.Contains(err.Error(), "chartRepo does not apply") {
		t.Errorf("err = %v", err)
	}
}

func TestClusterRejectsInvalidSpec(t *testing.T) {
	for name, mut := range map[string]func(*v1alpha1.TFRClusterSpec){
		"TKECLB without annotations": func(s *v1alpha1.TFRClusterSpec) { s.Ingress.Mode = v1alpha1.IngressTKECLB },
		"ACME without settings":      func(s *v1alpha1.TFRClusterSpec) { s.TLS.Issuer = v1alpha1.TLSACME },
		"bad domain":                 func(s *v1alpha1.TFRClusterSpec) { s.Domain = "Bad_Domain" },
	} {
		m := newClusterMocks()
		err := pulumi.RunErr(Cluster(ClusterInput{Cluster: newTestCluster(mut)}), pulumi.WithMocks(clusterTestProject, clusterTestStack, m))
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		if len(m.regs) != 0 {
			t.Errorf("%s: registered %d resources before failing", name, len(m.regs))
		}
	}
	if err := pulumi.RunErr(Cluster(ClusterInput{}), pulumi.WithMocks(clusterTestProject, clusterTestStack, newClusterMocks())); err == nil {
		t.Error("nil cluster accepted")
	}
}

func TestClusterTLSIssuers(t *testing.T) {
	m, _, _ := runCluster(t, newTestCluster(func(s *v1alpha1.TFRClusterSpec) {
		s.TLS = v1alpha1.TLSSpec{Issuer: v1alpha1.TLSACME, ACME: &v1alpha1.ACMEIssuer{Email: "ops@example.com", Server: "https://acme-v02.api.letsencrypt.org/directory"}}
	}))
	iss := plainInputs(m.find(t, "kubernetes:cert-manager.io/v1:ClusterIssuer", "").Inputs)
	check(t, "acme server", dig(t, iss, "spec", "acme", "server"), "https://acme-v02.api.letsencrypt.org/directory")
	cert := plainInputs(m.find(t, "kubernetes:cert-manager.io/v1:Certificate", "").Inputs)
	check(t, "no wildcard with ACME", dig(t, cert, "spec", "dnsNames"), []any{"api.tfr.example.com"})

	m, _, _ = runCluster(t, newTestCluster(func(s *v1alpha1.TFRClusterSpec) {
		s.TLS = v1alpha1.TLSSpec{Issuer: v1alpha1.TLSCA, CA: &v1alpha1.CAIssuer{SecretName: "root-ca"}}
	}))
	iss = plainInputs(m.find(t, "kubernetes:cert-manager.io/v1:ClusterIssuer", "").Inputs)
	check(t, "ca", dig(t, iss, "spec"), map[string]any{"ca": map[string]any{"secretName": "root-ca"}})
	cert = plainInputs(m.find(t, "kubernetes:cert-manager.io/v1:Certificate", "").Inputs)
	check(t, "wildcard with CA", dig(t, cert, "spec", "dnsNames"), []any{"api.tfr.example.com", "*.tfr.example.com"})
}

func TestMirrorImage(t *testing.T) {
	const p = "mirror.example.cn/tfrs"
	for in, want := range map[string]string{
		"quay.io/jetstack/cert-manager-controller:v1.21.2": p + "/jetstack/cert-manager-controller:v1.21.2",
		"ghcr.io/cloudnative-pg/cloudnative-pg:1.30.0":     p + "/cloudnative-pg/cloudnative-pg:1.30.0",
		"rabbitmq:4.2.6-management":                        p + "/library/rabbitmq:4.2.6-management",
		"rabbitmqoperator/cluster-operator:2.22.3":         p + "/rabbitmqoperator/cluster-operator:2.22.3",
		"docker.io/istio":                                  p + "/istio",
		"localhost/x:1":                                    p + "/x:1",
		"registry:5000/team/app@sha256:abc":                p + "/team/app@sha256:abc",
		p + "/already/there:1":                             p + "/already/there:1",
		"":                                                 "",
	} {
		check(t, in, MirrorImage(p, in), want)
		check(t, in+" with trailing slash", MirrorImage(p+"/", in), want)
	}
	check(t, "no prefix", MirrorImage("", "quay.io/a/b:1"), "quay.io/a/b:1")
}

// TestClusterStandIns points every source at the stand-ins under testdata/cluster, checks
// that each resolved path exists, and that the real upstream CRDs of the pinned versions
// (which the integration tests install) serve every apiVersion/kind the components create.
func TestClusterStandIns(t *testing.T) {
	root, err := filepath.Abs("testdata/cluster")
	if err != nil {
		t.Fatal(err)
	}
	m, _, _ := runCluster(t, newTestCluster(func(s *v1alpha1.TFRClusterSpec) {
		s.CertManager.LocalPath = filepath.Join(root, "charts/cert-manager")
		s.Istio.LocalPath = filepath.Join(root, "charts/istio")
		s.IstioIngress.LocalPath = filepath.Join(root, "charts/gateway")
		s.MinIOOperator.LocalPath = filepath.Join(root, "charts/minio-operator")
		s.CNPGOperator.LocalPath = filepath.Join(root, "manifests/cnpg.yaml")
		s.RabbitMQOperator.LocalPath = filepath.Join(root, "manifests/rabbitmq")
	}))
	for _, r := range m.regs {
		var path string
		switch r.Type {
		case "kubernetes:helm.sh/v4:Chart":
			path = filepath.Join(plainInputs(r.Inputs)["chart"].(string), "Chart.yaml")
		case "kubernetes:yaml/v2:ConfigFile":
			path = plainInputs(r.Inputs)["file"].(string)
		default:
			continue
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s %s: %v", r.Type, r.Name, err)
		}
	}
	served := upstreamServed(t)
	n := 0
	for _, r := range m.regs {
		group, _, _ := strings.Cut(strings.TrimPrefix(r.Type, "kubernetes:"), "/")
		if !strings.Contains(group, ".") || strings.HasSuffix(group, "k8s.io") || strings.HasPrefix(r.Type, "kubernetes:helm.sh") || strings.HasPrefix(r.Type, "kubernetes:yaml") {
			continue
		}
		n++
		if !served[r.Type] {
			t.Errorf("no pinned upstream CRD serves %s", r.Type)
		}
	}
	if n < 7 {
		t.Errorf("only %d custom resources checked", n)
	}
}
