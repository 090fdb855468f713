package tenant

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

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
		new func(ctx *pulumi.Context) (pt.ChildLister, error)
	}{
		{NamespaceType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewNamespace(ctx, "namespace", &NamespaceArgs{Name: "acme", PullSecret: &PullSecret{Name: "pull", DockerConfigJSON: pulumi.String("{}")}})
		}},
		{PostgreSQLType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewPostgreSQL(ctx, "postgresql", &PostgreSQLArgs{Namespace: ns, ClusterName: "acme-pg", Instances: 1, ImageName: "pg:16", Storage: CNPGStorage{Size: "1Gi"},
				Database: "acme", Owner: "app_user", CredentialsSecret: "acme-pg-credentials", Login: generated("")})
		}},
		{TimescaleDBType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewTimescaleDB(ctx, "timescaledb", &TimescaleDBArgs{Namespace: ns, ClusterName: "acme-tsdb", ImageName: "ts:16", Storage: CNPGStorage{Size: "1Gi"},
				Database: "acme", Owner: pulumi.String("app_user"), CredentialsSecret: pulumi.String("acme-pg-credentials")})
		}},
		{RedisType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewRedis(ctx, "redis", &RedisArgs{Namespace: ns, Image: "redis", Size: "1Gi", Login: generated("")})
		}},
		{MinIOType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewMinIO(ctx, "minio", &MinIOArgs{Namespace: ns, Image: "minio", Servers: 1, VolumesPerServer: 1, Size: "1Gi", Bucket: "acme", Login: generated("root")})
		}},
		{RabbitMQType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewRabbitMQ(ctx, "rabbitmq", &RabbitMQArgs{Namespace: ns, Image: "rabbitmq", Replicas: 1, Size: "1Gi", Login: generated("tfrs")})
		}},
		{JaegerType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewJaeger(ctx, "jaeger", &JaegerArgs{Namespace: ns, Chart: chart})
		}},
		{OtelCollectorType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewOtelCollector(ctx, "otel-collector", &OtelCollectorArgs{Namespace: ns, Image: "otel", Replicas: 1, JaegerEndpoint: pulumi.String("jaeger:4317")})
		}},
		{PrometheusType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewPrometheus(ctx, "prometheus", &PrometheusArgs{Namespace: ns, Image: "prom", Retention: "15d"})
		}},
		{GrafanaType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewGrafana(ctx, "grafana", &GrafanaArgs{Namespace: ns, Chart: chart, Login: generated("admin")})
		}},
		{VectorType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewVector(ctx, "vector", &VectorArgs{Namespace: ns, Image: "vector", Replicas: 1})
		}},
		{SharedCacheType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewSharedCache(ctx, "shared-cache", &SharedCacheArgs{Namespace: ns, Size: "1Gi", AccessMode: "ReadWriteMany", CacheDir: "/c"})
		}},
		{TFRobotFrontType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewTFRobotFront(ctx, "tfrobot-front", &AppArgs{Namespace: ns, Image: "front", Replicas: 1})
		}},
		{TFRSUtilsType, func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewTFRSUtils(ctx, "tfrs-utils", &AppArgs{Namespace: ns, Image: "utils", Replicas: 1})
		}},
	} {
		t.Run(tc.typ, func(t *testing.T) { pt.AssertChildrenListed(t, tc.typ, tc.new) })
	}
}

func TestNamespace(t *testing.T) {
	for _, retain := range []bool{true, false} {
		m := &pt.Mocks{}
		var name, pull func() string
		m.Run(t, func(ctx *pulumi.Context) error {
			c, err := NewNamespace(ctx, "namespace", &NamespaceArgs{
				Name: "acme", Labels: map[string]string{"tfrs.io/tenant": "acme"}, Retain: retain,
				AllowedNamespaces: []string{"istio-ingress", "", "acme", "monitoring"},
			})
			if err != nil {
				return err
			}
			name, pull = pt.Collect[string](c.Name), pt.Collect[string](c.PullSecretName)
			return nil
		})
		nsReg := m.Find(t, "kubernetes:core/v1:Namespace", "")
		wantLabels := map[string]any{"istio-injection": "enabled", "tfrs.io/tenant": "acme"}
		for k, v := range PodSecurityLabels() {
			wantLabels[k] = v
		}
		pt.Eq(t, "labels", pt.At(t, pt.Plain(nsReg.Inputs), "metadata", "labels"), wantLabels)
		pt.Eq(t, "namespace retained", nsReg.Retain, retain)
		// No registry credentials: no pull Secret.
		for _, r := range m.Regs() {
			if r.Type == "kubernetes:core/v1:Secret" {
				t.Error("pull secret without credentials")
			}
		}
		ap := pt.Plain(m.Find(t, "kubernetes:security.istio.io/v1:AuthorizationPolicy", "").Inputs)
		pt.Eq(t, "allowed namespaces (own first, no duplicates or blanks)", pt.At(t, ap, "spec", "rules", 0, "from", 0, "source", "namespaces"), []any{"acme", "istio-ingress", "monitoring"})
		pa := pt.Plain(m.Find(t, "kubernetes:security.istio.io/v1:PeerAuthentication", "").Inputs)
		pt.Eq(t, "mtls", pt.At(t, pa, "spec", "mtls", "mode"), "STRICT")
		pt.Eq(t, "outputs", []string{name(), pull()}, []string{"acme", ""})
	}
	for _, a := range []*NamespaceArgs{nil, {}, {Name: "x", PullSecret: &PullSecret{Name: "p"}}} {
		err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
			_, err := NewNamespace(ctx, "namespace", a)
			return err
		})
		if err == nil {
			t.Errorf("%+v accepted", a)
		}
	}
}

func TestPostgreSQLLoginFromSecret(t *testing.T) {
	// The Secret has no username: the spec's owner stays; its password wins.
	m := &pt.Mocks{SecretData: map[string]string{"password": "hunter2"}}
	var user, pass func() string
	m.Run(t, func(ctx *pulumi.Context) error {
		c, err := NewPostgreSQL(ctx, "postgresql", &PostgreSQLArgs{
			Namespace: ns, ClusterName: "acme-pg", Instances: 2, ImageName: "pg:16", Storage: CNPGStorage{Size: "1Gi", StorageClass: "fast"},
			Resources: Resources{Requests: map[string]string{"cpu": "500m"}},
			Database:  "acme", Owner: "app_user", CredentialsSecret: "acme-pg-credentials",
			Login: Login{ExistingSecret: "mine"}, PullSecret: "pull", Retain: true,
		})
		if err != nil {
			return err
		}
		user, pass = pt.Collect[string](c.User), pt.Collect[string](c.Password)
		return nil
	})
	pt.Eq(t, "login", []string{user(), pass()}, []string{"app_user", "hunter2"})
	read := m.Find(t, "kubernetes:core/v1:Secret", "postgresql-existing-secret")
	if !read.Read {
		t.Error("the user's Secret is managed, not read")
	}
	cl := m.Find(t, "kubernetes:postgresql.cnpg.io/v1:Cluster", "")
	spec := pt.At(t, pt.Plain(cl.Inputs), "spec").(map[string]any)
	pt.Eq(t, "instances", spec["instances"], 2.0)
	pt.Eq(t, "storage", spec["storage"], map[string]any{"size": "1Gi", "storageClass": "fast"})
	pt.Eq(t, "resources", spec["resources"], map[string]any{"requests": map[string]any{"cpu": "500m"}})
	pt.Eq(t, "no sidecar", pt.At(t, spec, "inheritedMetadata", "annotations"), map[string]any{"sidecar.istio.io/inject": "false"})
	pt.Eq(t, "pull secret", spec["imagePullSecrets"], []any{map[string]any{"name": "pull"}})
	if !cl.Retain || !m.Find(t, "kubernetes:core/v1:Secret", "postgresql-credentials").Retain {
		t.Error("cluster and credentials not retained")
	}
	// Required arguments.
	err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
		_, err := NewPostgreSQL(ctx, "postgresql", &PostgreSQLArgs{Namespace: ns, ClusterName: "x", ImageName: "i", Database: "d", Owner: "o", CredentialsSecret: "s"})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "password or an existing Secret") {
		t.Errorf("login-less postgresql: %v", err)
	}
}

func TestTimescaleDB(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewTimescaleDB(ctx, "timescaledb", &TimescaleDBArgs{
			Namespace: ns, ClusterName: "acme-tsdb", ImageName: "timescale/timescaledb-ha:pg16", Storage: CNPGStorage{Size: "1Gi"},
			Database: "acme", Owner: pulumi.String("app_user"), CredentialsSecret: pulumi.String("acme-pg-credentials"),
		})
		return err
	})
	spec := pt.At(t, pt.Plain(m.Find(t, "kubernetes:postgresql.cnpg.io/v1:Cluster", "").Inputs), "spec").(map[string]any)
	pt.Eq(t, "extension", pt.At(t, spec, "bootstrap", "initdb", "postInitApplicationSQL"), []any{"CREATE EXTENSION IF NOT EXISTS timescaledb"})
	pt.Eq(t, "preload", pt.At(t, spec, "postgresql", "shared_preload_libraries"), []any{"timescaledb"})
	pt.Eq(t, "uid", []any{spec["postgresUID"], spec["postgresGID"]}, []any{1000.0, 1000.0})
}

func TestRabbitMQDefaultUser(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewRabbitMQ(ctx, "rabbitmq", &RabbitMQArgs{Namespace: ns, Image: "rabbitmq:3", Replicas: 3, Size: "2Gi", Login: generated("tfrs")})
		return err
	})
	s := pt.Plain(m.Find(t, "kubernetes:core/v1:Secret", "").Inputs)
	pt.Eq(t, "default user secret", pt.At(t, s, "metadata", "name"), RabbitMQDefaultUserSecret)
	pt.Eq(t, "default_user.conf", pt.At(t, s, "stringData", "default_user.conf"), "default_user = tfrs\ndefault_pass = generated-password\n")
	pt.Eq(t, "host", pt.At(t, s, "stringData", "host"), "rabbitmq.acme.svc.cluster.local")
	cl := pt.Plain(m.Find(t, "kubernetes:rabbitmq.com/v1beta1:RabbitmqCluster", "").Inputs)
	pt.Eq(t, "replicas", pt.At(t, cl, "spec", "replicas"), 3.0)
	pt.Eq(t, "persistence", pt.At(t, cl, "spec", "persistence"), map[string]any{"storage": "2Gi"})

	if _, err := DefaultUserConf("u", "p\ndefault_user = evil"); err == nil {
		t.Error("newline in a password accepted")
	}
}

func TestMinIOConfigEnv(t *testing.T) {
	got, err := ConfigEnv("root", "pw")
	pt.Eq(t, "config.env", []any{got, err}, []any{"export MINIO_ROOT_USER=\"root\"\nexport MINIO_ROOT_PASSWORD=\"pw\"\n", nil})
	for _, bad := range [][2]string{{"", "pw"}, {"root", `p"w`}, {"root", "p$w"}, {"root", "p\nw"}, {"ro`ot", "pw"}} {
		if _, err := ConfigEnv(bad[0], bad[1]); err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), bad[1]) && bad[1] != "" {
			t.Errorf("error %q repeats the password", err)
		}
	}
	// From a user-given Secret: both keys, both secret.
	m := &pt.Mocks{SecretData: map[string]string{"rootUser": "admin", "rootPassword": "hunter22"}}
	var access, secretKey func() string
	var accessSecret bool
	m.Run(t, func(ctx *pulumi.Context) error {
		c, err := NewMinIO(ctx, "minio", &MinIOArgs{Namespace: ns, Image: "minio", Servers: 4, VolumesPerServer: 2, Size: "10Gi", Bucket: "acme", Login: Login{ExistingSecret: "mine"}})
		if err != nil {
			return err
		}
		access, secretKey = pt.Collect[string](c.AccessKey), pt.Collect[string](c.SecretKey)
		accessSecret = pulumi.IsSecret(c.AccessKey)
		return nil
	})
	pt.Eq(t, "keys", []string{access(), secretKey()}, []string{"admin", "hunter22"})
	if !accessSecret {
		t.Error("access key is not secret")
	}
	pool := pt.At(t, pt.Plain(m.Find(t, "kubernetes:minio.min.io/v2:Tenant", "").Inputs), "spec", "pools", 0).(map[string]any)
	pt.Eq(t, "pool", []any{pool["servers"], pool["volumesPerServer"], pt.At(t, pool, "volumeClaimTemplate", "spec", "resources", "requests", "storage")}, []any{4.0, 2.0, "10Gi"})
}

func TestRedisRequiresPasswordFromSecret(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewRedis(ctx, "redis", &RedisArgs{Namespace: ns, Image: "redis/redis-stack-server:7", Size: "1Gi", StorageClass: "fast", Login: generated(""), Retain: true})
		return err
	})
	d := pt.Plain(m.Find(t, "kubernetes:apps/v1:Deployment", "").Inputs)
	pt.Eq(t, "recreate", pt.At(t, d, "spec", "strategy", "type"), "Recreate")
	c := pt.At(t, d, "spec", "template", "spec", "containers", 0).(map[string]any)
	pt.Eq(t, "volume", pt.At(t, c, "volumeMounts", 0, "mountPath"), "/data")
	pt.Eq(t, "probe", pt.At(t, c, "readinessProbe", "tcpSocket", "port"), 6379.0)
	pvc := m.Find(t, "kubernetes:core/v1:PersistentVolumeClaim", "")
	pt.Eq(t, "pvc", pt.At(t, pt.Plain(pvc.Inputs), "spec"), map[string]any{
		"accessModes": []any{"ReadWriteOnce"}, "storageClassName": "fast",
		"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}},
	})
	pt.Eq(t, "pvc not awaited", pt.At(t, pt.Plain(pvc.Inputs), "metadata", "annotations"), map[string]any{"pulumi.com/skipAwait": "true"})
	if !pvc.Retain {
		t.Error("data volume not retained")
	}
	if m.Find(t, "kubernetes:core/v1:Secret", "").Retain {
		t.Error("the redis password Secret is retained: it holds no data")
	}
}

func TestGrafanaWithoutDataSources(t *testing.T) {
	m := &pt.Mocks{}
	var url func() string
	m.Run(t, func(ctx *pulumi.Context) error {
		c, err := NewGrafana(ctx, "grafana", &GrafanaArgs{Namespace: ns, Chart: ChartRef{Chart: "grafana", Repo: "https://g", Version: "1", Values: map[string]any{"rbac": map[string]any{"create": false}}}, Login: generated("admin"), Images: func(s string) string { return s }, PullSecret: "pull"})
		if err != nil {
			return err
		}
		url = pt.Collect[string](c.URL)
		return nil
	})
	ch := m.Find(t, "kubernetes:helm.sh/v4:Chart", "")
	v := pt.At(t, pt.Plain(ch.Inputs), "values").(map[string]any)
	if _, ok := v["datasources"]; ok {
		t.Error("data sources without Prometheus or Jaeger")
	}
	pt.Eq(t, "spec values merged over the component's", v["rbac"], map[string]any{"namespaced": true, "create": false})
	pt.Eq(t, "transforms", ch.Transforms, 2)
	pt.Eq(t, "url", url(), "http://grafana.acme.svc.cluster.local")
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
		if err := (&pt.Mocks{}).RunErr(f); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestConfigs(t *testing.T) {
	if c := OtelConfig("jaeger.acme.svc.cluster.local:4317"); !strings.Contains(c, "endpoint: jaeger.acme.svc.cluster.local:4317") || !strings.Contains(c, "exporters: [otlp/jaeger]") {
		t.Errorf("otel config:\n%s", c)
	}
	if c := PrometheusConfig("acme"); !strings.Contains(c, "names: [acme]") {
		t.Errorf("prometheus config:\n%s", c)
	}
	if c := VectorConfig("acme"); !strings.Contains(c, `.tenant_namespace = "acme"`) {
		t.Errorf("vector config:\n%s", c)
	}
	pt.Eq(t, "host", ServiceHost("redis", "acme"), "redis.acme.svc.cluster.local")
}
