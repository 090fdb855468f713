package stacks

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	k8scorev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/netpol"
	"github.com/tfrs-io/tfrs-operator/internal/upstream"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

const tenantTestProject = "tfrs"

// tenantRun is one run of the program under mocks.
type tenantRun struct {
	m       *recordingMocks
	g       *Graph
	out     map[string]any
	secret  map[string]bool
	content map[string]any // out with every value, for lookups
}

// outputs are the run's outputs as a stack hands them over (for the shared → member hand-over).
func (r *tenantRun) outputs() program.Outputs { return stackOutputs(r.out, r.secret) }

// runTenantErr runs the program as stack `stack` and returns the run (nil on error).
func runTenantErr(in TenantInput, stack string, secretData map[string]string) (*tenantRun, error) {
	m := &recordingMocks{stack: stack, prefix: "tfrs:tenant:", secretData: secretData}
	g := &Graph{}
	in.Graph = g
	run := &tenantRun{m: m, g: g, out: map[string]any{}, secret: map[string]bool{}}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		outs, err := tenantProgram(ctx, in)
		if err != nil {
			return err
		}
		for k, v := range outs {
			wg.Add(1)
			o := pulumi.ToOutput(v)
			o.ApplyT(func(x any) any {
				mu.Lock()
				run.out[k] = x
				run.secret[k] = pulumi.IsSecret(o)
				mu.Unlock()
				wg.Done()
				return x
			})
		}
		return nil
	}, pulumi.WithMocks(tenantTestProject, stack, m))
	if err != nil {
		return &tenantRun{m: m}, err
	}
	wg.Wait()
	return run, nil
}

func runTenant(t *testing.T, in TenantInput, stack string, secretData map[string]string) *tenantRun {
	t.Helper()
	r, err := runTenantErr(in, stack, secretData)
	if err != nil {
		t.Fatal(err)
	}
	keys := TenantOutputKeys()
	if len(r.out) != len(keys) {
		t.Errorf("outputs %v, want every key of %v", sortedNames(r.out), sortedNames(keys))
	}
	for k, secret := range keys {
		if _, ok := r.out[k]; !ok {
			t.Errorf("output %s missing", k)
		}
		if r.secret[k] != secret {
			t.Errorf("output %s: secret %v, want %v", k, r.secret[k], secret)
		}
	}
	return r
}

func sortedNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var testTenantCluster = TenantCluster{
	PullSecretName:        "ccr-pull-secret",
	DockerConfigJSON:      `{"auths":{"ccr.ccs.tencentyun.com":{"username":"robot","password":"s3cret","auth":"cm9ib3Q6czNjcmV0"}}}`,
	RabbitMQOperatorReady: true,
}

func newEnterprise(mut func(*v1alpha1.TFRTenantSpec)) *v1alpha1.TFRTenant {
	t := &v1alpha1.TFRTenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", Namespace: "tfrs-system"},
		Spec:       v1alpha1.TFRTenantSpec{ClusterRef: "dev", Type: v1alpha1.TenantEnterprise},
	}
	if mut != nil {
		mut(&t.Spec)
	}
	return t
}

func newPersonal(name string, created time.Time, mut func(*v1alpha1.TFRTenantSpec)) *v1alpha1.TFRTenant {
	t := &v1alpha1.TFRTenant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tfrs-system", CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1alpha1.TFRTenantSpec{ClusterRef: "dev", Type: v1alpha1.TenantPersonal, JobType: "chat"},
	}
	if mut != nil {
		mut(&t.Spec)
	}
	return t
}

const enterpriseStack = "tenant.tfrs-system.acme"

func sharedChatStack(t *testing.T) string {
	t.Helper()
	s, err := PersonalSharedStack("chat")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var allTenantComponents = map[string]string{
	TenantNamespace:     tenant.NamespaceType,
	TenantPostgreSQL:    tenant.PostgreSQLType,
	TenantRedis:         tenant.RedisType,
	TenantMinIO:         tenant.MinIOType,
	TenantRabbitMQ:      tenant.RabbitMQType,
	TenantTimescaleDB:   tenant.TimescaleDBType,
	TenantJaeger:        tenant.JaegerType,
	TenantOtelCollector: tenant.OtelCollectorType,
	TenantPrometheus:    tenant.PrometheusType,
	TenantGrafana:       tenant.GrafanaType,
	TenantVector:        tenant.VectorType,
	TenantSharedCache:   tenant.SharedCacheType,
	TenantTFRobotFront:  tenant.TFRobotFrontType,
	TenantTFRSUtils:     tenant.TFRSUtilsType,
}

// tenantSeedEdges is the seeds' TFRTenant graph, edge by edge, inside the stack.
var tenantSeedEdges = func() []GraphEdge {
	var e []GraphEdge
	for id := range allTenantComponents {
		if id != TenantNamespace && id != TenantRabbitMQ {
			e = append(e, GraphEdge{TenantNamespace, id})
		}
	}
	return append(e, GraphEdge{TenantPostgreSQL, TenantTimescaleDB}, GraphEdge{TenantJaeger, TenantOtelCollector})
}()

// The edge the seeds leave implicit and the program adds (documented in tenant.go).
var tenantAddedEdges = []GraphEdge{{TenantNamespace, TenantRabbitMQ}}

// The external gate: the cluster's RabbitMQ operator.
var tenantGateEdge = GraphEdge{TenantRabbitMQOperatorReady, TenantRabbitMQ}

func wantTenantEdges(gate bool, removed ...string) []GraphEdge {
	var out []GraphEdge
	for _, e := range append(append([]GraphEdge(nil), tenantSeedEdges...), tenantAddedEdges...) {
		if !contains(removed, e.From) && !contains(removed, e.To) {
			out = append(out, e)
		}
	}
	if gate {
		out = append(out, tenantGateEdge)
	}
	sortEdges(out)
	return out
}

func TestTenantEnterprise(t *testing.T) {
	r := runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: testTenantCluster}, enterpriseStack, nil)
	m := r.m

	got := map[string]string{}
	for id, c := range m.components() {
		got[id] = c.Type
		if c.Parent != "" && resource.URN(c.Parent).QualifiedType() != resource.RootStackType {
			t.Errorf("%s is not a top-level component", id)
		}
	}
	check(t, "components", got, allTenantComponents)
	// Every other resource sits under a component, except the engine's credentials.
	urns := m.byURN()
	var creds []string
	for _, reg := range m.regs {
		if reg.Type == program.CredentialType {
			creds = append(creds, reg.Name)
			continue
		}
		if o := m.owner(urns, reg); !strings.HasPrefix(o.Type, "tfrs:tenant:") {
			t.Errorf("%s %s is outside every component", reg.Type, reg.Name)
		}
	}
	sort.Strings(creds)
	check(t, "generated credentials", creds, []string{
		CredentialGrafanaPassword, CredentialMinIORootPass, CredentialMinIORootUser,
		CredentialPostgresPassword, CredentialRabbitMQPassword, CredentialRedisPassword,
	})
	if len(r.g.Skipped) != 0 {
		t.Errorf("skipped %v", r.g.Skipped)
	}

	nsr := plainInputs(m.find(t, "kubernetes:core/v1:Namespace", "").Inputs)
	check(t, "namespace", dig(t, nsr, "metadata"), map[string]any{"name": "acme", "labels": withPodSecurityLabels(map[string]any{
		"istio-injection": "enabled", LabelTenant: "acme", LabelTenantType: "enterprise",
	}), "annotations": map[string]any{AnnotationOwner: enterpriseStack}})
	pa := plainInputs(m.find(t, "kubernetes:security.istio.io/v1:PeerAuthentication", "").Inputs)
	check(t, "peer authentication", dig(t, pa, "spec"), map[string]any{"mtls": map[string]any{"mode": "STRICT"}})
	check(t, "peer authentication name", dig(t, pa, "metadata", "name"), "default")
	ap := plainInputs(m.find(t, "kubernetes:security.istio.io/v1:AuthorizationPolicy", "").Inputs)
	check(t, "authorization policy", dig(t, ap, "spec"), map[string]any{"action": "ALLOW", "rules": []any{map[string]any{"from": []any{map[string]any{"source": map[string]any{
		"namespaces": []any{"acme", cluster.IngressNamespace, cluster.IstioNamespace, TenantMonitoringNamespace},
	}}}}}})
	check(t, "authorization policy namespace", dig(t, ap, "metadata", "namespace"), "acme")
	checkNetworkIsolation(t, m, "acme")

	pull := m.find(t, "kubernetes:core/v1:Secret", "namespace-pull-secret")
	check(t, "pull secret", dig(t, plainInputs(pull.Inputs), "metadata"), map[string]any{"name": "ccr-pull-secret", "namespace": "acme"})
	check(t, "pull secret data", dig(t, plainInputs(pull.Inputs), "data", ".dockerconfigjson"),
		base64.StdEncoding.EncodeToString([]byte(testTenantCluster.DockerConfigJSON.Reveal())))

	pg := plainInputs(m.find(t, "kubernetes:postgresql.cnpg.io/v1:Cluster", "postgresql-cluster").Inputs)
	check(t, "pg name", dig(t, pg, "metadata", "name"), "acme-pg")
	if img := dig(t, pg, "spec", "imageName").(string); !strings.HasSuffix(img, ":16-minimal-bookworm") {
		t.Errorf("pg image %q", img)
	}
	check(t, "pg initdb", dig(t, pg, "spec", "bootstrap", "initdb"), map[string]any{
		"database": "acme", "owner": "app_user", "secret": map[string]any{"name": "acme-pg-credentials"},
	})
	check(t, "pg storage", dig(t, pg, "spec", "storage"), map[string]any{"size": "10Gi"})
	check(t, "pg pull secret", dig(t, pg, "spec", "imagePullSecrets"), []any{map[string]any{"name": "ccr-pull-secret"}})
	pgSecret := m.find(t, "kubernetes:core/v1:Secret", "postgresql-credentials")
	check(t, "pg secret", dig(t, plainInputs(pgSecret.Inputs), "metadata", "name"), "acme-pg-credentials")
	check(t, "pg secret type", dig(t, plainInputs(pgSecret.Inputs), "type"), "kubernetes.io/basic-auth")
	check(t, "pg secret user", dig(t, plainInputs(pgSecret.Inputs), "stringData", "username"), "app_user")

	ts := plainInputs(m.find(t, "kubernetes:postgresql.cnpg.io/v1:Cluster", "timescaledb-cluster").Inputs)
	check(t, "tsdb name", dig(t, ts, "metadata", "name"), "acme-tsdb")
	check(t, "tsdb reuses the pg login", dig(t, ts, "spec", "bootstrap", "initdb", "secret"), map[string]any{"name": "acme-pg-credentials"})
	check(t, "tsdb preload", dig(t, ts, "spec", "postgresql", "shared_preload_libraries"), []any{"timescaledb"})

	redis := plainInputs(m.find(t, "kubernetes:apps/v1:Deployment", "redis-deployment").Inputs)
	env := dig(t, redis, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["env"].([]any)
	check(t, "redis password from the Secret", env[0], map[string]any{"name": "REDIS_PASSWORD", "valueFrom": map[string]any{
		"secretKeyRef": map[string]any{"name": tenant.RedisSecret, "key": "password"},
	}})
	check(t, "redis requirepass", dig(t, env[1], "value"), "--requirepass $(REDIS_PASSWORD) --appendonly yes")
	check(t, "redis pull secret", dig(t, redis, "spec", "template", "spec", "imagePullSecrets"), []any{map[string]any{"name": "ccr-pull-secret"}})
	svc := plainInputs(m.find(t, "kubernetes:core/v1:Service", "redis-service").Inputs)
	check(t, "redis service", dig(t, svc, "metadata", "name"), "redis")
	check(t, "redis port", dig(t, svc, "spec", "ports"), []any{map[string]any{"name": "redis", "port": 6379.0, "targetPort": "redis"}})

	mt := plainInputs(m.find(t, "kubernetes:minio.min.io/v2:Tenant", "").Inputs)
	check(t, "minio tenant", dig(t, mt, "metadata", "name"), "minio")
	check(t, "minio configuration", dig(t, mt, "spec", "configuration"), map[string]any{"name": tenant.MinIOConfigSecret})
	check(t, "minio bucket", dig(t, mt, "spec", "buckets"), []any{map[string]any{"name": "acme"}})
	cfg := dig(t, plainInputs(m.find(t, "kubernetes:core/v1:Secret", "minio-configuration").Inputs), "stringData", "config.env").(string)
	if !strings.HasPrefix(cfg, `export MINIO_ROOT_USER="`) || !strings.Contains(cfg, "\nexport MINIO_ROOT_PASSWORD=\"") {
		t.Errorf("config.env = %q", cfg)
	}

	mq := m.find(t, "kubernetes:rabbitmq.com/v1beta1:RabbitmqCluster", "")
	check(t, "rabbitmq name", dig(t, plainInputs(mq.Inputs), "metadata", "name"), "rabbitmq")
	if du := m.find(t, "kubernetes:core/v1:Secret", "rabbitmq-default-user"); !contains(mq.Deps, du.URN) {
		t.Error("RabbitmqCluster does not wait for its default-user Secret")
	}
	check(t, "rabbitmq default user secret", dig(t, plainInputs(m.find(t, "kubernetes:core/v1:Secret", "rabbitmq-default-user").Inputs), "metadata", "name"), "rabbitmq-default-user")

	// The values the Confz example of the seeds expects, and the rest of the connection info.
	out := r.out
	rmqPass := out[TenantOutputRabbitMQPassword].(string)
	check(t, "outputs", out, map[string]any{
		TenantOutputNamespace: "acme", TenantOutputTenantType: "enterprise", TenantOutputJobType: "",
		TenantOutputSharedStack: "", TenantOutputPullSecretName: "ccr-pull-secret", TenantOutputOwnerShare: "", TenantOutputDeletionPolicy: "Retain",
		TenantOutputPostgresHost: "acme-pg-rw", TenantOutputPostgresPort: 5432, TenantOutputPostgresDatabase: "acme",
		TenantOutputPostgresUser: "app_user", TenantOutputPostgresPassword: out[TenantOutputPostgresPassword],
		TenantOutputPostgresCredentialsSecret: "acme-pg-credentials",
		TenantOutputTimescaleHost:             "acme-tsdb-rw", TenantOutputTimescalePort: 5432, TenantOutputTimescaleDatabase: "acme",
		TenantOutputRedisHost: "redis.acme.svc.cluster.local", TenantOutputRedisPort: 6379,
		TenantOutputRedisPassword: out[TenantOutputRedisPassword], TenantOutputRedisSecret: tenant.RedisSecret,
		TenantOutputRabbitMQHost: "rabbitmq.acme.svc.cluster.local", TenantOutputRabbitMQPort: 5672,
		TenantOutputRabbitMQUser: TenantRabbitMQUser, TenantOutputRabbitMQPassword: rmqPass, TenantOutputRabbitMQVHost: "/",
		TenantOutputRabbitMQBrokerURL: "amqp://tfrs:" + rmqPass + "@rabbitmq.acme.svc.cluster.local:5672/",
		TenantOutputMinIOHost:         "minio.acme.svc.cluster.local", TenantOutputMinIOPort: tenant.MinIOPort,
		TenantOutputMinIOAccessKey: out[TenantOutputMinIOAccessKey], TenantOutputMinIOSecretKey: out[TenantOutputMinIOSecretKey],
		TenantOutputMinIOBucket:           "acme",
		TenantOutputObjectStorageProvider: "MinIO", TenantOutputObjectStorageURL: "http://minio.acme.svc.cluster.local:80",
		TenantOutputObjectStorageRegion: "",
		TenantOutputOtelEndpoint:        "http://otel-collector.acme.svc.cluster.local:4317",
		TenantOutputJaegerURL:           "http://jaeger.acme.svc.cluster.local:16686",
		TenantOutputPrometheusURL:       "http://prometheus.acme.svc.cluster.local:9090",
		TenantOutputGrafanaURL:          "http://grafana.acme.svc.cluster.local", TenantOutputGrafanaAdminUser: "admin",
		TenantOutputGrafanaAdminPassword: out[TenantOutputGrafanaAdminPassword], TenantOutputGrafanaAdminSecret: tenant.GrafanaAdminSecret,
		TenantOutputVectorEndpoint:   "http://vector.acme.svc.cluster.local:8080",
		TenantOutputFrontURL:         "http://tfrobot-front.acme.svc.cluster.local",
		TenantOutputSharedCacheClaim: "shared-cache", TenantOutputSharedCacheDir: "/data/shared-cache",
	})
	check(t, "rabbitmq address", fmt.Sprintf("%s:%d", out[TenantOutputRabbitMQHost], out[TenantOutputRabbitMQPort]), "rabbitmq.acme.svc.cluster.local:5672")
	for _, k := range []string{TenantOutputPostgresPassword, TenantOutputRedisPassword, TenantOutputRabbitMQPassword, TenantOutputMinIOAccessKey, TenantOutputMinIOSecretKey, TenantOutputGrafanaAdminPassword} {
		if s, _ := out[k].(string); len(s) < 20 {
			t.Errorf("%s = %q: not a generated credential", k, s)
		}
	}

	// Grafana gets both data sources and its admin login only by Secret reference.
	gv := plainInputs(m.find(t, "kubernetes:helm.sh/v4:Chart", "grafana-chart").Inputs)
	check(t, "grafana admin", dig(t, gv, "values", "admin"), map[string]any{"existingSecret": "grafana-admin", "userKey": "admin-user", "passwordKey": "admin-password"})
	var dsURLs []any
	for _, d := range dig(t, gv, "values", "datasources", "datasources.yaml", "datasources").([]any) {
		dsURLs = append(dsURLs, d.(map[string]any)["url"])
	}
	check(t, "grafana data sources", dsURLs, []any{"http://prometheus.acme.svc.cluster.local:9090", "http://jaeger.acme.svc.cluster.local:16686"})
	oc := plainInputs(m.find(t, "kubernetes:core/v1:ConfigMap", "otel-collector-config").Inputs)
	if c := dig(t, oc, "data", "config.yaml").(string); !strings.Contains(c, "endpoint: jaeger.acme.svc.cluster.local:4317") {
		t.Errorf("otel config does not export to Jaeger:\n%s", c)
	}
	sc := plainInputs(m.find(t, "kubernetes:core/v1:PersistentVolumeClaim", "shared-cache-claim").Inputs)
	check(t, "shared cache access", dig(t, sc, "spec", "accessModes"), []any{"ReadWriteMany"})
}

func TestTenantEdgesAreExactlyTheSeeds(t *testing.T) {
	r := runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: testTenantCluster}, enterpriseStack, nil)
	// As registered: DependsOn inside the stack (the gate is not a resource here)…
	check(t, "registered edges", r.m.edges(), wantTenantEdges(false))
	// …as recorded for `tfrs graph`, with the cluster gate…
	check(t, "recorded edges", r.g.Edges(), wantTenantEdges(true))
	// …and as TenantGraph reports them, for both tenant types.
	for _, tt := range []*v1alpha1.TFRTenant{newEnterprise(nil), newPersonal("alice", time.Now(), nil)} {
		g, err := TenantGraph(tt)
		if err != nil {
			t.Fatal(err)
		}
		check(t, string(tt.Spec.Type)+" TenantGraph edges", g.Edges(), wantTenantEdges(true))
		types := map[string]string{}
		for _, n := range g.Nodes {
			if n.External {
				check(t, "external node", n, GraphNode{ID: TenantRabbitMQOperatorReady, Type: cluster.RabbitMQOperatorType, External: true})
				continue
			}
			types[n.ID] = n.Type
		}
		check(t, "TenantGraph nodes", types, allTenantComponents)
		b, err := json.Marshal(g)
		if err != nil || !strings.Contains(string(b), `{"id":"rabbitmq","type":"tfrs:tenant:RabbitMQ","dependsOn":["namespace","rabbitmq-operator-ready"]}`) {
			t.Errorf("graph JSON %s %v", b, err)
		}
	}
}

func TestTenantRabbitMQOperatorGate(t *testing.T) {
	c := testTenantCluster
	c.RabbitMQOperatorReady = false
	r, err := runTenantErr(TenantInput{Tenant: newEnterprise(nil), Cluster: c}, enterpriseStack, nil)
	if !errors.Is(err, ErrRabbitMQOperatorNotReady) {
		t.Fatalf("err = %v", err)
	}
	if len(r.m.regs) != 0 {
		t.Errorf("registered %d resources before refusing", len(r.m.regs))
	}
}

// dataObjects are the registrations that hold data (or the namespace holding them).
var dataObjects = []string{
	"kubernetes:core/v1:Namespace::namespace-namespace",
	"kubernetes:postgresql.cnpg.io/v1:Cluster::postgresql-cluster",
	"kubernetes:core/v1:Secret::postgresql-credentials",
	"kubernetes:postgresql.cnpg.io/v1:Cluster::timescaledb-cluster",
	"kubernetes:minio.min.io/v2:Tenant::minio-tenant",
	"kubernetes:core/v1:Secret::minio-configuration",
	"kubernetes:core/v1:PersistentVolumeClaim::redis-data",
	"kubernetes:core/v1:PersistentVolumeClaim::shared-cache-claim",
}

func TestTenantDeletionPolicy(t *testing.T) {
	for _, policy := range []v1alpha1.DeletionPolicy{"", v1alpha1.DeletionRetain, v1alpha1.DeletionDelete} {
		t.Run(string(policy), func(t *testing.T) {
			// The namespace was found absent: the stack creates it, so Delete may delete it.
			r := runTenant(t, TenantInput{Tenant: newEnterprise(func(s *v1alpha1.TFRTenantSpec) { s.DeletionPolicy = policy }), Cluster: testTenantCluster,
				Namespace: &NamespaceState{}}, enterpriseStack, nil)
			var retained []string
			for _, reg := range r.m.regs {
				if reg.Retain {
					retained = append(retained, reg.Type+"::"+reg.Name)
				}
				if reg.Protect {
					t.Errorf("%s %s is protected: destroy would fail", reg.Type, reg.Name)
				}
			}
			want := dataObjects
			if policy == v1alpha1.DeletionDelete {
				want = nil
			}
			if !sameStrings(retained, want) {
				t.Errorf("retained %v, want %v", retained, want)
			}
		})
	}
}

func sameStrings(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func TestTenantExistingSecretsWin(t *testing.T) {
	ref := func(n string) *v1alpha1.ExistingSecretRef { return &v1alpha1.ExistingSecretRef{ExistingSecret: n} }
	tt := newEnterprise(func(s *v1alpha1.TFRTenantSpec) {
		s.Credentials = v1alpha1.TenantCredentials{
			PostgreSQL: ref("pg-login"), Redis: ref("redis-login"), MinIO: ref("minio-login"),
			RabbitMQ: ref("mq-login"), Grafana: ref("grafana-login"),
		}
	})
	// Every read Secret answers with the same keys in this mock.
	r := runTenant(t, TenantInput{Tenant: tt, Cluster: testTenantCluster}, enterpriseStack, map[string]string{
		"username": "owner", "password": "hunter2", "rootUser": "s3-admin", "rootPassword": "hunter3",
	})
	if creds := r.m.all(program.CredentialType); len(creds) != 0 {
		t.Errorf("%d credentials generated although every login is given", len(creds))
	}
	var reads []string
	for _, reg := range r.m.regs {
		if reg.Read {
			reads = append(reads, reg.ID)
		}
	}
	check(t, "read Secrets", sameStrings(reads, []string{"acme/pg-login", "acme/redis-login", "acme/minio-login", "acme/mq-login", "acme/grafana-login"}), true)
	out := r.out
	check(t, "pg user", out[TenantOutputPostgresUser], "owner")
	check(t, "pg password", out[TenantOutputPostgresPassword], "hunter2")
	check(t, "redis password", out[TenantOutputRedisPassword], "hunter2")
	check(t, "minio keys", []any{out[TenantOutputMinIOAccessKey], out[TenantOutputMinIOSecretKey]}, []any{"s3-admin", "hunter3"})
	check(t, "rabbitmq login", []any{out[TenantOutputRabbitMQUser], out[TenantOutputRabbitMQPassword]}, []any{"owner", "hunter2"})
	check(t, "broker", out[TenantOutputRabbitMQBrokerURL], "amqp://owner:hunter2@rabbitmq.acme.svc.cluster.local:5672/")
	check(t, "grafana login", []any{out[TenantOutputGrafanaAdminUser], out[TenantOutputGrafanaAdminPassword]}, []any{"owner", "hunter2"})
	// The user-given login is what the owned Secrets and the CNPG bootstrap carry.
	pg := plainInputs(r.m.find(t, "kubernetes:postgresql.cnpg.io/v1:Cluster", "postgresql-cluster").Inputs)
	check(t, "pg owner", dig(t, pg, "spec", "bootstrap", "initdb", "owner"), "owner")
	pgSecret := plainInputs(r.m.find(t, "kubernetes:core/v1:Secret", "postgresql-credentials").Inputs)
	check(t, "pg secret", dig(t, pgSecret, "stringData"), map[string]any{"username": "owner", "password": "hunter2"})

	// A Secret without the password key fails the run with a message naming it, not the value.
	_, err := runTenantErr(TenantInput{Tenant: tt, Cluster: testTenantCluster}, enterpriseStack, map[string]string{"username": "owner"})
	if err == nil || !strings.Contains(err.Error(), `has no key "password"`) {
		t.Errorf("err = %v", err)
	}
}

// walkPlain calls fn for every string in v that is not under a secret, and onSecret for
// every secret it skips.
func walkPlain(v resource.PropertyValue, path string, fn func(path, s string), onSecret func()) {
	switch {
	case v.IsSecret():
		onSecret()
	case v.IsOutput():
		if o := v.OutputValue(); o.Secret {
			onSecret()
		} else {
			walkPlain(o.Element, path, fn, onSecret)
		}
	case v.IsString():
		fn(path, v.StringValue())
	case v.IsArray():
		for i, e := range v.ArrayValue() {
			walkPlain(e, fmt.Sprintf("%s[%d]", path, i), fn, onSecret)
		}
	case v.IsObject():
		for k, e := range v.ObjectValue() {
			walkPlain(e, path+"."+string(k), fn, onSecret)
		}
	}
}

func TestTenantSecretsNeverInPlainText(t *testing.T) {
	for _, tt := range []*v1alpha1.TFRTenant{newEnterprise(nil), newPersonal("alice", time.Now(), nil)} {
		stack := enterpriseStack
		if tt.Spec.Type == v1alpha1.TenantPersonal {
			stack = sharedChatStack(t)
		}
		r := runTenant(t, TenantInput{Tenant: tt, Cluster: testTenantCluster}, stack, nil)
		var secrets []string
		for k, isSecret := range r.secret {
			if isSecret {
				s := r.out[k].(string)
				secrets = append(secrets, s, base64.StdEncoding.EncodeToString([]byte(s)))
			}
		}
		// The dockerconfigjson carries the registry password; it must stay secret too.
		cfg := testTenantCluster.DockerConfigJSON.Reveal()
		secrets = append(secrets, cfg, base64.StdEncoding.EncodeToString([]byte(cfg)))
		if len(secrets) < 16 {
			t.Fatalf("only %d secret values to look for", len(secrets))
		}
		hidden := 0
		for _, reg := range r.m.regs {
			walkPlain(resource.NewProperty(reg.Inputs), reg.Type+"::"+reg.Name, func(path, s string) {
				for _, sec := range secrets {
					if strings.Contains(s, sec) {
						t.Errorf("%s: a secret in plain text", path)
					}
				}
			}, func() { hidden++ })
		}
		// At least the data of every Secret the stack owns is marked secret (six: the pull
		// Secret and the logins of PostgreSQL, Redis, MinIO, RabbitMQ and Grafana; a
		// personal job type's also has the robots' Redis users, whose keys are the robots').
		want := 6
		if tt.Spec.Type == v1alpha1.TenantPersonal {
			want = 7
		}
		if owned := len(r.m.all("kubernetes:core/v1:Secret")); owned != want || hidden < 6 {
			t.Errorf("%d secret values seen in the inputs of %d Secrets: the check is not looking", hidden, owned)
		}
		for k, v := range r.out {
			if s, ok := v.(string); ok && !r.secret[k] {
				for _, sec := range secrets {
					if strings.Contains(s, sec) {
						t.Errorf("output %s holds a secret in plain text", k)
					}
				}
			}
		}
	}
}

func TestTenantPersonal(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	alice, bob := newPersonal("alice", t0, nil), newPersonal("bob", t0.Add(time.Hour), nil)
	shared := sharedChatStack(t)
	check(t, "shared stack", shared, "tenant.personal-chat._shared")
	check(t, "valid stack name", stackname.Validate(shared), nil)

	// The job type's shared stack owns the namespace and the middleware.
	sr := runTenant(t, TenantInput{Tenant: alice, Cluster: testTenantCluster}, shared, nil)
	if n := len(sr.m.components()); n != len(allTenantComponents) {
		t.Errorf("shared stack registered %d components", n)
	}
	nsr := plainInputs(sr.m.find(t, "kubernetes:core/v1:Namespace", "").Inputs)
	check(t, "shared namespace", dig(t, nsr, "metadata"), map[string]any{"name": "personal-chat", "labels": withPodSecurityLabels(map[string]any{
		"istio-injection": "enabled", LabelJobType: "chat", LabelTenantType: "personal",
	}), "annotations": map[string]any{AnnotationOwner: shared}})
	for _, reg := range sr.m.regs {
		if strings.Contains(fmt.Sprint(plainInputs(reg.Inputs)), "alice") {
			t.Errorf("%s %s names the tenant that happens to drive the shared stack", reg.Type, reg.Name)
		}
	}
	check(t, "pg host", sr.out[TenantOutputPostgresHost], "personal-chat-pg-rw")
	check(t, "redis host", sr.out[TenantOutputRedisHost], "redis.personal-chat.svc.cluster.local")
	check(t, "minio host", sr.out[TenantOutputMinIOHost], "minio.personal-chat.svc.cluster.local")
	check(t, "type", []any{sr.out[TenantOutputTenantType], sr.out[TenantOutputJobType]}, []any{"personal", "chat"})
	check(t, "edges", sr.m.edges(), wantTenantEdges(false))
	checkNetworkIsolation(t, sr.m, "personal-chat")

	// Whoever owns the spec, the shared stack's objects are the same: nothing is keyed by the
	// tenant's name.
	br := runTenant(t, TenantInput{Tenant: bob, Cluster: testTenantCluster}, shared, nil)
	urnSet := func(r *tenantRun) []string {
		var out []string
		for _, reg := range r.m.regs {
			out = append(out, reg.URN)
		}
		return out
	}
	check(t, "same objects whichever tenant drives the shared stack", sameStrings(urnSet(sr), urnSet(br)), true)

	// Both tenants' own stacks register nothing and re-export the shared outputs.
	sharedOut, err := TenantOutputsFromStack(sr.outputs())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []*v1alpha1.TFRTenant{alice, bob} {
		own, sh, err := TenantStackNames(tt)
		if err != nil || sh != shared {
			t.Fatalf("stack names %q %q %v", own, sh, err)
		}
		mr := runTenant(t, TenantInput{Tenant: tt, Cluster: testTenantCluster, Shared: &sharedOut}, own, nil)
		if len(mr.m.regs) != 0 {
			t.Errorf("%s: member stack registered %d resources", tt.Name, len(mr.m.regs))
		}
		want := map[string]any{}
		for k, v := range sr.out {
			want[k] = v
		}
		want[TenantOutputSharedStack] = shared
		check(t, tt.Name+" outputs", mr.out, want)
		check(t, tt.Name+" secrets", mr.secret, sr.secret)
		if len(mr.g.Nodes) != 0 || len(mr.g.Skipped) != len(allTenantComponents) {
			t.Errorf("%s: member graph %+v", tt.Name, mr.g)
		}
		// Even when the RabbitMQ operator is down, a member only reads.
		c := testTenantCluster
		c.RabbitMQOperatorReady = false
		if _, err := runTenantErr(TenantInput{Tenant: tt, Cluster: c, Shared: &sharedOut}, own, nil); err != nil {
			t.Errorf("%s: member with the operator down: %v", tt.Name, err)
		}
	}

	// Misuse is refused.
	own, _, _ := TenantStackNames(bob)
	for name, in := range map[string]struct {
		in    TenantInput
		stack string
		msg   string
	}{
		"member without shared outputs":     {TenantInput{Tenant: bob, Cluster: testTenantCluster}, own, "up that stack first"},
		"shared stack given shared outputs": {TenantInput{Tenant: bob, Cluster: testTenantCluster, Shared: &sharedOut}, shared, "takes no shared outputs"},
		"enterprise given shared outputs":   {TenantInput{Tenant: newEnterprise(nil), Cluster: testTenantCluster, Shared: &sharedOut}, enterpriseStack, "takes no shared outputs"},
		"other namespace": {TenantInput{Tenant: newPersonal("carol", t0, func(s *v1alpha1.TFRTenantSpec) { s.Namespace = "carol" }),
			Cluster: testTenantCluster, Shared: &sharedOut}, "tenant.tfrs-system.carol", `leave spec.namespace unset`},
		"other job type": {TenantInput{Tenant: newPersonal("dave", t0, func(s *v1alpha1.TFRTenantSpec) { s.JobType = "code" }),
			Cluster: testTenantCluster, Shared: &sharedOut}, "tenant.tfrs-system.dave", `want job type "code"`},
	} {
		r, err := runTenantErr(in.in, in.stack, nil)
		if err == nil || !strings.Contains(err.Error(), in.msg) {
			t.Errorf("%s: err = %v", name, err)
		}
		if len(r.m.regs) != 0 {
			t.Errorf("%s: registered %d resources", name, len(r.m.regs))
		}
	}
}

func TestTenantDisablingRemovesDependants(t *testing.T) {
	off := func(tg *v1alpha1.Toggle) { tg.Enabled = ptr.To(false) }
	for _, tc := range []struct {
		name    string
		mut     func(*v1alpha1.TFRTenantSpec)
		removed []string
		zero    []string
	}{
		{"jaeger", func(s *v1alpha1.TFRTenantSpec) { off(&s.Jaeger.Toggle) }, []string{TenantJaeger, TenantOtelCollector}, []string{TenantOutputJaegerURL, TenantOutputOtelEndpoint}},
		{"timescaledb", func(s *v1alpha1.TFRTenantSpec) { off(&s.TimescaleDB.Toggle) }, []string{TenantTimescaleDB}, []string{TenantOutputTimescaleHost}},
		{"monitoring", func(s *v1alpha1.TFRTenantSpec) {
			off(&s.Prometheus.Toggle)
			off(&s.Grafana.Toggle)
			off(&s.Vector.Toggle)
		}, []string{TenantPrometheus, TenantGrafana, TenantVector}, []string{TenantOutputPrometheusURL, TenantOutputGrafanaURL, TenantOutputGrafanaAdminPassword, TenantOutputVectorEndpoint}},
		{"apps and cache", func(s *v1alpha1.TFRTenantSpec) {
			off(&s.SharedCache.Toggle)
			off(&s.TFRobotFront.Toggle)
			off(&s.TFRSUtils.Toggle)
		}, []string{TenantSharedCache, TenantTFRobotFront, TenantTFRSUtils}, []string{TenantOutputSharedCacheClaim, TenantOutputFrontURL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTenant(t, TenantInput{Tenant: newEnterprise(tc.mut), Cluster: testTenantCluster}, enterpriseStack, nil)
			want := map[string]string{}
			for id, typ := range allTenantComponents {
				if !contains(tc.removed, id) {
					want[id] = typ
				}
			}
			got := map[string]string{}
			for id, c := range r.m.components() {
				got[id] = c.Type
			}
			check(t, "components", got, want)
			check(t, "edges", r.m.edges(), wantTenantEdges(false, tc.removed...))
			var skipped []string
			for _, s := range r.g.Skipped {
				skipped = append(skipped, s.ID)
			}
			check(t, "skipped", sameStrings(skipped, tc.removed), true)
			for _, k := range tc.zero {
				if v := r.out[k]; v != "" {
					t.Errorf("%s = %v, want empty", k, v)
				}
			}
		})
	}
	// Without Jaeger, Grafana keeps only the Prometheus data source.
	r := runTenant(t, TenantInput{Tenant: newEnterprise(func(s *v1alpha1.TFRTenantSpec) { off(&s.Jaeger.Toggle) }), Cluster: testTenantCluster}, enterpriseStack, nil)
	ds := dig(t, plainInputs(r.m.find(t, "kubernetes:helm.sh/v4:Chart", "grafana-chart").Inputs), "values", "datasources", "datasources.yaml", "datasources").([]any)
	check(t, "data sources", len(ds), 1)
}

func TestTenantMirrorAndPullSecret(t *testing.T) {
	c := testTenantCluster
	c.ImageRegistry = "mirror.example.cn/tfrs"
	r := runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: c}, enterpriseStack, nil)
	for _, d := range r.m.all("kubernetes:apps/v1:Deployment") {
		spec := dig(t, plainInputs(d.Inputs), "spec", "template", "spec").(map[string]any)
		img := spec["containers"].([]any)[0].(map[string]any)["image"].(string)
		if !strings.HasPrefix(img, "mirror.example.cn/tfrs/") {
			t.Errorf("%s image %s not mirrored", d.Name, img)
		}
		check(t, d.Name+" pull secret", spec["imagePullSecrets"], []any{map[string]any{"name": "ccr-pull-secret"}})
	}
	check(t, "pg image", dig(t, plainInputs(r.m.find(t, "kubernetes:postgresql.cnpg.io/v1:Cluster", "postgresql-cluster").Inputs), "spec", "imageName"),
		"mirror.example.cn/tfrs/cloudnative-pg/postgresql:16-minimal-bookworm")
	check(t, "rabbitmq image", dig(t, plainInputs(r.m.find(t, "kubernetes:rabbitmq.com/v1beta1:RabbitmqCluster", "").Inputs), "spec", "image"),
		"mirror.example.cn/tfrs/library/rabbitmq:4.2.6-management")
	for _, ch := range r.m.all("kubernetes:helm.sh/v4:Chart") {
		if ch.Transforms != 2 {
			t.Errorf("%s: %d transforms, want the image mirror and the pull secret", ch.Name, ch.Transforms)
		}
	}

	// Without registry credentials: no pull Secret anywhere, no transform.
	r = runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: TenantCluster{RabbitMQOperatorReady: true}}, enterpriseStack, nil)
	if s := r.m.all("kubernetes:core/v1:Secret"); len(s) != 5 {
		t.Errorf("%d Secrets, want the 5 credentials Secrets", len(s))
	}
	check(t, "pull secret output", r.out[TenantOutputPullSecretName], "")
	for _, ch := range r.m.all("kubernetes:helm.sh/v4:Chart") {
		if ch.Transforms != 0 {
			t.Errorf("%s: transforms without a mirror or pull secret", ch.Name)
		}
	}
	// A pull Secret name without its content is refused.
	_, err := runTenantErr(TenantInput{Tenant: newEnterprise(nil), Cluster: TenantCluster{PullSecretName: "x", RabbitMQOperatorReady: true}}, enterpriseStack, nil)
	if err == nil {
		t.Error("pull secret without dockerconfigjson accepted")
	}
}

func TestTenantSpecOverrides(t *testing.T) {
	r := runTenant(t, TenantInput{Tenant: newEnterprise(func(s *v1alpha1.TFRTenantSpec) {
		s.Namespace = "acme-prod"
		s.PostgreSQL.Database = "robots"
		s.PostgreSQL.Instances = ptr.To[int32](3)
		s.PostgreSQL.StorageClassName = "fast"
		s.PostgreSQL.Resources.Limits = k8scorev1.ResourceList{"memory": k8sresource.MustParse("2Gi")}
		s.Grafana.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}
		s.Jaeger.LocalPath = "/charts/jaeger"
		s.SharedCache.CacheDir = "/cache"
		s.TFRobotFront.Replicas = ptr.To[int32](0)
	}), Cluster: testTenantCluster}, "tenant.tfrs-system.acme", nil)
	pg := plainInputs(r.m.find(t, "kubernetes:postgresql.cnpg.io/v1:Cluster", "postgresql-cluster").Inputs)
	check(t, "pg", []any{dig(t, pg, "metadata", "name"), dig(t, pg, "spec", "instances"), dig(t, pg, "spec", "storage"), dig(t, pg, "spec", "resources"), dig(t, pg, "spec", "bootstrap", "initdb", "database")},
		[]any{"acme-prod-pg", 3.0, map[string]any{"size": "10Gi", "storageClass": "fast"}, map[string]any{"limits": map[string]any{"memory": "2Gi"}}, "robots"})
	check(t, "outputs", []any{r.out[TenantOutputPostgresHost], r.out[TenantOutputPostgresDatabase], r.out[TenantOutputSharedCacheDir], r.out[TenantOutputNamespace]},
		[]any{"acme-prod-pg-rw", "robots", "/cache", "acme-prod"})
	g := plainInputs(r.m.find(t, "kubernetes:helm.sh/v4:Chart", "grafana-chart").Inputs)
	check(t, "grafana pinned", []any{g["chart"], g["version"], dig(t, g, "repositoryOpts", "repo"), dig(t, g, "values", "replicas")},
		[]any{"grafana", tenantPinned(TenantGrafana).Version, tenantPinned(TenantGrafana).Repo, 2.0})
	j := plainInputs(r.m.find(t, "kubernetes:helm.sh/v4:Chart", "jaeger-chart").Inputs)
	check(t, "jaeger local", j["chart"], "/charts/jaeger")
	fr := plainInputs(r.m.find(t, "kubernetes:apps/v1:Deployment", "tfrobot-front-deployment").Inputs)
	check(t, "front scaled down", dig(t, fr, "spec", "replicas"), 0.0)

	// A bad chart override fails before anything is registered.
	rr, err := runTenantErr(TenantInput{Tenant: newEnterprise(func(s *v1alpha1.TFRTenantSpec) {
		s.Grafana.ManifestURL = "https://example.com/grafana.yaml"
	}), Cluster: testTenantCluster}, enterpriseStack, nil)
	if err == nil || len(rr.m.regs) != 0 {
		t.Errorf("manifestURL on grafana: err %v, %d registrations", err, len(rr.m.regs))
	}
}

func tenantPinned(id string) PinnedSource {
	for _, s := range PinnedTenantSources() {
		if s.Component == id {
			return s
		}
	}
	return PinnedSource{}
}

func TestTenantRejectsInvalidInput(t *testing.T) {
	for name, in := range map[string]TenantInput{
		"nil tenant":              {Cluster: testTenantCluster},
		"personal without a job":  {Tenant: newPersonal("x", time.Now(), func(s *v1alpha1.TFRTenantSpec) { s.JobType = "" }), Cluster: testTenantCluster},
		"enterprise with a job":   {Tenant: newEnterprise(func(s *v1alpha1.TFRTenantSpec) { s.JobType = "chat" }), Cluster: testTenantCluster},
		"unknown deletion policy": {Tenant: newEnterprise(func(s *v1alpha1.TFRTenantSpec) { s.DeletionPolicy = "Keep" }), Cluster: testTenantCluster},
	} {
		r, err := runTenantErr(in, enterpriseStack, nil)
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		if len(r.m.regs) != 0 {
			t.Errorf("%s: registered %d resources", name, len(r.m.regs))
		}
	}
	if _, err := TenantGraph(nil); err == nil {
		t.Error("nil tenant graph")
	}
}

func TestBrokerURL(t *testing.T) {
	check(t, "default vhost", BrokerURL("h", 5672, "u", "p", "/"), "amqp://u:p@h:5672/")
	check(t, "robot vhost", BrokerURL("h", 5672, "u", "p@/x", "robot-1"), "amqp://u:p%40%2Fx@h:5672/robot-1")
}

// TestTenantStandIns points the charts at the stand-ins under testdata/tenant, checks that
// they exist at the pinned versions, and that every custom resource the program creates is
// served by a real upstream CRD of the pinned versions (the operators' kinds and Istio's).
func TestTenantStandIns(t *testing.T) {
	root, err := filepath.Abs("testdata/tenant")
	if err != nil {
		t.Fatal(err)
	}
	r := runTenant(t, TenantInput{Tenant: newEnterprise(func(s *v1alpha1.TFRTenantSpec) {
		s.Jaeger.LocalPath = filepath.Join(root, "charts/jaeger")
		s.Grafana.LocalPath = filepath.Join(root, "charts/grafana")
	}), Cluster: testTenantCluster}, enterpriseStack, nil)
	for _, ch := range r.m.all("kubernetes:helm.sh/v4:Chart") {
		b, err := os.ReadFile(filepath.Join(plainInputs(ch.Inputs)["chart"].(string), "Chart.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Name, Version string }
		if err := yaml.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
		src := tenantPinned(strings.TrimSuffix(ch.Name, "-chart"))
		check(t, ch.Name+" stand-in", []string{meta.Name, meta.Version}, []string{src.Artifacts[0].Name, src.Version})
	}
	served := upstreamServed(t)
	kinds := map[string]bool{}
	for _, reg := range r.m.regs {
		group, _, _ := strings.Cut(strings.TrimPrefix(reg.Type, "kubernetes:"), "/")
		if !strings.HasPrefix(reg.Type, "kubernetes:") || !strings.Contains(group, ".") || strings.HasSuffix(group, "k8s.io") || group == "helm.sh" {
			continue
		}
		kinds[reg.Type] = true
		if !served[reg.Type] {
			t.Errorf("no pinned upstream CRD serves %s", reg.Type)
		}
	}
	if len(kinds) != 5 {
		t.Errorf("custom resource kinds %v, want CNPG Cluster, MinIO Tenant, RabbitmqCluster, PeerAuthentication, AuthorizationPolicy", sortedNames(kinds))
	}
}

// upstreamServed is every "kubernetes:<group>/<version>:<Kind>" the real upstream CRDs of the
// pinned versions serve (../shared/upstream: the test skips without it, fails under CI).
func upstreamServed(t *testing.T) map[string]bool {
	t.Helper()
	upstream.Require(t)
	var refs []upstream.Ref
	for _, u := range UpstreamCRDs() {
		refs = append(refs, upstream.Ref{Project: u.Project, Version: u.Version})
	}
	defs, err := upstream.LoadAll(refs)
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, crd := range defs {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served[fmt.Sprintf("kubernetes:%s/%s:%s", crd.Spec.Group, v.Name, crd.Spec.Names.Kind)] = true
			}
		}
	}
	return served
}

// checkNetworkIsolation checks what the NetworkPolicies a tenant program registered mean for
// its namespace ns: every pod (middleware outside the mesh included) answers the namespace
// itself, the ingress gateway and monitoring, and no other namespace.
func checkNetworkIsolation(t *testing.T, m *recordingMocks, ns string) {
	t.Helper()
	var c netpol.Cluster
	for _, reg := range m.all("kubernetes:networking.k8s.io/v1:NetworkPolicy") {
		np, err := netpol.Parse(plainInputs(reg.Inputs))
		if err != nil {
			t.Fatal(err)
		}
		check(t, np.Name+" namespace", np.Namespace, ns)
		c.Policies = append(c.Policies, np)
	}
	// The platform namespaces as the cluster stack (and the admin, for monitoring) label them;
	// the policies trust the label, not the name.
	c.NamespaceLabels = map[string]map[string]string{}
	for _, n := range []string{cluster.IngressNamespace, TenantMonitoringNamespace} {
		c.NamespaceLabels[n] = clusterns.Labels(n)
	}
	pods := map[string]map[string]string{
		"postgres": {"cnpg.io/cluster": ns + "-pg"}, "minio": {"v1.min.io/tenant": tenant.MinIOTenant},
		"rabbitmq": {"app.kubernetes.io/part-of": "rabbitmq"}, "app": {"app.kubernetes.io/name": "tfrobot-front"},
	}
	for from, want := range map[string]bool{
		ns: true, cluster.IngressNamespace: true, TenantMonitoringNamespace: true,
		"other-tenant": false, "default": false, "kube-system": false,
	} {
		for name, labels := range pods {
			got, err := c.Allowed(netpol.Pod{Namespace: from}, netpol.Pod{Namespace: ns, Labels: labels}, "TCP", 5432)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s -> %s/%s allowed = %v, want %v", from, ns, name, got, want)
			}
		}
	}
}
