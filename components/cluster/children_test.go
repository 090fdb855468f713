package cluster

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// constructor makes one component, in one configuration, for the children check.
type constructor struct {
	typ, name string
	secrets   map[string]string // Secret data the mocks answer reads with
	new       func(ctx *pulumi.Context) (pt.ChildLister, error)
}

// constructors are every component of the package in each configuration that changes which
// children it makes.
func constructors() []constructor {
	chart := ChartRef{Chart: "/charts/x"}
	manifest := ManifestRef{File: "/manifests/x.yaml"}
	mirror := func(s string) string { return "mirror.example.cn/" + s }
	var out []constructor
	add := func(typ, name string, secrets map[string]string, f func(ctx *pulumi.Context) (pt.ChildLister, error)) {
		out = append(out, constructor{typ, name, secrets, f})
	}
	for _, a := range []CertManagerArgs{
		{Issuer: IssuerSelfSigned},
		{Issuer: IssuerCA, CASecretName: "root-ca"},
		{Issuer: IssuerACME, ACMEEmail: "ops@example.com", ACMEServer: "https://acme.example.com/dir"},
	} {
		a.Chart, a.IssuerName = chart, "tfrs"
		add(CertManagerType, string(a.Issuer), nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewCertManager(ctx, "cert-manager", &a)
		})
	}
	for _, tracing := range []TracingProvider{{}, {Name: "otel", Service: "collector.obs.svc.cluster.local", Port: 4317}} {
		add(IstioType, "tracing "+tracing.Name, nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewIstio(ctx, "istio", &IstioArgs{Base: chart, Istiod: chart, CNI: chart, IngressService: IngressService, IngressSelector: IngressSelectorValue, Tracing: tracing})
		})
	}
	for _, a := range []IstioIngressArgs{
		{Mode: IngressTKECLB, ServiceAnnotations: map[string]string{"k": "v"}},
		{Mode: IngressNodePort, HTTPNodePort: 30080, HTTPSNodePort: 30443},
		{Mode: IngressDockerDesktop},
	} {
		a.Chart = chart
		add(IstioIngressType, string(a.Mode), nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewIstioIngress(ctx, "istio-ingress", &a)
		})
	}
	for _, wildcard := range []bool{false, true} {
		add(GatewayType, "wildcard "+strconv.FormatBool(wildcard), nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewGateway(ctx, "gateway", &GatewayArgs{Domain: "tfr.example.com", IssuerName: "tfrs", Wildcard: wildcard})
		})
	}
	add(EnvoyFilterCookieType, "", nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
		return NewEnvoyFilterCookie(ctx, "envoyfilter-cookie", &EnvoyFilterArgs{Domain: "tfr.example.com"})
	})
	add(EnvoyFilterLuaRoutingType, "", nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
		return NewEnvoyFilterLuaRouting(ctx, "envoyfilter-lua-routing", &EnvoyFilterArgs{Domain: "tfr.example.com", Targets: testTargets})
	})
	add(ClusterVirtualServiceType, "", nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
		return NewClusterVirtualService(ctx, "cluster-virtualservice", &ClusterVirtualServiceArgs{Domain: "tfr.example.com", Gateway: GatewayRef()})
	})
	add(IstioTelemetryType, "", nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
		return NewIstioTelemetry(ctx, "istio-telemetry", &IstioTelemetryArgs{TracingProvider: "otel", SamplingPercent: 5})
	})
	for _, images := range []ImageRewriter{nil, mirror} {
		add(CNPGOperatorType, "mirror "+strconv.FormatBool(images != nil), nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewCNPGOperator(ctx, "cnpg-operator", &CNPGOperatorArgs{Manifest: manifest, Images: images})
		})
		add(RabbitMQOperatorType, "mirror "+strconv.FormatBool(images != nil), nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewRabbitMQOperator(ctx, "rabbitmq-operator", &RabbitMQOperatorArgs{ClusterOperator: manifest, TopologyOperator: manifest, Images: images})
		})
	}
	add(MinIOOperatorType, "", nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
		return NewMinIOOperator(ctx, "minio-operator", &MinIOOperatorArgs{Chart: chart})
	})
	registry := ImageRegistryArgs{Namespace: "default", SecretName: "reg-pull-secret", Server: "reg.example.com", Username: "u"}
	plain, fromSecret := registry, registry
	plain.Password = "p"
	fromSecret.PasswordFrom = &SecretKeySelector{Namespace: "ops", Name: "reg", Key: "token"}
	add(ImageRegistryType, "password", nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
		return NewImageRegistry(ctx, "image-registry", &plain)
	})
	add(ImageRegistryType, "password from a Secret", map[string]string{"token": "t"}, func(ctx *pulumi.Context) (pt.ChildLister, error) {
		return NewImageRegistry(ctx, "image-registry", &fromSecret)
	})
	for _, pull := range []string{"", "ccr-pull-secret"} {
		add(OwnershipType, "pull secret "+pull, nil, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewOwnership(ctx, "ownership-policy", testOwnershipArgs(pull))
		})
	}
	return out
}

// Every component makes all its children before its constructor returns and lists each of
// them in Children(), reads included. The Go SDK attaches a child to its parent only in the
// child's registration goroutine, so pulumi.DependsOn(component) alone can miss children
// (pulumi/pulumi#7833); the program's graph builder therefore depends on the component and
// its Children(), which is complete only when nothing is made late. The mocks answer no
// registration until the constructor has returned, so a child made inside an ApplyT (or
// after any output resolves) fails this test on every run, not now and then.
func TestComponentsMakeAndListEveryChildBeforeReturning(t *testing.T) {
	for _, c := range constructors() {
		t.Run(c.typ+" "+c.name, func(t *testing.T) {
			(&pt.Mocks{SecretData: c.secrets}).AssertChildrenAtReturn(t, c.typ, c.new)
		})
	}
}

// The table above covers every component type of the package: a new component is checked
// as soon as it has a type token.
func TestEveryComponentIsCheckedForItsChildren(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range constructors() {
		covered[c.typ] = true
	}
	types := componentTypes(t)
	if len(types) < 13 {
		t.Fatalf("found %d component types %v; the parse is broken", len(types), types)
	}
	for _, typ := range types {
		if !covered[typ] {
			t.Errorf("%s is not in constructors()", typ)
		}
	}
}

// componentTypes are the "tfrs:cluster:" string constants of the package's sources.
func componentTypes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(s, "tfrs:cluster:") {
				out = append(out, s)
			}
			return true
		})
	}
	sort.Strings(out)
	return out
}
