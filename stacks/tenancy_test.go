package stacks

import (
	"strings"
	"testing"
	"time"

	k8scorev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// clusterWithTenancy is testTenantCluster with spec.tenancy s exported.
func clusterWithTenancy(s *v1alpha1.TenancySpec) TenantCluster {
	c := testTenantCluster
	c.Tenancy = tenancyOutput(s)
	return c
}

// TestTenancyNamespaceGrandfathered: the namespace rules refuse a tenant that is about to
// take a platform or personal- namespace, never one whose stack already holds it (the upgrade
// path: such a tenant keeps its namespace and its stack keeps running).
func TestTenancyNamespaceGrandfathered(t *testing.T) {
	for _, ns := range []string{clusterns.Monitoring, "personal-chat"} {
		x := newEnterprise(func(s *v1alpha1.TFRTenantSpec) { s.Namespace = ns })
		for _, tc := range []struct {
			name    string
			st      *NamespaceState
			refused bool
		}{
			{"new: absent", &NamespaceState{}, true},
			{"new: not read", nil, true},
			{"existing: ours", &NamespaceState{Exists: true, Owner: enterpriseStack}, false},
			{"existing: created before the marker", &NamespaceState{Exists: true, InState: true}, false},
		} {
			errs := TenantNamespaceErrors(x, testTenantCluster, enterpriseStack, tc.st)
			if got := len(errs) > 0; got != tc.refused {
				t.Errorf("%s, %s: refused = %v (%v), want %v", ns, tc.name, got, errs.ToAggregate(), tc.refused)
			}
			if tc.refused && (errs[0].Field != "spec.namespace" || !strings.Contains(errs[0].Detail, "reserved")) {
				t.Errorf("%s, %s: %v", ns, tc.name, errs)
			}
		}
	}
	// The admin's allowlist is a rule for new tenants too.
	c := clusterWithTenancy(&v1alpha1.TenancySpec{AllowedNamespacePrefixes: []string{"team-"}})
	if errs := TenantNamespaceErrors(newEnterprise(nil), c, enterpriseStack, &NamespaceState{}); len(errs) != 1 || !strings.Contains(errs[0].Detail, "allowedNamespacePrefixes") {
		t.Fatalf("allowlist: %v", errs)
	}
	if errs := TenantNamespaceErrors(newEnterprise(nil), c, enterpriseStack, &NamespaceState{Exists: true, Owner: enterpriseStack}); len(errs) > 0 {
		t.Fatalf("an existing tenant outside the allowlist: %v", errs)
	}
}

// TestTenancyClassAtTheDoor: the class check runs where the cluster's reserved namespaces
// are checked, for existing tenants too (a class is not grandfathered: the quota is enforced
// on every up), and the program itself refuses before registering anything.
func TestTenancyClassAtTheDoor(t *testing.T) {
	huge := newEnterprise(func(s *v1alpha1.TFRTenantSpec) { s.MinIO.Size = ptr.To(resource.MustParse("1Pi")) })
	errs := TenantNamespaceErrors(huge, testTenantCluster, enterpriseStack, &NamespaceState{Exists: true, Owner: enterpriseStack})
	if !strings.Contains(errs.ToAggregate().Error(), "spec.minio.size: Forbidden: 1Pi exceeds class standard's storage 500Gi") {
		t.Fatalf("errors: %v", errs.ToAggregate())
	}
	gold := newEnterprise(func(s *v1alpha1.TFRTenantSpec) { s.Class = "gold" })
	if errs := TenantNamespaceErrors(gold, testTenantCluster, enterpriseStack, nil); len(errs) != 1 || errs[0].Field != "spec.class" {
		t.Fatalf("unknown class: %v", errs)
	}
	r, err := runTenantErr(TenantInput{Tenant: huge, Cluster: testTenantCluster, Namespace: &NamespaceState{}}, enterpriseStack, nil)
	if err == nil || !strings.Contains(err.Error(), "spec.minio.size") {
		t.Fatalf("program: %v", err)
	}
	if len(r.m.regs) > 0 {
		t.Fatalf("registered %v before refusing", r.m.regs.Names())
	}
}

// TestTenancyQuotaFromClass: the namespace gets the quota of the tenant's class, from the
// cluster's policy; a personal job type's shared namespace gets the personal class.
func TestTenancyQuotaFromClass(t *testing.T) {
	policy := &v1alpha1.TenancySpec{
		Classes: []v1alpha1.TenantClass{
			{Name: "standard"},
			{Name: "gold", Quota: v1alpha1.ClassQuota{Storage: ptr.To(resource.MustParse("2Ti")), Pods: ptr.To[int32](500)}, MaxVolumeSize: ptr.To(resource.MustParse("1Ti"))},
			{Name: "shared", Quota: v1alpha1.ClassQuota{Pods: ptr.To[int32](42)}},
		},
		PersonalClass:          "shared",
		AllowedPriorityClasses: []string{"batch"},
	}
	c := clusterWithTenancy(policy)
	hard := func(r *tenantRun, kind, name string) map[string]any {
		t.Helper()
		for _, reg := range r.m.regs.All(kind) {
			p := pulumitest.Plain(reg.Inputs)
			if pulumitest.At(t, p, "metadata", "name") == name {
				return p
			}
		}
		t.Fatalf("no %s %s in %v", kind, name, r.m.regs.Names())
		return nil
	}
	r := runTenant(t, TenantInput{Tenant: newEnterprise(func(s *v1alpha1.TFRTenantSpec) { s.Class = "gold" }), Cluster: c}, enterpriseStack, nil)
	q := hard(r, "kubernetes:core/v1:ResourceQuota", tenant.ClassObjectName)
	pulumitest.Eq(t, "gold hard", pulumitest.At(t, q, "spec", "hard"), map[string]any{
		"requests.cpu": "32", "requests.memory": "64Gi", "limits.cpu": "128", "limits.memory": "256Gi",
		"requests.storage": "2Ti", "persistentvolumeclaims": "50", "pods": "500", "services": "100",
		"services.nodeports": "0", "services.loadbalancers": "0",
	})
	pulumitest.Eq(t, "gold label", pulumitest.At(t, q, "metadata", "labels", tenant.LabelClass), "gold")
	lr := hard(r, "kubernetes:core/v1:LimitRange", tenant.ClassObjectName)
	pulumitest.Eq(t, "gold volume max", pulumitest.At(t, lr, "spec", "limits", 1, "max", "storage"), "1Ti")
	pq := hard(r, "kubernetes:core/v1:ResourceQuota", tenant.PriorityQuotaName)
	pulumitest.Eq(t, "allowed", pulumitest.At(t, pq, "spec", "scopeSelector", "matchExpressions", 1, "values"), []any{"batch"})

	// A personal job type's shared namespace: the cluster's personal class.
	r = runTenant(t, TenantInput{Tenant: newPersonal("alice", time.Now(), nil), Cluster: c}, sharedChatStack(t), nil)
	pulumitest.Eq(t, "personal class", pulumitest.At(t, hard(r, "kubernetes:core/v1:ResourceQuota", tenant.ClassObjectName), "spec", "hard", "pods"), "42")

	// Without spec.tenancy (a cluster stack from before the output): the built-in class.
	r = runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: testTenantCluster}, enterpriseStack, nil)
	pulumitest.Eq(t, "built-in", pulumitest.At(t, hard(r, "kubernetes:core/v1:ResourceQuota", tenant.ClassObjectName), "metadata", "labels", tenant.LabelClass), "standard")
	noneAllowed := pulumitest.At(t, hard(r, "kubernetes:core/v1:ResourceQuota", tenant.PriorityQuotaName), "spec", "scopeSelector", "matchExpressions").([]any)
	pulumitest.Eq(t, "no priority class allowed: any named class is refused", len(noneAllowed), 1)
}

// unboundedTenantCluster is testTenantCluster with one class, "standard", that bounds
// nothing a schema-valid spec can ask for: for tests that run tenants at the extremes of the
// allowlisted values (what they check is not the class).
func unboundedTenantCluster() TenantCluster {
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	n := ptr.To[int32](v1alpha1.MaxQuotaCount)
	return clusterWithTenancy(&v1alpha1.TenancySpec{Classes: []v1alpha1.TenantClass{{
		Name: v1alpha1.BuiltinClassName,
		Quota: v1alpha1.ClassQuota{RequestsCPU: q("1M"), RequestsMemory: q("1Ei"), LimitsCPU: q("1M"), LimitsMemory: q("1Ei"),
			Storage: q("1Ei"), PersistentVolumeClaims: n, Pods: n, Services: n},
		MaxVolumeSize: q("1Ei"),
		Container: v1alpha1.ContainerLimits{
			Default: v1alpha1.ContainerResources{CPU: q("1M"), Memory: q("1Ei")},
			Max:     v1alpha1.ContainerResources{CPU: q("1M"), Memory: q("1Ei")},
		},
	}}})
}

func TestUnboundedTenantCluster(t *testing.T) {
	huge := newEnterprise(func(s *v1alpha1.TFRTenantSpec) {
		s.MinIO.Servers, s.MinIO.VolumesPerServer, s.MinIO.Size = ptr.To[int32](32), ptr.To[int32](16), ptr.To(resource.MustParse("1Ti"))
		s.TFRSUtils.Replicas = ptr.To[int32](100)
		s.TFRSUtils.Resources.Requests = k8scorev1.ResourceList{k8scorev1.ResourceCPU: resource.MustParse("64"), k8scorev1.ResourceMemory: resource.MustParse("256Gi")}
	})
	if errs := TenantNamespaceErrors(huge, unboundedTenantCluster(), enterpriseStack, &NamespaceState{}); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
}
