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

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IngressMode is how the Istio ingress gateway is exposed.
// +kubebuilder:validation:Enum=TKECLB;NodePort;DockerDesktop
type IngressMode string

// Ingress modes.
const (
	// IngressTKECLB exposes the gateway as a LoadBalancer Service on a Tencent TKE CLB.
	IngressTKECLB IngressMode = "TKECLB"
	// IngressNodePort exposes the gateway on fixed node ports.
	IngressNodePort IngressMode = "NodePort"
	// IngressDockerDesktop exposes the gateway as a LoadBalancer on Docker Desktop (localhost).
	IngressDockerDesktop IngressMode = "DockerDesktop"
)

// IngressSpec configures the Istio ingress gateway Service.
//
// +kubebuilder:validation:XValidation:rule="self.mode != 'TKECLB' || (has(self.serviceAnnotations) && size(self.serviceAnnotations) > 0)",message="serviceAnnotations (the TKE CLB annotations) are required when mode is TKECLB",fieldPath=".serviceAnnotations"
// +kubebuilder:validation:XValidation:rule="self.mode == 'NodePort' || !has(self.httpPort)",message="httpPort is only valid when mode is NodePort",fieldPath=".httpPort"
// +kubebuilder:validation:XValidation:rule="self.mode == 'NodePort' || !has(self.httpsPort)",message="httpsPort is only valid when mode is NodePort",fieldPath=".httpsPort"
// +kubebuilder:validation:XValidation:rule="!has(self.httpPort) || !has(self.httpsPort) || self.httpPort != self.httpsPort",message="httpPort and httpsPort must differ",fieldPath=".httpsPort"
type IngressSpec struct {
	// Mode of exposure. Defaults to NodePort.
	// +kubebuilder:default=NodePort
	// +optional
	Mode IngressMode `json:"mode,omitempty"`

	// ServiceAnnotations are put on the gateway Service. Required (non-empty) for TKECLB, where they
	// carry the CLB settings, e.g. service.kubernetes.io/qcloud-loadbalancer-internal-subnetid.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`

	// HTTPPort is the fixed node port for HTTP (NodePort mode only). Defaults to 30080 in the program.
	// +kubebuilder:validation:Minimum=30000
	// +kubebuilder:validation:Maximum=32767
	// +optional
	HTTPPort *int32 `json:"httpPort,omitempty"`

	// HTTPSPort is the fixed node port for HTTPS (NodePort mode only). Defaults to 30443 in the program.
	// +kubebuilder:validation:Minimum=30000
	// +kubebuilder:validation:Maximum=32767
	// +optional
	HTTPSPort *int32 `json:"httpsPort,omitempty"`
}

// NodePorts returns the HTTP and HTTPS node ports to use in NodePort mode, falling back to
// DefaultNodePortHTTP and DefaultNodePortHTTPS.
func (in IngressSpec) NodePorts() (http, https int32) {
	http, https = DefaultNodePortHTTP, DefaultNodePortHTTPS
	if in.HTTPPort != nil {
		http = *in.HTTPPort
	}
	if in.HTTPSPort != nil {
		https = *in.HTTPSPort
	}
	return http, https
}

// TLSIssuer is the kind of cert-manager issuer that signs the gateway certificate.
// +kubebuilder:validation:Enum=SelfSigned;ACME;CA
type TLSIssuer string

// TLS issuers.
const (
	TLSSelfSigned TLSIssuer = "SelfSigned"
	TLSACME       TLSIssuer = "ACME"
	TLSCA         TLSIssuer = "CA"
)

// TLSSpec configures the certificate of *.<domain>.
//
// +kubebuilder:validation:XValidation:rule="self.issuer != 'ACME' || has(self.acme)",message="acme (email and server) is required when issuer is ACME",fieldPath=".acme"
// +kubebuilder:validation:XValidation:rule="self.issuer == 'ACME' || !has(self.acme)",message="acme is only valid when issuer is ACME",fieldPath=".acme"
// +kubebuilder:validation:XValidation:rule="self.issuer != 'CA' || has(self.ca)",message="ca (secretName) is required when issuer is CA",fieldPath=".ca"
// +kubebuilder:validation:XValidation:rule="self.issuer == 'CA' || !has(self.ca)",message="ca is only valid when issuer is CA",fieldPath=".ca"
type TLSSpec struct {
	// Issuer kind. Defaults to SelfSigned.
	// +kubebuilder:default=SelfSigned
	// +optional
	Issuer TLSIssuer `json:"issuer,omitempty"`

	// ACME settings, required when issuer is ACME.
	// +optional
	ACME *ACMEIssuer `json:"acme,omitempty"`

	// CA settings, required when issuer is CA.
	// +optional
	CA *CAIssuer `json:"ca,omitempty"`
}

// ACMEIssuer is an ACME (e.g. Let's Encrypt) account.
type ACMEIssuer struct {
	// Email of the ACME account.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:Pattern=`^[^@\s]+@[^@\s]+$`
	Email string `json:"email"`

	// Server is the ACME directory URL, e.g. https://acme-v02.api.letsencrypt.org/directory.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https://\S+$`
	Server string `json:"server"`
}

// CAIssuer signs with a CA key pair kept in a Secret of the cert-manager namespace.
type CAIssuer struct {
	// SecretName of the kubernetes.io/tls Secret holding the CA certificate and key.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName"`
}

// ImageRegistrySpec points image pulls at a mirror and holds the pull credentials.
type ImageRegistrySpec struct {
	// Registry is a prefix that replaces the registry host of every image the operator deploys,
	// e.g. "mirror.example.cn/tfrs" (air-gapped or mainland-China clusters). Empty keeps upstream.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([a-zA-Z0-9.:-]*[a-zA-Z0-9])?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*$`
	// +optional
	Registry string `json:"registry,omitempty"`

	// Credentials of the registry, turned into a kubernetes.io/dockerconfigjson Secret
	// "{name}-pull-secret" shared with every tenant namespace (unless
	// tenantCredentialsNamespace gives each its own).
	// +optional
	Credentials *RegistryCredentials `json:"credentials,omitempty"`

	// TenantCredentialsNamespace gives every tenant namespace its own pull credential
	// instead of the shared one: the admin keeps, in this namespace, one
	// kubernetes.io/dockerconfigjson Secret per tenant namespace, named after it (a pull-only
	// token per tenant). Each tenant stack copies its own, as "{credentials.name}-pull-secret"
	// ("registry-pull-secret" without credentials); a tenant whose Secret is missing fails its
	// up, naming it. No tenant may take this namespace.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	TenantCredentialsNamespace string `json:"tenantCredentialsNamespace,omitempty"`
}

// TenantPullSecretName is the pull Secret's name in tenant namespaces ("" for none): the
// shared credentials' Secret, or, with per-tenant credentials only, the default name.
func (in *ImageRegistrySpec) TenantPullSecretName() string {
	switch {
	case in == nil:
		return ""
	case in.Credentials != nil:
		return in.Credentials.PullSecretName()
	case in.TenantCredentialsNamespace != "":
		return (&RegistryCredentials{}).PullSecretName()
	}
	return ""
}

// RegistryCredentials log in to an image registry. Exactly one of password and
// passwordSecretRef must be given.
//
// +kubebuilder:validation:XValidation:rule="has(self.password) != has(self.passwordSecretRef)",message="exactly one of password and passwordSecretRef must be set"
type RegistryCredentials struct {
	// Name prefixes the pull Secret, "{name}-pull-secret". Defaults to "registry".
	// +kubebuilder:default=registry
	// +kubebuilder:validation:MaxLength=50
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Name string `json:"name,omitempty"`

	// Server is the registry host, e.g. "ccr.ccs.tencentyun.com".
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Server string `json:"server"`

	// Username to log in with.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Username string `json:"username"`

	// Password in plain text. Discouraged: it is stored in the CR; prefer passwordSecretRef.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Password string `json:"password,omitempty"`

	// PasswordSecretRef reads the password from a Secret.
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`
}

// PullSecretName is the name of the image pull Secret, "{name}-pull-secret".
func (in *RegistryCredentials) PullSecretName() string {
	name := in.Name
	if name == "" {
		name = DefaultRegistrySecretName
	}
	return name + "-pull-secret"
}

// TFRClusterSpec is the cluster-level infrastructure.
type TFRClusterSpec struct {
	// Domain of the cluster; the API is served at api.<domain>.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Domain string `json:"domain"`

	// Ingress gateway exposure.
	// +kubebuilder:default={mode: NodePort}
	// +optional
	Ingress IngressSpec `json:"ingress,omitempty"`

	// TLS issuer of the gateway certificate.
	// +kubebuilder:default={issuer: SelfSigned}
	// +optional
	TLS TLSSpec `json:"tls,omitempty"`

	// ImageRegistry mirror and pull credentials.
	// +optional
	ImageRegistry *ImageRegistrySpec `json:"imageRegistry,omitempty"`

	// CertManager (Helm chart).
	// +kubebuilder:default={}
	// +optional
	CertManager ComponentSource `json:"certManager,omitempty"`

	// Istio base and istiod (Helm charts).
	// +kubebuilder:default={}
	// +optional
	Istio ComponentSource `json:"istio,omitempty"`

	// IstioIngress is the Istio ingress gateway (Helm chart).
	// +kubebuilder:default={}
	// +optional
	IstioIngress ComponentSource `json:"istioIngress,omitempty"`

	// CNPGOperator is the CloudNativePG operator (YAML manifest).
	// +kubebuilder:default={}
	// +optional
	CNPGOperator ComponentSource `json:"cnpgOperator,omitempty"`

	// MinIOOperator is the MinIO operator (Helm chart or YAML).
	// +kubebuilder:default={}
	// +optional
	MinIOOperator ComponentSource `json:"minioOperator,omitempty"`

	// RabbitMQOperator is the RabbitMQ cluster and topology operators (YAML manifests).
	// +kubebuilder:default={}
	// +optional
	RabbitMQOperator ComponentSource `json:"rabbitmqOperator,omitempty"`

	// AllowUnsupported names the upstream projects that may run outside their upstream
	// support: past their end of support, or on a Kubernetes older than they support. Without
	// it such a cluster is refused before anything runs (see TFRS's support matrix, `tfrs
	// version`). Outside support there are no upstream fixes: allow a project only for as long
	// as an upgrade takes.
	// +kubebuilder:validation:MaxItems=6
	// +kubebuilder:validation:items:Enum=cert-manager;istio;cnpg;minio-operator;rabbitmq-cluster-operator;rabbitmq-messaging-topology-operator
	// +listType=set
	// +optional
	AllowUnsupported []string `json:"allowUnsupported,omitempty"`

	// Suspend stops every operation on the object while true: no up (spec, parent or revision
	// change, retry, reconcile request), no drift check and no destroy runs
	// until it is cleared. An operation already running finishes. Clearing it is a spec change:
	// the next up runs, through the approval gate when spec.approval asks for one.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// DriftDetection configures the periodic drift check (refresh + preview).
	// +kubebuilder:default={}
	// +optional
	DriftDetection DriftDetectionSpec `json:"driftDetection,omitempty"`

	// Approval says which changes wait for approval of their saved plan (Auto, Manual or
	// OnDataLoss, the default).
	// +kubebuilder:default={}
	// +optional
	Approval ApprovalSpec `json:"approval,omitempty"`

	// ReservedNamespaces are namespaces no tenant of this cluster may target, on top of the
	// built-in ones (kube-*, default, the namespaces the cluster stack installs into and
	// tfrs-system): e.g. the namespaces of other teams or of cluster add-ons.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	ReservedNamespaces []string `json:"reservedNamespaces,omitempty"`

	// Personal is the shared middleware of the cluster's personal tenants, per job type. A
	// personal TFRTenant cannot set middleware itself: no personal tenant can change what the
	// others of its job type use.
	// +kubebuilder:default={}
	// +optional
	Personal PersonalSpec `json:"personal,omitempty"`

	// Tenancy is the resource policy of the cluster's tenants: the classes they pick from
	// (each a ResourceQuota and LimitRange in the tenant's namespace), the priority classes
	// their pods may use and the namespaces they may take. Unset: the built-in "standard"
	// class, no priority classes, any namespace that is not reserved (tenancy_types.go).
	// +optional
	Tenancy TenancySpec `json:"tenancy,omitempty"`

	// Egress is where tenant pods may open connections, on top of their own namespace, DNS,
	// the mesh, the ingress gateway and (for the middleware that needs it) the API server.
	// Unset: public internet addresses, nothing else (egress_types.go).
	// +optional
	Egress EgressSpec `json:"egress,omitempty"`
}

// TFRClusterStatus is the observed state of a TFRCluster.
type TFRClusterStatus struct {
	StackStatus `json:",inline"`
}

// TFRCluster is the cluster-level infrastructure of the TFRobot platform: Istio ingress, TLS,
// middleware operators and image registry credentials. Its name must be a DNS-1123 label.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tfrc,categories=tfrs
// +kubebuilder:printcolumn:name="Domain",type=string,JSONPath=`.spec.domain`
// +kubebuilder:printcolumn:name="Ingress",type=string,JSONPath=`.spec.ingress.mode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision.id`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label (at most 63 lowercase alphanumerics or '-')"
type TFRCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:Required
	Spec   TFRClusterSpec   `json:"spec"`
	Status TFRClusterStatus `json:"status,omitempty"`
}

// TFRClusterList is a list of TFRCluster.
//
// +kubebuilder:object:root=true
type TFRClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TFRCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TFRCluster{}, &TFRClusterList{})
}
