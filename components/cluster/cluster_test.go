package cluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/routing"
	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

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
			m := &pt.Mocks{}
			args := tc.args
			args.IssuerName = "tfrs"
			args.Chart = testChart
			args.Chart.Values = map[string]any{"crds": map[string]any{"keep": true}, "replicaCount": 2}
			var issuer func() string
			m.Run(t, func(ctx *pulumi.Context) error {
				c, err := NewCertManager(ctx, "cert-manager", &args)
				if err != nil {
					return err
				}
				issuer = pt.Collect[string](c.IssuerName)
				return nil
			})
			m.AssertChildren(t, CertManagerType,
				"kubernetes:core/v1:Namespace::cert-manager-namespace",
				"kubernetes:helm.sh/v4:Chart::cert-manager-chart",
				"kubernetes:cert-manager.io/v1:ClusterIssuer::cert-manager-issuer")
			chart := pt.Plain(m.Find(t, "kubernetes:helm.sh/v4:Chart", "").Inputs)
			pt.Eq(t, "chart", chart["chart"], "cert-manager")
			pt.Eq(t, "version", chart["version"], "v1.0.0")
			pt.Eq(t, "repo", pt.At(t, chart, "repositoryOpts", "repo"), "https://charts.example.com")
			pt.Eq(t, "namespace", chart["namespace"], CertManagerNamespace)
			// Own values, with the spec's merged over them.
			pt.Eq(t, "values", chart["values"], map[string]any{"crds": map[string]any{"enabled": true, "keep": true}, "replicaCount": 2.0, "startupapicheck": map[string]any{"enabled": false}})

			iss := m.Find(t, "kubernetes:cert-manager.io/v1:ClusterIssuer", "")
			pt.Eq(t, "issuer spec", pt.Plain(iss.Inputs)["spec"], tc.spec)
			pt.Eq(t, "issuer name", pt.At(t, pt.Plain(iss.Inputs), "metadata", "name"), "tfrs")
			// The ClusterIssuer's CRD comes with the chart.
			if chartURN := m.Find(t, "kubernetes:helm.sh/v4:Chart", "").URN; !contains(iss.Deps, chartURN) {
				t.Errorf("ClusterIssuer deps %v lack the chart", iss.Deps)
			}
			pt.Eq(t, "IssuerName output", issuer(), "tfrs")
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
		err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
			_, err := NewCertManager(ctx, "cert-manager", &a)
			return err
		})
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
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewIstio(ctx, "istio", &IstioArgs{
			Base:           ChartRef{Chart: "/charts/istio/base"},
			CNI:            ChartRef{Chart: "/charts/istio/cni"},
			Istiod:         ChartRef{Chart: "oci://mirror.example.cn/charts/istiod", Version: "1.32.0", Values: map[string]any{"global": map[string]any{"hub": "mirror.example.cn/istio"}}},
			IngressService: IngressService, IngressSelector: IngressSelectorValue,
			Tracing: TracingProvider{Name: "otel", Service: "collector.obs.svc.cluster.local", Port: 4317},
		})
		return err
	})
	m.AssertChildren(t, IstioType,
		"kubernetes:core/v1:Namespace::istio-namespace",
		"kubernetes:helm.sh/v4:Chart::istio-base",
		"kubernetes:helm.sh/v4:Chart::istio-cni",
		"kubernetes:helm.sh/v4:Chart::istio-istiod")
	// The CNI node agent, so injected pods need no privileged istio-init (Pod Security
	// restricted in tenant namespaces), and istiod told so.
	cni := pt.Plain(m.Find(t, "kubernetes:helm.sh/v4:Chart", "istio-cni").Inputs)
	pt.Eq(t, "cni release", cni["name"], CNIRelease)
	pt.Eq(t, "cni namespace", cni["namespace"], IstioNamespace)
	pt.Eq(t, "istiod cni mode", pt.At(t, pt.Plain(m.Find(t, "kubernetes:helm.sh/v4:Chart", "istio-istiod").Inputs), "values", "cni", "enabled"), true)
	base := m.Find(t, "kubernetes:helm.sh/v4:Chart", "istio-base")
	istiod := m.Find(t, "kubernetes:helm.sh/v4:Chart", "istio-istiod")
	b := pt.Plain(base.Inputs)
	pt.Eq(t, "base chart (local path)", b["chart"], "/charts/istio/base")
	if _, ok := b["version"]; ok {
		t.Errorf("local chart has a version: %v", b["version"])
	}
	if _, ok := b["repositoryOpts"]; ok {
		t.Errorf("local chart has a repository")
	}
	d := pt.Plain(istiod.Inputs)
	pt.Eq(t, "istiod chart (oci)", d["chart"], "oci://mirror.example.cn/charts/istiod")
	pt.Eq(t, "istiod release", d["name"], "istiod")
	pt.Eq(t, "hub", pt.At(t, d, "values", "global", "hub"), "mirror.example.cn/istio")
	pt.Eq(t, "ingress selector", pt.At(t, d, "values", "meshConfig", "ingressSelector"), "ingress")
	pt.Eq(t, "tracing provider", pt.At(t, d, "values", "meshConfig", "extensionProviders", 0), map[string]any{
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
			m := &pt.Mocks{}
			args := tc.args
			args.Chart = ChartRef{Chart: "gateway", Repo: "https://istio.example.com/charts", Version: "1.32.0"}
			var addr func() string
			var hp, hsp func() int
			m.Run(t, func(ctx *pulumi.Context) error {
				c, err := NewIstioIngress(ctx, "istio-ingress", &args)
				if err != nil {
					return err
				}
				addr, hp, hsp = pt.Collect[string](c.Address), pt.Collect[int](c.HTTPPort), pt.Collect[int](c.HTTPSPort)
				return nil
			})
			m.AssertChildren(t, IstioIngressType,
				"kubernetes:core/v1:Namespace::istio-ingress-namespace",
				"kubernetes:helm.sh/v4:Chart::istio-ingress-chart",
				"kubernetes:core/v1:Service::istio-ingress-service")
			chart := pt.Plain(m.Find(t, "kubernetes:helm.sh/v4:Chart", "").Inputs)
			pt.Eq(t, "chart service type", pt.At(t, chart, "values", "service", "type"), "None")
			pt.Eq(t, "release", chart["name"], IngressRelease)

			svc := m.Find(t, "kubernetes:core/v1:Service", "")
			s := pt.Plain(svc.Inputs)
			pt.Eq(t, "type", pt.At(t, s, "spec", "type"), tc.svcType)
			pt.Eq(t, "selector", pt.At(t, s, "spec", "selector"), map[string]any{"app": "istio-ingress", "istio": "ingress"})
			pt.Eq(t, "namespace", pt.At(t, s, "metadata", "namespace"), IngressNamespace)
			if tc.args.ServiceAnnotations != nil {
				pt.Eq(t, "annotations", pt.At(t, s, "metadata", "annotations"), map[string]any{"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-123"})
			}
			var gotNodePorts []any
			for _, p := range pt.At(t, s, "spec", "ports").([]any) {
				pm := p.(map[string]any)
				if np, ok := pm["nodePort"]; ok {
					gotNodePorts = append(gotNodePorts, np)
				}
				if pm["name"] == "http2" {
					pt.Eq(t, "http port", pm["port"], 80.0)
				}
				if pm["name"] == "https" {
					pt.Eq(t, "https port", pm["port"], 443.0)
				}
			}
			pt.Eq(t, "node ports", gotNodePorts, tc.nodePorts)
			pt.Eq(t, "address", addr(), tc.address)
			pt.Eq(t, "http port output", hp(), tc.httpPort)
			pt.Eq(t, "https port output", hsp(), tc.httpsPrt)
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
		err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
			_, err := NewIstioIngress(ctx, "istio-ingress", &a)
			return err
		})
		if err == nil {
			t.Errorf("%+v accepted", a)
		}
	}
}

func TestLoadBalancerAddress(t *testing.T) {
	ip, host := "10.0.0.7", "lb.example.com"
	pt.Eq(t, "nil", loadBalancerAddress(nil), "")
	pt.Eq(t, "ip", loadBalancerAddress(&corev1.ServiceStatus{LoadBalancer: &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Ip: &ip}}}}), ip)
	pt.Eq(t, "hostname", loadBalancerAddress(&corev1.ServiceStatus{LoadBalancer: &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: &host}}}}), host)
}

func TestGateway(t *testing.T) {
	for _, wildcard := range []bool{false, true} {
		m := &pt.Mocks{}
		var ref func() string
		m.Run(t, func(ctx *pulumi.Context) error {
			c, err := NewGateway(ctx, "gateway", &GatewayArgs{Domain: "tfr.example.com", IssuerName: "tfrs", Wildcard: wildcard})
			if err != nil {
				return err
			}
			ref = pt.Collect[string](c.GatewayRef)
			return nil
		})
		m.AssertChildren(t, GatewayType,
			"kubernetes:cert-manager.io/v1:Certificate::gateway-certificate",
			"kubernetes:networking.istio.io/v1:Gateway::gateway-gateway")
		cert := pt.Plain(m.Find(t, "kubernetes:cert-manager.io/v1:Certificate", "").Inputs)
		pt.Eq(t, "cert namespace", pt.At(t, cert, "metadata", "namespace"), IngressNamespace)
		pt.Eq(t, "cert secret", pt.At(t, cert, "spec", "secretName"), APITLSSecretName)
		pt.Eq(t, "issuer", pt.At(t, cert, "spec", "issuerRef"), map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "tfrs"})
		names := []any{"api.tfr.example.com"}
		if wildcard {
			names = append(names, "*.tfr.example.com")
		}
		pt.Eq(t, "dnsNames", pt.At(t, cert, "spec", "dnsNames"), names)

		gw := pt.Plain(m.Find(t, "kubernetes:networking.istio.io/v1:Gateway", "").Inputs)
		pt.Eq(t, "selector", pt.At(t, gw, "spec", "selector"), map[string]any{"istio": "ingress"})
		pt.Eq(t, "http server", pt.At(t, gw, "spec", "servers", 0), map[string]any{
			"port":  map[string]any{"number": 80.0, "name": "http", "protocol": "HTTP"},
			"hosts": []any{"api.tfr.example.com"},
			"tls":   map[string]any{"httpsRedirect": true},
		})
		pt.Eq(t, "https server", pt.At(t, gw, "spec", "servers", 1), map[string]any{
			"port":  map[string]any{"number": 443.0, "name": "https", "protocol": "HTTPS"},
			"hosts": []any{"api.tfr.example.com"},
			"tls":   map[string]any{"mode": "SIMPLE", "credentialName": APITLSSecretName},
		})
		pt.Eq(t, "gateway ref", ref(), "istio-ingress/tfrs-api")
	}
}

func TestEnvoyFilters(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		if _, err := NewEnvoyFilterCookie(ctx, "envoyfilter-cookie", &EnvoyFilterArgs{Domain: "tfr.example.com"}); err != nil {
			return err
		}
		_, err := NewEnvoyFilterLuaRouting(ctx, "envoyfilter-lua-routing", &EnvoyFilterArgs{Domain: "tfr.example.com", Targets: testTargets})
		return err
	})
	const efType = "kubernetes:networking.istio.io/v1alpha3:EnvoyFilter"
	cookie := m.Find(t, efType, "envoyfilter-cookie-envoyfilter")
	route := m.Find(t, efType, "envoyfilter-lua-routing-envoyfilter")
	pt.Eq(t, "cookie parent", cookie.Parent, m.Find(t, EnvoyFilterCookieType, "").URN)
	pt.Eq(t, "routing parent", route.Parent, m.Find(t, EnvoyFilterLuaRoutingType, "").URN)

	wantCookie, _ := routing.CookieFilterLua("api.tfr.example.com")
	wantRoute, _ := routing.RoutingFilterLua("api.tfr.example.com", testTargets)
	c, r := pt.Plain(cookie.Inputs), pt.Plain(route.Inputs)
	for _, x := range []struct {
		name string
		ef   map[string]any
		code string
	}{{"cookie", c, wantCookie}, {"routing", r, wantRoute}} {
		pt.Eq(t, x.name+" namespace", pt.At(t, x.ef, "metadata", "namespace"), IngressNamespace)
		pt.Eq(t, x.name+" selector", pt.At(t, x.ef, "spec", "workloadSelector"), map[string]any{"labels": map[string]any{"istio": "ingress"}})
		p := pt.At(t, x.ef, "spec", "configPatches", 0).(map[string]any)
		pt.Eq(t, x.name+" applyTo", p["applyTo"], "HTTP_FILTER")
		pt.Eq(t, x.name+" context", pt.At(t, p, "match", "context"), "GATEWAY")
		pt.Eq(t, x.name+" operation", pt.At(t, p, "patch", "operation"), "INSERT_BEFORE")
		pt.Eq(t, x.name+" subFilter", pt.At(t, p, "match", "listener", "filterChain", "filter", "subFilter", "name"), "envoy.filters.http.router")
		if got := pt.At(t, p, "patch", "value", "typed_config", "default_source_code", "inline_string"); got != x.code {
			t.Errorf("%s lua differs from routing's", x.name)
		}
	}
	// Cookie filter first: Istio applies lower priorities first, each inserting just before
	// the router.
	if cp, rp := pt.At(t, c, "spec", "priority").(float64), pt.At(t, r, "spec", "priority").(float64); cp >= rp {
		t.Errorf("cookie priority %v must be below routing priority %v", cp, rp)
	}
	pt.Eq(t, "route patch", pt.At(t, r, "spec", "configPatches", 1), map[string]any{
		"applyTo": "HTTP_ROUTE",
		"match":   map[string]any{"context": "GATEWAY", "routeConfiguration": map[string]any{"vhost": map[string]any{"route": map[string]any{"name": APIRouteName}}}},
		"patch":   map[string]any{"operation": "MERGE", "value": map[string]any{"route": map[string]any{"cluster_header": routing.HeaderUpstreamCluster}}},
	})
}

func TestClusterVirtualService(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewClusterVirtualService(ctx, "cluster-virtualservice", &ClusterVirtualServiceArgs{Domain: "tfr.example.com", Gateway: GatewayRef()})
		return err
	})
	m.AssertChildren(t, ClusterVirtualServiceType, "kubernetes:networking.istio.io/v1:VirtualService::cluster-virtualservice-virtualservice")
	vs := pt.Plain(m.Find(t, "kubernetes:networking.istio.io/v1:VirtualService", "").Inputs)
	pt.Eq(t, "hosts", pt.At(t, vs, "spec", "hosts"), []any{"api.tfr.example.com"})
	pt.Eq(t, "gateways", pt.At(t, vs, "spec", "gateways"), []any{"istio-ingress/tfrs-api"})
	pt.Eq(t, "route name", pt.At(t, vs, "spec", "http", 0, "name"), APIRouteName)
}

func TestIstioTelemetry(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewIstioTelemetry(ctx, "istio-telemetry", &IstioTelemetryArgs{TracingProvider: "otel", SamplingPercent: 5})
		return err
	})
	m.AssertChildren(t, IstioTelemetryType, "kubernetes:telemetry.istio.io/v1:Telemetry::istio-telemetry-telemetry")
	tel := pt.Plain(m.Find(t, "kubernetes:telemetry.istio.io/v1:Telemetry", "").Inputs)
	pt.Eq(t, "namespace", pt.At(t, tel, "metadata", "namespace"), IstioNamespace)
	pt.Eq(t, "access log", pt.At(t, tel, "spec", "accessLogging"), []any{map[string]any{"providers": []any{map[string]any{"name": "envoy"}}}})
	pt.Eq(t, "tracing", pt.At(t, tel, "spec", "tracing"), []any{map[string]any{"providers": []any{map[string]any{"name": "otel"}}, "randomSamplingPercentage": 5.0}})
}

func TestOperators(t *testing.T) {
	m := &pt.Mocks{}
	rewrite := func(s string) string { return "mirror/" + s }
	var cnpgReady, minioReady, rabbitReady func() bool
	m.Run(t, func(ctx *pulumi.Context) error {
		cnpg, err := NewCNPGOperator(ctx, "cnpg-operator", &CNPGOperatorArgs{Manifest: ManifestRef{File: "https://mirror.example.cn/cnpg-1.30.0.yaml"}, Images: rewrite})
		if err != nil {
			return err
		}
		minio, err := NewMinIOOperator(ctx, "minio-operator", &MinIOOperatorArgs{Chart: ChartRef{Chart: "operator", Repo: "https://operator.min.io", Version: "7.1.1"}})
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
		cnpgReady, minioReady, rabbitReady = pt.Collect[bool](cnpg.Ready), pt.Collect[bool](minio.Ready), pt.Collect[bool](rabbit.Ready)
		return nil
	})
	const cf = "kubernetes:yaml/v2:ConfigFile"
	cnpg := m.Find(t, cf, "cnpg-operator-manifest")
	pt.Eq(t, "cnpg file", pt.Plain(cnpg.Inputs)["file"], "https://mirror.example.cn/cnpg-1.30.0.yaml")
	if cnpg.Transforms != 2 {
		t.Errorf("cnpg manifest has %d transforms, want the namespace's platform role and the image mirror", cnpg.Transforms)
	}
	pt.Eq(t, "cnpg parent", cnpg.Parent, m.Find(t, CNPGOperatorType, "").URN)

	minio := m.Find(t, "kubernetes:helm.sh/v4:Chart", "minio-operator-chart")
	pt.Eq(t, "minio chart", pt.Plain(minio.Inputs)["chart"], "operator")
	pt.Eq(t, "minio namespace", pt.Plain(minio.Inputs)["namespace"], MinIOOperatorNamespace)
	pt.Eq(t, "minio parent", minio.Parent, m.Find(t, MinIOOperatorType, "").URN)

	co := m.Find(t, cf, "rabbitmq-operator-cluster-operator")
	to := m.Find(t, cf, "rabbitmq-operator-topology-operator")
	pt.Eq(t, "cluster operator file", pt.Plain(co.Inputs)["file"], "/data/cluster-operator.yml")
	pt.Eq(t, "topology operator file", pt.Plain(to.Inputs)["file"], "/data/topology.yaml")
	if !contains(to.Deps, co.URN) {
		t.Errorf("topology operator does not wait for the cluster operator: %v", to.Deps)
	}
	if co.Transforms != 1 {
		t.Errorf("no mirror, yet %d transforms besides the namespace's platform role", co.Transforms-1)
	}
	pt.Eq(t, "cnpg ready", cnpgReady(), true)
	pt.Eq(t, "minio ready", minioReady(), true)
	pt.Eq(t, "rabbitmq ready", rabbitReady(), true)
}

func TestImageRegistryPassword(t *testing.T) {
	m := &pt.Mocks{}
	var cfg func() string
	var secret bool
	m.Run(t, func(ctx *pulumi.Context) error {
		c, err := NewImageRegistry(ctx, "image-registry", &ImageRegistryArgs{
			Namespace: "default", SecretName: "ccr-pull-secret", Server: "ccr.ccs.tencentyun.com", Username: "robot", Password: "s3cret",
		})
		if err != nil {
			return err
		}
		cfg = pt.Collect[string](c.DockerConfigJSON)
		secret = pulumi.IsSecret(c.DockerConfigJSON)
		return nil
	})
	m.AssertChildren(t, ImageRegistryType, "kubernetes:core/v1:Secret::image-registry-pull-secret")
	want, _ := DockerConfigJSON("ccr.ccs.tencentyun.com", "robot", "s3cret")
	pt.Eq(t, "dockerconfigjson output", cfg(), want)
	if !secret {
		t.Error("dockerconfigjson output is not a secret")
	}
	s := m.Find(t, "kubernetes:core/v1:Secret", "")
	if d := s.Inputs["data"]; !d.ContainsSecrets() {
		t.Error("Secret data is not marked secret")
	}
	p := pt.Plain(s.Inputs)
	pt.Eq(t, "type", p["type"], "kubernetes.io/dockerconfigjson")
	pt.Eq(t, "name", pt.At(t, p, "metadata", "name"), "ccr-pull-secret")
	raw, err := base64.StdEncoding.DecodeString(pt.At(t, p, "data", ".dockerconfigjson").(string))
	if err != nil {
		t.Fatal(err)
	}
	pt.Eq(t, "data", string(raw), want)
	var parsed struct {
		Auths map[string]struct{ Username, Password, Auth string }
	}
	if err := json.Unmarshal(raw, &parsed); err != nil {
		t.Fatal(err)
	}
	a := parsed.Auths["ccr.ccs.tencentyun.com"]
	pt.Eq(t, "auth", a.Auth, base64.StdEncoding.EncodeToString([]byte("robot:s3cret")))
}

func TestImageRegistryPasswordFromSecret(t *testing.T) {
	m := &pt.Mocks{SecretData: map[string]string{"token": "from-secret"}}
	var cfg func() string
	m.Run(t, func(ctx *pulumi.Context) error {
		c, err := NewImageRegistry(ctx, "image-registry", &ImageRegistryArgs{
			Namespace: "default", SecretName: "registry-pull-secret", Server: "reg.example.com", Username: "u",
			PasswordFrom: &SecretKeySelector{Namespace: "ops", Name: "registry-login", Key: "token"},
		})
		if err != nil {
			return err
		}
		cfg = pt.Collect[string](c.DockerConfigJSON)
		return nil
	})
	read := m.Find(t, "kubernetes:core/v1:Secret", "image-registry-password")
	if !read.Read || read.ID != "ops/registry-login" {
		t.Errorf("password Secret not read by id: read=%v id=%q", read.Read, read.ID)
	}
	want, _ := DockerConfigJSON("reg.example.com", "u", "from-secret")
	pt.Eq(t, "dockerconfigjson", cfg(), want)
	if strings.Contains(fmt.Sprint(m.Find(t, "kubernetes:core/v1:Secret", "image-registry-pull-secret").Inputs["data"]), "from-secret") {
		t.Error("password visible in plain inputs")
	}
}

func TestImageRegistryMissingKey(t *testing.T) {
	m := &pt.Mocks{SecretData: map[string]string{"other": "x"}}
	err := m.RunErr(func(ctx *pulumi.Context) error {
		c, err := NewImageRegistry(ctx, "image-registry", &ImageRegistryArgs{
			Namespace: "default", SecretName: "registry-pull-secret", Server: "reg.example.com", Username: "u",
			PasswordFrom: &SecretKeySelector{Namespace: "ops", Name: "registry-login", Key: "password"},
		})
		if err != nil {
			return err
		}
		ctx.Export("cfg", c.DockerConfigJSON)
		return nil
	})
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
		err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
			_, err := NewImageRegistry(ctx, "image-registry", &a)
			return err
		})
		if err == nil {
			t.Errorf("%+v accepted", a)
		}
	}
}
