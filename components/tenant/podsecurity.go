package tenant

// Pod Security Admission on every tenant namespace: the API server itself refuses any pod
// there that is not `restricted` (privileged, host namespaces, hostPath, root, added
// capabilities, privilege escalation, no seccomp), whoever creates it: the applier, a chart,
// an operator's controller. The labels are set on the Namespace, which only the provisioner
// writes (the applier's Role has no rights on namespaces, and a Role cannot grant any:
// namespaces are cluster-scoped), so nothing a tenant controls can lower the level. Every pod
// TFRS renders into the namespace is restricted-compliant by construction
// (components/internal/podsec); docs/security/pod-security.md states the property.

// Pod Security Admission labels.
const (
	podSecurityPrefix = "pod-security.kubernetes.io/"
	// PodSecurityLevel is the level tenant namespaces enforce, audit and warn at.
	PodSecurityLevel = "restricted"
	// PodSecurityVersion pins the policy to the control plane minor TFRS is built against
	// (the k8s.io/api module in go.mod, v0.37 → Kubernetes 1.37; TestPodSecurityVersionFollowsGoMod
	// keeps them together), so a control plane upgrade does not tighten the rules under
	// running tenants until TFRS moves with it.
	PodSecurityVersion = "v1.37"
)

// PodSecurityLabels are the labels that put a namespace under PodSecurityLevel: enforced
// (refused), audited and warned, all at PodSecurityVersion.
func PodSecurityLabels() map[string]string {
	out := map[string]string{}
	for _, mode := range []string{"enforce", "audit", "warn"} {
		out[podSecurityPrefix+mode] = PodSecurityLevel
		out[podSecurityPrefix+mode+"-version"] = PodSecurityVersion
	}
	return out
}

// withPodSecurity is labels with PodSecurityLabels applied last: a label passed in
// NamespaceArgs.Labels can never lower the level.
func withPodSecurity(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels)+6)
	for k, v := range labels {
		out[k] = v
	}
	for k, v := range PodSecurityLabels() {
		out[k] = v
	}
	return out
}
