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
	e := newEnv(t, 25*time.Minute)
	ctx := e.ctx
	admin, err := e.cp.Client()
	require.NoError(t, err)
	kc, opREST := operatorIdentity(ctx, t, e, admin)
	run := runner.New(e.eng, runner.Options{Kubeconfig: kc})
	op := runner.Op{Door: engine.ManagedByCLI}

	tc := standInCluster(t)
	_, err = run.Up(ctx, tc, op)
	require.NoError(t, err, "the cluster stack under the provisioner role")
	x := testenv.StandInTenant("team", "least", tc.Name)
	_, err = run.Up(ctx, x, op)
	require.NoError(t, err, "a full tenant (charts and Roles included) as its applier")
	ns := x.TargetNamespace()
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
