// Package netpol answers, for a set of NetworkPolicies, whether one pod may open a
// connection to another, following the Kubernetes NetworkPolicy semantics
// (networking.k8s.io/v1): a pod no policy selects for a direction is open in that direction;
// once any policy selects it, only what some selecting policy's rule allows passes (policies
// are additive allow-lists, never denials); a connection needs both the source's egress and
// the destination's ingress to allow it.
//
// It is a test oracle for what a program registers (the policies read from recorded inputs),
// so it is strict where a CNI would be lenient: a named port never matches, and an ipBlock
// peer (the meaning of which for pod addresses is left to the implementation) matches only
// an address that is not a pod (EgressTo).
package netpol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// NamespaceNameLabel is the label the API server sets on every namespace to its name.
const NamespaceNameLabel = "kubernetes.io/metadata.name"

// Pod is one end of a connection: a pod (Namespace set), or an address outside every pod
// (Address set, Namespace empty: the API server, a node, the internet), which only ipBlock
// peers match.
type Pod struct {
	Namespace string
	Labels    map[string]string
	Address   netip.Addr
}

// Cluster is the policies and the namespaces' labels.
type Cluster struct {
	Policies []networkingv1.NetworkPolicy
	// NamespaceLabels are each namespace's labels besides NamespaceNameLabel, which is always
	// set to the name (as the API server does); a namespace not listed has only that label.
	NamespaceLabels map[string]map[string]string
}

// Parse turns a NetworkPolicy object (as JSON-able maps, e.g. recorded Pulumi inputs with
// metadata and spec) into the typed object; unknown fields are an error.
func Parse(obj map[string]any) (networkingv1.NetworkPolicy, error) {
	var np networkingv1.NetworkPolicy
	b, err := json.Marshal(obj)
	if err != nil {
		return np, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&np); err != nil {
		return np, fmt.Errorf("network policy: %w", err)
	}
	return np, nil
}

// Allowed reports whether from may connect to to on port (protocol "" is TCP).
func (c Cluster) Allowed(from, to Pod, protocol string, port int32) (bool, error) {
	if protocol == "" {
		protocol = "TCP"
	}
	in, err := c.direction(to, networkingv1.PolicyTypeIngress, from, protocol, port)
	if err != nil || !in {
		return false, err
	}
	return c.direction(from, networkingv1.PolicyTypeEgress, to, protocol, port)
}

// EgressTo reports whether from may connect to the address to (not a pod: only from's egress
// policies decide, by their ipBlock peers).
func (c Cluster) EgressTo(from Pod, to netip.Addr, protocol string, port int32) (bool, error) {
	if protocol == "" {
		protocol = "TCP"
	}
	return c.direction(from, networkingv1.PolicyTypeEgress, Pod{Address: to}, protocol, port)
}

// direction decides for pod, the end whose policies of type typ apply, and peer the other end.
func (c Cluster) direction(pod Pod, typ networkingv1.PolicyType, peer Pod, protocol string, port int32) (bool, error) {
	selected := false
	for i := range c.Policies {
		p := &c.Policies[i]
		if p.Namespace != pod.Namespace || !hasType(p, typ) {
			continue
		}
		ok, err := matches(&p.Spec.PodSelector, pod.Labels)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		selected = true
		var rules []rule
		if typ == networkingv1.PolicyTypeIngress {
			for _, r := range p.Spec.Ingress {
				rules = append(rules, rule{r.From, r.Ports})
			}
		} else {
			for _, r := range p.Spec.Egress {
				rules = append(rules, rule{r.To, r.Ports})
			}
		}
		for _, r := range rules {
			allow, err := c.ruleAllows(p.Namespace, r, peer, protocol, port)
			if err != nil || allow {
				return allow, err
			}
		}
	}
	return !selected, nil
}

type rule struct {
	peers []networkingv1.NetworkPolicyPeer
	ports []networkingv1.NetworkPolicyPort
}

// hasType applies the API's defaulting: Ingress always, Egress when there are egress rules.
func hasType(p *networkingv1.NetworkPolicy, typ networkingv1.PolicyType) bool {
	if len(p.Spec.PolicyTypes) == 0 {
		return typ == networkingv1.PolicyTypeIngress || len(p.Spec.Egress) > 0
	}
	for _, t := range p.Spec.PolicyTypes {
		if t == typ {
			return true
		}
	}
	return false
}

func (c Cluster) ruleAllows(policyNS string, r rule, peer Pod, protocol string, port int32) (bool, error) {
	if !portMatches(r.ports, protocol, port) {
		return false, nil
	}
	if len(r.peers) == 0 {
		return true, nil // no from/to: every peer
	}
	for _, p := range r.peers {
		ok, err := c.peerMatches(policyNS, p, peer)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func portMatches(ports []networkingv1.NetworkPolicyPort, protocol string, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		proto := "TCP"
		if p.Protocol != nil {
			proto = string(*p.Protocol)
		}
		if proto != protocol {
			continue
		}
		if p.Port == nil {
			return true
		}
		if p.Port.StrVal != "" || p.Port.IntVal == 0 {
			continue // named port: unknown here
		}
		end := p.Port.IntVal
		if p.EndPort != nil {
			end = *p.EndPort
		}
		if port >= p.Port.IntVal && port <= end {
			return true
		}
	}
	return false
}

func (c Cluster) peerMatches(policyNS string, p networkingv1.NetworkPolicyPeer, peer Pod) (bool, error) {
	if p.IPBlock != nil {
		return ipBlockMatches(p.IPBlock, peer)
	}
	if peer.Namespace == "" || (p.PodSelector == nil && p.NamespaceSelector == nil) {
		return false, nil // an address is never a pod
	}
	if p.NamespaceSelector == nil {
		if peer.Namespace != policyNS {
			return false, nil
		}
	} else {
		ok, err := matches(p.NamespaceSelector, c.namespaceLabels(peer.Namespace))
		if err != nil || !ok {
			return false, err
		}
	}
	if p.PodSelector == nil {
		return true, nil
	}
	return matches(p.PodSelector, peer.Labels)
}

// ipBlockMatches: an ipBlock matches an address inside its cidr and outside every except;
// never a pod (what an ipBlock means for pod addresses is left to the implementation).
func ipBlockMatches(b *networkingv1.IPBlock, peer Pod) (bool, error) {
	if peer.Namespace != "" || !peer.Address.IsValid() {
		return false, nil
	}
	in := func(cidr string) (bool, error) {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return false, fmt.Errorf("ipBlock %q: %w", cidr, err)
		}
		return p.Contains(peer.Address), nil
	}
	ok, err := in(b.CIDR)
	if err != nil || !ok {
		return false, err
	}
	for _, e := range b.Except {
		if out, err := in(e); err != nil || out {
			return false, err
		}
	}
	return true, nil
}

func (c Cluster) namespaceLabels(ns string) map[string]string {
	l := map[string]string{}
	for k, v := range c.NamespaceLabels[ns] {
		l[k] = v
	}
	l[NamespaceNameLabel] = ns
	return l
}

func matches(sel *metav1.LabelSelector, l map[string]string) (bool, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	return s.Matches(labels.Set(l)), nil
}
