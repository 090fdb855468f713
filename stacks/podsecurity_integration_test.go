//go:build integration

package stacks

import (
	"testing"
	"time"

	k8scorev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// TestEveryPodTemplateIsRestricted renders the tenant program (enterprise and personal) and
// the server program (an enterprise robot and a personal one), with TFRS's defaults and with
// every toggle on and workload settings at their extremes, and evaluates every pod at
// restricted.
func TestEveryPodTemplateIsRestricted(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type run struct {
		name string
		regs []*registration
	}
	var runs []run
	for _, variant := range []string{"defaults", "extremes"} {
		var m v1alpha1.TenantMiddleware
		standInCharts(t, &m)
		if variant == "extremes" {
			extremes(t, &m)
		}
		// An enterprise tenant sets its middleware itself; a personal job type's shared stack
		// takes it from the cluster's spec.personal.
		ent := newEnterprise(func(s *v1alpha1.TFRTenantSpec) { s.TenantMiddleware = m })
		r := runTenant(t, TenantInput{Tenant: ent, Cluster: testTenantCluster}, enterpriseStack, nil)
		runs = append(runs, run{"tenant enterprise " + variant, r.m.regs})

		personal, err := encodePersonal(&v1alpha1.PersonalSpec{Middleware: m})
		if err != nil {
			t.Fatal(err)
		}
		c := testTenantCluster
		c.Personal = personal
		r = runTenant(t, TenantInput{Tenant: newPersonal("alice", created, nil), Cluster: c}, sharedChatStack(t), nil)
		runs = append(runs, run{"tenant personal " + variant, r.m.regs})
	}
	for _, tenantName := range []string{"enterprise", "personal"} {
		to := enterpriseTenant(t)
		if tenantName == "personal" {
			to = personalTenant(t)
		}
		for _, variant := range []string{"defaults", "extremes"} {
			s := newServer(func(s *v1alpha1.TFRServerSpec) {
				if variant != "extremes" {
					return
				}
				on := ptr.To(true)
				s.InitJobs = v1alpha1.InitJobs{DBInit: on, MinIOInit: on, GrafanaSA: on}
				for _, w := range []*v1alpha1.WorkloadSpec{&s.APIWorker, &s.RobotWorker} {
					w.Replicas = ptr.To(int32(3))
					w.Resources.Limits = k8scorev1.ResourceList{k8scorev1.ResourceMemory: k8sresource.MustParse("1Gi")}
				}
				s.ConfzData = "[robot]\nname = \"x\"\n"
			})
			r := runServer(t, ServerInput{Server: s, Tenant: to})
			runs = append(runs, run{"server " + tenantName + " " + variant, r.m.regs})
		}
	}

	total := 0
	for _, r := range runs {
		pods := podTemplates(t, r.regs)
		if len(pods) == 0 {
			t.Errorf("%s: no pod template found", r.name)
		}
		for _, p := range pods {
			if v := restrictedViolations(t, p); v != "" {
				t.Errorf("%s: %s is not restricted: %s", r.name, p.source, v)
			}
		}
		t.Logf("%s: %d pod templates checked at restricted", r.name, len(pods))
		total += len(pods)
	}
	t.Logf("%d pod templates checked at restricted (%s), 0 allowed to fail", total, psaapi.LatestVersion())
}
