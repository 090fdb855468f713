package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// testKubeconfig has two contexts on two clusters; the runner's is "dev".
const testKubeconfig = `apiVersion: v1
kind: Config
current-context: other
clusters:
- name: dev
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: "Y2EtZGF0YQ=="}
- name: other
  cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: admin-token}
contexts:
- name: dev
  context: {cluster: dev, user: admin}
- name: other
  context: {cluster: other, user: admin}
`

// Tenant and server stacks apply as their namespace's applier; the provider's view of the
// cluster must not change, or it would replace every resource of existing stacks.
func TestApplierConfig(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	r := New(f, Options{Namespaces: absentNamespaces{}, Kubeconfig: testKubeconfig, KubeContext: "dev"})
	ctx := context.Background()

	_, err := r.Up(ctx, cluster(), operatorOp)
	require.NoError(t, err)
	cl := f.Request("up cluster.main").Config
	assert.Equal(t, testKubeconfig, cl[ConfigKubeconfig].Value, "the cluster stack keeps the runner's identity")
	assert.NotContains(t, cl, program.ConfigApplier)

	acme := tenant("acme", v1alpha1.TenantEnterprise)
	acme.Spec.Namespace = "acme-prod"
	_, err = r.Up(ctx, acme, operatorOp)
	require.NoError(t, err)
	cfg := f.Request("up tenant.team.acme").Config
	assert.Equal(t, "tfrs-applier", cfg[program.ConfigApplier].Value)
	assert.Len(t, cfg, 3, "kubeconfig, context and applier: one secret value")
	assert.Equal(t, "dev", cfg[ConfigKubeContext].Value)
	require.True(t, cfg[ConfigKubeconfig].Secret)

	applier, err := clientcmd.Load([]byte(cfg[ConfigKubeconfig].Value))
	require.NoError(t, err)
	base, err := clientcmd.Load([]byte(testKubeconfig))
	require.NoError(t, err)
	assert.Equal(t, "dev", applier.CurrentContext)
	assert.Len(t, applier.Contexts, 1, "only the runner's context")
	assert.Equal(t, base.Clusters["dev"], applier.Clusters["dev"], "the active cluster is unchanged")
	user := applier.AuthInfos[applier.Contexts["dev"].AuthInfo]
	assert.Equal(t, "system:serviceaccount:acme-prod:tfrs-applier", user.Impersonate, "the tenant's target namespace")
	assert.Equal(t, "admin-token", user.Token, "authenticated as the runner, acting as the applier")

	// The provisioner (the namespace and the applier itself) is the runner's own identity.
	own, err := program.WithoutImpersonation(cfg[ConfigKubeconfig].Value)
	require.NoError(t, err)
	prov, err := clientcmd.Load([]byte(own))
	require.NoError(t, err)
	assert.Empty(t, prov.AuthInfos["admin"].Impersonate)
	assert.Equal(t, base.Clusters["dev"], prov.Clusters["dev"])

	// A server applies as the applier of its tenant's namespace (read from the tenant stack).
	f.put("tenant.team.acme", true, nil)
	_, err = r.Up(ctx, server("web"), operatorOp)
	require.NoError(t, err)
	srv, err := clientcmd.Load([]byte(f.Request("up server.team.web").Config[ConfigKubeconfig].Value))
	require.NoError(t, err)
	assert.Equal(t, "system:serviceaccount:v-"+stacks.TenantOutputNamespace+":tfrs-applier", srv.AuthInfos["admin"].Impersonate,
		"the namespace output of the tenant stack (the fake's canned value)")

	// Rendering applies nothing: no identity to narrow.
	rr := New(f, Options{Namespaces: absentNamespaces{}, Kubeconfig: testKubeconfig, KubeContext: "dev", RenderDir: t.TempDir()})
	_, err = rr.Preview(ctx, tenant("beta", v1alpha1.TenantEnterprise), operatorOp)
	require.NoError(t, err)
	assert.NotContains(t, f.Request("preview tenant.team.beta").Config, program.ConfigApplier)
}

func TestApplierConfigBadContext(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	r := New(f, Options{Namespaces: absentNamespaces{}, Kubeconfig: testKubeconfig, KubeContext: "missing"})
	_, err := r.Up(context.Background(), tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	require.ErrorContains(t, err, `context "missing"`)
	assert.Empty(t, f.Ops(), "nothing ran")
}
