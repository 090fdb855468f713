// Package kinds is the program table of tfrs: for a TFRCluster, TFRTenant or TFRServer, which
// stacks it has (Target), which program runs on each (ProgramsOf) and which parent outputs
// those programs read (Parents). It is the one place in tfrs that dispatches on the concrete
// kind (programs.go); everything else a door needs to know about a kind is the kind's own
// description, the v1alpha1.Object interface.
//
// The package is free of the Automation API driver (stacks/engine): the stock-CLI entry
// program (cmd/pulumi-program, through Program) links it without the engine, and the runner
// (stacks/runner) drives the same programs through the engine. TestNoDriver keeps it so.
package kinds

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Target is where an object's operations go.
type Target struct {
	Kind      v1alpha1.Kind `json:"kind"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name"`
	// Stack is the object's own stack.
	Stack string `json:"stack"`
	// Shared is a personal tenant's job-type stack (see stackname.PersonalShared).
	Shared string `json:"shared,omitempty"`
	// Parent is the stack the object waits for ("" for a cluster): its cluster's stack for a
	// tenant, its tenant's stack for a server.
	Parent string `json:"parent,omitempty"`
	// ParentKind and ParentName name the parent object (ParentName is in Namespace for a
	// server's tenant).
	ParentKind v1alpha1.Kind `json:"parentKind,omitempty"`
	ParentName string        `json:"parentName,omitempty"`
	// Children is the name prefix of the stacks that may name Stack as their parent (see
	// v1alpha1.Stacks): where a parent's dependents are looked for. Not part of the JSON form,
	// which reports and operations show.
	Children string `json:"-"`
	// Immutable is the object's immutable fields as the own stack records them (see
	// Immutable); set by Prepare, "" for a kind without any.
	Immutable string `json:"-"`
}

// String is "TFRTenant ns/name".
func (t Target) String() string {
	if t.Namespace == "" {
		return fmt.Sprintf("%s %s", t.Kind, t.Name)
	}
	return fmt.Sprintf("%s %s/%s", t.Kind, t.Namespace, t.Name)
}

// TargetOf names the stacks of obj without validating its spec.
func TargetOf(obj v1alpha1.Object) (Target, error) {
	if obj == nil {
		return Target{}, errors.New("runner: nil object")
	}
	s, err := obj.Stacks()
	if err != nil {
		return Target{}, err
	}
	t := Target{Kind: obj.KindName(), Name: obj.GetName(), Stack: s.Own, Shared: s.Shared, Parent: s.Parent, Children: s.Children}
	if obj.Namespaced() {
		t.Namespace = obj.GetNamespace()
	}
	p := obj.Parent() // zero for a cluster
	t.ParentKind, t.ParentName = p.Kind, p.Name
	return t, nil
}

// Prepare returns a defaulted copy of obj and its target, or an *InvalidError naming every
// field that breaks a rule. Nothing runs before it passes.
func Prepare(obj v1alpha1.Object) (Target, v1alpha1.Object, error) {
	if obj != nil {
		c := obj.DeepCopyObject().(v1alpha1.Object)
		c.Default()
		if errs := withHygiene(c.Validate(), c); len(errs) > 0 {
			return Target{}, nil, &InvalidError{Errors: errs}
		}
		obj = c
	}
	t, err := TargetOf(obj)
	if err != nil {
		return Target{}, nil, &InvalidError{Errors: field.ErrorList{field.Invalid(field.NewPath("metadata"), nil, err.Error())}}
	}
	t.Immutable = Immutable(obj)
	return t, obj, nil
}

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

// Sentinel errors; the typed errors match them with errors.Is.
var (
	ErrInvalid        = errors.New("invalid spec")
	ErrParentNotReady = errors.New("parent not ready")
)

// ParentError says the parent stack is missing or not ready (yet).
type ParentError struct {
	Kind   v1alpha1.Kind // parent kind
	Name   string        // parent name
	Stack  string
	Reason string
}

func (e *ParentError) Error() string {
	return fmt.Sprintf("waiting for %s %q (stack %s): %s", e.Kind, e.Name, e.Stack, e.Reason)
}

// Is makes errors.Is(err, ErrParentNotReady) true.
func (e *ParentError) Is(target error) bool { return target == ErrParentNotReady }

// parentErr fills in which parent a ParentError is about.
func (t Target) parentErr(err error) error {
	var pe *ParentError
	if errors.As(err, &pe) && pe.Kind == "" {
		pe.Kind, pe.Name = t.ParentKind, t.ParentName
	}
	return err
}

// withHygiene adds the control-character refusals (v1alpha1.ControlCharErrors) to errs, but
// none at a field errs already names: one problem per field is enough.
func withHygiene(errs field.ErrorList, obj v1alpha1.Object) field.ErrorList {
	named := map[string]bool{}
	for _, e := range errs {
		named[e.Field] = true
	}
	for _, e := range v1alpha1.ControlCharErrors(obj) {
		if !named[e.Field] {
			errs = append(errs, e)
		}
	}
	return errs
}
