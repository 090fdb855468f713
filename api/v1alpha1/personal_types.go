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

// MaxPersonalJobTypes bounds TFRCluster.spec.personal.jobTypes.
const MaxPersonalJobTypes = 12

// PersonalSpec is the middleware the personal tenants of a cluster share, one set per job
// type (namespace "personal-<jobType>", stack "tenant.personal-<jobType>._shared"). It is the
// platform admin's: the shared stack of a job type takes its settings from here, never from a
// personal TFRTenant, so no personal tenant can change the middleware another one uses.
type PersonalSpec struct {
	// Middleware is the shared middleware of every job type that jobTypes does not list.
	// +kubebuilder:validation:XValidation:rule="!has(self.objectStorage) || !has(self.objectStorage.provider) || self.objectStorage.provider != 'External'",message="personal job types use MinIO: each personal robot gets its own MinIO user and bucket, which an external endpoint cannot give",fieldPath=".objectStorage.provider"
	// +kubebuilder:default={}
	// +optional
	Middleware TenantMiddleware `json:"middleware,omitempty"`

	// JobTypes gives a job type its own shared middleware, which replaces spec.personal.middleware
	// as a whole for that job type (unset fields take the TFRTenant defaults, not middleware's).
	// Keys are job types.
	// +kubebuilder:validation:MaxProperties=12
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 54 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="jobTypes keys must be job types: DNS-1123 labels of at most 54 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !has(self[k].objectStorage) || !has(self[k].objectStorage.provider) || self[k].objectStorage.provider != 'External')",message="personal job types use MinIO: each personal robot gets its own MinIO user and bucket, which an external endpoint cannot give"
	// +optional
	JobTypes map[string]TenantMiddleware `json:"jobTypes,omitempty"`

	// Approval says which changes of a job type's shared stack wait for approval of their
	// saved plan (Auto, Manual or OnDataLoss, the default). It applies to every personal
	// tenant's runs, which bring that stack up; a personal TFRTenant cannot set its own.
	// +kubebuilder:default={}
	// +optional
	Approval ApprovalSpec `json:"approval,omitempty"`

	// DriftDetection configures the periodic drift check of the personal tenants, whose
	// runs check their job type's shared stack; a personal TFRTenant cannot set its own.
	// +kubebuilder:default={}
	// +optional
	DriftDetection DriftDetectionSpec `json:"driftDetection,omitempty"`

	// OwnerShare is the most of a job type's namespace that the robots of one owner (one
	// personal TFRTenant) may hold, so that no user takes the job type's quota from the
	// others. TFRS checks it before a personal TFRServer runs, at every door. Unset fields
	// set no limit.
	// +optional
	OwnerShare OwnerShare `json:"ownerShare,omitempty"`
}

// OwnerShare is one owner's share of a personal job type's namespace. CPU and memory are
// the limits of the owner's robots' workers (API and robot worker Deployments), summed over
// replicas and containers; a container without a limit counts with the namespace's LimitRange
// default, which the API server gives it.
type OwnerShare struct {
	// Robots is the most robots (TFRServers) one owner may run in a job type.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Robots *int32 `json:"robots,omitempty"`
	// CPU is the most CPU (limits) the workers of one owner's robots may hold together.
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// Memory is the most memory (limits) the workers of one owner's robots may hold together.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// IsZero: no limit at all.
func (s OwnerShare) IsZero() bool { return s.Robots == nil && s.CPU == nil && s.Memory == nil }
