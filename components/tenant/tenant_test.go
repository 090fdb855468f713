package tenant

import (
	"context"
	"encoding/base64"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const (
	testProject = "tfrs"
	testStack   = "tenant.test"
)

type registration struct {
	Type, Name, URN, Parent string
	Deps                    []string
	Inputs                  resource.PropertyMap
	Read, Retain            bool
	Transforms              int
}

// mocks records every registration; reads of Secrets answer with secretData (plain values).
type mocks struct {
	mu         sync.Mutex
	regs       []*registration
	secretData map[string]string
}

func (m *mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r := &registration{Type: args.TypeToken, Name: args.Name, Inputs: args.Inputs}
	state := args.Inputs
	if rpc := args.RegisterRPC; rpc != nil {
		r.Parent, r.Deps, r.Retain, r.Transforms = rpc.GetParent(), rpc.GetDependencies(), rpc.GetRetainOnDelete(), len(rpc.GetTransforms())
	}
	if rpc := args.ReadRPC; rpc != nil {
		r.Parent, r.Read = rpc.GetParent(), true
		data := resource.PropertyMap{}
		for k, v := range m.secretData {
			data[resource.PropertyKey(k)] = resource.NewProperty(base64.StdEncoding.EncodeToString([]byte(v)))
		}
		state = resource.PropertyMap{"data": resource.MakeSecret(resource.NewProperty(data))}
	}
	parentType := tokens.Type("")
	if p := resource.URN(r.Parent); p != "" && p.QualifiedType() != resource.RootStackType {
		parentType = p.QualifiedType()
	}
	r.URN = string(resource.NewURN(testStack, testProject, parentType, tokens.Type(r.Type), r.Name))
	m.mu.Lock()
	m.regs = append(m.regs, r)
	m.mu.Unlock()
	return args.Name + "-id", state, nil
}

func (m *mocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

func (m *mocks) find(t *testing.T, typ, name string) *registration {
	t.Helper()
	var found []*registration
	for _, r := range m.regs {
		if r.Type == typ && (name == "" || r.Name == name) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d registrations of %s %q, want 1", len(found), typ, name)
	}
	return found[0]
}

func plain(pm resource.PropertyMap) map[string]any { return pm.MapRepl(nil, unwrap) }

func unwrap(v resource.PropertyValue) (any, bool) {
	if v.IsSecret() {
		return v.SecretValue().Element.MapRepl(nil, unwrap), true
	}
	return nil, false
}

func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not a map", path, v)
			}
			v = m[k]
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				t.Fatalf("at %v: %T has no index %d", path, v, k)
			}
			v = s[k]
		}
	}
	return v
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// collect returns a function that waits for an output's value after the run.
func collect[T any](o pulumi.Output) func() T {
	var (
		wg  sync.WaitGroup
		val T
	)
	wg.Add(1)
	o.ApplyT(func(v T) T { val = v; wg.Done(); return v })
	return func() T { wg.Wait(); return val }
}

func run(t *testing.T, m *mocks, program pulumi.RunFunc) {
	t.Helper()
	if err := pulumi.RunErr(program, pulumi.WithMocks(testProject, testStack, m)); err != nil {
		t.Fatal(err)
	}
}

var ns = pulumi.String("acme")

// generated is a login as the program hands it over: a generated (secret) password.
func generated(user string) Login {
	l := Login{Password: pulumi.ToSecret(pulumi.String("generated-password")).(pulumi.StringOutput)}
	if user != "" {
		l.User = pulumi.String(user)
	}
	return l
}

// Every component: its children are parented to it, and Children() lists every resource it
// registered itself (reads excepted), so dependants wait for all of them.
func TestComponentsListTheirChildren(t *testing.T) {
	chart := ChartRef{Chart: "/charts/x"}
	for _, tc := range []struct {
		typ string
		new func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error)
	}{
		{NamespaceType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewNamespace(ctx, "namespace", &NamespaceArgs{Name: "acme", PullSecret: &PullSecret{Name: "pull", DockerConfigJSON: pulumi.String("{}")}})
		}},
		{PostgreSQLType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewPostgreSQL(ctx, "postgresql", &PostgreSQLArgs{Namespace: ns, ClusterName: "acme-pg", Instances: 1, ImageName: "pg:16", Storage: CNPGStorage{Size: "1Gi"},
				Database: "acme", Owner: "app_user", CredentialsSecret: "acme-pg-credentials", Login: generated("")})
		}},
		{TimescaleDBType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewTimescaleDB(ctx, "timescaledb", &TimescaleDBArgs{Namespace: ns, ClusterName: "acme-tsdb", ImageName: "ts:16", Storage: CNPGStorage{Size: "1Gi"},
				Database: "acme", Owner: pulumi.String("app_user"), CredentialsSecret: pulumi.String("acme-pg-credentials")})
		}},
		{RedisType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewRedis(ctx, "redis", &RedisArgs{Namespace: ns, Image: "redis", Size: "1Gi", Login: generated("")})
		}},
		{MinIOType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewMinIO(ctx, "minio", &MinIOArgs{Namespace: ns, Image: "minio", Servers: 1, VolumesPerServer: 1, Size: "1Gi", Bucket: "acme", Login: generated("root")})
		}},
		{RabbitMQType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewRabbitMQ(ctx, "rabbitmq", &RabbitMQArgs{Namespace: ns, Image: "rabbitmq", Replicas: 1, Size: "1Gi", Login: generated("tfrs")})
		}},
		{JaegerType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewJaeger(ctx, "jaeger", &JaegerArgs{Namespace: ns, Chart: chart})
		}},
		{OtelCollectorType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewOtelCollector(ctx, "otel-collector", &OtelCollectorArgs{Namespace: ns, Image: "otel", Replicas: 1, JaegerEndpoint: pulumi.String("jaeger:4317")})
		}},
		{PrometheusType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewPrometheus(ctx, "prometheus", &PrometheusArgs{Namespace: ns, Image: "prom", Retention: "15d"})
		}},
		{GrafanaType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewGrafana(ctx, "grafana", &GrafanaArgs{Namespace: ns, Chart: chart, Login: generated("admin")})
		}},
		{VectorType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewVector(ctx, "vector", &VectorArgs{Namespace: ns, Image: "vector", Replicas: 1})
		}},
		{SharedCacheType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewSharedCache(ctx, "shared-cache", &SharedCacheArgs{Namespace: ns, Size: "1Gi", AccessMode: "ReadWriteMany", CacheDir: "/c"})
		}},
		{TFRobotFrontType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewTFRobotFront(ctx, "tfrobot-front", &AppArgs{Namespace: ns, Image: "front", Replicas: 1})
		}},
		{TFRSUtilsType, func(ctx *pulumi.Context) (interface{ Children() []pulumi.Resource }, error) {
			return NewTFRSUtils(ctx, "tfrs-utils", &AppArgs{Namespace: ns, Image: "utils", Replicas: 1})
		}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			m := &mocks{}
			var urns []func() pulumi.URN
			run(t, m, func(ctx *pulumi.Context) error {
				c, err := tc.new(ctx)
				if err != nil {
					return err
				}
				for _, r := range c.Children() {
					urns = append(urns, collect[pulumi.URN](r.URN()))
				}
				return nil
			})
			comp := m.find(t, tc.typ, "")
			var want []string
			for _, r := range m.regs {
				if r == comp {
					continue
				}
				if r.Parent != comp.URN {
					t.Errorf("%s %s: parent %q, want the component", r.Type, r.Name, r.Parent)
				}
				if !r.Read {
					want = append(want, r.URN)
				}
			}
			var got []string
			for _, u := range urns {
				got = append(got, string(u()))
			}
			sort.Strings(got)
			sort.Strings(want)
			eq(t, "Children()", got, want)
		})
	}
}

func TestNamespace(t *testing.T) {
	for _, retain := range []bool{true, false} {
		m := &mocks{}
		var name, pull func() string
		run(t, m, func(ctx *pulumi.Context) error {
			c, err := NewNamespace(ctx, "namespace", &NamespaceArgs{
				Name: "acme", Labels: map[string]string{"tfrs.io/tenant": "acme"}, Retain: retain,
				AllowedNamespaces: []string{"istio-ingress", "", "acme", "monitoring"},
			})
			if err != nil {
				return err
			}
			name, pull = collect[string](c.Name), collect[string](c.PullSecretName)
			return nil
		})
		nsReg := m.find(t, "kubernetes:core/v1:Namespace", "")
		eq(t, "labels", at(t, plain(nsReg.Inputs), "metadata", "labels"), map[string]any{"istio-injection": "enabled", "tfrs.io/tenant": "acme"})
		eq(t, "namespace retained", nsReg.Retain, retain)
		// No registry credentials: no pull Secret.
		for _, r := range m.regs {
			if r.Type == "kubernetes:core/v1:Secret" {
				t.Error("pull secret without credentials")
			}
		}
		ap := plain(m.find(t, "kubernetes:security.istio.io/v1:AuthorizationPolicy", "").Inputs)
		eq(t, "allowed namespaces (own first, no duplicates or blanks)", at(t, ap, "spec", "rules", 0, "from", 0, "source", "namespaces"), []any{"acme", "istio-ingress", "monitoring"})
		pa := plain(m.find(t, "kubernetes:security.istio.io/v1:PeerAuthentication", "").Inputs)
		eq(t, "mtls", at(t, pa, "spec", "mtls", "mode"), "STRICT")
		eq(t, "outputs", []string{name(), pull()}, []string{"acme", ""})
	}
	for _, a := range []*NamespaceArgs{nil, {}, {Name: "x", PullSecret: &PullSecret{Name: "p"}}} {
		err := pulumi.RunErr(func(ctx *pulumi.Context) error {
			_, err := NewNamespace(ctx, "namespace", a)
			return err
		}, pulumi.WithMocks(testProject, testStack, &mocks{}))
		if err == nil {
			t.Errorf("%+v accepted", a)
		}
	}
}

func TestPostgreSQLLoginFromSecret(t *testing.T) {
	// The Secret has no username: the spec's owner stays; its password wins.
	m := &mocks{secretData: map[string]string{"password": "hunter2"}}
	var user, pass func() string
	run(t, m, func(ctx *pulumi.Context) error {
		c, err := NewPostgreSQL(ctx, "postgresql", &PostgreSQLArgs{
			Namespace: ns, ClusterName: "acme-pg", Instances: 2, ImageName: "pg:16", Storage: CNPGStorage{Size: "1Gi", StorageClass: "fast"},
			Resources: Resources{Requests: map[string]string{"cpu": "500m"}},
			Database:  "acme", Owner: "app_user", CredentialsSecret: "acme-pg-credentials",
			Login: Login{ExistingSecret: "mine"}, PullSecret: "pull", Retain: true,
		})
		if err != nil {
			return err
		}
		user, pass = collect[string](c.User), collect[string](c.Password)
		return nil
	})
	eq(t, "login", []string{user(), pass()}, []string{"app_user", "hunter2"})
	read := m.find(t, "kubernetes:core/v1:Secret", "postgresql-existing-secret")
	if !read.Read {
		t.Error("the user's Secret is managed, not read")
	}
	cl := m.find(t, "kubernetes:postgresql.cnpg.io/v1:Cluster", "")
	spec := at(t, plain(cl.Inputs), "spec").(map[string]any)
	eq(t, "instances", spec["instances"], 2.0)
	eq(t, "storage", spec["storage"], map[string]any{"size": "1Gi", "storageClass": "fast"})
	eq(t, "resources", spec["resources"], map[string]any{"requests": map[string]any{"cpu": "500m"}})
	eq(t, "no sidecar", at(t, spec, "inheritedMetadata", "annotations"), map[string]any{"sidecar.istio.io/inject": "false"})
	eq(t, "pull secret", spec["imagePullSecrets"], []any{map[string]any{"name": "pull"}})
	if !cl.Retain || !m.find(t, "kubernetes:core/v1:Secret", "postgresql-credentials").Retain {
		t.Error("cluster and credentials not retained")
	}
	// Required arguments.
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := NewPostgreSQL(ctx, "postgresql", &PostgreSQLArgs{Namespace: ns, ClusterName: "x", ImageName: "i", Database: "d", Owner: "o", CredentialsSecret: "s"})
		return err
	}, pulumi.WithMocks(testProject, testStack, &mocks{}))
	if err == nil || !strings.Contains(err.Error(), "password or an existing Secret") {
		t.Errorf("login-less postgresql: %v", err)
	}
}

func TestTimescaleDB(t *testing.T) {
	m := &mocks{}
	run(t, m, func(ctx *pulumi.Context) error {
		_, err := NewTimescaleDB(ctx, "timescaledb", &TimescaleDBArgs{
			Namespace: ns, ClusterName: "acme-tsdb", ImageName: "timescale/timescaledb-ha:pg16", Storage: CNPGStorage{Size: "1Gi"},
			Database: "acme", Owner: pulumi.String("app_user"), CredentialsSecret: pulumi.String("acme-pg-credentials"),
		})
		return err
	})
	spec := at(t, plain(m.find(t, "kubernetes:postgresql.cnpg.io/v1:Cluster", "").Inputs), "spec").(map[string]any)
	eq(t, "extension", at(t, spec, "bootstrap", "initdb", "postInitApplicationSQL"), []any{"CREATE EXTENSION IF NOT EXISTS timescaledb"})
	eq(t, "preload", at(t, spec, "postgresql", "shared_preload_libraries"), []any{"timescaledb"})
	eq(t, "uid", []any{spec["postgresUID"], spec["postgresGID"]}, []any{1000.0, 1000.0})
}

func TestRabbitMQDefaultUser(t *testing.T) {
	m := &mocks{}
	run(t, m, func(ctx *pulumi.Context) error {
		_, err := NewRabbitMQ(ctx, "rabbitmq", &RabbitMQArgs{Namespace: ns, Image: "rabbitmq:3", Replicas: 3, Size: "2Gi", Login: generated("tfrs")})
		return err
	})
	s := plain(m.find(t, "kubernetes:core/v1:Secret", "").Inputs)
	eq(t, "default user secret", at(t, s, "metadata", "name"), RabbitMQDefaultUserSecret)
	eq(t, "default_user.conf", at(t, s, "stringData", "default_user.conf"), "default_user = tfrs\ndefault_pass = generated-password\n")
	eq(t, "host", at(t, s, "stringData", "host"), "rabbitmq.acme.svc.cluster.local")
	cl := plain(m.find(t, "kubernetes:rabbitmq.com/v1beta1:RabbitmqCluster", "").Inputs)
	eq(t, "replicas", at(t, cl, "spec", "replicas"), 3.0)
	eq(t, "persistence", at(t, cl, "spec", "persistence"), map[string]any{"storage": "2Gi"})

	if _, err := DefaultUserConf("u", "p\ndefault_user = evil"); err == nil {
		t.Error("newline in a password accepted")
	}
}

func TestMinIOConfigEnv(t *testing.T) {
	got, err := ConfigEnv("root", "pw")
	eq(t, "config.env", []any{got, err}, []any{"export MINIO_ROOT_USER=\"root\"\nexport MINIO_ROOT_PASSWORD=\"pw\"\n", nil})
	for _, bad := range [][2]string{{"", "pw"}, {"root", `p"w`}, {"root", "p$w"}, {"root", "p\nw"}, {"ro`ot", "pw"}} {
		if _, err := ConfigEnv(bad[0], bad[1]); err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), bad[1]) && bad[1] != "" {
			t.Errorf("error %q repeats the password", err)
		}
	}
	// From a user-given Secret: both keys, both secret.
	m := &mocks{secretData: map[string]string{"rootUser": "admin", "rootPassword": "hunter22"}}
	var access, secretKey func() string
	var accessSecret bool
	run(t, m, func(ctx *pulumi.Context) error {
		c, err := NewMinIO(ctx, "minio", &MinIOArgs{Namespace: ns, Image: "minio", Servers: 4, VolumesPerServer: 2, Size: "10Gi", Bucket: "acme", Login: Login{ExistingSecret: "mine"}})
		if err != nil {
			return err
		}
		access, secretKey = collect[string](c.AccessKey), collect[string](c.SecretKey)
		accessSecret = pulumi.IsSecret(c.AccessKey)
		return nil
	})
	eq(t, "keys", []string{access(), secretKey()}, []string{"admin", "hunter22"})
	if !accessSecret {
		t.Error("access key is not secret")
	}
	pool := at(t, plain(m.find(t, "kubernetes:minio.min.io/v2:Tenant", "").Inputs), "spec", "pools", 0).(map[string]any)
	eq(t, "pool", []any{pool["servers"], pool["volumesPerServer"], at(t, pool, "volumeClaimTemplate", "spec", "resources", "requests", "storage")}, []any{4.0, 2.0, "10Gi"})
}

func TestRedisRequiresPasswordFromSecret(t *testing.T) {
	m := &mocks{}
	run(t, m, func(ctx *pulumi.Context) error {
		_, err := NewRedis(ctx, "redis", &RedisArgs{Namespace: ns, Image: "redis/redis-stack-server:7", Size: "1Gi", StorageClass: "fast", Login: generated(""), Retain: true})
		return err
	})
	d := plain(m.find(t, "kubernetes:apps/v1:Deployment", "").Inputs)
	eq(t, "recreate", at(t, d, "spec", "strategy", "type"), "Recreate")
	c := at(t, d, "spec", "template", "spec", "containers", 0).(map[string]any)
	eq(t, "volume", at(t, c, "volumeMounts", 0, "mountPath"), "/data")
	eq(t, "probe", at(t, c, "readinessProbe", "tcpSocket", "port"), 6379.0)
	pvc := m.find(t, "kubernetes:core/v1:PersistentVolumeClaim", "")
	eq(t, "pvc", at(t, plain(pvc.Inputs), "spec"), map[string]any{
		"accessModes": []any{"ReadWriteOnce"}, "storageClassName": "fast",
		"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}},
	})
	eq(t, "pvc not awaited", at(t, plain(pvc.Inputs), "metadata", "annotations"), map[string]any{"pulumi.com/skipAwait": "true"})
	if !pvc.Retain {
		t.Error("data volume not retained")
	}
	if m.find(t, "kubernetes:core/v1:Secret", "").Retain {
		t.Error("the redis password Secret is retained: it holds no data")
	}
}

func TestPullSecretTransform(t *testing.T) {
	tr := PullSecretTransform("pull")
	props := func() pulumi.Map {
		return pulumi.Map{"spec": pulumi.Map{"template": pulumi.Map{"spec": pulumi.Map{
			"imagePullSecrets": pulumi.Array{pulumi.Map{"name": pulumi.String("other")}},
		}}}}
	}
	res := tr(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:apps/v1:Deployment", Custom: true, Props: props()})
	if res == nil {
		t.Fatal("deployment not transformed")
	}
	got := res.Props["spec"].(pulumi.Map)["template"].(pulumi.Map)["spec"].(pulumi.Map)["imagePullSecrets"]
	eq(t, "pull secrets", got, pulumi.Array{pulumi.Map{"name": pulumi.String("other")}, pulumi.Map{"name": pulumi.String("pull")}})
	// Idempotent, and nothing but workloads.
	if tr(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:apps/v1:Deployment", Custom: true, Props: res.Props}) != nil {
		t.Error("pull secret added twice")
	}
	if tr(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:core/v1:Service", Custom: true, Props: props()}) != nil {
		t.Error("service transformed")
	}
}

func TestGrafanaWithoutDataSources(t *testing.T) {
	m := &mocks{}
	var url func() string
	run(t, m, func(ctx *pulumi.Context) error {
		c, err := NewGrafana(ctx, "grafana", &GrafanaArgs{Namespace: ns, Chart: ChartRef{Chart: "grafana", Repo: "https://g", Version: "1", Values: map[string]any{"rbac": map[string]any{"create": false}}}, Login: generated("admin"), Images: func(s string) string { return s }, PullSecret: "pull"})
		if err != nil {
			return err
		}
		url = collect[string](c.URL)
		return nil
	})
	ch := m.find(t, "kubernetes:helm.sh/v4:Chart", "")
	v := at(t, plain(ch.Inputs), "values").(map[string]any)
	if _, ok := v["datasources"]; ok {
		t.Error("data sources without Prometheus or Jaeger")
	}
	eq(t, "spec values merged over the component's", v["rbac"], map[string]any{"namespaced": true, "create": false})
	eq(t, "transforms", ch.Transforms, 2)
	eq(t, "url", url(), "http://grafana.acme.svc.cluster.local")
}

func TestWorkloadValidation(t *testing.T) {
	for name, f := range map[string]func(ctx *pulumi.Context) error{
		"app without image": func(ctx *pulumi.Context) error {
			_, err := NewTFRobotFront(ctx, "f", &AppArgs{Namespace: ns})
			return err
		},
		"utils nil args": func(ctx *pulumi.Context) error { _, err := NewTFRSUtils(ctx, "u", nil); return err },
		"negative replicas": func(ctx *pulumi.Context) error {
			_, err := NewVector(ctx, "v", &VectorArgs{Namespace: ns, Image: "v", Replicas: -1})
			return err
		},
		"otel without jaeger": func(ctx *pulumi.Context) error {
			_, err := NewOtelCollector(ctx, "o", &OtelCollectorArgs{Namespace: ns, Image: "o"})
			return err
		},
		"cache without dir": func(ctx *pulumi.Context) error {
			_, err := NewSharedCache(ctx, "c", &SharedCacheArgs{Namespace: ns, Size: "1Gi", AccessMode: "ReadWriteMany"})
			return err
		},
		"minio without servers": func(ctx *pulumi.Context) error {
			_, err := NewMinIO(ctx, "m", &MinIOArgs{Namespace: ns, Image: "m", Size: "1Gi", Bucket: "b", Login: generated("r")})
			return err
		},
		"chart without chart": func(ctx *pulumi.Context) error { _, err := NewJaeger(ctx, "j", &JaegerArgs{Namespace: ns}); return err },
	} {
		if err := pulumi.RunErr(f, pulumi.WithMocks(testProject, testStack, &mocks{})); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestConfigs(t *testing.T) {
	if c := OtelConfig("jaeger-collector.acme.svc.cluster.local:4317"); !strings.Contains(c, "endpoint: jaeger-collector.acme.svc.cluster.local:4317") || !strings.Contains(c, "exporters: [otlp/jaeger]") {
		t.Errorf("otel config:\n%s", c)
	}
	if c := PrometheusConfig("acme"); !strings.Contains(c, "names: [acme]") {
		t.Errorf("prometheus config:\n%s", c)
	}
	if c := VectorConfig("acme"); !strings.Contains(c, `.tenant_namespace = "acme"`) {
		t.Errorf("vector config:\n%s", c)
	}
	eq(t, "host", ServiceHost("redis", "acme"), "redis.acme.svc.cluster.local")
}
