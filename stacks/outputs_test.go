package stacks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// stackOutputs are plain maps as a stack hands its outputs over.
func stackOutputs(values map[string]any, secret map[string]bool) program.Outputs {
	out := program.Outputs{}
	for k, v := range values {
		out[k] = program.NewOutput(v, secret[k])
	}
	return out
}

func TestTenantOutputsFromStack(t *testing.T) {
	r := runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: testTenantCluster}, enterpriseStack, nil)
	// As the engine hands them over: JSON numbers are float64.
	values := map[string]any{}
	for k, v := range r.out {
		if n, ok := v.(int); ok {
			v = float64(n)
		}
		values[k] = v
	}
	o, err := TenantOutputsFromStack(stackOutputs(values, r.secret))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "typed", []any{o.PostgresHost, o.PostgresPort, o.RedisPassword.Reveal(), o.MinIOPort},
		[]any{"acme-pg-rw", 5432, r.out[TenantOutputRedisPassword], tenant.MinIOPort})
	// The typed outputs never print a secret.
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o)} {
		if strings.Contains(s, o.RedisPassword.Reveal()) {
			t.Errorf("printed a secret: %s", s)
		}
	}
	if b, _ := json.Marshal(o); strings.Contains(string(b), o.PostgresPassword.Reveal()) {
		t.Error("JSON holds a secret")
	}

	for name, mut := range map[string]func(v map[string]any, s map[string]bool){
		"missing key":        func(v map[string]any, _ map[string]bool) { delete(v, TenantOutputRedisHost) },
		"secret in the open": func(_ map[string]any, s map[string]bool) { s[TenantOutputRedisPassword] = false },
		"port not a number":  func(v map[string]any, _ map[string]bool) { v[TenantOutputRedisPort] = "6379" },
		"fractional port":    func(v map[string]any, _ map[string]bool) { v[TenantOutputRedisPort] = 6379.5 },
		"host not a string":  func(v map[string]any, _ map[string]bool) { v[TenantOutputRedisHost] = 1.0 },
	} {
		v, s := map[string]any{}, map[string]bool{}
		for k, x := range values {
			v[k] = x
		}
		for k, x := range r.secret {
			s[k] = x
		}
		mut(v, s)
		if _, err := TenantOutputsFromStack(stackOutputs(v, s)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}

	// The cluster side: the cluster program's own outputs read back.
	_, _, cout := runCluster(t, newTestCluster(nil))
	csecret := map[string]bool{ClusterOutputDockerConfigJSON: true}
	c, err := TenantClusterFromStack(stackOutputs(cout, csecret))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "cluster", []any{c.PullSecretName, c.ImageRegistry, c.RabbitMQOperatorReady, c.DockerConfigJSON.Reveal() != ""}, []any{"ccr-pull-secret", "", true, true})
	if _, err := TenantClusterFromStack(stackOutputs(cout, map[string]bool{})); err == nil {
		t.Error("dockerconfigjson in the open accepted")
	}
}

// TestClusterOutputKeys pins the cluster's key list to what the program exports, and the keys
// a tenant reads of its parent cluster (TenantClusterKeys) to a subset of them.
func TestClusterOutputKeys(t *testing.T) {
	_, _, out := runCluster(t, newTestCluster(nil))
	keys := ClusterOutputKeys()
	check(t, "keys", sortedNames(out), sortedNames(keys))
	for k, secret := range keys {
		check(t, k+" secret", secret, k == ClusterOutputDockerConfigJSON)
	}
	tenantKeys := TenantClusterKeys()
	check(t, "tenant keys", sortedNames(tenantKeys), []string{ClusterOutputDockerConfigJSON, ClusterOutputEgress, ClusterOutputImageRegistry,
		ClusterOutputPersonal, ClusterOutputPullSecretName, ClusterOutputRabbitMQOperatorReady, ClusterOutputReservedNamespaces, ClusterOutputTenancy,
		ClusterOutputTenantPullSecretsNamespace})
	for k, secret := range tenantKeys {
		check(t, k+" secret (tenant)", secret, keys[k])
	}
}
