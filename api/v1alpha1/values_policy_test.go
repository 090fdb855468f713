package v1alpha1

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTenantChartValuesPolicy: values that change a tenant chart's images, identity,
// privileges or namespace, or add objects, are refused at their own path, at any depth; other
// values pass.
func TestTenantChartValuesPolicy(t *testing.T) {
	for _, tc := range []struct {
		grafana, jaeger string
		want            []string // field paths refused, in order
	}{
		{grafana: `{"replicas": 2, "persistence": {"enabled": true}}`},
		{grafana: `{"image": {"repository": "evil.example.com/grafana"}}`, want: []string{"spec.grafana.values.image"}},
		{grafana: `{"sidecar": {"image": {"registry": "evil.example.com"}}}`, want: []string{"spec.grafana.values.sidecar.image"}},
		{grafana: `{"rbac": {"namespaced": false, "extraClusterRoleRules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}}`, want: []string{"spec.grafana.values.rbac"}},
		{grafana: `{"extraObjects": [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding"}]}`, want: []string{"spec.grafana.values.extraObjects"}},
		{grafana: `{"serviceAccount": {"name": "kube-system-admin"}}`, want: []string{"spec.grafana.values.serviceAccount"}},
		{grafana: `{"namespaceOverride": "kube-system"}`, want: []string{"spec.grafana.values.namespaceOverride"}},
		{grafana: `{"global": {"imageRegistry": "evil.example.com"}}`, want: []string{"spec.grafana.values.global"}},
		{grafana: `{"extraContainers": [{"securityContext": {"privileged": true}}]}`, want: []string{"spec.grafana.values.extraContainers[0].securityContext"}},
		{jaeger: `{"hostNetwork": true, "podSecurityContext": {"runAsUser": 0}}`, want: []string{"spec.jaeger.values.hostNetwork", "spec.jaeger.values.podSecurityContext"}},
	} {
		tt := &TFRTenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", Namespace: "tfrs-system"},
			Spec: TFRTenantSpec{ClusterRef: "dev", Type: TenantEnterprise}}
		if tc.grafana != "" {
			tt.Spec.Grafana.Values = &apiextensionsv1.JSON{Raw: []byte(tc.grafana)}
		}
		if tc.jaeger != "" {
			tt.Spec.Jaeger.Values = &apiextensionsv1.JSON{Raw: []byte(tc.jaeger)}
		}
		tt.Default()
		var got []string
		for _, e := range tt.Validate() {
			got = append(got, e.Field)
			if !strings.Contains(e.Error(), "Forbidden") {
				t.Errorf("%s: %v, want Forbidden", e.Field, e)
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s%s: refused %v, want %v", tc.grafana, tc.jaeger, got, tc.want)
		}
	}
}
