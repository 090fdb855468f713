package clusterns

// Trust of platform namespaces. A tenant namespace admits, besides itself, only the platform's
// namespaces: the ingress gateway, the mesh's control plane, the cluster's monitoring and the
// middleware operators. A NetworkPolicy recognises them by PlatformRoleLabel, which only the
// cluster stack (or the cluster's admin, for a namespace the stack does not create) sets and
// which TFRS never puts on a tenant namespace (the tenant namespace component refuses the
// key), never by a name a tenant could choose. An Istio AuthorizationPolicy cannot select
// namespaces by label (its source.namespaces is the peer's mTLS identity), so it trusts the
// names of Trusted: the same function keeps those names out of every tenant's reach (the
// reserved namespaces of api/v1alpha1 include them).

// PlatformRoleLabel marks a platform namespace with its role (one of the Role* values).
const PlatformRoleLabel = "tfrs.io/platform-role"

// Roles of platform namespaces (values of PlatformRoleLabel).
const (
	RoleMonitoring       = "monitoring"
	RoleIngress          = "ingress"
	RoleMesh             = "mesh"
	RoleCNPGOperator     = "cnpg-operator"
	RoleMinIOOperator    = "minio-operator"
	RoleRabbitMQOperator = "rabbitmq-operator"
)

// Monitoring is the cluster's monitoring namespace. The cluster stack does not create it: the
// admin who installs cluster-wide monitoring there labels it with RoleMonitoring.
const Monitoring = "monitoring"

// roles are the namespaces the cluster stack installs into that tenants must admit, with
// their role; the monitoring namespace is the admin's.
var roles = map[string]string{
	IstioIngress:     RoleIngress,
	Istio:            RoleMesh,
	CNPGOperator:     RoleCNPGOperator,
	MinIOOperator:    RoleMinIOOperator,
	RabbitMQOperator: RoleRabbitMQOperator,
	Monitoring:       RoleMonitoring,
}

// Roles lists every role, in a fixed order.
func Roles() []string {
	return []string{RoleIngress, RoleMesh, RoleMonitoring, RoleCNPGOperator, RoleMinIOOperator, RoleRabbitMQOperator}
}

// CallerRoles are the roles whose namespaces may call every workload of a tenant namespace
// (the gateway forwards requests, istiod and monitoring probe and scrape); the operators'
// roles are admitted only to their own pods and ports.
func CallerRoles() []string { return []string{RoleIngress, RoleMesh, RoleMonitoring} }

// Labels are the labels the cluster stack puts on namespace name: its PlatformRoleLabel when
// it has a role, else none.
func Labels(name string) map[string]string {
	if r, ok := roles[name]; ok {
		return map[string]string{PlatformRoleLabel: r}
	}
	return nil
}

// Trusted are the namespaces an Istio AuthorizationPolicy of a tenant namespace admits by name
// besides the tenant's own: the namespaces of CallerRoles (ingress gateway, istiod,
// monitoring). Every one of them must be reserved from tenants: a tenant that held one would
// be trusted by every other tenant's mesh policy.
func Trusted() []string { return []string{IstioIngress, Istio, Monitoring} }
