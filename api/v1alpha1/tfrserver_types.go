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

// InitJobs toggles the one-shot Jobs run for a robot. Each defaults to true.
type InitJobs struct {
	// DBInit creates the robot's database schema.
	// +kubebuilder:default=true
	// +optional
	DBInit *bool `json:"dbInit,omitempty"`

	// MinIOInit creates the robot's bucket.
	// +kubebuilder:default=true
	// +optional
	MinIOInit *bool `json:"minioInit,omitempty"`

	// GrafanaSA creates the robot's Grafana service account.
	// +kubebuilder:default=true
	// +optional
	GrafanaSA *bool `json:"grafanaSA,omitempty"`
}

// TFRServerSpec is one TFRobot service instance.
type TFRServerSpec struct {
	// TenantRef is the name of the TFRTenant (in the same namespace) the robot runs in.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="tenantRef is immutable"
	TenantRef string `json:"tenantRef"`

	// RobotID identifies the robot; it is the X-TF-RobotId routing header value.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="robotId is immutable"
	RobotID string `json:"robotId"`

	// RobotType is the kind of robot; it is the X-TF-RobotType routing header value. It has no
	// '-': the robot's objects are named "<robotType>-<robotId>…", and the first '-' must end
	// the type so that no two robots share a name (chat-bot/1 and chat/bot-1 would).
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="robotType is immutable"
	RobotType string `json:"robotType"`

	// Image of the TFRobot server (both workers run it).
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// APIWorker serves the robot's HTTP API.
	// +kubebuilder:default={}
	// +optional
	APIWorker WorkloadSpec `json:"apiWorker,omitempty"`

	// RobotWorker runs the robot's tasks.
	// +kubebuilder:default={}
	// +optional
	RobotWorker WorkloadSpec `json:"robotWorker,omitempty"`

	// SecretData are environment variables stored in the "{robot}-secret" Secret (API keys such as
	// OPENAI_API_KEY). Keys must be environment variable names.
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z_][A-Za-z0-9_]*$'))",message="keys must be environment variable names matching ^[A-Za-z_][A-Za-z0-9_]*$"
	// +optional
	SecretData map[string]string `json:"secretData,omitempty"`

	// ConfigData are environment variables stored in the "{robot}-config" ConfigMap (such as
	// OPENAI_BASE_URL, TFS_PROFILE). Keys must be environment variable names.
	// TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR is always overridden from the tenant's sharedCache.cacheDir.
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z_][A-Za-z0-9_]*$'))",message="keys must be environment variable names matching ^[A-Za-z_][A-Za-z0-9_]*$"
	// +optional
	ConfigData map[string]string `json:"configData,omitempty"`

	// ConfzData is TOML merged over the generated Confz configuration (middleware connection
	// info); any field given here wins.
	// +kubebuilder:validation:MaxLength=262144
	// +optional
	ConfzData string `json:"confzData,omitempty"`

	// InitJobs toggles the robot's init Jobs.
	// +kubebuilder:default={}
	// +optional
	InitJobs InitJobs `json:"initJobs,omitempty"`

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
}

// TFRServerStatus is the observed state of a TFRServer.
type TFRServerStatus struct {
	StackStatus `json:",inline"`
}

// TFRServer is one TFRobot service instance: API worker, robot worker, init Jobs, its Secret,
// ConfigMap and Confz TOML. Its name must be a DNS-1123 label.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=tfrsv,categories=tfrs
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.spec.tenantRef`
// +kubebuilder:printcolumn:name="Robot",type=string,JSONPath=`.spec.robotId`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.robotType`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision.id`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label (at most 63 lowercase alphanumerics or '-')"
type TFRServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:Required
	Spec   TFRServerSpec   `json:"spec"`
	Status TFRServerStatus `json:"status,omitempty"`
}

// TFRServerList is a list of TFRServer.
//
// +kubebuilder:object:root=true
type TFRServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TFRServer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TFRServer{}, &TFRServerList{})
}
