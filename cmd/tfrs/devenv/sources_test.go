package devenv

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/operator"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The dev operator gets the dev API's source policy (one policy at every door of `tfrs dev`),
// unless the caller set one; the policy admits the stand-ins and the dev directory and
// refuses the rest.
func TestDevOperatorSourcePolicy(t *testing.T) {
	dir := t.TempDir()
	pol := devSources(dir)
	o := operatorOptions(operator.Options{}, nil, runner.Options{}, pol)
	if o.Sources != pol {
		t.Fatalf("dev operator policy = %v, want the dev API's", o.Sources)
	}
	own := &sourcepolicy.Policy{}
	if o := operatorOptions(operator.Options{Sources: own}, nil, runner.Options{}, pol); o.Sources != own {
		t.Error("a caller's policy was replaced")
	}

	tenant := func(mut func(*v1alpha1.TFRTenant)) *v1alpha1.TFRTenant {
		x := testenv.StandInTenant(TeamNamespace, "t", "dev")
		mut(x)
		return x
	}
	outside := filepath.Join(t.TempDir(), "grafana") // not under the dev dir nor the stand-ins
	for _, tc := range []struct {
		name  string
		obj   *v1alpha1.TFRTenant
		field string // "" = admitted
	}{
		{"stand-in charts", tenant(func(*v1alpha1.TFRTenant) {}), ""},
		{"chart under the dev dir", tenant(func(x *v1alpha1.TFRTenant) { x.Spec.Grafana.LocalPath = filepath.Join(dir, "charts", "grafana") }), ""},
		{"local chart elsewhere", tenant(func(x *v1alpha1.TFRTenant) { x.Spec.Grafana.LocalPath = outside }), "spec.grafana.localPath"},
		{"escape by ..", tenant(func(x *v1alpha1.TFRTenant) { x.Spec.Grafana.LocalPath = dir + "/../../etc" }), "spec.grafana.localPath"},
		{"chart repo not pinned", tenant(func(x *v1alpha1.TFRTenant) {
			x.Spec.Grafana.LocalPath, x.Spec.Grafana.ChartRepo = "", "https://charts.evil.example.com"
		}), "spec.grafana.chartRepo"},
		{"chart repo on a private address", tenant(func(x *v1alpha1.TFRTenant) {
			x.Spec.Grafana.LocalPath, x.Spec.Grafana.ChartRepo = "", "http://169.254.169.254/charts"
		}), "spec.grafana.chartRepo"},
	} {
		errs := o.Sources.Check(tc.obj)
		switch {
		case tc.field == "" && len(errs) > 0:
			t.Errorf("%s: refused: %v", tc.name, errs)
		case tc.field != "" && (len(errs) != 1 || errs[0].Field != tc.field):
			t.Errorf("%s: errors %v, want one at %s", tc.name, errs, tc.field)
		case tc.field != "" && !strings.Contains(errs[0].Detail, ":"):
			t.Errorf("%s: %q does not say why", tc.name, errs[0].Detail)
		}
	}
}
