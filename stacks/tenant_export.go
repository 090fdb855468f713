package stacks

// spec.exportOutputs: the tenant stack writes its middleware's connection info into a Secret
// of the tenant namespace for applications that are not TFRServers. The Secret is a component
// of the tenant graph (TenantExportOutputs), registered after every middleware it describes,
// and its values are the same Outputs the stack exports to its servers: a rotated password
// reaches it in the run that rotates it. Under Retain it outlives `destroy` with the data it
// describes.

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
)

// TenantExportOutputs is the node id of the exported Secret's component.
const TenantExportOutputs = "export-outputs"

// exportedComponents maps the exported component names to their graph nodes.
var exportedComponents = map[string]string{
	v1alpha1.ExportPostgreSQL:  TenantPostgreSQL,
	v1alpha1.ExportTimescaleDB: TenantTimescaleDB,
	v1alpha1.ExportRedis:       TenantRedis,
	v1alpha1.ExportMinIO:       TenantMinIO,
	v1alpha1.ExportRabbitMQ:    TenantRabbitMQ,
}

// tenantGraphDeps is tenantDependsOn for one tenant: with spec.exportOutputs, the Secret
// waits for the namespace and every installed middleware it describes (only installed ones,
// else the removal rule would take the Secret with a switched-off TimescaleDB).
func tenantGraphDeps(s *v1alpha1.TFRTenantSpec) map[string][]string {
	if s.ExportOutputs == nil {
		return tenantDependsOn
	}
	deps := maps.Clone(tenantDependsOn)
	export := []string{TenantNamespace}
	for _, c := range v1alpha1.ExportedFields() {
		if c.Component == v1alpha1.ExportTimescaleDB && !s.TimescaleDB.IsEnabled() {
			continue
		}
		node := exportedComponents[c.Component]
		if node == TenantMinIO && s.External() != nil {
			node = TenantObjectStorage
		}
		export = append(export, node)
	}
	deps[TenantExportOutputs] = export
	return deps
}

// exportSecretNameErrors refuses an exported Secret name that is one of the Secrets the
// stack already owns or reads in the namespace: two owners of one object would overwrite
// each other on every run. Checked in planTenant, before anything is registered.
func exportSecretNameErrors(t *v1alpha1.TFRTenant, c TenantCluster) error {
	e := t.Spec.ExportOutputs
	if e == nil {
		return nil
	}
	ns := t.TargetNamespace()
	taken := map[string]string{
		ns + "-pg-credentials":                    "the PostgreSQL login",
		tenant.RedisSecret:                        "the Redis password",
		tenant.MinIOConfigSecret:                  "MinIO's root configuration",
		tenant.RabbitMQDefaultUserSecret:          "RabbitMQ's default user",
		tenant.GrafanaAdminSecret:                 "Grafana's admin login",
		tenant.RabbitMQCluster + "-erlang-cookie": "the RabbitMQ operator's Erlang cookie",
	}
	if c.PullSecretName != "" {
		taken[c.PullSecretName] = "the registry pull Secret"
	}
	cr := &t.Spec.Credentials
	for what, ref := range map[string]*v1alpha1.ExistingSecretRef{
		"spec.credentials.postgresql": cr.PostgreSQL, "spec.credentials.redis": cr.Redis, "spec.credentials.minio": cr.MinIO,
		"spec.credentials.rabbitmq": cr.RabbitMQ, "spec.credentials.grafana": cr.Grafana,
	} {
		if ref != nil {
			taken[ref.ExistingSecret] = "the Secret " + what + " names"
		}
	}
	if x := t.Spec.External(); x != nil {
		taken[x.CredentialsSecret] = "the Secret spec.objectStorage.external.credentialsSecret names"
	}
	if what, ok := taken[e.SecretName]; ok {
		return fmt.Errorf("tenant %q: spec.exportOutputs.secretName: %q is %s in namespace %q; pick another name", t.Name, e.SecretName, what, ns)
	}
	return nil
}

// exportedValues are the values of each installed component's fields, by component and
// field (the v1alpha1.ExportedFields table), from the components the earlier steps
// registered.
func (r *tenantRegistrar) exportedValues() map[string]map[string]pulumi.StringInput {
	str := func(o pulumi.IntOutput) pulumi.StringOutput {
		return o.ApplyT(func(p int) string { return strconv.Itoa(p) }).(pulumi.StringOutput)
	}
	pgURL := func(host pulumi.StringOutput, port pulumi.IntOutput, db pulumi.StringOutput) pulumi.StringOutput {
		return pulumi.All(r.pg.User, r.pg.Password, host, port, db).ApplyT(func(v []any) string {
			return PostgresURL(v[0].(string), v[1].(string), v[2].(string), v[3].(int), v[4].(string))
		}).(pulumi.StringOutput)
	}
	out := map[string]map[string]pulumi.StringInput{
		v1alpha1.ExportPostgreSQL: {
			v1alpha1.ExportHost: r.pg.Host, v1alpha1.ExportPort: str(r.pg.Port),
			v1alpha1.ExportUser: r.pg.User, v1alpha1.ExportPassword: r.pg.Password,
			v1alpha1.ExportDatabase: r.pg.Database, v1alpha1.ExportURL: pgURL(r.pg.Host, r.pg.Port, r.pg.Database),
		},
		v1alpha1.ExportRedis: {
			v1alpha1.ExportHost: r.redis.Host, v1alpha1.ExportPort: str(r.redis.Port), v1alpha1.ExportPassword: r.redis.Password,
			v1alpha1.ExportURL: pulumi.All(r.redis.Host, r.redis.Port, r.redis.Password).ApplyT(func(v []any) string {
				return RedisURL(v[0].(string), v[1].(int), v[2].(string))
			}).(pulumi.StringOutput),
		},
		v1alpha1.ExportMinIO: {
			v1alpha1.ExportHost: r.store.host, v1alpha1.ExportPort: str(r.store.port),
			v1alpha1.ExportUser: r.store.accessKey, v1alpha1.ExportPassword: r.store.secretKey, v1alpha1.ExportBucket: r.store.bucket,
			v1alpha1.ExportURL: r.store.url,
		},
		v1alpha1.ExportRabbitMQ: {
			v1alpha1.ExportHost: r.mq.Host, v1alpha1.ExportPort: str(r.mq.Port),
			v1alpha1.ExportUser: r.mq.User, v1alpha1.ExportPassword: r.mq.Password, v1alpha1.ExportVHost: r.mq.VHost,
			v1alpha1.ExportURL: pulumi.All(r.mq.Host, r.mq.Port, r.mq.User, r.mq.Password, r.mq.VHost).ApplyT(func(v []any) string {
				return BrokerURL(v[0].(string), v[1].(int), v[2].(string), v[3].(string), v[4].(string))
			}).(pulumi.StringOutput),
		},
	}
	if ts := r.tsdb; ts != nil {
		// TimescaleDB shares PostgreSQL's owner and its credentials Secret.
		out[v1alpha1.ExportTimescaleDB] = map[string]pulumi.StringInput{
			v1alpha1.ExportHost: ts.Host, v1alpha1.ExportPort: str(ts.Port),
			v1alpha1.ExportUser: r.pg.User, v1alpha1.ExportPassword: r.pg.Password,
			v1alpha1.ExportDatabase: ts.Database, v1alpha1.ExportURL: pgURL(ts.Host, ts.Port, ts.Database),
		}
	}
	return out
}

// exportedData are the Secret's keys (the spec's key template) and values.
func (r *tenantRegistrar) exportedData() (map[string]pulumi.StringInput, error) {
	e := r.spec.ExportOutputs
	values := r.exportedValues()
	data := map[string]pulumi.StringInput{}
	for _, c := range v1alpha1.ExportedFields() {
		fields, ok := values[c.Component]
		if !ok {
			continue // not installed
		}
		if got, want := slices.Sorted(maps.Keys(fields)), slices.Sorted(slices.Values(c.Fields)); !slices.Equal(got, want) {
			return nil, fmt.Errorf("export outputs: %s exports fields %v, the API defines %v", c.Component, got, want)
		}
		for _, f := range c.Fields {
			key := v1alpha1.ExportKey(e.KeyTemplate, c.Component, f)
			if _, dup := data[key]; dup {
				// Validation refuses such a template; never overwrite a value silently.
				return nil, fmt.Errorf("spec.exportOutputs.keyTemplate: key %q is made twice", key)
			}
			data[key] = fields[f]
		}
	}
	return data, nil
}

func (r *tenantRegistrar) addExportOutputs(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	e := r.spec.ExportOutputs
	data, err := r.exportedData()
	if err != nil {
		return nil, err
	}
	labels := make(map[string]string, len(e.Labels))
	for k, v := range e.Labels {
		labels[k] = string(v)
	}
	return tenant.NewExportedOutputs(r.ctx, TenantExportOutputs, &tenant.ExportedOutputsArgs{
		Namespace: r.ns, SecretName: e.SecretName, Labels: labels, Data: data,
		// The Secret says how to reach the data: under Retain, it stays with it.
		Retain: r.p.retain,
	}, o...)
}

// PostgresURL is a libpq connection URI, user and password escaped.
func PostgresURL(user, password, host string, port int, database string) string {
	u := url.URL{Scheme: "postgresql", User: url.UserPassword(user, password), Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: "/" + database}
	return u.String()
}

// RedisURL is a redis:// URL of the default user (password only), database 0.
func RedisURL(host string, port int, password string) string {
	u := url.URL{Scheme: "redis", User: url.UserPassword("", password), Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: "/0"}
	return u.String()
}
