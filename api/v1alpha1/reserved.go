package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
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

// PlatformNamespaces are every namespace the platform knows: the built-in reserved ones and
// every namespace a tenant namespace's isolation trusts (clusterns.Trusted: the ingress
// gateway's, the mesh's, the cluster's monitoring). Trust and reservation read the same
// clusterns lists, so a namespace cannot be trusted by every tenant and takeable by one.
func PlatformNamespaces() []string {
	out := append(BuiltinReservedNamespaces(), clusterns.Trusted()...)
	slices.Sort(out)
	return slices.Compact(out)
}

// NamespaceClaimErrors are the rules for a tenant that takes a namespace no stack of it
// holds yet, i.e. a new tenant (the caller tells: stacks.TenantNamespaceErrors applies them
// only when the namespace is to be created, so a tenant whose namespace was taken before a
// rule existed keeps it). Every error is at spec.namespace:
//   - a personal tenant always takes personal-<jobType> (Validate refuses any other), and
//     the personal- prefix is the personal job types': an enterprise tenant may not take it;
//   - a platform namespace (PlatformNamespaces) is nobody's;
//   - the admin's spec.tenancy.allowedNamespacePrefixes, when set, is the allowlist of an
//     enterprise tenant's namespace.
func NamespaceClaimErrors(t *TFRTenant, s *TenancySpec) field.ErrorList {
	p := field.NewPath("spec", "namespace")
	ns := t.TargetNamespace()
	if t.Spec.Type == TenantPersonal {
		return nil // always personal-<jobType>: Validate refuses any other (personal_rules.go)
	}
	reason := namespaceClaimReason(ns, s)
	if reason == "" {
		return nil
	}
	if t.Spec.Namespace == "" {
		reason += " (it is the tenant's default namespace: set spec.namespace)"
	}
	return field.ErrorList{field.Forbidden(p, reason)}
}

// namespaceClaimReason says why a new enterprise tenant may not take ns ("" when it may).
func namespaceClaimReason(ns string, s *TenancySpec) string {
	switch {
	case strings.HasPrefix(ns, PersonalNamespacePrefix):
		return fmt.Sprintf("namespace %q is reserved: %s* namespaces belong to the personal job types", ns, PersonalNamespacePrefix)
	case slices.Contains(PlatformNamespaces(), ns):
		return fmt.Sprintf("namespace %q is reserved for the platform (one of %s): every tenant's isolation trusts it", ns, strings.Join(PlatformNamespaces(), ", "))
	}
	if s == nil || len(s.AllowedNamespacePrefixes) == 0 {
		return ""
	}
	for _, prefix := range s.AllowedNamespacePrefixes {
		if strings.HasPrefix(ns, prefix) {
			return ""
		}
	}
	return fmt.Sprintf("namespace %q is not allowed by the cluster's spec.tenancy.allowedNamespacePrefixes: it must start with one of %s",
		ns, strings.Join(s.AllowedNamespacePrefixes, ", "))
}
