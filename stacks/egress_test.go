package stacks

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/pulumitest"
	"github.com/tfrs-io/tfrs-operator/internal/upstream"
)

// The cluster's spec.egress and the API server reach every tenant namespace as its egress
// policies; a cluster stack from before the output leaves egress open.
func TestEgressFromClusterToTenant(t *testing.T) {
	_, _, outs := runCluster(t, newTestCluster(func(s *v1alpha1.TFRClusterSpec) {
		s.Egress = v1alpha1.EgressSpec{PublicInternet: v1alpha1.PublicInternetDeny, AllowedCIDRs: []string{"10.20.0.0/16"}}
	}))
	require.Contains(t, outs[ClusterOutputEgress], `"publicInternet":"Deny"`)

	out := egressOutputOf(&v1alpha1.EgressSpec{BlockedCIDRs: []string{"34.0.0.0/8"}},
		APIServer{Addresses: []string{"172.18.0.2", "10.96.0.1"}, Ports: []int32{6443, 443}})
	c := testTenantCluster
	c.Egress = out
	e, err := c.EgressPolicy()
	require.NoError(t, err)
	require.Equal(t, &tenant.Egress{DNSNamespace: "kube-system", DNSPodLabels: map[string]string{"k8s-app": "kube-dns"}, DNSPort: 53,
		APIServer: []string{"10.96.0.1", "172.18.0.2"}, APIServerPorts: []int32{443, 6443}, PublicInternet: true,
		Blocked: []string{"34.0.0.0/8"}}, e)

	names := func(c TenantCluster) []string {
		r := runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: c}, enterpriseStack, nil)
		var out []string
		for _, reg := range r.m.regs.All("kubernetes:networking.k8s.io/v1:NetworkPolicy") {
			out = append(out, pulumitest.At(t, pulumitest.Plain(reg.Inputs), "metadata", "name").(string))
		}
		return out
	}
	got := names(c)
	require.Contains(t, got, tenant.NetworkPolicyDefaultDenyEgress)
	require.Contains(t, got, tenant.NetworkPolicyAllowEgress)
	require.Contains(t, got, "tfrs-allow-apiserver-cnpg")
	require.NotContains(t, names(testTenantCluster), tenant.NetworkPolicyDefaultDenyEgress, "no output: egress stays open")
}

// A cluster that gives each tenant namespace its own pull credential: the tenant reads the
// Secret named after its namespace from the admin's namespace and copies it; that namespace
// is reserved; without a shared credential nothing of the cluster's is copied.
func TestPerTenantPullCredential(t *testing.T) {
	_, _, outs := runCluster(t, newTestCluster(func(s *v1alpha1.TFRClusterSpec) {
		s.ImageRegistry = &v1alpha1.ImageRegistrySpec{TenantCredentialsNamespace: "registry-creds"}
	}))
	require.Equal(t, "registry-creds", outs[ClusterOutputTenantPullSecretsNamespace])
	require.Equal(t, "registry-pull-secret", outs[ClusterOutputPullSecretName])
	require.Contains(t, outs[ClusterOutputReservedNamespaces], "registry-creds")

	c := testTenantCluster
	c.PullSecretName, c.DockerConfigJSON, c.TenantPullSecretsNamespace = "registry-pull-secret", "", "registry-creds"
	own := `{"auths":{"ccr.example":{"auth":"dGVuYW50LWFjbWU6dG9rZW4="}}}`
	r := runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: c}, enterpriseStack, map[string]string{".dockerconfigjson": own})
	var read, copied int
	for _, reg := range r.m.regs.All("kubernetes:core/v1:Secret") {
		if reg.Read {
			require.Equal(t, "registry-creds/"+newEnterprise(nil).TargetNamespace(), reg.ID)
			read++
			continue
		}
		p := pulumitest.Plain(reg.Inputs)
		if pulumitest.At(t, p, "metadata", "name") == "registry-pull-secret" {
			require.Equal(t, base64.StdEncoding.EncodeToString([]byte(own)), pulumitest.At(t, p, "data", ".dockerconfigjson"))
			copied++
		}
	}
	require.Equal(t, 1, read)
	require.Equal(t, 1, copied)
}

// A personal job type's shared namespace keeps every robot's identity off the read ports of
// its meshed telemetry (Jaeger's query API, Grafana); an enterprise namespace has no such policy. The policy is one the pinned Istio
// schema accepts.
func TestRobotsReadNoTelemetry(t *testing.T) {
	policies := func(r *tenantRun) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, reg := range r.m.regs.All("kubernetes:security.istio.io/v1:AuthorizationPolicy") {
			p := pulumitest.Plain(reg.Inputs)
			out[pulumitest.At(t, p, "metadata", "name").(string)] = p
		}
		return out
	}
	ent := policies(runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: testTenantCluster}, enterpriseStack, nil))
	require.NotContains(t, ent, tenant.RobotsNoTelemetryPolicy)
	shared := policies(runTenant(t, TenantInput{Tenant: newPersonal("alice", time.Now(), nil), Cluster: testTenantCluster}, sharedChatStack(t), nil))
	p := shared[tenant.RobotsNoTelemetryPolicy]
	require.NotNil(t, p, "the shared namespace's policies: %v", shared)
	require.Equal(t, map[string]any{"action": "DENY", "rules": []any{map[string]any{
		"from": []any{map[string]any{"source": map[string]any{"principals": []any{"*-robot"}}}},
		"to":   []any{map[string]any{"operation": map[string]any{"ports": []any{"16686", "3000"}}}},
	}}}, p["spec"])

	upstream.Require(t)
	for _, c := range UpstreamCRDs() {
		if c.Project != "istio" {
			continue
		}
		istio, err := upstream.Load(c.Project, c.Version)
		require.NoError(t, err)
		require.Empty(t, upstream.Validate(istio, p["apiVersion"].(string), p["kind"].(string), p), "Istio %s", c.Version)
	}
}
