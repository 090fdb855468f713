package cluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/routing"
)

const (
	testProject = "tfrs"
	testStack   = "cluster.test"
)

// registration is what the mock monitor saw for one resource.
type registration struct {
	Type, Name, URN, Parent string
	Deps                    []string
	Inputs                  resource.PropertyMap
	Custom, Read            bool
	ID                      string
	Transforms              int
}

// mocks records every registration. Reads of Secrets answer with secretData (base64 values).
type mocks struct {
	mu         sync.Mutex
	regs       []*registration
	secretData map[string]string
}

func urnOf(parent, typ, name string) string {
	parentType := tokens.Type("")
	if p := resource.URN(parent); p != "" && p.QualifiedType() != resource.RootStackType {
		parentType = p.QualifiedType()
	}
	return string(resource.NewURN(tokens.QName(testStack), tokens.PackageName(testProject), parentType, tokens.Type(typ), name))
}

func (m *mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r := &registration{Type: args.TypeToken, Name: args.Name, Inputs: args.Inputs, Custom: args.Custom}
	state := args.Inputs
	if rpc := args.RegisterRPC; rpc != nil {
		r.Parent, r.Deps, r.Transforms = rpc.GetParent(), rpc.GetDependencies(), len(rpc.GetTransforms())
	}
	if rpc := args.ReadRPC; rpc != nil {
		r.Parent, r.Read, r.ID = rpc.GetParent(), true, args.ID
		if args.TypeToken == "kubernetes:core/v1:Secret" {
			data := resource.PropertyMap{}
			for k, v := range m.secretData {
				data[resource.PropertyKey(k)] = resource.NewProperty(v)
			}
			state = resource.PropertyMap{"data": resource.MakeSecret(resource.NewProperty(data))}
		}
	}
	r.URN = urnOf(r.Parent, r.Type, r.Name)
	m.mu.Lock()
	m.regs = append(m.regs, r)
	m.mu.Unlock()
	return args.Name + "-id", state, nil
}

func (m *mocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

// run runs program under mocks and fails the test on error.
func run(t *testing.T, m *mocks, program pulumi.RunFunc) {
	t.Helper()
	if err := pulumi.RunErr(program, pulumi.WithMocks(testProject, testStack, m)); err != nil {
		t.Fatal(err)
	}
}

// find returns the one registration of type typ (and name, if not empty).
func (m *mocks) find(t *testing.T, typ, name string) *registration {
	t.Helper()
	var found []*registration
	for _, r := range m.regs {
		if r.Type == typ && (name == "" || r.Name == name) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d registrations of %s %q, want 1 (have %v)", len(found), typ, name, m.names())
	}
	return found[0]
}

func (m *mocks) names() []string {
	var out []string
	for _, r := range m.regs {
		out = append(out, r.Type+"::"+r.Name)
	}
	return out
}

// assertChildren checks that every registration but the component's own has the component as
// parent, and that the component's children are exactly want (type::name).
func (m *mocks) assertChildren(t *testing.T, componentType string, want ...string) *registration {
	t.Helper()
	c := m.find(t, componentType, "")
	var got []string
	for _, r := range m.regs {
		if r == c {
			continue
		}
		if r.Parent != c.URN {
			t.Errorf("%s %s: parent %q, want the component", r.Type, r.Name, r.Parent)
		}
		got = append(got, r.Type+"::"+r.Name)
	}
	if !sameSet(got, want) {
		t.Errorf("children = %v, want %v", got, want)
	}
	return c
}

func sameSet(a, b []string) bool {
	set := map[string]int{}
	for _, x := range a {
		set[x]++
	}
	for _, x := range b {
		set[x]--
	}
	for _, n := range set {
		if n != 0 {
			return false
		}
	}
	return true
}

// plain turns a property map into plain Go values (secrets unwrapped) for comparisons.
func plain(pm resource.PropertyMap) map[string]any { return pm.MapRepl(nil, unwrapSecret) }

func unwrapSecret(v resource.PropertyValue) (any, bool) {
	if v.IsSecret() {
		return v.SecretValue().Element.MapRepl(nil, unwrapSecret), true
	}
	return nil, false
}

// at digs a value out of nested maps/slices: at(m, "spec", "servers", 0, "port").
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	cur := v
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not a map", path, cur)
			}
			cur = m[k]
		case int:
			s, ok := cur.([]any)
			if !ok || k >= len(s) {
				t.Fatalf("at %v: %T has no index %d", path, cur, k)
			}
			cur = s[k]
		}
	}
	return cur
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// await collects the value of an output after the run.
type await[T any] struct {
	wg  sync.WaitGroup
	val T
}

func collect[T any](o pulumi.Output) *await[T] {
	a := &await[T]{}
	a.wg.Add(1)
	o.ApplyT(func(v T) T {
		a.val = v
		a.wg.Done()
		return v
	})
	return a
}

func (a *await[T]) get() T { a.wg.Wait(); return a.val }

var testChart = ChartRef{Chart: "cert-manager", Repo: "https://charts.example.com", Version: "v1.0.0"}

func TestCertManager(t *testing.T) {
	for _, tc := range []struct {
		args CertManagerArgs
		spec map[string]any
	}{
		{CertManagerArgs{Issuer: IssuerSelfSigned}, map[string]any{"selfSigned": map[string]any{}}},
		{CertManagerArgs{Issuer: IssuerCA, CASecretName: "root-ca"}, map[string]any{"ca": map[string]any{"secretName": "root-ca"}}},
		{CertManagerArgs{Issuer: IssuerACME, ACMEEmail: "ops@example.com", ACMEServer: "https://acme.example.com/dir"}, map[string]any{"acme": map[string]any{
			"email": "ops@example.com", "server": "https://acme.example.com/dir",
			"privateKeySecretRef": map[string]any{"name": "tfrs-account-key"},
			"solvers":             []any{map[string]any{"http01": map[string]any{"ingress": map[string]any{"ingressClassName": "istio"}}}},
		}}},
	} {
		t.Run(string(tc.args.Issuer), func(t *testing.T) {
			m := &mocks{}
			args := tc.args
			args.IssuerName = "tfrs"
			args.Chart = testChart
			args.Chart.Values = map[string]any{"crds": map[string]any{"keep": true}, "replicaCount": 2}
			var issuer *await[string]
			run(t, m, func(ctx *pulumi.Context) error {
				c, err := NewCertManager(ctx, "cert-manager", &args)
				if err != nil {
					return err
				}
				issuer = collect[string](c.IssuerName)
				return nil
			})
			m.assertChildren(t, CertManagerType,
				"kubernetes:core/v1:Namespace::cert-manager-namespace",
				"kubernetes:helm.sh/v4:Chart::cert-manager-chart",
				"kubernetes:cert-manager.io/v1:ClusterIssuer::cert-manager-issuer")
			chart := plain(m.find(t, "kubernetes:helm.sh/v4:Chart", "").Inputs)
			eq(t, "chart", chart["chart"], "cert-manager")
			eq(t, "version", chart["version"], "v1.0.0")
			eq(t, "repo", at(t, chart, "repositoryOpts", "repo"), "https://charts.example.com")
			eq(t, "namespace", chart["namespace"], CertManagerNamespace)
			// Own values, with the spec's merged over them.
			eq(t, "values", chart["values"], map[string]any{"crds": map[string]any{"enabled": true, "keep": true}, "replicaCount": 2.0, "startupapicheck": map[string]any{"enabled": false}})

			iss := m.find(t, "kubernetes:cert-manager.io/v1:ClusterIssuer", "")
			eq(t, "issuer spec", plain(iss.Inputs)["spec"], tc.spec)
			eq(t, "issuer name", at(t, plain(iss.Inputs), "metadata", "name"), "tfrs")
			// The ClusterIssuer's CRD comes with the chart.
			if chartURN := m.find(t, "kubernetes:helm.sh/v4:Chart", "").URN; !contains(iss.Deps, chartURN) {
				t.Errorf("ClusterIssuer deps %v lack the chart", iss.Deps)
			}
			eq(t, "IssuerName output", issuer.get(), "tfrs")
		})
	}
}

func TestCertManagerRejectsIncompleteIssuers(t *testing.T) {
	for _, a := range []CertManagerArgs{
		{IssuerName: "x", Issuer: IssuerACME},
		{IssuerName: "x", Issuer: IssuerCA},
		{IssuerName: "x", Issuer: "Vault"},
		{Issuer: IssuerSelfSigned},
	} {
		a.Chart = testChart
		err := pulumi.RunErr(func(ctx *pulumi.Context) error {
			_, err := NewCertManager(ctx, "cert-manager", &a)
			return err
		}, pulumi.WithMocks(testProject, testStack, &mocks{}))
		if err == nil {
			t.Errorf("%+v accepted", a)
		}
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

func TestIstio(t *testing.T) {
	m := &mocks{}
	run(t, m, func(ctx *pulumi.Context) error {
		_, err := NewIstio(ctx, "istio", &IstioArgs{
			Base:           ChartRef{Chart: "/charts/istio/base"},
			Istiod:         ChartRef{Chart: "oci://mirror.example.cn/charts/istiod", Version: "1.24.2", Values: map[string]any{"global": map[string]any{"hub": "mirror.example.cn/istio"}}},
			IngressService: IngressService, IngressSelector: IngressSelectorValue,
			Tracing: TracingProvider{Name: "otel", Service: "collector.obs.svc.cluster.local", Port: 4317},
		})
		return err
	})
	m.assertChildren(t, IstioType,
		"kubernetes:core/v1:Namespace::istio-namespace",
		"kubernetes:helm.sh/v4:Chart::istio-base",
		"kubernetes:helm.sh/v4:Chart::istio-istiod")
	base := m.find(t, "kubernetes:helm.sh/v4:Chart", "istio-base")
	istiod := m.find(t, "kubernetes:helm.sh/v4:Chart", "istio-istiod")
	b := plain(base.Inputs)
	eq(t, "base chart (local path)", b["chart"], "/charts/istio/base")
	if _, ok := b["version"]; ok {
		t.Errorf("local chart has a version: %v", b["version"])
	}
	if _, ok := b["repositoryOpts"]; ok {
		t.Errorf("local chart has a repository")
	}
	d := plain(istiod.Inputs)
	eq(t, "istiod chart (oci)", d["chart"], "oci://mirror.example.cn/charts/istiod")
	eq(t, "istiod release", d["name"], "istiod")
	eq(t, "hub", at(t, d, "values", "global", "hub"), "mirror.example.cn/istio")
	eq(t, "ingress selector", at(t, d, "values", "meshConfig", "ingressSelector"), "ingress")
	eq(t, "tracing provider", at(t, d, "values", "meshConfig", "extensionProviders", 0), map[string]any{
		"name": "otel", "opentelemetry": map[string]any{"service": "collector.obs.svc.cluster.local", "port": 4317.0},
	})
	if !contains(istiod.Deps, base.URN) {
		t.Errorf("istiod does not wait for base (CRDs): %v", istiod.Deps)
	}
}

func TestIstioIngressModes(t *testing.T) {
	annotations := map[string]string{"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-123"}
	for _, tc := range []struct {
		args               IstioIngressArgs
		svcType            string
		nodePorts          []any
		address            string
		httpPort, httpsPrt int
	}{
		{IstioIngressArgs{Mode: IngressTKECLB, ServiceAnnotations: annotations}, "LoadBalancer", nil, "", 80, 443},
		{IstioIngressArgs{Mode: IngressNodePort, HTTPNodePort: 30080, HTTPSNodePort: 30443}, "NodePort", []any{30080.0, 30443.0}, "", 30080, 30443},
		{IstioIngressArgs{Mode: IngressNodePort, HTTPNodePort: 31000, HTTPSNodePort: 31001}, "NodePort", []any{31000.0, 31001.0}, "", 31000, 31001},
		{IstioIngressArgs{Mode: IngressDockerDesktop}, "LoadBalancer", nil, "localhost", 80, 443},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.args.Mode, tc.args.HTTPNodePort), func(t *testing.T) {
			m := &mocks{}
			args := tc.args
			args.Chart = ChartRef{Chart: "gateway", Repo: "https://istio.example.com/charts", Version: "1.24.2"}
			var addr *await[string]
			var hp, hsp *await[int]
			run(t, m, func(ctx *pulumi.Context) error {
				c, err := NewIstioIngress(ctx, "istio-ingress", &args)
				if err != nil {
					return err
				}
				addr, hp, hsp = collect[string](c.Address), collect[int](c.HTTPPort), collect[int](c.HTTPSPort)
				return nil
			})
			m.assertChildren(t, IstioIngressType,
				"kubernetes:core/v1:Namespace::istio-ingress-namespace",
				"kubernetes:helm.sh/v4:Chart::istio-ingress-chart",
				"kubernetes:core/v1:Service::istio-ingress-service")
			chart := plain(m.find(t, "kubernetes:helm.sh/v4:Chart", "").Inputs)
			eq(t, "chart service type", at(t, chart, "values", "service", "type"), "None")
			eq(t, "release", chart["name"], IngressRelease)

			svc := m.find(t, "kubernetes:core/v1:Service", "")
			s := plain(svc.Inputs)
			eq(t, "type", at(t, s, "spec", "type"), tc.svcType)
			eq(t, "selector", at(t, s, "spec", "selector"), map[string]any{"app": "istio-ingress", "istio": "ingress"})
			eq(t, "namespace", at(t, s, "metadata", "namespace"), IngressNamespace)
			if tc.args.ServiceAnnotations != nil {
				eq(t, "annotations", at(t, s, "metadata", "annotations"), map[string]any{"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-123"})
			}
			var gotNodePorts []any
			for _, p := range at(t, s, "spec", "ports").([]any) {
				pm := p.(map[string]any)
				if np, ok := pm["nodePort"]; ok {
					gotNodePorts = append(gotNodePorts, np)
				}
				if pm["name"] == "http2" {
					eq(t, "http port", pm["port"], 80.0)
				}
				if pm["name"] == "https" {
					eq(t, "https port", pm["port"], 443.0)
				}
			}
			eq(t, "node ports", gotNodePorts, tc.nodePorts)
			eq(t, "address", addr.get(), tc.address)
			eq(t, "http port output", hp.get(), tc.httpPort)
			eq(t, "https port output", hsp.get(), tc.httpsPrt)
		})
	}
}

func TestIstioIngressRejectsBadArgs(t *testing.T) {
	for _, a := range []IstioIngressArgs{
		{Mode: "Ingress"},
		{Mode: IngressNodePort, HTTPNodePort: 80, HTTPSNodePort: 30443},
		{Mode: IngressNodePort, HTTPNodePort: 30080, HTTPSNodePort: 30080},
	} {
		a.Chart = testChart
		err := pulumi.RunErr(func(ctx *pulumi.Context) error {
			_, err := NewIstioIngress(ctx, "istio-ingress", &a)
			return err
		}, pulumi.WithMocks(testProject, testStack, &mocks{}))
		if err == nil {
			t.Errorf("%+v accepted", a)
		}
	}
}

func TestLoadBalancerAddress(t *testing.T) {
	ip, host := "10.0.0.7", "lb.example.com"
	eq(t, "nil", loadBalancerAddress(nil), "")
	eq(t, "ip", loadBalancerAddress(&corev1.ServiceStatus{LoadBalancer: &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Ip: &ip}}}}), ip)
	eq(t, "hostname", loadBalancerAddress(&corev1.ServiceStatus{LoadBalancer: &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: &host}}}}), host)
}

func TestGateway(t *testing.T) {
	for _, wildcard := range []bool{false, true} {
		m := &mocks{}
		var ref *await[string]
		run(t, m, func(ctx *pulumi.Context) error {
			c, err := NewGateway(ctx, "gateway", &GatewayArgs{Domain: "tfr.example.com", IssuerName: "tfrs", Wildcard: wildcard})
			if err != nil {
				return err
			}
			ref = collect[string](c.GatewayRef)
			return nil
		})
		m.assertChildren(t, GatewayType,
			"kubernetes:cert-manager.io/v1:Certificate::gateway-certificate",
			"kubernetes:networking.istio.io/v1:Gateway::gateway-gateway")
		cert := plain(m.find(t, "kubernetes:cert-manager.io/v1:Certificate", "").Inputs)
		eq(t, "cert namespace", at(t, cert, "metadata", "namespace"), IngressNamespace)
		eq(t, "cert secret", at(t, cert, "spec", "secretName"), APITLSSecretName)
		eq(t, "issuer", at(t, cert, "spec", "issuerRef"), map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "tfrs"})
		names := []any{"api.tfr.example.com"}
		if wildcard {
			names = append(names, "*.tfr.example.com")
		}
		eq(t, "dnsNames", at(t, cert, "spec", "dnsNames"), names)

		gw := plain(m.find(t, "kubernetes:networking.istio.io/v1:Gateway", "").Inputs)
		eq(t, "selector", at(t, gw, "spec", "selector"), map[string]any{"istio": "ingress"})
		eq(t, "http server", at(t, gw, "spec", "servers", 0), map[string]any{
			"port":  map[string]any{"number": 80.0, "name": "http", "protocol": "HTTP"},
			"hosts": []any{"api.tfr.example.com"},
			"tls":   map[string]any{"httpsRedirect": true},
		})
		eq(t, "https server", at(t, gw, "spec", "servers", 1), map[string]any{
			"port":  map[string]any{"number": 443.0, "name": "https", "protocol": "HTTPS"},
			"hosts": []any{"api.tfr.example.com"},
			"tls":   map[string]any{"mode": "SIMPLE", "credentialName": APITLSSecretName},
		})
		eq(t, "gateway ref", ref.get(), "istio-ingress/tfrs-api")
	}
}

func TestEnvoyFilters(t *testing.T) {
	m := &mocks{}
	run(t, m, func(ctx *pulumi.Context) error {
		if _, err := NewEnvoyFilterCookie(ctx, "envoyfilter-cookie", &EnvoyFilterArgs{Domain: "tfr.example.com"}); err != nil {
			return err
		}
		_, err := NewEnvoyFilterLuaRouting(ctx, "envoyfilter-lua-routing", &EnvoyFilterArgs{Domain: "tfr.example.com"})
		return err
	})
	const efType = "kubernetes:networking.istio.io/v1alpha3:EnvoyFilter"
	cookie := m.find(t, efType, "envoyfilter-cookie-envoyfilter")
	route := m.find(t, efType, "envoyfilter-lua-routing-envoyfilter")
	eq(t, "cookie parent", cookie.Parent, m.find(t, EnvoyFilterCookieType, "").URN)
	eq(t, "routing parent", route.Parent, m.find(t, EnvoyFilterLuaRoutingType, "").URN)

	wantCookie, _ := routing.CookieFilterLua("api.tfr.example.com")
	wantRoute, _ := routing.RoutingFilterLua("api.tfr.example.com")
	c, r := plain(cookie.Inputs), plain(route.Inputs)
	for _, x := range []struct {
		name string
		ef   map[string]any
		code string
	}{{"cookie", c, wantCookie}, {"routing", r, wantRoute}} {
		eq(t, x.name+" namespace", at(t, x.ef, "metadata", "namespace"), IngressNamespace)
		eq(t, x.name+" selector", at(t, x.ef, "spec", "workloadSelector"), map[string]any{"labels": map[string]any{"istio": "ingress"}})
		p := at(t, x.ef, "spec", "configPatches", 0).(map[string]any)
		eq(t, x.name+" applyTo", p["applyTo"], "HTTP_FILTER")
		eq(t, x.name+" context", at(t, p, "match", "context"), "GATEWAY")
		eq(t, x.name+" operation", at(t, p, "patch", "operation"), "INSERT_BEFORE")
		eq(t, x.name+" subFilter", at(t, p, "match", "listener", "filterChain", "filter", "subFilter", "name"), "envoy.filters.http.router")
		if got := at(t, p, "patch", "value", "typed_config", "default_source_code", "inline_string"); got != x.code {
			t.Errorf("%s lua differs from routing's", x.name)
		}
	}
	// Cookie filter first: Istio applies lower priorities first, each inserting just before
	// the router.
	if cp, rp := at(t, c, "spec", "priority").(float64), at(t, r, "spec", "priority").(float64); cp >= rp {
		t.Errorf("cookie priority %v must be below routing priority %v", cp, rp)
	}
	eq(t, "route patch", at(t, r, "spec", "configPatches", 1), map[string]any{
		"applyTo": "HTTP_ROUTE",
		"match":   map[string]any{"context": "GATEWAY", "routeConfiguration": map[string]any{"vhost": map[string]any{"route": map[string]any{"name": APIRouteName}}}},
		"patch":   map[string]any{"operation": "MERGE", "value": map[string]any{"route": map[string]any{"cluster_header": routing.HeaderUpstreamCluster}}},
	})
}

func TestClusterVirtualService(t *testing.T) {
	m := &mocks{}
	run(t, m, func(ctx *pulumi.Context) error {
		_, err := NewClusterVirtualService(ctx, "cluster-virtualservice", &ClusterVirtualServiceArgs{Domain: "tfr.example.com", Gateway: GatewayRef()})
		return err
	})
	m.assertChildren(t, ClusterVirtualServiceType, "kubernetes:networking.istio.io/v1:VirtualService::cluster-virtualservice-virtualservice")
	vs := plain(m.find(t, "kubernetes:networking.istio.io/v1:VirtualService", "").Inputs)
	eq(t, "hosts", at(t, vs, "spec", "hosts"), []any{"api.tfr.example.com"})
	eq(t, "gateways", at(t, vs, "spec", "gateways"), []any{"istio-ingress/tfrs-api"})
	eq(t, "route name", at(t, vs, "spec", "http", 0, "name"), APIRouteName)
}

func TestIstioTelemetry(t *testing.T) {
	m := &mocks{}
	run(t, m, func(ctx *pulumi.Context) error {
		_, err := NewIstioTelemetry(ctx, "istio-telemetry", &IstioTelemetryArgs{TracingProvider: "otel", SamplingPercent: 5})
		return err
	})
	m.assertChildren(t, IstioTelemetryType, "kubernetes:telemetry.istio.io/v1:Telemetry::istio-telemetry-telemetry")
	tel := plain(m.find(t, "kubernetes:telemetry.istio.io/v1:Telemetry", "").Inputs)
	eq(t, "namespace", at(t, tel, "metadata", "namespace"), IstioNamespace)
	eq(t, "access log", at(t, tel, "spec", "accessLogging"), []any{map[string]any{"providers": []any{map[string]any{"name": "envoy"}}}})
	eq(t, "tracing", at(t, tel, "spec", "tracing"), []any{map[string]any{"providers": []any{map[string]any{"name": "otel"}}, "randomSamplingPercentage": 5.0}})
}

func TestOperators(t *testing.T) {
	m := &mocks{}
	rewrite := func(s string) string { return "mirror/" + s }
	var cnpgReady, minioReady, rabbitReady *await[bool]
	run(t, m, func(ctx *pulumi.Context) error {
		cnpg, err := NewCNPGOperator(ctx, "cnpg-operator", &CNPGOperatorArgs{Manifest: ManifestRef{File: "https://mirror.example.cn/cnpg-1.25.0.yaml"}, Images: rewrite})
		if err != nil {
			return err
		}
		minio, err := NewMinIOOperator(ctx, "minio-operator", &MinIOOperatorArgs{Chart: ChartRef{Chart: "operator", Repo: "https://operator.min.io", Version: "6.0.4"}})
		if err != nil {
			return err
		}
		rabbit, err := NewRabbitMQOperator(ctx, "rabbitmq-operator", &RabbitMQOperatorArgs{
			ClusterOperator:  ManifestRef{File: "/data/cluster-operator.yml"},
			TopologyOperator: ManifestRef{File: "/data/topology.yaml"},
		})
		if err != nil {
			return err
		}
		cnpgReady, minioReady, rabbitReady = collect[bool](cnpg.Ready), collect[bool](minio.Ready), collect[bool](rabbit.Ready)
		return nil
	})
	const cf = "kubernetes:yaml/v2:ConfigFile"
	cnpg := m.find(t, cf, "cnpg-operator-manifest")
	eq(t, "cnpg file", plain(cnpg.Inputs)["file"], "https://mirror.example.cn/cnpg-1.25.0.yaml")
	if cnpg.Transforms != 1 {
		t.Errorf("cnpg manifest has %d transforms, want the image mirror", cnpg.Transforms)
	}
	eq(t, "cnpg parent", cnpg.Parent, m.find(t, CNPGOperatorType, "").URN)

	minio := m.find(t, "kubernetes:helm.sh/v4:Chart", "minio-operator-chart")
	eq(t, "minio chart", plain(minio.Inputs)["chart"], "operator")
	eq(t, "minio namespace", plain(minio.Inputs)["namespace"], MinIOOperatorNamespace)
	eq(t, "minio parent", minio.Parent, m.find(t, MinIOOperatorType, "").URN)

	co := m.find(t, cf, "rabbitmq-operator-cluster-operator")
	to := m.find(t, cf, "rabbitmq-operator-topology-operator")
	eq(t, "cluster operator file", plain(co.Inputs)["file"], "/data/cluster-operator.yml")
	eq(t, "topology operator file", plain(to.Inputs)["file"], "/data/topology.yaml")
	if !contains(to.Deps, co.URN) {
		t.Errorf("topology operator does not wait for the cluster operator: %v", to.Deps)
	}
	if co.Transforms != 0 {
		t.Errorf("no mirror, yet %d transforms", co.Transforms)
	}
	eq(t, "cnpg ready", cnpgReady.get(), true)
	eq(t, "minio ready", minioReady.get(), true)
	eq(t, "rabbitmq ready", rabbitReady.get(), true)
}

func TestImageRegistryPassword(t *testing.T) {
	m := &mocks{}
	var cfg *await[string]
	var secret bool
	run(t, m, func(ctx *pulumi.Context) error {
		c, err := NewImageRegistry(ctx, "image-registry", &ImageRegistryArgs{
			Namespace: "default", SecretName: "ccr-pull-secret", Server: "ccr.ccs.tencentyun.com", Username: "robot", Password: "s3cret",
		})
		if err != nil {
			return err
		}
		cfg = collect[string](c.DockerConfigJSON)
		secret = pulumi.IsSecret(c.DockerConfigJSON)
		return nil
	})
	m.assertChildren(t, ImageRegistryType, "kubernetes:core/v1:Secret::image-registry-pull-secret")
	want, _ := DockerConfigJSON("ccr.ccs.tencentyun.com", "robot", "s3cret")
	eq(t, "dockerconfigjson output", cfg.get(), want)
	if !secret {
		t.Error("dockerconfigjson output is not a secret")
	}
	s := m.find(t, "kubernetes:core/v1:Secret", "")
	if d := s.Inputs["data"]; !d.ContainsSecrets() {
		t.Error("Secret data is not marked secret")
	}
	p := plain(s.Inputs)
	eq(t, "type", p["type"], "kubernetes.io/dockerconfigjson")
	eq(t, "name", at(t, p, "metadata", "name"), "ccr-pull-secret")
	raw, err := base64.StdEncoding.DecodeString(at(t, p, "data", ".dockerconfigjson").(string))
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "data", string(raw), want)
	var parsed struct {
		Auths map[string]struct{ Username, Password, Auth string }
	}
	if err := json.Unmarshal(raw, &parsed); err != nil {
		t.Fatal(err)
	}
	a := parsed.Auths["ccr.ccs.tencentyun.com"]
	eq(t, "auth", a.Auth, base64.StdEncoding.EncodeToString([]byte("robot:s3cret")))
}

func TestImageRegistryPasswordFromSecret(t *testing.T) {
	m := &mocks{secretData: map[string]string{"token": base64.StdEncoding.EncodeToString([]byte("from-secret"))}}
	var cfg *await[string]
	run(t, m, func(ctx *pulumi.Context) error {
		c, err := NewImageRegistry(ctx, "image-registry", &ImageRegistryArgs{
			Namespace: "default", SecretName: "registry-pull-secret", Server: "reg.example.com", Username: "u",
			PasswordFrom: &SecretKeySelector{Namespace: "ops", Name: "registry-login", Key: "token"},
		})
		if err != nil {
			return err
		}
		cfg = collect[string](c.DockerConfigJSON)
		return nil
	})
	read := m.find(t, "kubernetes:core/v1:Secret", "image-registry-password")
	if !read.Read || read.ID != "ops/registry-login" {
		t.Errorf("password Secret not read by id: read=%v id=%q", read.Read, read.ID)
	}
	want, _ := DockerConfigJSON("reg.example.com", "u", "from-secret")
	eq(t, "dockerconfigjson", cfg.get(), want)
	if strings.Contains(fmt.Sprint(m.find(t, "kubernetes:core/v1:Secret", "image-registry-pull-secret").Inputs["data"]), "from-secret") {
		t.Error("password visible in plain inputs")
	}
}

func TestImageRegistryMissingKey(t *testing.T) {
	m := &mocks{secretData: map[string]string{"other": "eA=="}}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		c, err := NewImageRegistry(ctx, "image-registry", &ImageRegistryArgs{
			Namespace: "default", SecretName: "registry-pull-secret", Server: "reg.example.com", Username: "u",
			PasswordFrom: &SecretKeySelector{Namespace: "ops", Name: "registry-login", Key: "password"},
		})
		if err != nil {
			return err
		}
		ctx.Export("cfg", c.DockerConfigJSON)
		return nil
	}, pulumi.WithMocks(testProject, testStack, m))
	if err == nil || !strings.Contains(err.Error(), `no key "password"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestImageRegistryArgs(t *testing.T) {
	for _, a := range []ImageRegistryArgs{
		{Namespace: "default", SecretName: "x", Server: "s", Username: "u"},
		{Namespace: "default", SecretName: "x", Server: "s", Username: "u", Password: "p", PasswordFrom: &SecretKeySelector{}},
		{SecretName: "x", Server: "s", Username: "u", Password: "p"},
	} {
		err := pulumi.RunErr(func(ctx *pulumi.Context) error {
			_, err := NewImageRegistry(ctx, "image-registry", &a)
			return err
		}, pulumi.WithMocks(testProject, testStack, &mocks{}))
		if err == nil {
			t.Errorf("%+v accepted", a)
		}
	}
}

func TestImageTransform(t *testing.T) {
	deployment := func() pulumi.Map {
		return pulumi.Map{
			"metadata": pulumi.Map{"name": pulumi.String("op")},
			"spec": pulumi.Map{"template": pulumi.Map{"spec": pulumi.Map{
				"initContainers": pulumi.Array{pulumi.Map{"name": pulumi.String("init"), "image": pulumi.String("busybox:1")}},
				"containers": pulumi.Array{
					pulumi.Map{"name": pulumi.String("op"), "image": pulumi.String("ghcr.io/cloudnative-pg/cloudnative-pg:1.25.0")},
					pulumi.Map{"name": pulumi.String("noimage")},
				},
			}}},
		}
	}
	tr := ImageTransform(func(s string) string { return "mirror.example.cn/" + s })
	res := tr(t.Context(), &pulumi.ResourceTransformArgs{Custom: true, Type: "kubernetes:apps/v1:Deployment", Name: "op", Props: deployment()})
	if res == nil {
		t.Fatal("deployment not transformed")
	}
	spec := res.Props["spec"].(pulumi.Map)["template"].(pulumi.Map)["spec"].(pulumi.Map)
	eq(t, "container", spec["containers"].(pulumi.Array)[0].(pulumi.Map)["image"], pulumi.String("mirror.example.cn/ghcr.io/cloudnative-pg/cloudnative-pg:1.25.0"))
	eq(t, "init", spec["initContainers"].(pulumi.Array)[0].(pulumi.Map)["image"], pulumi.String("mirror.example.cn/busybox:1"))

	cron := pulumi.Map{"spec": pulumi.Map{"jobTemplate": pulumi.Map{"spec": pulumi.Map{"template": pulumi.Map{"spec": pulumi.Map{
		"containers": pulumi.Array{pulumi.Map{"image": pulumi.String("a:1")}},
	}}}}}}
	if tr(t.Context(), &pulumi.ResourceTransformArgs{Custom: true, Type: "kubernetes:batch/v1:CronJob", Props: cron}) == nil {
		t.Error("cronjob not transformed")
	}
	for _, typ := range []string{"kubernetes:core/v1:ConfigMap", "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"} {
		if tr(t.Context(), &pulumi.ResourceTransformArgs{Custom: true, Type: typ, Props: deployment()}) != nil {
			t.Errorf("%s transformed", typ)
		}
	}
	same := ImageTransform(func(s string) string { return s })
	if same(t.Context(), &pulumi.ResourceTransformArgs{Custom: true, Type: "kubernetes:apps/v1:Deployment", Props: deployment()}) != nil {
		t.Error("unchanged images reported as a change")
	}
}

func TestMergeValues(t *testing.T) {
	dst := map[string]any{"a": 1, "m": map[string]any{"x": 1, "y": 2}, "keep": "k"}
	src := map[string]any{"a": 2, "m": map[string]any{"y": 3, "z": 4}, "new": []any{1}}
	got := MergeValues(dst, src)
	eq(t, "merged", got, map[string]any{"a": 2, "m": map[string]any{"x": 1, "y": 3, "z": 4}, "keep": "k", "new": []any{1}})
	eq(t, "dst untouched", dst, map[string]any{"a": 1, "m": map[string]any{"x": 1, "y": 2}, "keep": "k"})
	eq(t, "nil", MergeValues(nil, nil), map[string]any{})
}
