package tenant

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
)

// Egress: a tenant namespace denies every outgoing connection its pods open except the ones
// its workloads need, each an explicit allow. The ingress policies (networkpolicy.go) keep
// other tenants out; these keep a tenant's pods (a robot runs an image of the tenant's
// choosing) away from what is not a tenant's to reach: the cloud metadata service, the nodes'
// kubelets, the Kubernetes API server, the platform's namespaces and every private address.
// The CNI enforces them for every pod, in the mesh or not; the provisioner writes them and
// the applier cannot change them (its Role has no rights on NetworkPolicies).
//
//	policy                          pods                          may connect to
//	tfrs-default-deny-egress        every pod                     nothing (the allows below refine it)
//	tfrs-allow-egress               every pod                     its own namespace; DNS (the cluster's DNS pods,
//	                                                              UDP and TCP); istiod (role mesh, TCP 15012: xDS
//	                                                              and certificates); the ingress gateway (role
//	                                                              ingress); the admin's allowedCIDRs; and, unless
//	                                                              the admin denies it, public addresses
//	tfrs-allow-apiserver-<client>   the API server's clients      the API server's addresses and ports
//
// "Public addresses" are 0.0.0.0/0 and ::/0 minus NonPublicRanges (private, shared, loopback,
// link-local with the metadata service, multicast, reserved, NAT64), minus the API server's
// own addresses (a managed control plane's endpoint is often public) and the admin's
// blockedCIDRs. A node's kubelet is reached at the node's address, which is private on
// almost every cluster; where nodes have public addresses the admin blocks them
// (docs/security/egress.md).
//
// The API server is not a pod, so it is an ipBlock of its addresses, read from the cluster
// (its "kubernetes" Service and EndpointSlice) by the cluster stack: both the Service's
// address (CNIs that match before the Service's translation) and the endpoints' (those that
// match after it). Only the pods that must talk to it get the allow, selected by labels TFRS
// or the middleware operator sets and no tenant field reaches: APIServerClients.

// Names of the egress policies.
const (
	NetworkPolicyDefaultDenyEgress = "tfrs-default-deny-egress"
	NetworkPolicyAllowEgress       = "tfrs-allow-egress"
	// apiServerPolicyPrefix names each client's policy: "tfrs-allow-apiserver-<client>".
	apiServerPolicyPrefix = "tfrs-allow-apiserver-"
)

// IstiodXDSPort is istiod's port for the sidecars' configuration (xDS) and certificates.
const IstiodXDSPort = 15012

// NonPublicRanges are the address ranges that are never "public internet": private networks
// (RFC 1918, ULA), shared address space (RFC 6598), loopback, link-local (169.254.169.254 and
// fd00:ec2::254 are the cloud metadata services), multicast, reserved and "this network",
// benchmarking, and NAT64 IPv6 (which reaches IPv4 addresses by another name). IPv4-mapped
// IPv6 (::ffff:0:0/96) is not listed: the API server refuses it in an ipBlock, and a
// connection to such an address leaves the pod as an IPv4 packet, which the IPv4 block
// decides.
var NonPublicRanges = []string{
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
	"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
	"::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "fc00::/7", "fe80::/10", "ff00::/8",
}

// APIClient is a kind of pod in a tenant namespace that talks to the Kubernetes API server.
type APIClient struct {
	// Name ends its policy's name.
	Name string
	// Labels select its pods (all must match). Each is set by TFRS or by the middleware
	// operator that creates the pods; no tenant field sets a pod label.
	Labels map[string]string
	// Exists are label keys that must be present, with any value.
	Exists []string
}

// APIServerClients are the pods that need the API server: the CloudNativePG instance manager
// (cluster status, its own objects), RabbitMQ's Kubernetes peer discovery, the MinIO tenant's
// sidecar (its configuration Secret), the tenant's Prometheus (pod discovery) and a robot's
// grafana-sa Job (it writes its token Secret).
var APIServerClients = []APIClient{
	{Name: "cnpg", Exists: []string{"cnpg.io/cluster"}},
	{Name: "rabbitmq", Labels: map[string]string{kit.LabelPartOf: "rabbitmq"}},
	{Name: apiClientMinIO, Exists: []string{"v1.min.io/tenant"}},
	{Name: "prometheus", Labels: appLabels(PrometheusService)},
	{Name: "grafana-sa", Labels: map[string]string{kit.LabelPartOf: kit.PartOf, kit.LabelComponent: "grafana-sa"}},
}

// apiClientMinIO is the MinIO sidecar's entry of APIServerClients.
const apiClientMinIO = "minio"

// Egress is a tenant namespace's egress policy.
type Egress struct {
	// DNSNamespace and DNSPodLabels select the cluster's DNS server pods; DNSPort is their
	// port (UDP and TCP).
	DNSNamespace string
	DNSPodLabels map[string]string
	DNSPort      int32
	// APIServer are the API server's addresses (single-address CIDRs) and APIServerPorts its
	// ports: the Service's and the endpoints'. Empty: no client gets an allow.
	APIServer      []string
	APIServerPorts []int32
	// PublicInternet allows public addresses (see the model above).
	PublicInternet bool
	// NoMinIO: no MinIO runs in the namespace (its object storage is external), so its
	// sidecar gets no API server allowance.
	NoMinIO bool
	// Allowed are the admin's extra destinations; Blocked the admin's public ranges to deny.
	Allowed, Blocked []string
}

// NamedPolicy is one NetworkPolicy of the namespace: its name and spec.
type NamedPolicy struct {
	Name string
	Spec networkingv1.NetworkPolicySpec
}

// EgressPolicies are e's NetworkPolicies, in a fixed order: the one place they are written
// (the component applies them, the tests read them).
func EgressPolicies(e *Egress) ([]NamedPolicy, error) {
	if e == nil || e.DNSNamespace == "" || len(e.DNSPodLabels) == 0 || e.DNSPort <= 0 {
		return nil, fmt.Errorf("egress: the DNS server's namespace, labels and port are required")
	}
	every := metav1.LabelSelector{}
	egress := []networkingv1.NetworkPolicyEgressRule{
		{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}},
		{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: e.DNSNamespace}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: e.DNSPodLabels},
			}},
			Ports: ports([]int32{e.DNSPort}, corev1.ProtocolUDP, corev1.ProtocolTCP),
		},
		{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: roleSelector(clusterns.RoleMesh)}}, Ports: ports([]int32{IstiodXDSPort}, corev1.ProtocolTCP)},
		{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: roleSelector(clusterns.RoleIngress)}}},
	}
	var allowed []networkingv1.NetworkPolicyPeer
	for _, c := range e.Allowed {
		p, err := prefix(c)
		if err != nil {
			return nil, fmt.Errorf("egress: allowed %w", err)
		}
		allowed = append(allowed, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: p.String()}})
	}
	if e.PublicInternet {
		public, err := publicBlocks(append(slices.Clone(e.APIServer), e.Blocked...))
		if err != nil {
			return nil, err
		}
		allowed = append(allowed, public...)
	}
	if len(allowed) > 0 {
		egress = append(egress, networkingv1.NetworkPolicyEgressRule{To: allowed})
	}
	out := []NamedPolicy{
		{Name: NetworkPolicyDefaultDenyEgress, Spec: networkingv1.NetworkPolicySpec{PodSelector: every, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}},
		{Name: NetworkPolicyAllowEgress, Spec: networkingv1.NetworkPolicySpec{PodSelector: every, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, Egress: egress}},
	}
	if len(e.APIServer) == 0 || len(e.APIServerPorts) == 0 {
		return out, nil
	}
	var api []networkingv1.NetworkPolicyPeer
	for _, a := range e.APIServer {
		p, err := prefix(a)
		if err != nil {
			return nil, fmt.Errorf("egress: API server %w", err)
		}
		api = append(api, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: p.String()}})
	}
	for _, c := range APIServerClients {
		if e.NoMinIO && c.Name == apiClientMinIO {
			continue
		}
		sel := metav1.LabelSelector{MatchLabels: c.Labels}
		for _, k := range c.Exists {
			sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpExists})
		}
		out = append(out, NamedPolicy{Name: apiServerPolicyPrefix + c.Name, Spec: networkingv1.NetworkPolicySpec{
			PodSelector: sel, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: api, Ports: ports(e.APIServerPorts, corev1.ProtocolTCP)}},
		}})
	}
	return out, nil
}

// publicBlocks are the public-internet ipBlocks: one per family, everything minus
// NonPublicRanges and minus extra (the API server, the admin's blocked ranges).
func publicBlocks(extra []string) ([]networkingv1.NetworkPolicyPeer, error) {
	except := map[bool][]string{} // by "is IPv4"
	seen := map[string]bool{}
	for _, c := range append(slices.Clone(NonPublicRanges), extra...) {
		p, err := prefix(c)
		if err != nil {
			return nil, fmt.Errorf("egress: blocked %w", err)
		}
		if p.Bits() == 0 {
			return nil, fmt.Errorf("egress: blocked range %s is every address", c)
		}
		if !seen[p.String()] {
			seen[p.String()] = true
			except[p.Addr().Is4()] = append(except[p.Addr().Is4()], p.String())
		}
	}
	return []networkingv1.NetworkPolicyPeer{
		{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: except[true]}},
		{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: except[false]}},
	}, nil
}

// prefix parses a CIDR, or a bare address as its single-address CIDR (the API server's
// addresses), canonical.
func prefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("address %q: %w", s, err)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("range %q: %w", s, err)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("range %q is not a network address (%s)", s, p.Masked())
	}
	return p, nil
}

func ports(ps []int32, protocols ...corev1.Protocol) []networkingv1.NetworkPolicyPort {
	var out []networkingv1.NetworkPolicyPort
	for _, proto := range protocols {
		for _, p := range ps {
			port := intstr.FromInt32(p)
			out = append(out, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
		}
	}
	return out
}

func roleSelector(roles ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: PlatformRoleLabel, Operator: metav1.LabelSelectorOpIn, Values: roles,
	}}}
}

// networkPolicySpec is the upstream type as a crs spec: crs.New is the one place a typed
// spec becomes the provider's input.
type networkPolicySpec struct {
	networkingv1.NetworkPolicySpec
}

func (networkPolicySpec) TypeMeta() crs.TypeMeta {
	return crs.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"}
}

// addEgressPolicies registers e's policies as children of the namespace component.
func (c *Namespace) addEgressPolicies(ctx *pulumi.Context, name string, ns pulumi.StringInput, e *Egress, opts []pulumi.ResourceOption) error {
	policies, err := EgressPolicies(e)
	if err != nil {
		return err
	}
	for _, p := range policies {
		np, err := crs.New(ctx, name+"-"+strings.TrimPrefix(p.Name, "tfrs-"), crs.Args{
			Metadata: meta(p.Name, ns, nil), Spec: networkPolicySpec{p.Spec},
		}, opts...)
		if err != nil {
			return err
		}
		c.Keep(np)
	}
	return nil
}
