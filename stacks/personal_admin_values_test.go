package stacks

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// The chart values of a job type's shared middleware are the cluster admin's
// (TFRCluster spec.personal): free-form, unlike a tenant's (v1alpha1's allowlist). The
// shared stack takes a value off the tenant allowlist and renders it into the chart.
func TestSharedStackTakesTheAdminsChartValues(t *testing.T) {
	raw := `{"grafana.ini": {"users": {"default_theme": "light"}}, "podLabels": {"team": "platform"}}`
	personal := v1alpha1.PersonalSpec{JobTypes: map[string]v1alpha1.TenantMiddleware{"chat": {
		Grafana: v1alpha1.GrafanaSpec{ComponentSource: v1alpha1.ComponentSource{Values: &apiextensionsv1.JSON{Raw: []byte(raw)}}},
	}}}
	enc, err := encodePersonal(&personal)
	if err != nil {
		t.Fatal(err)
	}
	cl := testTenantCluster
	cl.Personal = enc
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := runTenant(t, TenantInput{Tenant: newPersonal("alice", t0, nil), Cluster: cl}, sharedChatStack(t), nil)
	g := plainInputs(r.m.find(t, "kubernetes:helm.sh/v4:Chart", "grafana-chart").Inputs)
	check(t, "admin's grafana.ini", dig(t, g, "values", "grafana.ini", "users", "default_theme"), "light")
	check(t, "admin's podLabels", dig(t, g, "values", "podLabels", "team"), "platform")

	// The same values in an enterprise TFRTenant are refused before anything registers.
	rr, err := runTenantErr(TenantInput{Tenant: newEnterprise(func(s *v1alpha1.TFRTenantSpec) {
		s.Grafana.Values = &apiextensionsv1.JSON{Raw: []byte(raw)}
	}), Cluster: testTenantCluster}, enterpriseStack, nil)
	if err == nil || len(rr.m.regs) != 0 {
		t.Errorf("tenant values off the allowlist: err %v, %d registrations", err, len(rr.m.regs))
	}
}
