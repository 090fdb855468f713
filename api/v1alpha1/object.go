package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
)

// Kind names one of the three TFRS kinds.
type Kind string

// The kinds of this group, one per level.
const (
	KindTFRCluster Kind = "TFRCluster"
	KindTFRTenant  Kind = "TFRTenant"
	KindTFRServer  Kind = "TFRServer"
)

// Kinds lists the kinds parents first: an object's parent is of an earlier kind, so this is
// the order to bring a set of objects up in (and the reverse, to destroy them).
var Kinds = []Kind{KindTFRCluster, KindTFRTenant, KindTFRServer}

// Object is what the operator, the HTTP API, the CLI and the runner know about a TFRCluster,
// TFRTenant or TFRServer: each kind describes itself through these methods, so code common to
// the kinds never asks which one it holds. The methods of the three kinds stand side by side
// below, except Default (defaults.go) and Validate and ValidateUpdate (validate.go). The only
// code that asks is the program table in stacks/kinds, which picks each kind's program.
//
// +kubebuilder:object:generate=false
type Object interface {
	metav1.Object
	runtime.Object

	// KindName names the kind. Typed objects read from the API server carry no TypeMeta, so
	// GetObjectKind cannot be relied on for that.
	KindName() Kind
	// StackLevel is the first part of the kind's stack names (stackname.LevelCluster …).
	StackLevel() string
	// Namespaced says whether objects of the kind live in a namespace (a TFRCluster does not).
	Namespaced() bool

	// Default sets the defaults the CRD schema sets.
	Default()
	// Validate reports what the API server would reject, with the same field paths.
	Validate() field.ErrorList
	// ValidateUpdate is Validate plus the rules on changes from old, an object of the same
	// kind (another kind is a field error: an update never changes the kind).
	ValidateUpdate(old Object) field.ErrorList

	// Stacks names the stacks the object runs on and reads from. It checks the names only,
	// not the rest of the spec.
	Stacks() (Stacks, error)
	// Parent names the object this one consumes; the zero ParentRef for a cluster.
	Parent() ParentRef
	// SetParent fills the spec field naming the parent when it is empty (a server posted
	// under its tenant's URL); a cluster has none.
	SetParent(name string)

	// VisitSecrets calls fn with every value the spec holds in plain text that must not be
	// shown (in messages, responses, stored records) and stores what fn returns in its place.
	VisitSecrets(fn func(p *field.Path, v string) string)
	// Sources lists what the spec makes tfrs read or fetch (sources.go), for the source
	// policy every door applies.
	Sources() []SourceField
	// DataDeletionPolicy says what happens to the object's stateful data when it goes; ""
	// when the object owns none of its own.
	DataDeletionPolicy() DeletionPolicy
	// Approval is the mode of the approval gate (spec.approval), defaults applied.
	Approval() ApprovalMode
	// Suspended is spec.suspend: no operation may start on the object's stacks.
	Suspended() bool

	// GetSpec returns a pointer to the spec (*TFRClusterSpec …), for code that encodes and
	// decodes documents of any kind.
	GetSpec() any
	// GetStackStatus returns the part of the status every kind shares.
	GetStackStatus() *StackStatus
	// GetDriftDetection returns spec.driftDetection.
	GetDriftDetection() DriftDetectionSpec
}

var (
	_ Object = (*TFRCluster)(nil)
	_ Object = (*TFRTenant)(nil)
	_ Object = (*TFRServer)(nil)
)

// Stacks are the Pulumi stacks of one object, named by package stackname.
//
// +kubebuilder:object:generate=false
type Stacks struct {
	// Own is the object's own stack.
	Own string
	// Shared is a personal tenant's job-type stack, which the job type's tenants share
	// ("" for every other object).
	Shared string
	// Parent is the stack whose outputs the object's programs read ("" for a cluster).
	Parent string
	// Children is the name prefix of the stacks that may name Own as their parent (a
	// cluster's tenants and job-type stacks, a tenant's servers); "" when none can.
	Children string
}

// ParentRef names the object another one consumes: a tenant's cluster, a server's tenant (in
// the server's namespace).
//
// +kubebuilder:object:generate=false
type ParentRef struct {
	Kind Kind
	Name string
	// Field is the spec field that holds Name.
	Field *field.Path
}

// previous returns old as the kind of x, or a field error when it is of another kind.
func previous[T Object](x T, old Object) (T, field.ErrorList) {
	o, ok := old.(T)
	if !ok {
		got := Kind("")
		if old != nil {
			got = old.KindName()
		}
		return o, field.ErrorList{field.Invalid(field.NewPath("kind"), got, "an update cannot change the kind: want "+string(x.KindName()))}
	}
	return o, nil
}

// setParent sets *ref to name when it is empty.
func setParent(ref *string, name string) {
	if *ref == "" {
		*ref = name
	}
}

// TFRCluster

// KindName is TFRCluster.
func (*TFRCluster) KindName() Kind { return KindTFRCluster }

// StackLevel is stackname.LevelCluster.
func (*TFRCluster) StackLevel() string { return stackname.LevelCluster }

// Namespaced is false: a TFRCluster is cluster-scoped.
func (*TFRCluster) Namespaced() bool { return false }

// Stacks: cluster.<name>; every tenant stack may name it as its parent.
func (x *TFRCluster) Stacks() (Stacks, error) {
	own, err := stackname.Cluster(x.Name)
	return Stacks{Own: own, Children: stackname.Prefix(stackname.LevelTenant, "")}, err
}

// Parent: a cluster has none.
func (*TFRCluster) Parent() ParentRef { return ParentRef{} }

// SetParent does nothing: a cluster has no parent.
func (*TFRCluster) SetParent(string) {}

// VisitSecrets visits the image registry's plain-text password.
func (x *TFRCluster) VisitSecrets(fn func(p *field.Path, v string) string) {
	if r := x.Spec.ImageRegistry; r != nil && r.Credentials != nil && r.Credentials.Password != "" {
		r.Credentials.Password = fn(field.NewPath("spec", "imageRegistry", "credentials", "password"), r.Credentials.Password)
	}
}

// DataDeletionPolicy is "": a cluster holds no stateful data of its own.
func (*TFRCluster) DataDeletionPolicy() DeletionPolicy { return "" }

// Approval is the approval gate's mode (spec.approval, default OnDataLoss).
func (x *TFRCluster) Approval() ApprovalMode { return x.Spec.Approval.Effective() }

// Suspended is spec.suspend.
func (x *TFRCluster) Suspended() bool { return x.Spec.Suspend }

// GetSpec returns &x.Spec.
func (x *TFRCluster) GetSpec() any { return &x.Spec }

// GetStackStatus returns the shared part of the status.
func (x *TFRCluster) GetStackStatus() *StackStatus { return &x.Status.StackStatus }

// GetDriftDetection returns spec.driftDetection.
func (x *TFRCluster) GetDriftDetection() DriftDetectionSpec { return x.Spec.DriftDetection }

// TFRTenant

// KindName is TFRTenant.
func (*TFRTenant) KindName() Kind { return KindTFRTenant }

// StackLevel is stackname.LevelTenant.
func (*TFRTenant) StackLevel() string { return stackname.LevelTenant }

// Namespaced is true.
func (*TFRTenant) Namespaced() bool { return true }

// Stacks: tenant.<namespace>.<name>, a personal tenant's job-type stack, its cluster's stack
// as parent; the servers of its namespace may name it as their parent.
func (x *TFRTenant) Stacks() (Stacks, error) {
	own, shared, err := x.OwnStacks()
	if err != nil {
		return Stacks{}, err
	}
	parent, err := stackname.Cluster(x.Spec.ClusterRef)
	return Stacks{Own: own, Shared: shared, Parent: parent, Children: stackname.Prefix(stackname.LevelServer, x.Namespace)}, err
}

// OwnStacks are the stacks the tenant runs on: its own, and for a personal tenant the shared
// stack of its job type ("" for an enterprise tenant).
func (x *TFRTenant) OwnStacks() (own, shared string, err error) {
	if own, err = stackname.Tenant(x.Namespace, x.Name); err != nil {
		return "", "", err
	}
	if x.Spec.Type == TenantPersonal {
		if shared, err = stackname.PersonalShared(x.Spec.JobType); err != nil {
			return "", "", err
		}
	}
	return own, shared, nil
}

// Parent is the tenant's TFRCluster (spec.clusterRef).
func (x *TFRTenant) Parent() ParentRef {
	return ParentRef{Kind: KindTFRCluster, Name: x.Spec.ClusterRef, Field: field.NewPath("spec", "clusterRef")}
}

// SetParent fills spec.clusterRef when it is empty.
func (x *TFRTenant) SetParent(name string) { setParent(&x.Spec.ClusterRef, name) }

// VisitSecrets visits nothing: a tenant's credentials are references to Secrets, never values.
func (*TFRTenant) VisitSecrets(func(*field.Path, string) string) {}

// DataDeletionPolicy is spec.deletionPolicy (PostgreSQL, MinIO, PVCs).
func (x *TFRTenant) DataDeletionPolicy() DeletionPolicy { return x.Spec.DeletionPolicy }

// Approval is the approval gate's mode (spec.approval, default OnDataLoss).
func (x *TFRTenant) Approval() ApprovalMode { return x.Spec.Approval.Effective() }

// Suspended is spec.suspend.
func (x *TFRTenant) Suspended() bool { return x.Spec.Suspend }

// GetSpec returns &x.Spec.
func (x *TFRTenant) GetSpec() any { return &x.Spec }

// GetStackStatus returns the shared part of the status.
func (x *TFRTenant) GetStackStatus() *StackStatus { return &x.Status.StackStatus }

// GetDriftDetection returns spec.driftDetection.
func (x *TFRTenant) GetDriftDetection() DriftDetectionSpec { return x.Spec.DriftDetection }

// TFRServer

// KindName is TFRServer.
func (*TFRServer) KindName() Kind { return KindTFRServer }

// StackLevel is stackname.LevelServer.
func (*TFRServer) StackLevel() string { return stackname.LevelServer }

// Namespaced is true.
func (*TFRServer) Namespaced() bool { return true }

// Stacks: server.<namespace>.<name>, its tenant's stack as parent; no stack names a server's
// as its parent.
func (x *TFRServer) Stacks() (Stacks, error) {
	own, err := stackname.Server(x.Namespace, x.Name)
	if err != nil {
		return Stacks{}, err
	}
	parent, err := stackname.Tenant(x.Namespace, x.Spec.TenantRef)
	return Stacks{Own: own, Parent: parent}, err
}

// Parent is the server's TFRTenant (spec.tenantRef, in the server's namespace).
func (x *TFRServer) Parent() ParentRef {
	return ParentRef{Kind: KindTFRTenant, Name: x.Spec.TenantRef, Field: field.NewPath("spec", "tenantRef")}
}

// SetParent fills spec.tenantRef when it is empty.
func (x *TFRServer) SetParent(name string) { setParent(&x.Spec.TenantRef, name) }

// VisitSecrets visits the spec.secretData values (API keys, in plain text in the spec).
func (x *TFRServer) VisitSecrets(fn func(p *field.Path, v string) string) {
	p := field.NewPath("spec", "secretData")
	for k, v := range x.Spec.SecretData {
		// Only a changed value is written back, so that a visitor that just reads (the
		// operator's message redaction) never writes to the object.
		if nv := fn(p.Key(k), v); nv != v {
			x.Spec.SecretData[k] = nv
		}
	}
}

// DataDeletionPolicy is "": a server's data lives in its tenant's stores.
func (*TFRServer) DataDeletionPolicy() DeletionPolicy { return "" }

// Approval is the approval gate's mode (spec.approval, default OnDataLoss).
func (x *TFRServer) Approval() ApprovalMode { return x.Spec.Approval.Effective() }

// Suspended is spec.suspend.
func (x *TFRServer) Suspended() bool { return x.Spec.Suspend }

// GetSpec returns &x.Spec.
func (x *TFRServer) GetSpec() any { return &x.Spec }

// GetStackStatus returns the shared part of the status.
func (x *TFRServer) GetStackStatus() *StackStatus { return &x.Status.StackStatus }

// GetDriftDetection returns spec.driftDetection.
func (x *TFRServer) GetDriftDetection() DriftDetectionSpec { return x.Spec.DriftDetection }
