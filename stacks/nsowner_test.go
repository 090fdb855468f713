package stacks

import (
	"strings"
	"testing"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// TestIsolationNamespaceOwnershipDecision is the ownership table: absent → create, ours →
// ours, another stack's → refused naming it, unmarked → refused unless this stack's own state
// manages it (the upgrade path), not read → unverified.
func TestIsolationNamespaceOwnershipDecision(t *testing.T) {
	const ns, me, other = "acme", "tenant.team.acme", "tenant.team.globex"
	for _, tc := range []struct {
		name string
		st   *NamespaceState
		want NamespaceDecision
		err  string
	}{
		{"absent", &NamespaceState{}, NamespaceCreate, ""},
		{"absent, stale state", &NamespaceState{InState: true}, NamespaceCreate, ""},
		{"ours", &NamespaceState{Exists: true, Owner: me}, NamespaceOurs, ""},
		{"ours and in state", &NamespaceState{Exists: true, Owner: me, InState: true}, NamespaceOurs, ""},
		{"another tenant's", &NamespaceState{Exists: true, Owner: other}, "", "namespace acme belongs to tenant stack " + other},
		{"another tenant's, even in our state", &NamespaceState{Exists: true, Owner: other, InState: true}, "", "belongs to tenant stack " + other},
		{"unmarked: another team's", &NamespaceState{Exists: true}, "", "namespace acme exists and was not created by TFRS: pick another name"},
		{"unmarked, created by this stack before the marker", &NamespaceState{Exists: true, InState: true}, NamespaceAdoptMarker, ""},
		{"not read (render, mocks)", nil, NamespaceUnverified, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecideNamespace(ns, me, tc.st)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("DecideNamespace = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestIsolationNamespaceOwnershipRefusesBeforeRegistering: a namespace that is not the
// stack's fails the program with spec.namespace named and nothing registered; so does a
// namespace the cluster reserves.
func TestIsolationNamespaceOwnershipRefusesBeforeRegistering(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      TenantInput
		message string
	}{
		{"unmarked namespace", TenantInput{Tenant: newEnterprise(nil), Cluster: testTenantCluster, Namespace: &NamespaceState{Exists: true}}, "was not created by TFRS"},
		{"another tenant's", TenantInput{Tenant: newEnterprise(nil), Cluster: testTenantCluster, Namespace: &NamespaceState{Exists: true, Owner: "tenant.x.y"}}, "belongs to tenant stack tenant.x.y"},
		{"reserved by the cluster", TenantInput{Tenant: newEnterprise(nil), Cluster: func() TenantCluster {
			c := testTenantCluster
			c.ReservedNamespaces = []string{"acme"}
			return c
		}(), Namespace: &NamespaceState{}}, "reserved by the cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := runTenantErr(tc.in, enterpriseStack, nil)
			if err == nil || !strings.Contains(err.Error(), "spec.namespace") || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("err = %v, want spec.namespace and %q", err, tc.message)
			}
			if n := len(r.m.regs); n != 0 {
				t.Fatalf("%d resources registered before the refusal", n)
			}
		})
	}
}

// TestIsolationNamespaceDestroyKeepsUnverified: with deletionPolicy Delete the Namespace is
// deleted on destroy only when the stack verified it is its own (absent → created, ours, or
// adopted on the upgrade path); a namespace whose ownership was not read is retained.
func TestIsolationNamespaceDestroyKeepsUnverified(t *testing.T) {
	del := func(s *v1alpha1.TFRTenantSpec) { s.DeletionPolicy = v1alpha1.DeletionDelete }
	for _, tc := range []struct {
		name   string
		st     *NamespaceState
		retain bool
	}{
		{"created", &NamespaceState{}, false},
		{"ours", &NamespaceState{Exists: true, Owner: enterpriseStack}, false},
		{"upgrade path", &NamespaceState{Exists: true, InState: true}, false},
		{"not verified", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTenant(t, TenantInput{Tenant: newEnterprise(del), Cluster: testTenantCluster, Namespace: tc.st}, enterpriseStack, nil)
			ns := r.m.find(t, "kubernetes:core/v1:Namespace", "")
			if ns.Retain != tc.retain {
				t.Fatalf("namespace retainOnDelete = %v, want %v", ns.Retain, tc.retain)
			}
			meta := dig(t, plainInputs(ns.Inputs), "metadata").(map[string]any)
			check(t, "owner marker", meta["annotations"], map[string]any{AnnotationOwner: enterpriseStack})
		})
	}
}
