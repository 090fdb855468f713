//go:build integration

package stacks

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
)

// Of every pod TFRS itself renders (Deployments, Jobs, the charts with TFRS's values), the
// API server's egress allow selects exactly the tenant's Prometheus and a robot's grafana-sa
// Job: no robot worker, API worker, front end, chart or init Job of another kind reaches the
// API server, and a label change that would cut the two off fails here. (The middleware
// operators' pods carry the operators' own labels, which TFRS does not render.)
func TestEgressAPIServerClientsAmongRenderedPods(t *testing.T) {
	var m v1alpha1.TenantMiddleware
	standInCharts(t, &m)
	var regs []*registration
	ent := newEnterprise(func(s *v1alpha1.TFRTenantSpec) { s.TenantMiddleware = m })
	regs = append(regs, runTenant(t, TenantInput{Tenant: ent, Cluster: testTenantCluster}, enterpriseStack, nil).m.regs...)
	on := ptr.To(true)
	for _, to := range []TenantOutputs{enterpriseTenant(t), personalTenant(t)} {
		s := newServer(func(s *v1alpha1.TFRServerSpec) {
			s.InitJobs = v1alpha1.InitJobs{DBInit: on, MinIOInit: on, GrafanaSA: on}
		})
		regs = append(regs, runServer(t, ServerInput{Server: s, Tenant: to}).m.regs...)
	}
	selected := map[string]bool{}
	pods := podTemplates(t, regs)
	for _, p := range pods {
		for _, c := range tenant.APIServerClients {
			sel := metav1.LabelSelector{MatchLabels: c.Labels}
			for _, k := range c.Exists {
				sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpExists})
			}
			s, err := metav1.LabelSelectorAsSelector(&sel)
			require.NoError(t, err)
			if s.Matches(labels.Set(p.meta.Labels)) {
				selected[c.Name] = true
				require.Contains(t, []string{"prometheus", "grafana-sa"}, c.Name, "%s reaches the API server as %s", p.source, c.Name)
			}
		}
	}
	require.Equal(t, map[string]bool{"prometheus": true, "grafana-sa": true}, selected, "of %d pod templates", len(pods))
	t.Logf("%d rendered pod templates, the API server allowed for %v", len(pods), selected)
}
