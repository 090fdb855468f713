package stacks

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

func TestSharedStackOwner(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deleting := newPersonal("aaron", t0.Add(-time.Hour), nil)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	other := newPersonal("zed", t0.Add(-2*time.Hour), func(s *v1alpha1.TFRTenantSpec) { s.JobType = "code" })
	tenants := []v1alpha1.TFRTenant{*newPersonal("bob", t0, nil), *deleting, *other, *newEnterprise(nil), *newPersonal("alice", t0, nil)}
	if o := SharedStackOwner(tenants, "chat"); o == nil || o.Name != "alice" {
		t.Errorf("owner = %v, want alice (oldest live, name breaks the tie)", o)
	}
	if o := SharedStackOwner(tenants, "code"); o == nil || o.Name != "zed" {
		t.Errorf("code owner = %v", o)
	}
	// A suspended tenant runs nothing, so it is never the owner: the next oldest drives.
	suspended := newPersonal("aaron", t0.Add(-time.Hour), func(s *v1alpha1.TFRTenantSpec) { s.Suspend = true })
	if o := SharedStackOwner(append(tenants, *suspended), "chat"); o == nil || o.Name != "alice" {
		t.Errorf("owner = %v, want alice (the older aaron is suspended)", o)
	}
	if o := SharedStackOwner([]v1alpha1.TFRTenant{*deleting}, "chat"); o != nil {
		t.Errorf("owner %s among tenants being deleted: the shared stack should go", o.Name)
	}
	if _, err := PersonalSharedStack(""); err == nil {
		t.Error("empty job type accepted")
	}
	own, shared, err := TenantStackNames(newEnterprise(nil))
	check(t, "enterprise stacks", []any{own, shared, err}, []any{enterpriseStack, "", nil})
}
