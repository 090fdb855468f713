package stacks

// The cluster's egress policy at its tenants (components/tenant/egress.go). The cluster stack
// exports its TFRCluster's spec.egress with the API server's addresses
// (ClusterOutputEgress): the addresses are read from the cluster by the runner before the
// cluster program runs (ClusterInput.APIServer), so the tenant programs, which never read
// the cluster themselves, get them with the rest of their cluster's outputs. A cluster stack
// from before the output exports none; its tenants keep open egress until the cluster's
// next up, which every tenant then follows (the parent's outputs changed).

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
)

// APIServer is where the cluster's Kubernetes API server answers: the "kubernetes" Service's
// address and port, and its endpoints' addresses and ports.
type APIServer struct {
	Addresses []string `json:"addresses,omitempty"`
	Ports     []int32  `json:"ports,omitempty"`
}

// egressOutput is ClusterOutputEgress: the spec's policy and the API server.
type egressOutput struct {
	Spec      v1alpha1.EgressSpec `json:"spec"`
	APIServer APIServer           `json:"apiServer"`
}

// egressOutputOf is the ClusterOutputEgress value of a cluster.
func egressOutputOf(s *v1alpha1.EgressSpec, api APIServer) OptionalString {
	api.Addresses = slices.Sorted(slices.Values(api.Addresses))
	api.Ports = slices.Sorted(slices.Values(api.Ports))
	b, err := json.Marshal(egressOutput{Spec: *s, APIServer: api})
	if err != nil { // strings and numbers always marshal
		panic(fmt.Sprintf("stacks: spec.egress: %v", err))
	}
	return OptionalString(b)
}

// EgressPolicy is the tenant namespaces' egress policy of the cluster; nil when the cluster
// stack exported none (see above).
func (c TenantCluster) EgressPolicy() (*tenant.Egress, error) {
	if c.Egress == "" {
		return nil, nil
	}
	var o egressOutput
	if err := json.Unmarshal([]byte(c.Egress), &o); err != nil {
		return nil, fmt.Errorf("cluster output %q: %w", ClusterOutputEgress, err)
	}
	dns := o.Spec.DNSServer()
	return &tenant.Egress{
		DNSNamespace: dns.Namespace, DNSPodLabels: dns.PodLabels, DNSPort: dns.Port,
		APIServer: o.APIServer.Addresses, APIServerPorts: o.APIServer.Ports,
		PublicInternet: o.Spec.PublicInternetAllowed(),
		Allowed:        o.Spec.AllowedCIDRs, Blocked: o.Spec.BlockedCIDRs,
	}, nil
}
