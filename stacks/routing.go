package stacks

import (
	"slices"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/routing"
)

// RoutingTargets are the namespaces the gateway's routing filter refuses for a cluster with
// spec s: the kube- prefix, every platform namespace (v1alpha1.PlatformNamespaces: the
// built-in reserved ones and the namespaces tenants' isolation trusts) and the cluster's
// spec.reservedNamespaces. They are the facts the tenant reservation reads
// (v1alpha1.ReservedNamespaceReason, NamespaceClaimErrors), so a namespace no tenant can hold
// is one the gateway never routes to; routing_test.go checks the two agree.
func RoutingTargets(s *v1alpha1.TFRClusterSpec) routing.Targets {
	names := append(v1alpha1.PlatformNamespaces(), s.ReservedNamespaces...)
	slices.Sort(names)
	return routing.Targets{
		ReservedPrefixes: []string{v1alpha1.ReservedNamespacePrefix},
		ReservedNames:    slices.Compact(names),
	}
}
