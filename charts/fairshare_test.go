//go:build integration

package charts

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stretchr/testify/require"
)

// TestChartRendersFairShare: the engine's fair-share flags reach both engines' arguments when
// set, and nothing is added by default (the binary's defaults then hold).
func TestChartRendersFairShare(t *testing.T) {
	_, objs := render(t, defaults...)
	var d appsv1.Deployment
	find(t, objs, "Deployment", "tfrs-operator", &d)
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		require.NotContains(t, a, "--parallel-per-namespace")
		require.NotContains(t, a, "--deadline")
	}

	_, objs = render(t, slices.Concat(defaults, []string{"--set", "operator.parallelPerNamespace=2",
		"--set", "operator.deadlines.up=45m", "--set", "operator.deadlines.preview=10m"})...)
	find(t, objs, "Deployment", "tfrs-operator", &d)
	args := d.Spec.Template.Spec.Containers[0].Args
	require.Contains(t, args, "--parallel-per-namespace=2")
	require.Contains(t, args, "--deadline=preview=10m,up=45m")

	out, err := helm(t, slices.Concat([]string{"template", release, chart(), "-n", namespace}, defaults, []string{"--set", "operator.deadlines.up=3600"})...)
	require.Error(t, err, out)
	require.Contains(t, out, "operator.deadlines.up: want a duration")
}
