package kit

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

type parent struct{ pulumi.ResourceState }

// NewChart serves the cluster's charts (mirror in the values, options such as DependsOn) and
// the tenant's (mirror and pull Secret by transform) alike: a transform only for what is asked,
// the chart's values over the component's.
func TestNewChart(t *testing.T) {
	mirror := func(s string) string { return "mirror.example.cn/" + s }
	for _, tc := range []struct {
		name       string
		images     ImageRewriter
		pullSecret string
		transforms int
	}{
		{"plain", nil, "", 0},
		{"mirror", mirror, "", 1},
		{"pull secret", nil, "pull", 1},
		{"both", mirror, "pull", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &pt.Mocks{}
			m.Run(t, func(ctx *pulumi.Context) error {
				p := &parent{}
				if err := ctx.RegisterComponentResource("tfrs:test:Parent", "p", p); err != nil {
					return err
				}
				first, err := NewChart(ctx, p, "first", Chart{Release: "first", Namespace: pulumi.String("ns"), Ref: ChartRef{Chart: "/charts/first"}})
				if err != nil {
					return err
				}
				_, err = NewChart(ctx, p, "c", Chart{
					Release: "rel", Namespace: pulumi.String("ns"),
					Ref:    ChartRef{Chart: "c", Repo: "https://charts.example.com", Version: "1.0.0", Values: map[string]any{"a": map[string]any{"y": 3}}},
					Values: map[string]any{"a": map[string]any{"x": 1, "y": 2}},
					Images: tc.images, PullSecret: tc.pullSecret,
				}, pulumi.DependsOn([]pulumi.Resource{first}))
				return err
			})
			c := m.Find(t, "kubernetes:helm.sh/v4:Chart", "c")
			in := pt.Plain(c.Inputs)
			pt.Eq(t, "release", in["name"], "rel")
			pt.Eq(t, "values", in["values"], map[string]any{"a": map[string]any{"x": 1.0, "y": 3.0}})
			pt.Eq(t, "version", in["version"], "1.0.0")
			pt.Eq(t, "repo", pt.At(t, in, "repositoryOpts", "repo"), "https://charts.example.com")
			pt.Eq(t, "transforms", c.Transforms, tc.transforms)
			pt.Eq(t, "parent", c.Parent, m.Find(t, "tfrs:test:Parent", "p").URN)
			if len(c.Deps) != 1 || !strings.HasSuffix(c.Deps[0], "::first") {
				t.Errorf("deps %v, want the first chart", c.Deps)
			}
			// A local chart: no version, no repository.
			first := pt.Plain(m.Find(t, "kubernetes:helm.sh/v4:Chart", "first").Inputs)
			for _, k := range []string{"version", "repositoryOpts"} {
				if _, ok := first[k]; ok {
					t.Errorf("local chart has %s", k)
				}
			}
		})
	}
}

func TestNewChartNeedsAChart(t *testing.T) {
	err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
		p := &parent{}
		if err := ctx.RegisterComponentResource("tfrs:test:Parent", "p", p); err != nil {
			return err
		}
		_, err := NewChart(ctx, p, "x-chart", Chart{Release: "x", Namespace: pulumi.String("ns")})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "x-chart: chart reference without a chart") {
		t.Errorf("err = %v", err)
	}
}
