package crs_test

import (
	"errors"
	"fmt"
	"github.com/blang/semver"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
	"github.com/tfrs-io/tfrs-operator/components/routing"
	"github.com/tfrs-io/tfrs-operator/internal/upstream"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// Realistic inputs, as the programs pass them (the values are the components' and the
// defaults' own; literal here so a test of the builders does not need the whole program).
const (
	domain     = "tfrs.example.com"
	apiHost    = "api." + domain
	tenantNS   = "acme"
	noSidecarK = "sidecar.istio.io/inject"
)

var noSidecar = map[string]string{noSidecarK: "false"}

// object is one builder output to validate, named as it would be created.
type object struct {
	name      string // the case, for messages
	spec      crs.Spec
	namespace string // "" for cluster-scoped kinds
}

// since are the cases that need a field older upstream versions lack, with the oldest version
// known to serve it: older versions in the folder are not asked, and the pin must be one of
// the versions that are.
var since = map[string]string{
	// spec.deletionPolicy: absent from the topology operator's 1.15.0 CRD, served by 1.20.1.
	"robot vhost retained": "1.20.1",
}

// cases are every builder in the variants TFRS uses: each TLS issuer, a certificate with and
// without the wildcard, the routing and cookie filters with their real Lua source, tracing on
// and off, both tenant types' MinIO (an enterprise tenant sized by its spec, a personal one on
// the defaults), PostgreSQL with and without optional fields and TimescaleDB, and a personal
// robot's RabbitMQ identity and API isolation. The Gateway is one case: the ingress mode
// changes the gateway Service, never the Gateway resource.
func cases(t *testing.T) []object {
	t.Helper()
	cookie, err := routing.CookieFilterLua(apiHost)
	if err != nil {
		t.Fatal(err)
	}
	route, err := routing.RoutingFilterLua(apiHost, routing.Targets{ReservedPrefixes: []string{"kube-"}, ReservedNames: []string{"istio-system"}})
	if err != nil {
		t.Fatal(err)
	}
	gatewayPods := map[string]string{"istio": "ingress"}
	enterprise := crs.Resources{Requests: map[string]string{"cpu": "500m", "memory": "1Gi"}, Limits: map[string]string{"memory": "2Gi"}}
	return []object{
		{"self-signed issuer", crs.SelfSignedClusterIssuer(), ""},
		{"ACME issuer", crs.ACMEClusterIssuer("ops@example.com", "https://acme-staging-v02.api.letsencrypt.org/directory", "tfrs-issuer-account-key", "istio"), ""},
		{"CA issuer", crs.CAClusterIssuer("tfrs-ca"), ""},
		{"certificate", crs.Certificate("tfrs-api-tls", apiHost, []string{apiHost}, "tfrs-issuer"), "istio-ingress"},
		{"wildcard certificate", crs.Certificate("tfrs-api-tls", apiHost, []string{apiHost, "*." + domain}, "tfrs-issuer"), "istio-ingress"},
		{"gateway", crs.HTTPSGateway(gatewayPods, apiHost, 80, 443, "tfrs-api-tls"), "istio-ingress"},
		{"virtual service", crs.SingleRouteVirtualService(apiHost, "istio-ingress/tfrs-api", "tfrs-api", "tfrs-unrouted.istio-ingress.svc.cluster.local", routing.UpstreamPort), "istio-ingress"},
		{"cookie filter", crs.EnvoyFilter(gatewayPods, 10, crs.LuaFilterPatch("tfrs.cookie", cookie)), "istio-ingress"},
		{"routing filter", crs.EnvoyFilter(gatewayPods, 20, crs.LuaFilterPatch("tfrs.routing", route), crs.ClusterHeaderPatch("tfrs-api", routing.HeaderUpstreamCluster)), "istio-ingress"},
		{"telemetry with tracing", crs.MeshTelemetry("otel-tracing", 10), "istio-system"},
		{"telemetry sampling nothing", crs.MeshTelemetry("otel-tracing", 0), "istio-system"},
		{"telemetry without tracing", crs.MeshTelemetry("", 0), "istio-system"},
		{"peer authentication", crs.StrictMTLS(), tenantNS},
		{"namespace allow-list", crs.AuthorizationPolicy(nil, crs.Allow, crs.FromNamespaces(tenantNS, "istio-ingress", "istio-system", "monitoring")), tenantNS},
		{"robot isolation", crs.AuthorizationPolicy(map[string]string{"app.kubernetes.io/instance": "chat-r-1", "app.kubernetes.io/component": "api"}, crs.Deny,
			crs.FromNotPrincipals("cluster.local/ns/istio-ingress/sa/istio-ingress"), crs.WhenHeaderNot("x-tf-robotid", "r-1")), tenantNS},
		{"postgresql", crs.CNPGCluster{
			Instances: 3, Image: "ghcr.io/cloudnative-pg/postgresql:16-minimal-bookworm",
			Storage: crs.CNPGStorage{Size: "20Gi", StorageClass: "fast"}, Resources: enterprise,
			Database: "tfrobot", Owner: "tfrobot", OwnerSecret: "acme-pg-credentials",
			PodAnnotations: noSidecar, PullSecret: "tfrs-registry",
		}.Cluster(), tenantNS},
		{"postgresql on defaults", crs.CNPGCluster{
			Instances: 1, Image: "ghcr.io/cloudnative-pg/postgresql:16-minimal-bookworm", Storage: crs.CNPGStorage{Size: "10Gi"},
			Database: "tfrobot", Owner: "tfrobot", OwnerSecret: "acme-pg-credentials", PodAnnotations: noSidecar,
		}.Cluster(), tenantNS},
		{"timescaledb", crs.CNPGCluster{
			Instances: 1, Image: "timescale/timescaledb-ha:pg16.6-ts2.17.2", Storage: crs.CNPGStorage{Size: "10Gi"},
			Database: "tfrobot_ts", Owner: "tfrobot", OwnerSecret: "acme-pg-credentials", PodAnnotations: noSidecar,
			Extension: "timescaledb", UID: 1000,
		}.Cluster(), tenantNS},
		{"minio of an enterprise tenant", crs.MinIOTenant{
			Image: "quay.io/minio/minio:RELEASE.2025-04-22T22-12-26Z", Servers: 4, VolumesPerServer: 2,
			Size: "100Gi", StorageClass: "fast", Resources: enterprise, ConfigSecret: "minio-env-configuration",
			Bucket: "acme", PodAnnotations: noSidecar, PullSecret: "tfrs-registry",
		}.Tenant(), tenantNS},
		{"minio of a personal tenant", crs.MinIOTenant{
			Image: "quay.io/minio/minio:RELEASE.2025-04-22T22-12-26Z", Servers: 1, VolumesPerServer: 1,
			Size: "10Gi", ConfigSecret: "minio-env-configuration", Bucket: "personal-chat", PodAnnotations: noSidecar,
		}.Tenant(), "personal-chat"},
		{"rabbitmq", crs.RabbitMQCluster{
			Replicas: 3, Image: "rabbitmq:3.13.7-management", Size: "10Gi", StorageClass: "fast",
			Resources: enterprise, PodAnnotations: noSidecar, PullSecret: "tfrs-registry",
		}.Cluster(), tenantNS},
		{"rabbitmq on defaults", crs.RabbitMQCluster{Replicas: 1, Image: "rabbitmq:3.13.7-management", Size: "10Gi", PodAnnotations: noSidecar}.Cluster(), tenantNS},
		{"robot vhost", crs.Vhost("rabbitmq", "chat-r-1"), "personal-chat"},
		{"robot vhost retained", crs.VhostSpec{Name: "chat-r-1", RabbitmqClusterReference: crs.ClusterReference{Name: "rabbitmq"},
			DeletionPolicy: crs.VhostRetain}, "personal-chat"},
		{"robot user", crs.User("rabbitmq", "chat-r-1-rabbitmq"), "personal-chat"},
		{"robot permission", crs.FullPermission("rabbitmq", "chat-r-1", "chat-r-1"), "personal-chat"},
	}
}

// crdSet is one upstream project's CRDs at one version.
type crdSet struct {
	project, version string
	pinned           bool
	crds             []*apiextensionsv1.CustomResourceDefinition
}

// crdSets are, per project, the version stacks/sources.go pins (required) and every other
// version the upstream folder holds: the shared folder keeps the pins and the upgrade
// targets, so builders valid against all of them make a version bump a no-op here.
func crdSets(t *testing.T) []crdSet {
	t.Helper()
	var out []crdSet
	for _, p := range stacks.UpstreamCRDs() {
		crds, err := upstream.Load(p.Project, p.Version)
		if err != nil {
			t.Fatalf("pinned %s %s: %v", p.Project, p.Version, err)
		}
		out = append(out, crdSet{p.Project, p.Version, true, crds})
		entries, err := os.ReadDir(filepath.Dir(upstream.Dir(p.Project, p.Version)))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() || e.Name() == p.Version {
				continue
			}
			crds, err := upstream.Load(p.Project, e.Name())
			if err != nil {
				t.Fatalf("%s %s: %v", p.Project, e.Name(), err)
			}
			out = append(out, crdSet{p.Project, e.Name(), false, crds})
		}
	}
	return out
}

func serves(crds []*apiextensionsv1.CustomResourceDefinition, tm crs.TypeMeta) bool {
	group, _, _ := strings.Cut(tm.APIVersion, "/")
	for _, c := range crds {
		if c.Spec.Group == group && c.Spec.Names.Kind == tm.Kind {
			return true
		}
	}
	return false
}

// Every builder's output is accepted by the real upstream CRD of its kind, at the pinned
// version and at every other version in the upstream folder, checked in-process as the API
// server would (an undeclared field fails, as with strict field validation), and every kind
// the package can build is among the cases.
func TestBuildersMatchUpstreamSchemas(t *testing.T) {
	upstream.Require(t)
	objs := cases(t)
	sets := crdSets(t)
	pinnedCount := map[string]int{}
	for _, set := range sets {
		count := map[string]int{}
		for _, o := range objs {
			tm := o.spec.TypeMeta()
			if !serves(set.crds, tm) {
				continue
			}
			if v := since[o.name]; v != "" && semver.MustParse(set.version).LT(semver.MustParse(v)) {
				if set.pinned {
					t.Errorf("%s needs %s %s or later; the pin is %s", o.name, set.project, v, set.version)
				}
				continue
			}
			obj, err := crs.Object(o.spec, "tfrs-test", o.namespace)
			if err != nil {
				t.Fatalf("%s: %v", o.name, err)
			}
			if errs := upstream.Validate(set.crds, tm.APIVersion, tm.Kind, obj); len(errs) > 0 {
				t.Errorf("%s (%s) rejected by %s %s:\n%v", o.name, tm.Kind, set.project, set.version, errors.Join(errs...))
			}
			count[tm.Kind]++
			if set.pinned {
				pinnedCount[tm.Kind]++
			}
		}
		t.Logf("%s %s (pinned: %v): validated %s", set.project, set.version, set.pinned, counts(count))
	}
	for _, o := range objs {
		if tm := o.spec.TypeMeta(); pinnedCount[tm.Kind] == 0 {
			t.Errorf("%s: no pinned upstream CRD serves %s %s", o.name, tm.APIVersion, tm.Kind)
		}
	}
	// Every Spec type of the package has a case: a new builder without one fails here.
	covered := map[string]bool{}
	for _, o := range objs {
		covered[reflect.TypeOf(o.spec).Name()] = true
	}
	for _, typ := range specTypes(t) {
		if !covered[typ] {
			t.Errorf("crs.%s has no case in this test", typ)
		}
	}
}

func counts(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// specTypes are the types of package crs with a TypeMeta method (its Spec implementations),
// read from its source.
func specTypes(t *testing.T) []string {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range pkgs["crs"].Files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "TypeMeta" {
				continue
			}
			if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok {
				out = append(out, id.Name)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Spec types found in package crs")
	}
	slices.Sort(out)
	return out
}

// Every custom resource in components/ goes through crs.New, so the cases above are all the
// custom resources TFRS creates.
func TestEveryCustomResourceIsBuilt(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if filepath.Dir(path) == filepath.Join(root, "internal", "crs") { // the edge itself
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "apiextensions.NewCustomResource(") {
			t.Errorf("%s creates a custom resource without crs.New", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The MinIO defect: TFRS put the pool pods' annotations in spec.poolsMetadata, which the
// MinIO operator declares only since 7.0, so operator 6.0.4 (the pin until now) rejected every
// Tenant. The annotations now go on the pool (spec.pools[].annotations), which both versions
// declare and copy onto the pool's pods.
func TestMinIOPodAnnotationsArePerPool(t *testing.T) {
	upstream.Require(t)
	spec := crs.MinIOTenant{Image: "minio", Servers: 1, VolumesPerServer: 1, Size: "10Gi", ConfigSecret: "cfg", Bucket: "b", PodAnnotations: noSidecar}.Tenant()
	obj, err := crs.Object(spec, "minio", tenantNS)
	if err != nil {
		t.Fatal(err)
	}
	s := obj["spec"].(map[string]any)
	if _, ok := s["poolsMetadata"]; ok {
		t.Error("the Tenant still sets spec.poolsMetadata")
	}
	if got := s["pools"].([]any)[0].(map[string]any)["annotations"]; !reflect.DeepEqual(got, map[string]any{noSidecarK: "false"}) {
		t.Errorf("pool annotations %v", got)
	}
	old := map[string]any{}
	for k, v := range obj {
		old[k] = v
	}
	oldSpec := map[string]any{"poolsMetadata": map[string]any{"annotations": map[string]any{noSidecarK: "false"}}}
	for k, v := range s {
		oldSpec[k] = v
	}
	old["spec"] = oldSpec
	for _, v := range []string{"6.0.4", "7.1.1"} {
		crds, err := upstream.Load("minio-operator", v)
		if err != nil {
			t.Fatal(err)
		}
		if errs := upstream.Validate(crds, crs.MinIOV2, "Tenant", obj); len(errs) > 0 {
			t.Errorf("%s rejects the Tenant: %v", v, errors.Join(errs...))
		}
		errs := upstream.Validate(crds, crs.MinIOV2, "Tenant", old)
		if rejected := strings.Contains(fmt.Sprint(errs), `unknown field "spec.poolsMetadata"`); rejected != (v == "6.0.4") {
			t.Errorf("%s: the former spec.poolsMetadata Tenant gives %v", v, errs)
		}
	}
}
