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

import "k8s.io/apimachinery/pkg/api/resource"

// Tenancy: the platform admin's resource policy for the tenants of a cluster. It lives on the
// cluster-scoped TFRCluster, so only whoever may edit TFRClusters (the admin, by RBAC) sets
// it; a tenant only picks one of its classes by name (TFRTenant.spec.class). The rules that
// read it are in tenancy.go; the API server enforces the class in every tenant namespace
// with a ResourceQuota and a LimitRange (components/tenant/quota.go).

// Bounds of the tenancy policy.
const (
	// MaxTenantClasses bounds spec.tenancy.classes.
	MaxTenantClasses = 32
	// MaxAllowedPriorityClasses bounds spec.tenancy.allowedPriorityClasses.
	MaxAllowedPriorityClasses = 16
	// MaxNamespacePrefixes bounds spec.tenancy.allowedNamespacePrefixes.
	MaxNamespacePrefixes = 64
	// MaxQuotaCount bounds every object count of a class (pods, services, volumes).
	MaxQuotaCount = 10000
)

// TenancySpec is the cluster's tenancy policy: the resource classes its tenants choose from,
// which priority classes their pods may use, and which namespaces they may take.
type TenancySpec struct {
	// Classes a tenant may pick (spec.class). Empty: the one built-in class "standard"
	// (see BuiltinClass). When set, only these classes exist; a field a class leaves unset
	// takes the built-in "standard" value.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	Classes []TenantClass `json:"classes,omitempty"`

	// DefaultClass is the class of a tenant that names none. Empty means "standard". It
	// must name one of classes when classes is set.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	DefaultClass string `json:"defaultClass,omitempty"`

	// PersonalClass is the class of every personal job type's shared namespace (personal
	// tenants cannot pick one: they share it). Empty means defaultClass.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	PersonalClass string `json:"personalClass,omitempty"`

	// AllowedPriorityClasses are the PriorityClasses tenant pods may name. Empty (the
	// default): none, only pods without a priority class. The system-* classes can never be
	// allowed. The API server enforces it with a ResourceQuota in each tenant namespace.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self.all(n, !n.startsWith('system-'))",message="system-* priority classes cannot be allowed for tenants"
	// +listType=set
	// +optional
	AllowedPriorityClasses []string `json:"allowedPriorityClasses,omitempty"`

	// AllowedNamespacePrefixes, when set, is the allowlist of the namespaces a new enterprise
	// tenant may take: its namespace must start with one of them (e.g. "team-"). Empty: any
	// name that is not reserved. Personal tenants always take personal-<jobType>. Tenants
	// whose namespace exists already keep it.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=62
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9][-a-z0-9]*$`
	// +listType=set
	// +optional
	AllowedNamespacePrefixes []string `json:"allowedNamespacePrefixes,omitempty"`
}

// TenantClass is a named resource class: the ResourceQuota and LimitRange of the namespace
// of every tenant that picks it, and the bound its spec is validated against.
type TenantClass struct {
	// Name of the class, what TFRTenant.spec.class names.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Quota is the namespace's ResourceQuota (totals over every pod and volume).
	// +optional
	Quota ClassQuota `json:"quota,omitempty"`

	// MaxVolumeSize bounds each single volume (a LimitRange on PersistentVolumeClaims).
	// +optional
	MaxVolumeSize *resource.Quantity `json:"maxVolumeSize,omitempty"`

	// Container is the namespace's LimitRange for containers: defaults for containers that
	// set no resources, and the most one container may ask for.
	// +optional
	Container ContainerLimits `json:"container,omitempty"`
}

// ClassQuota are the hard limits of a class's ResourceQuota. Unset fields take the
// built-in "standard" class's values. Amounts must be positive: checked by Validate at every
// door, not by a CEL rule (a quantity rule per field of up to 32 classes costs more than
// the API server's CEL budget for the whole schema).
type ClassQuota struct {
	// RequestsCPU is the namespace's total CPU requests (requests.cpu).
	// +optional
	RequestsCPU *resource.Quantity `json:"requestsCPU,omitempty"`
	// RequestsMemory is the namespace's total memory requests (requests.memory).
	// +optional
	RequestsMemory *resource.Quantity `json:"requestsMemory,omitempty"`
	// LimitsCPU is the namespace's total CPU limits (limits.cpu).
	// +optional
	LimitsCPU *resource.Quantity `json:"limitsCPU,omitempty"`
	// LimitsMemory is the namespace's total memory limits (limits.memory).
	// +optional
	LimitsMemory *resource.Quantity `json:"limitsMemory,omitempty"`
	// Storage is the namespace's total requested volume size (requests.storage).
	// +optional
	Storage *resource.Quantity `json:"storage,omitempty"`
	// PersistentVolumeClaims is the most volumes the namespace may hold.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	PersistentVolumeClaims *int32 `json:"persistentVolumeClaims,omitempty"`
	// Pods is the most pods the namespace may hold.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Pods *int32 `json:"pods,omitempty"`
	// Services is the most Services the namespace may hold (never NodePort or LoadBalancer
	// ones: those are always 0, the ingress gateway is the only way in).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Services *int32 `json:"services,omitempty"`
}

// ContainerLimits is a class's LimitRange for containers.
type ContainerLimits struct {
	// Default are the limits of a container that sets none.
	// +optional
	Default ContainerResources `json:"default,omitempty"`
	// DefaultRequest are the requests of a container that sets none.
	// +optional
	DefaultRequest ContainerResources `json:"defaultRequest,omitempty"`
	// Max is the most one container may ask for (requests and limits).
	// +optional
	Max ContainerResources `json:"max,omitempty"`
}

// ContainerResources are a CPU and a memory amount.
type ContainerResources struct {
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}
