// Package clusterns names the namespaces the cluster stack installs into. It is a leaf (no
// imports) so that both the components that install there (components/cluster) and the API
// types that keep tenants out of them (api/v1alpha1's reserved namespaces) read one list.
package clusterns

// The namespaces of the cluster stack's components.
const (
	CertManager  = "cert-manager"
	Istio        = "istio-system"
	IstioIngress = "istio-ingress"
	// CNPGOperator and RabbitMQOperator are the namespaces the upstream release manifests
	// carry (the cluster stack applies them as they are).
	CNPGOperator     = "cnpg-system"
	MinIOOperator    = "minio-operator"
	RabbitMQOperator = "rabbitmq-system"
	// PullSecret holds the source copy of the registry pull Secret: "default" always exists
	// and belongs to no component, so no namespace changes hands.
	PullSecret = "default"
)

// All lists every namespace the cluster stack installs into.
func All() []string {
	return []string{CertManager, Istio, IstioIngress, CNPGOperator, MinIOOperator, RabbitMQOperator, PullSecret}
}
