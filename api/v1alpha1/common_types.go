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
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Toggle switches an optional component on or off. Components are on unless disabled.
type Toggle struct {
	// Enabled installs the component. Defaults to true.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// IsEnabled reports whether the component is on (nil means the default, true).
func (t Toggle) IsEnabled() bool { return t.Enabled == nil || *t.Enabled }

// ComponentSource says where a Helm chart or YAML manifest comes from and how it is configured.
// Every field can point at a mirror or a local path for air-gapped and mainland-China clusters.
// Empty fields mean the operator's built-in default (version pinned by the stacks package, the
// upstream chart repository or manifest URL). At most one of chartRepo, manifestURL and
// localPath may be set.
//
// +kubebuilder:validation:XValidation:rule="(has(self.chartRepo) ? 1 : 0) + (has(self.manifestURL) ? 1 : 0) + (has(self.localPath) ? 1 : 0) <= 1",message="at most one of chartRepo, manifestURL and localPath may be set"
type ComponentSource struct {
	Toggle `json:",inline"`

	// Version of the chart or manifest, e.g. "v1.21.2". Empty means the operator's pinned version.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9.+_-]*$`
	// +optional
	Version string `json:"version,omitempty"`

	// ChartRepo overrides the Helm chart repository: an http(s) repository URL or an oci:// registry
	// reference (a mirror).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^(https?|oci)://\S+$`
	// +optional
	ChartRepo string `json:"chartRepo,omitempty"`

	// ManifestURL overrides the URL of a YAML manifest (a mirror); http(s) or file://.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^(https?|file)://\S+$`
	// +optional
	ManifestURL string `json:"manifestURL,omitempty"`

	// LocalPath is a chart directory/archive or a manifest file on the machine that runs the stack
	// (the operator pod or the CLI host). Used offline.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	LocalPath string `json:"localPath,omitempty"`

	// Values are Helm values merged over the operator's own (a JSON/YAML object). Ignored for
	// manifest-based components.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// WorkloadSpec is the scaling and sizing of a Deployment the operator runs.
type WorkloadSpec struct {
	// Replicas of the workload. Defaults to 1; 0 scales it down.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Resources of the main container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// SecretKeyRef selects a key of a Secret in a given namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key in the Secret's data. Defaults to "password".
	// +kubebuilder:default=password
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	Key string `json:"key,omitempty"`

	// Namespace of the Secret.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`
}

// ManagedBy names the door through which a stack was created and is mutated.
// +kubebuilder:validation:Enum=operator;api;cli
type ManagedBy string

// The doors. The same values are written as the stack tag ManagedByTag.
const (
	ManagedByOperator ManagedBy = "operator"
	ManagedByAPI      ManagedBy = "api"
	ManagedByCLI      ManagedBy = "cli"
)

// ManagedByTag is the Pulumi stack tag that records ManagedBy.
const ManagedByTag = "tfrs.io/managed-by"

// OperationKind is a Pulumi Automation API operation.
// +kubebuilder:validation:Enum=up;preview;destroy;refresh
type OperationKind string

// Operation kinds.
const (
	OperationUp      OperationKind = "up"
	OperationPreview OperationKind = "preview"
	OperationDestroy OperationKind = "destroy"
	OperationRefresh OperationKind = "refresh"
)

// OperationResult is how an operation ended.
// +kubebuilder:validation:Enum=succeeded;failed;cancelled
type OperationResult string

// Operation results. An operation still running has no result.
const (
	OperationSucceeded OperationResult = "succeeded"
	OperationFailed    OperationResult = "failed"
	OperationCancelled OperationResult = "cancelled"
)

// ChangeCounts counts resources by the step an operation took (or would take, for a preview).
type ChangeCounts struct {
	// +optional
	Create int32 `json:"create,omitempty"`
	// +optional
	Update int32 `json:"update,omitempty"`
	// +optional
	Replace int32 `json:"replace,omitempty"`
	// +optional
	Delete int32 `json:"delete,omitempty"`
	// +optional
	Same int32 `json:"same,omitempty"`
}

// Operation describes the last Automation API operation run on the stack.
type Operation struct {
	// ID of the operation (as the HTTP API reports it), when known.
	// +optional
	ID string `json:"id,omitempty"`
	// Kind of operation.
	Kind OperationKind `json:"kind"`
	// Result of the operation; empty while it runs.
	// +optional
	Result OperationResult `json:"result,omitempty"`
	// StartedAt is when the operation started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// FinishedAt is when the operation ended.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Changes counts the resource steps.
	// +optional
	Changes *ChangeCounts `json:"changes,omitempty"`
	// Message is a short, non-secret summary (e.g. the first error line).
	// +optional
	Message string `json:"message,omitempty"`
	// Progress is how far the operation got, updated every few seconds while it runs and
	// once more when it ends.
	// +optional
	Progress *Progress `json:"progress,omitempty"`
}

// Progress counts an operation's resource steps. The total is what the engine knows: the
// resources the stack held before the operation (exact for a no-op, an update or a destroy), or
// the resources seen so far when more (a first up has no plan, so its total grows).
type Progress struct {
	// ResourcesDone is the resources whose step finished (or failed).
	// +kubebuilder:validation:Minimum=0
	ResourcesDone int32 `json:"resourcesDone"`
	// ResourcesTotal is the resources expected; it never shrinks during an operation.
	// +kubebuilder:validation:Minimum=0
	ResourcesTotal int32 `json:"resourcesTotal"`
	// Component is the component worked on last, e.g. "PostgreSQL acme-pg".
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Component string `json:"component,omitempty"`
	// UpdatedAt is when the progress was written.
	UpdatedAt metav1.Time `json:"updatedAt"`
}

// StackStatus is the status every TFRS kind shares: the state of its Pulumi stack.
type StackStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions in kstatus style: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// StackName is the Pulumi stack, e.g. "tenant.<ns>.<name>".
	// +optional
	StackName string `json:"stackName,omitempty"`

	// ManagedBy is the door that owns the stack (operator, api or cli).
	// +optional
	ManagedBy ManagedBy `json:"managedBy,omitempty"`

	// LastOperation is the last operation run on the stack.
	// +optional
	LastOperation *Operation `json:"lastOperation,omitempty"`

	// Outputs are the stack's NON-SECRET outputs only (hosts, ports, names, URLs). Secret outputs
	// (passwords, keys) never appear here; they stay encrypted in the stack state.
	// +optional
	Outputs map[string]string `json:"outputs,omitempty"`

	// OutputsDigest is a one-way digest (truncated SHA-256) of all the outputs of the last
	// successful up, secret ones included, so that a rotated password changes it too. Children
	// compare it with their ParentDigest to know when what they consume has changed; it never
	// reveals a value.
	// +optional
	OutputsDigest string `json:"outputsDigest,omitempty"`

	// ParentDigest is the parent's OutputsDigest that the last successful up ran against
	// (empty for a cluster). When the parent's digest moves on, the object runs up again.
	// +optional
	ParentDigest string `json:"parentDigest,omitempty"`

	// LastHandledReconcileRequest is the value of the tfrs.io/reconcile-request annotation the
	// operator last acted on; setting the annotation to a new value runs up once.
	// +optional
	LastHandledReconcileRequest string `json:"lastHandledReconcileRequest,omitempty"`

	// LastDriftCheck is when the last drift check (refresh + preview) finished.
	// +optional
	LastDriftCheck *metav1.Time `json:"lastDriftCheck,omitempty"`

	// PendingPlan is the saved plan waiting for approval (spec.approval), if any.
	// +optional
	PendingPlan *PendingPlan `json:"pendingPlan,omitempty"`

	// Revision is the program revision of the last successful up: which tfrs build applied
	// the stack (also recorded on the stack itself, as tags, by whichever door ran it).
	// +optional
	Revision *Revision `json:"revision,omitempty"`
}

// Revision is a program revision: what a tfrs build's programs are, besides the spec they
// are given.
type Revision struct {
	// ID is a digest (12 hex characters) of the tfrs version and commit, the pinned sources
	// table and, for a build from a modified or unknown tree, the binary itself: two builds
	// whose programs could differ never share an ID.
	ID string `json:"id"`
	// Version is the tfrs version ("dev" for a build without one).
	// +optional
	Version string `json:"version,omitempty"`
	// Commit is the VCS revision of the build, "-dirty" when the tree was modified.
	// +optional
	Commit string `json:"commit,omitempty"`
}

// DriftDetectionSpec configures the periodic drift check the operator runs on a Ready object: a
// refresh (every resource read back from the cluster) followed by a preview; whatever the
// preview would change is drift, reported in the Drifted condition.
type DriftDetectionSpec struct {
	// Enabled turns the check on. Defaults to true.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Interval between checks, a Go duration such as "1h" or "30m". Defaults to 1h; "0s" turns
	// the check off; otherwise at least 1m.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) == duration('0s') || duration(self) >= duration('1m')",message="interval must be 0s (off) or at least 1m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// AutoRemediate runs up when drift is found, putting the resources back as the spec says.
	// Off by default: drift is only reported.
	// +optional
	AutoRemediate bool `json:"autoRemediate,omitempty"`
}

// ApprovalMode says which changes wait for a person to approve their saved plan.
// +kubebuilder:validation:Enum=Auto;Manual;OnDataLoss
type ApprovalMode string

const (
	// ApprovalAuto applies every change as it comes (the behaviour before approvals).
	ApprovalAuto ApprovalMode = "Auto"
	// ApprovalManual waits for approval of every change, the first up included.
	ApprovalManual ApprovalMode = "Manual"
	// ApprovalOnDataLoss waits only for a change that would replace or delete stateful data
	// (a PostgreSQL, TimescaleDB or MinIO instance, a PVC, the tenant namespace); every other
	// change applies as it comes. The default.
	ApprovalOnDataLoss ApprovalMode = "OnDataLoss"
)

// ApprovalSpec configures the approval gate: the operator previews with a saved plan, reports it
// in status.pendingPlan and applies exactly that plan once the tfrs.io/approve annotation names
// its id.
type ApprovalSpec struct {
	// Mode is Auto, Manual or OnDataLoss (the default).
	// +kubebuilder:default=OnDataLoss
	// +optional
	Mode ApprovalMode `json:"mode,omitempty"`
}

// Effective is the mode, with the default for an unset one.
func (a ApprovalSpec) Effective() ApprovalMode {
	if a.Mode == "" {
		return ApprovalOnDataLoss
	}
	return a.Mode
}

// PendingPlan is a saved plan waiting for approval.
type PendingPlan struct {
	// ID of the plan; approve it with `kubectl annotate <kind> <name> tfrs.io/approve=<id>`.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	ID string `json:"id"`
	// Generation is the metadata.generation the plan was taken for.
	Generation int64 `json:"generation"`
	// Reason the plan waits: "Manual" (every change waits) or "DataLoss".
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`
	// Changes counts the planned steps by kind (create, update, replace, delete).
	// +optional
	Changes map[string]int32 `json:"changes,omitempty"`
	// DataLoss lists the resources whose data the plan would destroy ("<op> <type> <name>").
	// +kubebuilder:validation:MaxItems=64
	// +optional
	DataLoss []string `json:"dataLoss,omitempty"`
	// CreatedAt is when the plan was saved.
	CreatedAt metav1.Time `json:"createdAt"`
}

// MinDriftInterval is the shortest drift check interval besides 0 (off): each check is a
// refresh and a preview of the whole stack.
const MinDriftInterval = time.Minute

// Period is the time between drift checks, 0 when the check is off. Unset fields take their
// defaults.
func (d DriftDetectionSpec) Period() time.Duration {
	if d.Enabled != nil && !*d.Enabled {
		return 0
	}
	if d.Interval == nil {
		return DefaultDriftInterval
	}
	if d.Interval.Duration < 0 {
		return 0
	}
	return d.Interval.Duration
}

// Condition types (kstatus).
const (
	// ConditionReady is True when the last `up` of the current generation succeeded.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the stack is being brought to the spec.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when progress needs a human (invalid spec, conflict, failure).
	ConditionStalled = "Stalled"
	// ConditionDrifted is True when the last drift check found resources that differ from
	// what the spec makes; its message lists them (types and names, never values).
	ConditionDrifted = "Drifted"
	// ConditionApproved is False while a saved plan waits for approval (status.pendingPlan),
	// True once the approved plan was applied.
	ConditionApproved = "Approved"
	// ConditionSupported is False while a cluster component runs outside its upstream
	// support (Kubernetes newer than tested, end of support near, or a version TFRS's
	// support matrix does not know): the reason says which, the message names each. Set on
	// TFRClusters once a finding appeared; True again when none is left.
	ConditionSupported = "Supported"
	// ConditionSuspended is True while spec.suspend stops every operation on the object; it is
	// removed when spec.suspend is cleared.
	ConditionSuspended = "Suspended"
)

// Condition reasons.
const (
	ReasonSucceeded                     = "Succeeded"
	ReasonProgressing                   = "Progressing"
	ReasonWaitingForParent              = "WaitingForParent"
	ReasonUpdateConflict                = "UpdateConflict"
	ReasonInvalidSpec                   = "InvalidSpec"
	ReasonUpdateFailed                  = "UpdateFailed"
	ReasonDependentsExist               = "DependentsExist"
	ReasonPendingOperationNeedsDecision = "PendingOperationNeedsDecision"
	ReasonDeleting                      = "Deleting"
	// ReasonManagedElsewhere: the stack was created over the HTTP API or by the CLI; the
	// operator never takes it over.
	ReasonManagedElsewhere = "ManagedElsewhere"
	// Reasons of the Drifted condition.
	ReasonDriftDetected    = "DriftDetected"
	ReasonNoDrift          = "NoDrift"
	ReasonDriftCheckFailed = "DriftCheckFailed"
	// Reason of the Supported condition when True; when False its reason is the finding's
	// (stacks/support.go: PastEndOfLife, KubernetesTooNew, EndOfLifeSoon, VersionNotInMatrix…).
	ReasonWithinSupport = "WithinSupport"
	// Reasons of the Approved condition.
	ReasonAwaitingApproval = "AwaitingApproval"
	ReasonPlanApplied      = "PlanApplied"
	// ReasonPlanStale: the approved plan no longer matched (spec, parent outputs or the
	// cluster changed); it was discarded and a new one proposed.
	ReasonPlanStale = "PlanStale"
	// ReasonSuspended: spec.suspend is true (the Suspended condition; the Ready condition of an
	// object whose deletion waits for it).
	ReasonSuspended = "Suspended"
)

// Annotations the operator reads.
const (
	// AnnotationReconcileRequest: set it to a new value (a timestamp, say) to make the operator
	// run up once even though nothing changed; the handled value is echoed in
	// status.lastHandledReconcileRequest.
	AnnotationReconcileRequest = "tfrs.io/reconcile-request"
	// AnnotationPendingDecision resolves an interrupted create of a data-bearing resource
	// (reason PendingOperationNeedsDecision): "adopt" takes the existing object into the stack,
	// "forget" drops it from the stack and leaves it unmanaged. The operator removes the
	// annotation once the decision was applied.
	AnnotationPendingDecision = "tfrs.io/pending-decision"
	// AnnotationApprove approves the saved plan whose id it holds (status.pendingPlan.id): the
	// operator applies exactly that plan. Another id changes nothing (an Event says so).
	AnnotationApprove = "tfrs.io/approve"
)

// Pending decisions (values of AnnotationPendingDecision).
const (
	PendingDecisionAdopt  = "adopt"
	PendingDecisionForget = "forget"
)
