package stacks

// Namespace ownership. A tenant stack owns the Namespace it creates and nothing else: it marks
// it with AnnotationOwner (its stack name) and, before anything is registered, the caller
// reads the namespace as it is in the cluster (NamespaceState) so DecideNamespace can refuse a
// namespace that is not the stack's. The read is the caller's (the runner, with the
// Kubernetes client, before the engine runs), not the program's: pulumi-kubernetes has no
// optional read (corev1.GetNamespace fails the run when the namespace is absent), a refusal
// found inside a program reaches the doors only as an engine failure, and a program that takes
// what the cluster holds as an input stays pure and testable under mocks.

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// AnnotationOwner on a Namespace names the stack that created it.
const AnnotationOwner = "tfrs.io/owner"

// NamespaceState is the tenant's target namespace as the caller found it before the run.
type NamespaceState struct {
	// Exists: the namespace is in the cluster.
	Exists bool
	// Owner is its AnnotationOwner value ("" without one).
	Owner string
	// InState: the owning stack's own state already manages a kubernetes:core/v1:Namespace
	// of this name, so the stack created it before the marker existed (the upgrade path).
	InState bool
}

// NamespaceDecision is what the tenant program does with its namespace.
type NamespaceDecision string

// The decisions DecideNamespace takes.
const (
	// NamespaceCreate: absent; the stack creates and marks it.
	NamespaceCreate NamespaceDecision = "create"
	// NamespaceOurs: present with this stack's marker.
	NamespaceOurs NamespaceDecision = "ours"
	// NamespaceAdoptMarker: present without a marker, but this stack's state shows it created
	// it (a stack from before the marker); this up writes the marker.
	NamespaceAdoptMarker NamespaceDecision = "adopt-marker"
	// NamespaceUnverified: the namespace could not be read (render mode, mocks, a run without
	// cluster access): nothing is refused, and the Namespace is never deleted on destroy.
	NamespaceUnverified NamespaceDecision = "unverified"
)

// DecideNamespace decides, for stack, whether it may manage namespace ns as found in st (nil:
// not read). A refusal is the error; it says why, for spec.namespace.
func DecideNamespace(ns, stack string, st *NamespaceState) (NamespaceDecision, error) {
	switch {
	case st == nil:
		return NamespaceUnverified, nil
	case !st.Exists:
		return NamespaceCreate, nil
	case st.Owner == stack:
		return NamespaceOurs, nil
	case st.Owner != "":
		return "", fmt.Errorf("namespace %s belongs to %s", ns, ownerName(st.Owner))
	case st.InState:
		return NamespaceAdoptMarker, nil
	}
	return "", fmt.Errorf("namespace %s exists and was not created by TFRS: pick another name", ns)
}

// ownerName is how a refusal names the owner: the tenant when the stack is a tenant's.
func ownerName(stack string) string {
	if strings.HasPrefix(stack, "tenant.") {
		return "tenant stack " + stack
	}
	return "stack " + stack
}

// TenantNamespaceErrors are the refusals of the tenant's target namespace that need more than
// its spec: reserved by its cluster (TenantCluster.ReservedNamespaces), or not the namespace
// stack's to manage (DecideNamespace over st, nil when it was not read). stack is the stack
// that creates the namespace (a personal tenant's shared stack). Then the cluster's tenancy
// policy (tenancy.go): a new tenant's namespace claim, at spec.namespace, and its class, at
// spec.class and at every field that exceeds it.
func TenantNamespaceErrors(t *v1alpha1.TFRTenant, c TenantCluster, stack string, st *NamespaceState) field.ErrorList {
	if errs := v1alpha1.ReservedNamespaceErrors(t, c.ReservedNamespaces...); len(errs) > 0 {
		return errs
	}
	decision, err := DecideNamespace(t.TargetNamespace(), stack, st)
	if err != nil {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "namespace"), err.Error())}
	}
	return tenancyErrors(t, c, decision) // tenancy.go: the cluster's tenancy policy
}

// runningStack is the bare stack name of a running program (the engine may qualify it with an
// organization and project).
func runningStack(s string) string { return s[strings.LastIndex(s, "/")+1:] }
