package runner

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/stackname"
)

// Object is a *v1alpha1.TFRCluster, *v1alpha1.TFRTenant or *v1alpha1.TFRServer.
type Object interface {
	metav1.Object
	runtime.Object
}

// Kind is the kind of a TFRS object.
type Kind string

// The three kinds, one per level.
const (
	KindCluster Kind = "TFRCluster"
	KindTenant  Kind = "TFRTenant"
	KindServer  Kind = "TFRServer"
)

// Target is where an object's operations go.
type Target struct {
	Kind      Kind   `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Stack is the object's own stack.
	Stack string `json:"stack"`
	// Shared is a personal tenant's job-type stack (see stacks.PersonalSharedStack).
	Shared string `json:"shared,omitempty"`
	// Parent is the stack the object waits for ("" for a cluster): its cluster's stack for a
	// tenant, its tenant's stack for a server.
	Parent string `json:"parent,omitempty"`
	// ParentKind and ParentName name the parent object (ParentName is in Namespace for a
	// server's tenant).
	ParentKind Kind   `json:"parentKind,omitempty"`
	ParentName string `json:"parentName,omitempty"`
}

// String is "TFRTenant ns/name".
func (t Target) String() string {
	if t.Namespace == "" {
		return fmt.Sprintf("%s %s", t.Kind, t.Name)
	}
	return fmt.Sprintf("%s %s/%s", t.Kind, t.Namespace, t.Name)
}

// TargetOf names the stacks of obj without validating its spec.
func TargetOf(obj Object) (Target, error) {
	switch x := obj.(type) {
	case *v1alpha1.TFRCluster:
		s, err := stackname.Cluster(x.Name)
		return Target{Kind: KindCluster, Name: x.Name, Stack: s}, err
	case *v1alpha1.TFRTenant:
		own, shared, err := stacks.TenantStackNames(x)
		if err != nil {
			return Target{}, err
		}
		parent, err := stackname.Cluster(x.Spec.ClusterRef)
		return Target{Kind: KindTenant, Namespace: x.Namespace, Name: x.Name, Stack: own, Shared: shared,
			Parent: parent, ParentKind: KindCluster, ParentName: x.Spec.ClusterRef}, err
	case *v1alpha1.TFRServer:
		own, err := stackname.Server(x.Namespace, x.Name)
		if err != nil {
			return Target{}, err
		}
		parent, err := stackname.Tenant(x.Namespace, x.Spec.TenantRef)
		return Target{Kind: KindServer, Namespace: x.Namespace, Name: x.Name, Stack: own,
			Parent: parent, ParentKind: KindTenant, ParentName: x.Spec.TenantRef}, err
	case nil:
		return Target{}, errors.New("runner: nil object")
	default:
		return Target{}, fmt.Errorf("runner: unsupported object type %T", obj)
	}
}

// Prepare returns a defaulted copy of obj and its target, or an *InvalidError naming every
// field that breaks a rule. Nothing runs before it passes.
func Prepare(obj Object) (Target, Object, error) {
	var errs field.ErrorList
	switch x := obj.(type) {
	case *v1alpha1.TFRCluster:
		c := x.DeepCopy()
		c.Default()
		obj, errs = c, c.Validate()
	case *v1alpha1.TFRTenant:
		c := x.DeepCopy()
		c.Default()
		obj, errs = c, c.Validate()
	case *v1alpha1.TFRServer:
		c := x.DeepCopy()
		c.Default()
		obj, errs = c, c.Validate()
	}
	if len(errs) > 0 {
		return Target{}, nil, &InvalidError{Errors: errs}
	}
	t, err := TargetOf(obj)
	if err != nil {
		return Target{}, nil, &InvalidError{Errors: field.ErrorList{field.Invalid(field.NewPath("metadata"), nil, err.Error())}}
	}
	return t, obj, nil
}

func (r *Runner) prepare(obj Object) (Target, Object, error) { return Prepare(obj) }

// InvalidError is a spec that breaks validation rules; Errors names every field.
type InvalidError struct{ Errors field.ErrorList }

func (e *InvalidError) Error() string {
	msgs := make([]string, 0, len(e.Errors))
	for _, fe := range e.Errors {
		msgs = append(msgs, fe.Error())
	}
	return "invalid spec: " + strings.Join(msgs, "; ")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Sentinel errors; the typed errors below match them with errors.Is.
var (
	ErrInvalid          = errors.New("invalid spec")
	ErrParentNotReady   = errors.New("parent not ready")
	ErrDependentsExist  = errors.New("dependents exist")
	ErrManagedElsewhere = errors.New("stack managed by another door")
)

// ParentError says the parent stack is missing or not ready (yet).
type ParentError struct {
	Kind   Kind   // parent kind
	Name   string // parent name
	Stack  string
	Reason string
}

func (e *ParentError) Error() string {
	return fmt.Sprintf("waiting for %s %q (stack %s): %s", e.Kind, e.Name, e.Stack, e.Reason)
}

// Is makes errors.Is(err, ErrParentNotReady) true.
func (e *ParentError) Is(target error) bool { return target == ErrParentNotReady }

// DependentsError refuses to destroy a stack that others still depend on.
type DependentsError struct {
	Stack      string
	Dependents []string
}

func (e *DependentsError) Error() string {
	return fmt.Sprintf("stack %s still has %d dependent stack(s): %s; delete them first", e.Stack, len(e.Dependents), strings.Join(e.Dependents, ", "))
}

// Is makes errors.Is(err, ErrDependentsExist) true.
func (e *DependentsError) Is(target error) bool { return target == ErrDependentsExist }

// ManagedElsewhereError refuses a mutation through the wrong door.
type ManagedElsewhereError struct {
	Stack     string
	ManagedBy engine.ManagedBy
}

func (e *ManagedElsewhereError) Error() string {
	if e.ManagedBy == engine.ManagedByOperator {
		return fmt.Sprintf("stack %s is managed by the operator: edit the custom resource instead", e.Stack)
	}
	return fmt.Sprintf("stack %s is managed by %s, not by the operator: manage it through %s or delete it there first", e.Stack, e.ManagedBy, e.ManagedBy)
}

// Is makes errors.Is(err, ErrManagedElsewhere) true.
func (e *ManagedElsewhereError) Is(target error) bool { return target == ErrManagedElsewhere }
