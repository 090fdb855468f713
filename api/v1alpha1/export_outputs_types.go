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

// ExportOutputsSpec asks the tenant stack for one Secret in the tenant's namespace holding the
// connection info of its middleware (host, port, user, password, database/bucket/vhost and a
// URL per component), for applications that are not TFRServers. The stack owns the Secret:
// it follows a password rotation on the next run and goes with the stack on destroy, unless
// the deletion policy is Retain (then it stays, like the data it describes).
type ExportOutputsSpec struct {
	// SecretName is the Secret to write in the tenant's namespace (a DNS-1123 subdomain). It
	// may not be one of the Secrets the tenant stack already owns or reads.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName"`

	// Labels of the Secret: Kubernetes label keys and values. Keys under the tfrs.io,
	// kubernetes.io and k8s.io prefixes (and their subdomains) are reserved.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="label keys must be qualified names ([prefix/]name, name at most 63 characters of [-A-Za-z0-9_.] starting and ending alphanumeric)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.matches('^([^/]*[.])?(tfrs[.]io|kubernetes[.]io|k8s[.]io)/'))",message="label keys under the tfrs.io, kubernetes.io and k8s.io prefixes are reserved"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63 && self[k].matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'))",message="label values must be at most 63 characters of [-A-Za-z0-9_.], starting and ending alphanumeric"
	// +optional
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// KeyTemplate makes each data key from a component (postgresql, timescaledb, redis, minio,
	// rabbitmq) and a field (host, port, user, password, database, bucket, vhost, url).
	// Placeholders: {component} and {field}, or {COMPONENT} and {FIELD} for upper case
	// (POSTGRESQL_HOST, for envFrom). It must hold one of each; the rest is literal
	// [-._a-zA-Z0-9].
	// +kubebuilder:default="{component}_{field}"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^([-._a-zA-Z0-9]|\{component\}|\{COMPONENT\}|\{field\}|\{FIELD\})+$`
	// +kubebuilder:validation:XValidation:rule="(self.contains('{component}') || self.contains('{COMPONENT}')) && (self.contains('{field}') || self.contains('{FIELD}'))",message="keyTemplate must contain a component placeholder ({component} or {COMPONENT}) and a field placeholder ({field} or {FIELD}), else keys collide"
	// +optional
	KeyTemplate string `json:"keyTemplate,omitempty"`
}

// LabelValue is a label value. Its length bound is what lets the API server afford the
// pattern rule on exportOutputs.labels (CEL rules are priced by the longest string).
// +kubebuilder:validation:MaxLength=63
type LabelValue string
