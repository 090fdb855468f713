package clusterns

import (
	"slices"
	"testing"
)

// Every role is carried by exactly one namespace TFRS knows, every namespace the mesh
// policies trust by name has a caller role, and the operators' namespaces have theirs.
func TestPlatformRoles(t *testing.T) {
	seen := map[string]string{}
	for ns, r := range roles {
		if !slices.Contains(Roles(), r) {
			t.Errorf("namespace %s has unknown role %q", ns, r)
		}
		if other, dup := seen[r]; dup {
			t.Errorf("role %q on both %s and %s", r, ns, other)
		}
		seen[r] = ns
		if got := Labels(ns)[PlatformRoleLabel]; got != r {
			t.Errorf("Labels(%s) = %q, want %q", ns, got, r)
		}
	}
	if len(seen) != len(Roles()) {
		t.Errorf("roles %v, namespaces with a role %v", Roles(), seen)
	}
	for _, ns := range Trusted() {
		if !slices.Contains(CallerRoles(), roles[ns]) {
			t.Errorf("trusted namespace %s has role %q, not a caller role", ns, roles[ns])
		}
	}
	if len(Trusted()) != len(CallerRoles()) {
		t.Errorf("Trusted() = %v, caller roles %v", Trusted(), CallerRoles())
	}
	for _, ns := range []string{CertManager, PullSecret, "acme", ""} {
		if Labels(ns) != nil {
			t.Errorf("Labels(%q) = %v, want none", ns, Labels(ns))
		}
	}
}
