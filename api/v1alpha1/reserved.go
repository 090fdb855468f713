package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/components/cluster/clusterns"
)

// Reserved namespaces: no tenant may target them. The built-in part is checked by
// TFRTenant.Validate, so every door refuses it before anything runs; a cluster's
// spec.reservedNamespaces extends it for the tenants of that cluster (checked where a tenant
// reads its cluster's stack, see ReservedNamespaceReason).
const (
	// ReservedNamespacePrefix: every kube-* namespace belongs to Kubernetes itself.
	ReservedNamespacePrefix = "kube-"
	// DefaultNamespace is Kubernetes' default namespace.
	DefaultNamespace = "default"
	// DefaultOperatorNamespace is where TFRS itself runs (config/default's namespace). An
	// operator running elsewhere adds its own namespace through the runner's options.
	DefaultOperatorNamespace = "tfrs-system"
)

// BuiltinReservedNamespaces are the namespaces reserved on every cluster besides the kube-*
// prefix: "default", every namespace the cluster stack installs into, and TFRS's own.
func BuiltinReservedNamespaces() []string {
	out := append([]string{DefaultNamespace}, clusterns.All()...)
	out = append(out, DefaultOperatorNamespace)
	slices.Sort(out)
	return slices.Compact(out)
}

// ReservedNamespaceReason says why namespace ns may not be a tenant's ("" when it may):
// the kube-* prefix, a built-in name, or one of extra (a cluster's spec.reservedNamespaces,
// an operator's own namespace).
func ReservedNamespaceReason(ns string, extra ...string) string {
	switch {
	case strings.HasPrefix(ns, ReservedNamespacePrefix):
		return fmt.Sprintf("namespace %q is reserved: %s* namespaces belong to Kubernetes", ns, ReservedNamespacePrefix)
	case slices.Contains(BuiltinReservedNamespaces(), ns):
		return fmt.Sprintf("namespace %q is reserved for the platform (one of %s)", ns, strings.Join(BuiltinReservedNamespaces(), ", "))
	case slices.Contains(extra, ns):
		return fmt.Sprintf("namespace %q is reserved by the cluster (spec.reservedNamespaces or the operator's own namespace)", ns)
	}
	return ""
}

// ReservedNamespaceErrors refuses a tenant whose target namespace (spec.namespace or its
// default: metadata.name, or personal-<jobType> for a personal tenant) is reserved, with the
// error at spec.namespace. extra extends the built-in list (see ReservedNamespaceReason).
func ReservedNamespaceErrors(t *TFRTenant, extra ...string) field.ErrorList {
	ns := t.TargetNamespace()
	reason := ReservedNamespaceReason(ns, extra...)
	if reason == "" {
		return nil
	}
	if t.Spec.Namespace == "" {
		reason += " (it is the tenant's default namespace: set spec.namespace)"
	} else {
		reason += ": pick another name"
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "namespace"), reason)}
}
