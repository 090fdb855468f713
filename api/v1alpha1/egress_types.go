/*
Copyright 2026 The TFRS Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

// Egress: where the pods of the cluster's tenant namespaces may open connections. Every
// tenant namespace denies egress by default (a NetworkPolicy the provisioner writes,
// components/tenant/egress.go) and allows, besides what is listed here: its own namespace,
// DNS, the mesh's control plane and the ingress gateway, and the Kubernetes API server for
// the middleware pods that need it (the CloudNativePG instance manager, RabbitMQ's peer
// discovery, MinIO's sidecar, the tenant's Prometheus). It lives on the cluster-scoped
// TFRCluster, so only the admin sets it; no tenant field widens it.

// Bounds of the egress policy.
const (
	// MaxEgressCIDRs bounds spec.egress.allowedCIDRs and spec.egress.blockedCIDRs.
	MaxEgressCIDRs = 64
)

// PublicInternet is whether tenant pods may dial public addresses.
// +kubebuilder:validation:Enum=Allow;Deny
type PublicInternet string

const (
	// PublicInternetAllow (the default): every address outside the non-public ranges
	// (private, shared, loopback, link-local with the cloud metadata service, multicast,
	// reserved), the API server's addresses and spec.egress.blockedCIDRs. Robots call model
	// providers and other services on the internet.
	PublicInternetAllow PublicInternet = "Allow"
	// PublicInternetDeny: no public address, only allowedCIDRs (an egress proxy, say).
	PublicInternetDeny PublicInternet = "Deny"
)

// EgressSpec is the cluster's egress policy for its tenant namespaces.
type EgressSpec struct {
	// PublicInternet is whether tenant pods may dial public addresses: Allow (default) or
	// Deny.
	// +optional
	PublicInternet PublicInternet `json:"publicInternet,omitempty"`

	// AllowedCIDRs are destinations every tenant pod may dial besides the built-in ones
	// (an egress proxy, a corporate network, a node-local DNS cache at 169.254.20.10/32).
	// Opening a non-public range (the metadata service, the nodes, the API server) is the
	// admin's explicit decision.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self) && cidr(self) == cidr(self).masked()",message="must be a CIDR network address (10.0.0.0/8, 2001:db8::/32)"
	// +listType=set
	// +optional
	AllowedCIDRs []string `json:"allowedCIDRs,omitempty"`

	// BlockedCIDRs are public ranges tenant pods may not dial even when publicInternet is
	// Allow: nodes or load balancers with public addresses, another team's public services.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self) && cidr(self) == cidr(self).masked() && cidr(self).prefixLength() > 0",message="must be a CIDR network address (10.0.0.0/8, 2001:db8::/32) narrower than every address"
	// +listType=set
	// +optional
	BlockedCIDRs []string `json:"blockedCIDRs,omitempty"`

	// DNS is where the cluster's DNS server runs. Unset: pods labelled k8s-app=kube-dns in
	// kube-system (CoreDNS and kube-dns on almost every distribution).
	// +optional
	DNS *EgressDNS `json:"dns,omitempty"`
}

// EgressDNS selects the cluster's DNS server pods.
type EgressDNS struct {
	// Namespace of the DNS server pods.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`
	// PodLabels select the DNS server pods in namespace (all of them must match).
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=8
	PodLabels map[string]string `json:"podLabels"`
	// Port the DNS server listens on, UDP and TCP (53 when unset; a pod port, after any
	// Service's translation).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
}
