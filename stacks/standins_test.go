package stacks

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
)

// A stand-in (testdata/cluster, testdata/tenant) replaces an upstream chart or manifest in
// tests, so what TFRS relies on must be the same in both, or the tests prove nothing. Each
// stand-in opens with
//
//	# mirrors: owner/repo@tag:path
//	# relies-on: <what> (optional note)
//
// and the tables below hold, for every stand-in, the component whose pin it follows and, for
// every name TFRS relies on, the value the code uses (computed from the programs' outputs and
// the components' constants, never written out) and the upstream file at the pinned version
// that documents it.

// standIn is one stand-in file and the pinned artifact it stands for.
type standIn struct {
	file      string // under testdata/
	component string // pinnedSources / tenantPinnedSources id
	artifact  string // the artifact's name in the pin table
}

var standIns = []standIn{
	{"cluster/charts/cert-manager/Chart.yaml", ClusterCertManager, "cert-manager"},
	{"cluster/charts/istio/base/Chart.yaml", ClusterIstio, "base"},
	{"cluster/charts/istio/istiod/Chart.yaml", ClusterIstio, "istiod"},
	{"cluster/charts/istio/cni/Chart.yaml", ClusterIstio, "cni"},
	{"cluster/charts/gateway/Chart.yaml", ClusterIstioIngress, "gateway"},
	{"cluster/charts/minio-operator/Chart.yaml", ClusterMinIOOperator, "operator"},
	{"cluster/manifests/cnpg.yaml", ClusterCNPGOperator, "cnpg.yaml"},
	{"cluster/manifests/rabbitmq/cluster-operator.yml", ClusterRabbitMQOperator, "cluster-operator.yml"},
	{"cluster/manifests/rabbitmq/messaging-topology-operator-with-certmanager.yaml", ClusterRabbitMQOperator, "messaging-topology-operator-with-certmanager.yaml"},
	{"tenant/charts/jaeger/Chart.yaml", TenantJaeger, "jaeger"},
	{"tenant/charts/grafana/Chart.yaml", TenantGrafana, "grafana"},
}

// reliedOn is one name TFRS relies on, as a stand-in's "relies-on" line spells it.
type reliedOn struct {
	file string // under testdata/
	want string
	// upstream is the file that documents the name at the pinned version: owner/repo@tag:path.
	upstream string
}

// reliedOnNames computes what TFRS relies on from the programs (run under mocks) and the
// components' constants.
func reliedOnNames(t *testing.T) []reliedOn {
	t.Helper()
	tr := runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: testTenantCluster}, enterpriseStack, nil)
	out := tr.out
	name := func(typ, reg string) string {
		return dig(t, plainInputs(tr.m.find(t, typ, reg).Inputs), "metadata", "name").(string)
	}

	// CNPG: the host is the Cluster's read-write Service; what follows the Cluster's name is
	// the operator's suffix.
	pgCluster := name("kubernetes:postgresql.cnpg.io/v1:Cluster", "postgresql-cluster")
	pgHost := out[TenantOutputPostgresHost].(string)
	if !strings.HasPrefix(pgHost, pgCluster) {
		t.Fatalf("postgres host %q is not named after the Cluster %q", pgHost, pgCluster)
	}
	rmqCluster := name("kubernetes:rabbitmq.com/v1beta1:RabbitmqCluster", "")
	rmqHost := firstLabel(out[TenantOutputRabbitMQHost].(string))
	if rmqHost != rmqCluster {
		t.Fatalf("rabbitmq host %q is not the RabbitmqCluster %q", rmqHost, rmqCluster)
	}

	// Jaeger: the query URL and the OTel Collector's exporter endpoint.
	qHost, qPort := urlHostPort(t, out[TenantOutputJaegerURL].(string))
	cfg := dig(t, plainInputs(tr.m.find(t, "kubernetes:core/v1:ConfigMap", "otel-collector-config").Inputs), "data", "config.yaml").(string)
	m := regexp.MustCompile(`(?m)otlp/jaeger:\s*\n\s*endpoint: (\S+)`).FindStringSubmatch(cfg)
	if m == nil {
		t.Fatalf("no otlp/jaeger exporter endpoint in the collector config:\n%s", cfg)
	}
	eHost, ePort, err := net.SplitHostPort(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if firstLabel(eHost) != qHost {
		t.Fatalf("jaeger query (%s) and OTLP (%s) are on different Services; the v2 chart has one", qHost, eHost)
	}
	gHost, gPort := urlHostPort(t, out[TenantOutputGrafanaURL].(string))

	cm, _, _ := runCluster(t, newTestCluster(nil))
	svcType := dig(t, plainInputs(cm.find(t, "kubernetes:helm.sh/v4:Chart", "istio-ingress-chart").Inputs), "values", "service", "type")

	svc := func(name string, ports ...any) string {
		ps := make([]string, len(ports))
		for i, p := range ports {
			ps[i] = fmt.Sprint(p)
		}
		return "service " + name + ":" + strings.Join(ps, ",")
	}
	return []reliedOn{
		{"cluster/charts/cert-manager/Chart.yaml", "namespace " + cluster.CertManagerNamespace,
			"cert-manager/cert-manager@v1.21.2:deploy/charts/cert-manager/values.yaml (namespace: the release namespace by default)"},
		{"cluster/charts/istio/base/Chart.yaml", "namespace " + cluster.IstioNamespace,
			"istio/istio@1.32.0:manifests/charts/base/values.yaml (global.istioNamespace; read at master 86c9f01f during 1.32's development: no 1.32.0 tag is readable here)"},
		{"cluster/charts/istio/istiod/Chart.yaml", "namespace " + cluster.IstioNamespace,
			"istio/istio@1.32.0:manifests/charts/istio-control/istio-discovery/values.yaml (global.istioNamespace; read at master 86c9f01f during 1.32's development: no 1.32.0 tag is readable here)"},
		{"cluster/charts/istio/cni/Chart.yaml", "namespace " + cluster.IstioNamespace,
			"istio/istio@1.32.0:manifests/charts/istio-cni/templates/daemonset.yaml (the release namespace; read at master 86c9f01f during 1.32's development: no 1.32.0 tag is readable here)"},
		{"cluster/charts/gateway/Chart.yaml", "namespace " + cluster.IngressNamespace,
			"istio/istio@1.32.0:manifests/charts/gateway/templates/deployment.yaml (the release namespace; read at master 86c9f01f during 1.32's development: no 1.32.0 tag is readable here)"},
		{"cluster/charts/gateway/Chart.yaml", fmt.Sprintf("labels app=%s,%s=%s", cluster.IngressRelease, cluster.IngressSelectorLabel, cluster.IngressSelectorValue),
			"istio/istio@1.32.0:manifests/charts/gateway/templates/_helpers.tpl (gateway.selectorLabels: app=<name>, istio=<name without istio->; read at master 86c9f01f during 1.32's development: no 1.32.0 tag is readable here)"},
		{"cluster/charts/gateway/Chart.yaml", fmt.Sprintf("service.type %v", svcType),
			"istio/istio@1.32.0:manifests/charts/gateway/templates/service.yaml (no Service when service.type is None; read at master 86c9f01f during 1.32's development: no 1.32.0 tag is readable here)"},
		{"cluster/charts/minio-operator/Chart.yaml", "namespace " + cluster.MinIOOperatorNamespace,
			"minio/operator@v7.1.1:helm/operator/templates/operator-deployment.yaml (the release namespace)"},
		{"cluster/charts/minio-operator/Chart.yaml", svc(firstLabel(out[TenantOutputMinIOHost].(string)), out[TenantOutputMinIOPort]),
			"minio/operator@v7.1.1:pkg/apis/minio.min.io/v2/names.go (MinIOCIServiceName) and constants.go (MinIOPortLoadBalancerSVC)"},
		{"cluster/manifests/cnpg.yaml", svc("<cluster>"+strings.TrimPrefix(pgHost, pgCluster), out[TenantOutputPostgresPort]),
			"cloudnative-pg/cloudnative-pg@v1.30.0:api/v1/cluster_types.go (ServiceReadWriteSuffix)"},
		{"cluster/manifests/rabbitmq/cluster-operator.yml", svc("<cluster>", out[TenantOutputRabbitMQPort]),
			"rabbitmq/cluster-operator@v2.22.3:internal/resource/service.go (ServiceSuffix \"\", port amqp 5672)"},
		{"tenant/charts/jaeger/Chart.yaml", svc(qHost, qPort, ePort),
			"jaegertracing/helm-charts@jaeger-4.11.1:charts/jaeger/templates/jaeger/jaeger-service.yaml (http-query, otlp-grpc)"},
		{"tenant/charts/grafana/Chart.yaml", svc(gHost, gPort),
			"grafana-community/helm-charts@grafana-12.11.1:charts/grafana/templates/service.yaml (fullname, service.port)"},
	}
}

// TestStandInNames checks every stand-in against the pins and the code: it mirrors the pinned
// version, its relies-on lines are exactly the names the code uses, and each name's upstream
// reference is at the pinned version (a bump makes this fail until the names are checked
// again at the new version).
func TestStandInNames(t *testing.T) {
	files := map[string]standIn{}
	for _, s := range standIns {
		files[s.file] = s
	}
	// Every stand-in is in the table.
	err := filepath.WalkDir("testdata", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("testdata", path)
		rel = filepath.ToSlash(rel)
		isChart := d.Name() == "Chart.yaml"
		isManifest := strings.Contains(rel, "/manifests/") && (strings.HasSuffix(rel, ".yaml") || strings.HasSuffix(rel, ".yml"))
		if _, ok := files[rel]; (isChart || isManifest) && !ok {
			t.Errorf("stand-in %s is not in standIns", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	wants := map[string][]string{}
	for _, r := range reliedOnNames(t) {
		s, ok := files[r.file]
		if !ok {
			t.Fatalf("relied-on name for %s, which is not a stand-in", r.file)
		}
		if v := artifactVersion(t, s); !strings.HasSuffix(upstreamTag(r.upstream), v) {
			t.Errorf("%s: %q is documented at %s, not at the pinned %s: check it there", r.file, r.want, r.upstream, v)
		}
		wants[r.file] = append(wants[r.file], r.want)
	}
	for _, s := range standIns {
		b, err := os.ReadFile(filepath.Join("testdata", s.file))
		if err != nil {
			t.Fatal(err)
		}
		mirrors, relies := header(string(b))
		version := artifactVersion(t, s)
		if len(mirrors) != 1 || !strings.HasSuffix(upstreamTag(mirrors[0]), version) {
			t.Errorf("%s: mirrors %q, want one owner/repo@<tag ending in %s>:path", s.file, mirrors, version)
		}
		if filepath.Base(s.file) == "Chart.yaml" {
			var meta struct{ Name, Version string }
			if err := yaml.Unmarshal(b, &meta); err != nil {
				t.Fatal(err)
			}
			check(t, s.file+" chart", []string{meta.Name, meta.Version}, []string{s.artifact, version})
		}
		want := wants[s.file]
		sort.Strings(want)
		sort.Strings(relies)
		check(t, s.file+" relies-on", strings.Join(relies, "; "), strings.Join(want, "; "))
	}
}

// header returns a stand-in's "# mirrors:" and "# relies-on:" values (a relies-on value ends
// before its parenthesised note).
func header(text string) (mirrors, relies []string) {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, "# mirrors: "); ok {
			mirrors = append(mirrors, strings.TrimSpace(v))
		}
		if v, ok := strings.CutPrefix(l, "# relies-on: "); ok {
			v, _, _ = strings.Cut(v, " (")
			relies = append(relies, strings.TrimSpace(v))
		}
	}
	return mirrors, relies
}

// upstreamTag is the tag of "owner/repo@tag:path …".
func upstreamTag(ref string) string {
	_, rest, _ := strings.Cut(ref, "@")
	tag, _, _ := strings.Cut(rest, ":")
	return tag
}

func artifactVersion(t *testing.T, s standIn) string {
	t.Helper()
	src, ok := pinnedSources[s.component]
	if !ok {
		src = tenantPinnedSources[s.component]
	}
	for _, a := range src.Artifacts {
		if a.Name == s.artifact {
			return src.version(a, v1alpha1.ComponentSource{})
		}
	}
	t.Fatalf("%s: no artifact %q pinned for %s", s.file, s.artifact, s.component)
	return ""
}

func firstLabel(host string) string {
	l, _, _ := strings.Cut(host, ".")
	return l
}

// urlHostPort is the Service name and port of an in-cluster URL (the scheme's default port
// when it has none).
func urlHostPort(t *testing.T, raw string) (string, string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return firstLabel(u.Hostname()), port
}
