package stacks

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
)

const exportSecretType = "kubernetes:core/v1:Secret"

func withExport(e *v1alpha1.ExportOutputsSpec, more ...func(*v1alpha1.TFRTenantSpec)) func(*v1alpha1.TFRTenantSpec) {
	return func(s *v1alpha1.TFRTenantSpec) {
		s.ExportOutputs = e
		for _, m := range more {
			m(s)
		}
	}
}

// exportedSecret is the exported Secret's registration and its stringData with secrets
// unwrapped; it fails the test unless the data is marked secret (the SDK marks the whole map
// once its values are secrets).
func exportedSecret(t *testing.T, r *tenantRun) (*registration, map[string]string) {
	t.Helper()
	reg := r.m.find(t, exportSecretType, TenantExportOutputs+"-secret")
	raw := reg.Inputs["stringData"]
	if !raw.IsSecret() && !(raw.IsOutput() && raw.OutputValue().Secret) {
		t.Fatal("stringData of the exported Secret is not a Pulumi secret")
	}
	data := map[string]string{}
	for k, v := range plainInputs(resource.PropertyMap{"d": raw})["d"].(map[string]any) {
		data[k] = v.(string)
	}
	return reg, data
}

func TestTenantExportOutputsSecret(t *testing.T) {
	tt := newEnterprise(withExport(&v1alpha1.ExportOutputsSpec{
		SecretName: "acme-middleware", KeyTemplate: "{COMPONENT}_{FIELD}",
		Labels: map[string]v1alpha1.LabelValue{"app": "legacy", "example.com/team": "data"},
	}))
	r := runTenant(t, TenantInput{Tenant: tt, Cluster: testTenantCluster}, enterpriseStack, nil)
	reg, data := exportedSecret(t, r)

	meta := plainInputs(reg.Inputs)["metadata"]
	check(t, "name", dig(t, meta, "name"), "acme-middleware")
	check(t, "namespace", dig(t, meta, "namespace"), "acme")
	check(t, "labels", dig(t, meta, "labels"), map[string]any{
		"app": "legacy", "example.com/team": "data",
		"app.kubernetes.io/name": "exported-outputs", "app.kubernetes.io/part-of": "tfrs",
	})
	if !reg.Retain || dig(t, meta, "annotations", "pulumi.com/patchForce") != "true" {
		t.Error("under the default Retain policy the Secret must be retained on destroy, and its replacement forced over the retained copy")
	}

	// Every field of every installed component, under the template's key, and nothing else.
	var want []string
	for _, c := range v1alpha1.ExportedFields() {
		for _, f := range c.Fields {
			want = append(want, strings.ToUpper(c.Component)+"_"+strings.ToUpper(f))
		}
	}
	check(t, "keys", sameStrings(sortedNames(data), want), true)

	// The values are the stack's own outputs (what a TFRServer gets), not re-derived.
	out := func(k string) string { return r.out[k].(string) }
	for key, output := range map[string]string{
		"POSTGRESQL_HOST": TenantOutputPostgresHost, "POSTGRESQL_USER": TenantOutputPostgresUser,
		"POSTGRESQL_PASSWORD": TenantOutputPostgresPassword, "POSTGRESQL_DATABASE": TenantOutputPostgresDatabase,
		"TIMESCALEDB_HOST": TenantOutputTimescaleHost, "TIMESCALEDB_DATABASE": TenantOutputTimescaleDatabase,
		"TIMESCALEDB_USER": TenantOutputPostgresUser, "TIMESCALEDB_PASSWORD": TenantOutputPostgresPassword,
		"REDIS_HOST": TenantOutputRedisHost, "REDIS_PASSWORD": TenantOutputRedisPassword,
		"MINIO_HOST": TenantOutputMinIOHost, "MINIO_USER": TenantOutputMinIOAccessKey,
		"MINIO_PASSWORD": TenantOutputMinIOSecretKey, "MINIO_BUCKET": TenantOutputMinIOBucket,
		"RABBITMQ_HOST": TenantOutputRabbitMQHost, "RABBITMQ_USER": TenantOutputRabbitMQUser,
		"RABBITMQ_PASSWORD": TenantOutputRabbitMQPassword, "RABBITMQ_VHOST": TenantOutputRabbitMQVHost,
		"RABBITMQ_URL": TenantOutputRabbitMQBrokerURL,
	} {
		if data[key] == "" || data[key] != out(output) {
			t.Errorf("%s is not the stack's %s output", key, output)
		}
	}
	check(t, "ports", []string{data["POSTGRESQL_PORT"], data["REDIS_PORT"], data["MINIO_PORT"], data["RABBITMQ_PORT"]},
		[]string{strconv.Itoa(tenant.PostgresPort), strconv.Itoa(tenant.RedisPort), strconv.Itoa(tenant.MinIOPort), strconv.Itoa(tenant.RabbitMQPort)})
	check(t, "redis url", data["REDIS_URL"], "redis://:"+out(TenantOutputRedisPassword)+"@redis.acme.svc.cluster.local:6379/0")
	check(t, "minio url", data["MINIO_URL"], "http://minio.acme.svc.cluster.local:80")
	pg, err := url.Parse(data["POSTGRESQL_URL"])
	if err != nil {
		t.Fatal("POSTGRESQL_URL does not parse")
	}
	pw, _ := pg.User.Password()
	check(t, "postgres url", []string{pg.Scheme, pg.User.Username(), pw, pg.Host, pg.Path},
		[]string{"postgresql", out(TenantOutputPostgresUser), out(TenantOutputPostgresPassword), out(TenantOutputPostgresHost) + ":5432", "/acme"})

	// A component of the graph, after every middleware it describes.
	check(t, "component", r.m.components()[TenantExportOutputs].Type, tenant.ExportedOutputsType)
	var deps []string
	for _, e := range r.m.edges() {
		if e.To == TenantExportOutputs {
			deps = append(deps, e.From)
		}
	}
	check(t, "export edges", sameStrings(deps, []string{TenantNamespace, TenantPostgreSQL, TenantRedis, TenantMinIO, TenantRabbitMQ, TenantTimescaleDB}), true)
	found := false
	for _, n := range r.g.Nodes {
		found = found || n.ID == TenantExportOutputs
	}
	if !found || len(r.g.Skipped) != 0 {
		t.Errorf("graph nodes %v skipped %v", r.g.Nodes, r.g.Skipped)
	}

	// No value of the exported Secret shows in plain text in any input or unsecret output.
	for _, reg := range r.m.regs {
		walkPlain(resource.NewProperty(reg.Inputs), reg.Type+"::"+reg.Name, func(path, s string) {
			for k, v := range data {
				if strings.Contains(k, "PASSWORD") || strings.HasSuffix(k, "_URL") && strings.Contains(v, "@") {
					if strings.Contains(s, v) {
						t.Errorf("%s: the value of %s in plain text", path, k)
					}
				}
			}
		}, func() {})
	}
}

func TestTenantExportOutputsOnlyInstalledComponents(t *testing.T) {
	tt := newEnterprise(withExport(&v1alpha1.ExportOutputsSpec{SecretName: "acme-middleware"}, func(s *v1alpha1.TFRTenantSpec) {
		s.TimescaleDB.Enabled = ptr.To(false)
		s.DeletionPolicy = v1alpha1.DeletionDelete
	}))
	r := runTenant(t, TenantInput{Tenant: tt, Cluster: testTenantCluster}, enterpriseStack, nil)
	reg, data := exportedSecret(t, r)
	if reg.Retain || plainInputs(reg.Inputs)["metadata"].(map[string]any)["annotations"] != nil {
		t.Error("under Delete the Secret goes with the stack and is replaced without force")
	}
	for k := range data {
		if strings.HasPrefix(k, v1alpha1.ExportTimescaleDB) {
			t.Errorf("%s exported while TimescaleDB is off", k)
		}
	}
	// The default template.
	if data["postgresql_password"] != r.out[TenantOutputPostgresPassword] || data["rabbitmq_vhost"] != "/" {
		t.Errorf("default keys missing: %v", sortedNames(data))
	}
	for _, e := range r.m.edges() {
		if e.To == TenantExportOutputs && e.From == TenantTimescaleDB {
			t.Error("an edge from a component that is not installed")
		}
	}
	for _, s := range r.g.Skipped {
		if s.ID == TenantExportOutputs {
			t.Errorf("exported outputs skipped: %s", s.Reason)
		}
	}
}

func TestTenantExportOutputsExistingSecrets(t *testing.T) {
	// With user-given logins the Secret carries what those Secrets hold.
	tt := newEnterprise(withExport(&v1alpha1.ExportOutputsSpec{SecretName: "acme-middleware"}, func(s *v1alpha1.TFRTenantSpec) {
		s.Credentials.PostgreSQL = &v1alpha1.ExistingSecretRef{ExistingSecret: "pg-login"}
	}))
	r := runTenant(t, TenantInput{Tenant: tt, Cluster: testTenantCluster}, enterpriseStack, map[string]string{"username": "owner", "password": "hunter2"})
	_, data := exportedSecret(t, r)
	check(t, "user-given login", []string{data["postgresql_user"], data["postgresql_password"]}, []string{"owner", "hunter2"})
}

func TestTenantExportOutputsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		tenant *v1alpha1.TFRTenant
		stack  string
		msg    string
	}{
		"a Secret the stack owns": {newEnterprise(withExport(&v1alpha1.ExportOutputsSpec{SecretName: tenant.RedisSecret})), enterpriseStack, `spec.exportOutputs.secretName: "redis-credentials" is the Redis password`},
		"the PostgreSQL login":    {newEnterprise(withExport(&v1alpha1.ExportOutputsSpec{SecretName: "acme-pg-credentials"})), enterpriseStack, "spec.exportOutputs.secretName"},
		"a user-given Secret": {newEnterprise(withExport(&v1alpha1.ExportOutputsSpec{SecretName: "mq-login"}, func(s *v1alpha1.TFRTenantSpec) {
			s.Credentials.RabbitMQ = &v1alpha1.ExistingSecretRef{ExistingSecret: "mq-login"}
		})), enterpriseStack, "spec.credentials.rabbitmq"},
		"the pull Secret":      {newEnterprise(withExport(&v1alpha1.ExportOutputsSpec{SecretName: testTenantCluster.PullSecretName})), enterpriseStack, "pull Secret"},
		"a colliding template": {newEnterprise(withExport(&v1alpha1.ExportOutputsSpec{SecretName: "m", KeyTemplate: "{field}"})), enterpriseStack, "spec.exportOutputs.keyTemplate"},
		"a reserved label":     {newEnterprise(withExport(&v1alpha1.ExportOutputsSpec{SecretName: "m", Labels: map[string]v1alpha1.LabelValue{"tfrs.io/tenant": "other"}})), enterpriseStack, "spec.exportOutputs.labels"},
		"a personal tenant":    {newPersonal("alice", time.Time{}, withExport(&v1alpha1.ExportOutputsSpec{SecretName: "m"})), sharedChatStack(t), "spec.exportOutputs"},
	} {
		r, err := runTenantErr(TenantInput{Tenant: tc.tenant, Cluster: testTenantCluster}, tc.stack, nil)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want it to name %q", name, err, tc.msg)
		}
		if r != nil && len(r.m.regs) != 0 {
			t.Errorf("%s: %d resources registered before the refusal", name, len(r.m.regs))
		}
	}
}

func TestTenantExportOutputsFieldsMatchAPI(t *testing.T) {
	// Every exported API component maps to a graph node the program registers.
	for _, c := range v1alpha1.ExportedFields() {
		if _, ok := allTenantComponents[exportedComponents[c.Component]]; !ok {
			t.Errorf("component %s has no graph node", c.Component)
		}
	}
	check(t, "url", PostgresURL("u", "p@ss/w:rd", "h", 5432, "db"), "postgresql://u:p%40ss%2Fw%3Ard@h:5432/db")
}
