package tenant

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	rbacv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/rbac/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The applier: the namespace-scoped identity tenant and server programs apply with. The
// runner points the stack's default Kubernetes provider at the API server as this
// ServiceAccount (Kubernetes impersonation), so every workload, chart and custom resource of
// a tenant is authorized by the API server against the Role below, in the tenant's namespace
// only. A program bug, or chart values that slipped past every check, cannot write to
// another namespace or create a cluster-scoped object: the API server answers 403.
//
// Only the namespace component uses the provisioner (the operator's own identity, through
// Applier.Provider): the Namespace, this ServiceAccount, Role and RoleBinding, and the
// isolation objects (PeerAuthentication, AuthorizationPolicy, NetworkPolicies), which the
// applier therefore cannot weaken or delete. Creating the Role needs no RBAC `escalate`: the
// provisioner holds every permission in it (TestProvisionerHoldsApplierRules checks
// config/rbac), which is what the API server's escalation check asks.

// ApplierName names the applier's ServiceAccount, Role and RoleBinding in every tenant
// namespace. The provisioner may impersonate ServiceAccounts of this name only.
const ApplierName = "tfrs-applier"

// ApplierUser is the user name the API server gives the applier of namespace ns.
func ApplierUser(ns string) string { return "system:serviceaccount:" + ns + ":" + ApplierName }

// Rule is one RBAC rule of the applier's Role.
type Rule struct {
	Groups, Resources, Verbs []string
}

var (
	write = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	read  = []string{"get", "list", "watch"}
)

// ApplierRules are what tenant and server programs create, update and await in their
// namespace: their workloads and config, the middleware's custom resources, the namespaced
// RBAC of the Grafana chart, the Prometheus scraper and the servers' Grafana service accounts
// (a Role can only grant what the applier itself holds: no escalate), and what the provider's
// awaits read (pods, events, ReplicaSets, endpoints). Not here, on purpose: NetworkPolicies
// and PeerAuthentications (the isolation baseline, the provisioner's), anything
// cluster-scoped, escalate, impersonate, and bind on ClusterRoles.
//
// Why bind on Roles: without it the API server checks a RoleBinding by resolving its Role and
// comparing rules, and in a preview's server-side dry run a Role created in the same run does
// not exist yet, so every preview that adds RBAC (Prometheus switched on, a new server) failed
// with "<name> not found", and under the approval gate such an edit never applied.
// With bind the API server skips that lookup. It cannot be narrowed by resourceNames (the
// servers' Role names follow their servers'), and what it adds is small: binding a Role of its
// own namespace whose rules the applier does not hold, which in a tenant namespace are only
// the middleware operators' Roles there (CNPG's, RabbitMQ's peer discovery). Every Role it can
// create is still capped by its own rules, and ClusterRoles stay unbindable (bind is checked
// on `clusterroles` for those), so nothing reaches beyond the namespace.
var ApplierRules = []Rule{
	{[]string{""}, []string{"services", "configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims"}, write},
	{[]string{""}, []string{"pods", "pods/log", "endpoints", "events"}, read},
	{[]string{"discovery.k8s.io"}, []string{"endpointslices"}, read},
	{[]string{"events.k8s.io"}, []string{"events"}, read},
	{[]string{"apps"}, []string{"deployments", "statefulsets"}, write},
	{[]string{"apps"}, []string{"replicasets"}, read},
	{[]string{"batch"}, []string{"jobs"}, write},
	{[]string{"policy"}, []string{"poddisruptionbudgets"}, write},
	{[]string{"rbac.authorization.k8s.io"}, []string{"roles", "rolebindings"}, write},
	{[]string{"rbac.authorization.k8s.io"}, []string{"roles"}, []string{"bind"}},
	{[]string{"postgresql.cnpg.io"}, []string{"clusters"}, write},
	{[]string{"minio.min.io"}, []string{"tenants"}, write},
	{[]string{"rabbitmq.com"}, []string{"rabbitmqclusters", "users", "vhosts", "permissions"}, write},
	{[]string{"security.istio.io"}, []string{"authorizationpolicies"}, write},
}

// Applier asks the namespace component to set up the applier identity.
type Applier struct {
	// Provider is the provisioner: the explicit provider that creates the Namespace, the
	// applier and the isolation objects (the stack's default provider is the applier).
	Provider pulumi.ProviderResource
	// Ready is called with the RoleBinding's namespace once it exists (not in previews) and
	// returns when the API server authorizes the applier (RBAC caches take a moment), so no
	// dependant starts with a 403.
	Ready func(namespace string) error
}

// addApplier registers the applier's ServiceAccount, Role and RoleBinding in ns with the
// provisioner and returns the namespace's name once the applier may use it.
func (c *Namespace) addApplier(ctx *pulumi.Context, name string, ns pulumi.StringOutput, a *Applier) (pulumi.StringOutput, error) {
	opts := []pulumi.ResourceOption{pulumi.Parent(c), pulumi.Provider(a.Provider)}
	// Force the provisioner's fields on apply: whoever edited the applier since, it is
	// restored, never left half-merged in a server-side-apply conflict.
	meta := func(name string, ns pulumi.StringInput, labels map[string]string) *metav1.ObjectMetaArgs {
		m := meta(name, ns, labels)
		m.Annotations = pulumi.StringMap{"pulumi.com/patchForce": pulumi.String("true")}
		return m
	}
	sa, err := corev1.NewServiceAccount(ctx, name+"-applier", &corev1.ServiceAccountArgs{
		Metadata: meta(ApplierName, ns, appLabels(ApplierName)),
		// Nothing runs as the applier: only the provisioner impersonates it.
		AutomountServiceAccountToken: pulumi.Bool(false),
	}, opts...)
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	var rules rbacv1.PolicyRuleArray
	for _, r := range ApplierRules {
		rules = append(rules, rbacv1.PolicyRuleArgs{
			ApiGroups: pulumi.ToStringArray(r.Groups), Resources: pulumi.ToStringArray(r.Resources), Verbs: pulumi.ToStringArray(r.Verbs),
		})
	}
	role, err := rbacv1.NewRole(ctx, name+"-applier-role", &rbacv1.RoleArgs{
		Metadata: meta(ApplierName, ns, appLabels(ApplierName)), Rules: rules,
	}, opts...)
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	rb, err := rbacv1.NewRoleBinding(ctx, name+"-applier-binding", &rbacv1.RoleBindingArgs{
		Metadata: meta(ApplierName, ns, appLabels(ApplierName)),
		RoleRef: rbacv1.RoleRefArgs{
			ApiGroup: pulumi.String("rbac.authorization.k8s.io"), Kind: pulumi.String("Role"), Name: role.Metadata.Name().Elem(),
		},
		Subjects: rbacv1.SubjectArray{rbacv1.SubjectArgs{
			Kind: pulumi.String("ServiceAccount"), Name: sa.Metadata.Name().Elem(), Namespace: ns,
		}},
	}, opts...)
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	c.Keep(sa, role, rb)
	// Ready after the Role too: a run that repairs a tampered Role must finish that before
	// anything applies with it.
	return pulumi.All(rb.Metadata.Namespace().Elem(), role.Metadata.Name().Elem()).ApplyT(func(v []any) (string, error) {
		n := v[0].(string)
		if ctx.DryRun() || a.Ready == nil {
			return n, nil
		}
		return n, a.Ready(n)
	}).(pulumi.StringOutput), nil
}
