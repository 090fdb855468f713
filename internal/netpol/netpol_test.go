package netpol

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func policy(ns string, spec networkingv1.NetworkPolicySpec) networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: spec}
}

// The evaluator follows the upstream semantics on the cases the tenant policies rely on.
func TestAllowedSemantics(t *testing.T) {
	tcp, udp := intstr.FromInt32(80), intstr.FromInt32(53)
	udpProto := corev1.ProtocolUDP
	end := int32(90)
	a, b := Pod{Namespace: "a", Labels: map[string]string{"app": "x"}}, Pod{Namespace: "b", Labels: map[string]string{"app": "y"}}
	for _, tc := range []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		from, to Pod
		proto    string
		port     int32
		want     bool
	}{
		{"no policy: open", nil, a, b, "", 80, true},
		{"deny-all ingress", []networkingv1.NetworkPolicy{policy("b", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Ingress"}})}, a, b, "", 80, false},
		{"deny-all in another namespace does not apply", []networkingv1.NetworkPolicy{policy("c", networkingv1.NetworkPolicySpec{})}, a, b, "", 80, true},
		{"pod selector not matching: open", []networkingv1.NetworkPolicy{policy("b", networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "z"}}})}, a, b, "", 80, true},
		{"podSelector peer is the policy's namespace only", []networkingv1.NetworkPolicy{policy("b", networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}})}, a, b, "", 80, false},
		{"namespace selector by name", []networkingv1.NetworkPolicy{policy("b", networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{NamespaceNameLabel: "a"}}}}}}})}, a, b, "", 80, true},
		{"namespace and pod selector in one peer: both", []networkingv1.NetworkPolicy{policy("b", networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}}}}}})}, a, b, "", 80, false},
		{"port range", []networkingv1.NetworkPolicy{policy("b", networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &tcp, EndPort: &end}}}}})}, a, b, "", 85, true},
		{"port outside", []networkingv1.NetworkPolicy{policy("b", networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &tcp}}}}})}, a, b, "", 81, false},
		{"protocol differs", []networkingv1.NetworkPolicy{policy("b", networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &udp, Protocol: &udpProto}}}}})}, a, b, "TCP", 53, false},
		{"additive: a second policy allows", []networkingv1.NetworkPolicy{
			policy("b", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Ingress"}}),
			policy("b", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{}}}),
		}, a, b, "", 80, true},
		{"egress deny at the source", []networkingv1.NetworkPolicy{policy("a", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Egress"}})}, a, b, "", 80, false},
		{"ingress-only policy leaves egress open", []networkingv1.NetworkPolicy{policy("a", networkingv1.NetworkPolicySpec{})}, a, b, "", 80, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Cluster{Policies: tc.policies}.Allowed(tc.from, tc.to, tc.proto, tc.port)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("allowed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseRejectsUnknownFields(t *testing.T) {
	if _, err := Parse(map[string]any{"spec": map[string]any{"podSelectr": map[string]any{}}}); err == nil {
		t.Error("a misspelt field parsed")
	}
	np, err := Parse(map[string]any{"metadata": map[string]any{"name": "p", "namespace": "n"}, "spec": map[string]any{"podSelector": map[string]any{}}})
	if err != nil || np.Namespace != "n" {
		t.Fatalf("%+v %v", np, err)
	}
}
