//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// operatorIdentity makes what a real install gives the operator: a ServiceAccount bound to
// config/rbac/provisioner_role.yaml and nothing else (no system:masters), and returns its
// kubeconfig (a bound token) and its REST config.
// asOperator is a new environment, the operator's identity in it (operatorIdentity) and a
// runner acting as that identity through the CLI door: where every least-privilege test starts.
func asOperator(t *testing.T, timeout time.Duration) (*env, kubernetes.Interface, *rest.Config, *runner.Runner, runner.Op) {
	t.Helper()
	e := newEnv(t, timeout)
	admin, err := e.cp.Client()
	require.NoError(t, err)
	kc, opREST := operatorIdentity(e.ctx, t, e, admin)
	return e, admin, opREST, runner.New(e.eng, runner.Options{Kubeconfig: kc}), runner.Op{Door: engine.ManagedByCLI}
}

func operatorIdentity(ctx context.Context, t *testing.T, e *env, admin kubernetes.Interface) (string, *rest.Config) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", "provisioner_role.yaml"))
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict(b, &role))
	suffix := rand.String(5)
	role.Name += "-" + suffix
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{})
	require.NoError(t, err)
	ns := "tfrs-op-" + suffix
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tfrs-operator"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "tfrs-operator", Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "tfrs-operator",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)

	rc := e.cp.RESTConfig
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "operator"}
	kc.CurrentContext = "local"
	out, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	return string(out), &rest.Config{Host: rc.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: rc.CAData}}
}

// as is a client of rc acting as user (impersonation).
func as(t *testing.T, rc *rest.Config, user string) kubernetes.Interface {
	t.Helper()
	c := rest.CopyConfig(rc)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	cs, err := kubernetes.NewForConfig(c)
	require.NoError(t, err)
	return cs
}

// TestLeastPrivilege runs the cluster, a full tenant and a server through the runner as an
// operator that holds only config/rbac's provisioner role, with the API server enforcing
// RBAC. The tenant's workloads, charts and custom resources apply as the namespace's
// applier, whose power the API server confines to that namespace: what a program bug or a
// value past every check could reach is checked here with the API server's answers.
func TestLeastPrivilege(t *testing.T) {
	e, admin, opREST, run, op := asOperator(t, 25*time.Minute)
	ctx := e.ctx
	var err error

	// The API server's EndpointSlice, as a real control plane's endpoint reconciler keeps it
	// (the local one runs without: it advertises 127.0.0.1).
	_, err = admin.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"172.18.0.2"}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](6443), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	tc := standInCluster(t)
	// Each tenant namespace gets its own pull credential, which the admin keeps in
	// registry-creds, named after the namespace.
	tc.Spec.ImageRegistry.TenantCredentialsNamespace = "registry-creds"
	_, err = run.Up(ctx, tc, op)
	require.NoError(t, err, "the cluster stack under the provisioner role")
	x := testenv.StandInTenant("team", "least", tc.Name)
	ns := x.TargetNamespace()
	own := []byte(`{"auths":{"ccr.example":{"auth":"bGVhc3Q6dG9rZW4="}}}`)
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "registry-creds"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().Secrets("registry-creds").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: own}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = run.Up(ctx, x, op)
	require.NoError(t, err, "a full tenant (charts and Roles included) as its applier")
	pull, err := admin.CoreV1().Secrets(ns).Get(ctx, tc.Spec.ImageRegistry.TenantPullSecretName(), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, own, pull.Data[corev1.DockerConfigJsonKey], "the namespace's own pull credential, not the cluster's")
	srv := robotServer("bot", "7")
	srv.Namespace, srv.Spec.TenantRef = "team", x.Name
	_, err = run.Up(ctx, srv, op)
	require.NoError(t, err, "a server as the applier of its tenant's namespace")

	for _, get := range []func() error{
		func() error {
			_, err := admin.CoreV1().ServiceAccounts(ns).Get(ctx, tenant.ApplierName, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := admin.RbacV1().Roles(ns).Get(ctx, tenant.ApplierName, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := admin.RbacV1().RoleBindings(ns).Get(ctx, tenant.ApplierName, metav1.GetOptions{})
			return err
		},
	} {
		require.NoError(t, get())
	}

	requireEgressPolicies(ctx, t, admin, ns)

	applier := as(t, opREST, tenant.ApplierUser(ns))
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	cm := func(namespace string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: namespace}}
	}
	_, err = applier.CoreV1().ConfigMaps(ns).Create(ctx, cm(ns), dry)
	require.NoError(t, err, "the applier writes its own namespace")
	forbidden := map[string]func() error{
		"a ConfigMap in default": func() error {
			_, err := applier.CoreV1().ConfigMaps("default").Create(ctx, cm("default"), dry)
			return err
		},
		"a Secret in kube-system": func() error {
			_, err := applier.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dry)
			return err
		},
		"reading another namespace's Secrets": func() error {
			_, err := applier.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
			return err
		},
		"a ClusterRoleBinding to cluster-admin": func() error {
			_, err := applier.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "probe"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenant.ApplierName, Namespace: ns}}}, dry)
			return err
		},
		"a RoleBinding to cluster-admin in its own namespace (bind)": func() error {
			_, err := applier.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "probe"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenant.ApplierName, Namespace: ns}}}, dry)
			return err
		},
		"a Role with more than it holds (escalate)": func() error {
			_, err := applier.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}}}}, dry)
			return err
		},
		"a Namespace": func() error {
			_, err := applier.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dry)
			return err
		},
		"deleting its own NetworkPolicy": func() error {
			return applier.NetworkingV1().NetworkPolicies(ns).Delete(ctx, tenant.NetworkPolicyDefaultDeny, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		},
		"deleting its egress deny": func() error {
			return applier.NetworkingV1().NetworkPolicies(ns).Delete(ctx, tenant.NetworkPolicyDefaultDenyEgress, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		},
		"widening its egress allow": func() error {
			_, err := applier.NetworkingV1().NetworkPolicies(ns).Patch(ctx, tenant.NetworkPolicyAllowEgress, types.MergePatchType,
				[]byte(`{"spec":{"egress":[{}]}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		},
		"a NetworkPolicy that opens its namespace": func() error {
			_, err := applier.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dry)
			return err
		},
		"relabelling its own Namespace": func() error {
			_, err := applier.CoreV1().Namespaces().Patch(ctx, ns, "application/merge-patch+json", []byte(`{"metadata":{"labels":{"istio-injection":"disabled"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		},
		"a token for another ServiceAccount": func() error {
			_, err := applier.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, dry)
			return err
		},
	}
	for what, try := range forbidden {
		require.True(t, apierrors.IsForbidden(try()), "the applier of %s may create %s", ns, what)
	}
	// What a preview of new RBAC sends (the provider's server-side apply, dry run): a
	// RoleBinding whose Role is created in the same run and so does not exist yet. Without bind
	// on the namespace's Roles the API server looks that Role up to compare rules and answers
	// NotFound, which failed every such preview.
	binding := []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"probe"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"not-created-yet"},` +
		`"subjects":[{"kind":"ServiceAccount","name":"default","namespace":"` + ns + `"}]}`)
	_, err = applier.RbacV1().RoleBindings(ns).Patch(ctx, "probe", types.ApplyPatchType, binding,
		metav1.PatchOptions{FieldManager: "probe", DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err, "the dry run of a RoleBinding to a Role not created yet")
	// The operator impersonates appliers only.
	_, err = as(t, opREST, "system:serviceaccount:kube-system:default").CoreV1().ConfigMaps("kube-system").Create(ctx, cm("kube-system"), dry)
	require.True(t, apierrors.IsForbidden(err), "the operator impersonated kube-system's default ServiceAccount: %v", err)

	// The tenant's objects really go through the applier: take a permission from its Role
	// and the next change of a Deployment is refused by the API server, naming the applier.
	role, err := admin.RbacV1().Roles(ns).Get(ctx, tenant.ApplierName, metav1.GetOptions{})
	require.NoError(t, err)
	kept := role.Rules[:0]
	for _, r := range role.Rules {
		if r.APIGroups[0] != "apps" {
			kept = append(kept, r)
		}
	}
	role.Rules = kept
	_, err = admin.RbacV1().Roles(ns).Update(ctx, role, metav1.UpdateOptions{})
	require.NoError(t, err)
	x.Spec.Redis.Image = "redis:7.4.1-alpine"
	_, err = run.Up(ctx, x, op)
	require.Error(t, err)
	require.Contains(t, err.Error(), tenant.ApplierUser(ns))
	require.Contains(t, err.Error(), "deployments")
	// A refresh fails the same way (the state's provider is the applier), but it reads the
	// tampered Role back with the provisioner; the next up restores it before it applies.
	_, err = run.Refresh(ctx, x, op)
	require.ErrorContains(t, err, tenant.ApplierUser(ns))
	_, err = run.Up(ctx, x, op)
	require.NoError(t, err)

	_, err = run.Destroy(ctx, srv, op)
	require.NoError(t, err)
	_, err = run.Destroy(ctx, x, op)
	require.NoError(t, err, "the tenant is destroyed as its applier, then its applier by the provisioner")
	_, err = admin.RbacV1().RoleBindings(ns).Get(ctx, tenant.ApplierName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the applier's binding outlived its tenant: %v", err)
}

// requireEgressPolicies checks, with the API server, the egress policies of the tenant
// namespace ns that the runner's cluster stack and tenant stack wrote: default deny, the
// allow without the API server or the metadata range in its public block, and the API
// server's allow (the "kubernetes" Service's address and the endpoints', read from this
// control plane) for its clients only.
func requireEgressPolicies(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	get := func(name string) *networkingv1.NetworkPolicy {
		np, err := admin.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "egress policy %s in %s", name, ns)
		return np
	}
	deny := get(tenant.NetworkPolicyDefaultDenyEgress)
	require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, deny.Spec.PolicyTypes)
	require.Empty(t, deny.Spec.Egress)

	svc, err := admin.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	slices, err := admin.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
	require.NoError(t, err)
	want := map[string]bool{svc.Spec.ClusterIP + "/32": true}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			for _, a := range ep.Addresses {
				want[a+"/32"] = true
			}
		}
	}
	require.Contains(t, want, "172.18.0.2/32", "the API server's endpoints")

	var public []string
	for _, r := range get(tenant.NetworkPolicyAllowEgress).Spec.Egress {
		for _, peer := range r.To {
			if b := peer.IPBlock; b != nil && b.CIDR == "0.0.0.0/0" {
				public = b.Except
			}
		}
	}
	require.Contains(t, public, "169.254.0.0/16", "the metadata range is not public")
	for cidr := range want {
		require.Contains(t, public, cidr, "the API server is not public internet")
	}

	api := get("tfrs-allow-apiserver-cnpg")
	require.NotNil(t, api.Spec.PodSelector.MatchExpressions, "only the CloudNativePG pods")
	got := map[string]bool{}
	for _, peer := range api.Spec.Egress[0].To {
		got[peer.IPBlock.CIDR] = true
	}
	require.Equal(t, want, got, "the API server's addresses, as this control plane has them")
	var ports []int32
	for _, p := range api.Spec.Egress[0].Ports {
		ports = append(ports, p.Port.IntVal)
	}
	require.ElementsMatch(t, []int32{443, 6443}, ports, "the Service's port and the endpoints'")
}
