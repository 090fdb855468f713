package v1alpha1

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
)

// TestIsolationReservedNamespaceList pins the built-in reserved list: kube-*, default, every
// namespace the cluster stack installs into and the operator's own.
func TestIsolationReservedNamespaceList(t *testing.T) {
	want := []string{"cert-manager", "cnpg-system", "default", "istio-ingress", "istio-system", "minio-operator", "rabbitmq-system", "tfrs-system"}
	if got := BuiltinReservedNamespaces(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("BuiltinReservedNamespaces() = %v, want %v", got, want)
	}
	for _, ns := range clusterns.All() {
		if ReservedNamespaceReason(ns) == "" {
			t.Errorf("cluster stack namespace %q is not reserved", ns)
		}
	}
	for _, tc := range []struct {
		ns       string
		extra    []string
		reserved bool
	}{
		{"kube-system", nil, true},
		{"kube-public", nil, true},
		{"kube-node-lease", nil, true},
		{"kube-anything", nil, true},
		{"default", nil, true},
		{"istio-system", nil, true},
		{"tfrs-system", nil, true},
		{"acme", nil, false},
		{"kubeflow", nil, false}, // the prefix is "kube-", not "kube"
		{"team-payments", []string{"team-payments"}, true},
		{"team-payments", []string{"team-ops"}, false},
	} {
		if got := ReservedNamespaceReason(tc.ns, tc.extra...) != ""; got != tc.reserved {
			t.Errorf("ReservedNamespaceReason(%q, %v) reserved = %v, want %v", tc.ns, tc.extra, got, tc.reserved)
		}
	}
}

// TestIsolationReservedNamespaceValidate: every door runs Validate, which refuses a reserved
// target namespace at spec.namespace, whether set or defaulted.
func TestIsolationReservedNamespaceValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*TFRTenant)
		want string
	}{
		{"spec.namespace kube-system", func(x *TFRTenant) { x.Spec.Namespace = "kube-system" }, `"kube-system" is reserved`},
		{"spec.namespace istio-system", func(x *TFRTenant) { x.Spec.Namespace = "istio-system" }, `"istio-system" is reserved`},
		{"spec.namespace tfrs-system", func(x *TFRTenant) { x.Spec.Namespace = "tfrs-system" }, `"tfrs-system" is reserved`},
		{"default from metadata.name", func(x *TFRTenant) { x.Name = "default" }, "set spec.namespace"},
		{"personal with spec.namespace cert-manager", func(x *TFRTenant) {
			x.Spec.Type, x.Spec.JobType, x.Spec.Namespace = TenantPersonal, "chat", "cert-manager"
		}, `"cert-manager" is reserved`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newTenant(tc.mut)
			errs := x.Validate()
			if got := errFields(errs); fmt.Sprint(got) != "[spec.namespace]" {
				t.Fatalf("error fields = %v, want [spec.namespace]: %v", got, errs.ToAggregate())
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("error %q does not say %q", errs.ToAggregate(), tc.want)
			}
		})
	}
	if errs := newTenant(func(x *TFRTenant) { x.Spec.Namespace = "team-a" }).Validate(); len(errs) > 0 {
		t.Fatalf("team-a refused: %v", errs.ToAggregate())
	}
	// The cluster's extension is checked with the cluster's list.
	if errs := ReservedNamespaceErrors(newTenant(func(x *TFRTenant) { x.Spec.Namespace = "team-a" }), "team-a"); len(errs) != 1 || errs[0].Field != "spec.namespace" {
		t.Fatalf("cluster-reserved team-a: %v", errs)
	}
}

// TestIsolationReservedNamespaceCRDRule: the CRD's CEL rule on spec.namespace (the CR door's
// admission-time refusal) lists exactly the built-in reserved namespaces.
func TestIsolationReservedNamespaceCRDRule(t *testing.T) {
	quoted := make([]string, 0, len(BuiltinReservedNamespaces()))
	for _, ns := range BuiltinReservedNamespaces() {
		quoted = append(quoted, "'"+ns+"'")
	}
	want := "!self.startsWith('" + ReservedNamespacePrefix + "') && !(self in [" + strings.Join(quoted, ", ") + "])"
	s := loadCRD(t, KindTFRTenant).Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["namespace"]
	for _, r := range s.XValidations {
		if r.Rule == want {
			return
		}
	}
	t.Fatalf("spec.namespace has no rule %q (update the marker on TFRTenantSpec.Namespace): %+v", want, s.XValidations)
}

// TestIsolationReservedNamespaceClusterSpec validates TFRCluster.spec.reservedNamespaces.
func TestIsolationReservedNamespaceClusterSpec(t *testing.T) {
	ok := newCluster(func(c *TFRCluster) { c.Spec.ReservedNamespaces = []string{"team-a", "payments"} })
	if errs := ok.Validate(); len(errs) > 0 {
		t.Fatalf("valid list refused: %v", errs.ToAggregate())
	}
	bad := newCluster(func(c *TFRCluster) { c.Spec.ReservedNamespaces = []string{"Team_A", "x", "x"} })
	if got := errFields(bad.Validate()); fmt.Sprint(got) != "[spec.reservedNamespaces[0] spec.reservedNamespaces[2]]" {
		t.Fatalf("error fields = %v", got)
	}
}
