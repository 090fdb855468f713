// The chart's files against config/, read without helm: unit tests (chart_test.go renders with
// the helm binary and is tagged integration).

package charts

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/internal/checkout"
)

// root is the checkout (not internal/testenv's, which links the programs: this package needs
// none of them and builds in seconds).
func root() string {
	return checkout.Root()
}

func chart() string { return filepath.Join(root(), "charts", "tfrs") }

// TestChartCopiesAreFresh: the chart reads copies of config/ (Helm sees only its own dir);
// `make manifests` writes them, and they must equal the originals byte for byte.
func TestChartCopiesAreFresh(t *testing.T) {
	for copyDir, src := range map[string][]string{
		"crds":       mustGlob(t, filepath.Join(root(), "config", "crd", "bases", "*.yaml")),
		"rbac":       {filepath.Join(root(), "config", "rbac", "role.yaml"), filepath.Join(root(), "config", "rbac", "provisioner_role.yaml")},
		"monitoring": {filepath.Join(root(), "config", "monitoring", "tfrs-dashboard.json"), filepath.Join(root(), "config", "monitoring", "prometheusrule.yaml")},
	} {
		copies := mustGlob(t, filepath.Join(chart(), "files", copyDir, "*"))
		require.Len(t, copies, len(src), "charts/tfrs/files/%s: run make manifests", copyDir)
		for _, s := range src {
			want, err := os.ReadFile(s)
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(chart(), "files", copyDir, filepath.Base(s)))
			require.NoError(t, err, "run make manifests")
			require.Equal(t, string(want), string(got), "charts/tfrs/files/%s/%s is stale: run make manifests", copyDir, filepath.Base(s))
		}
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	require.NoError(t, err)
	require.NotEmpty(t, m, pattern)
	return m
}

// TestChartVersionMatchesManifests: the chart's appVersion is the tag config/manager deploys.
func TestChartVersionMatchesManifests(t *testing.T) {
	var c struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	b, err := os.ReadFile(filepath.Join(chart(), "Chart.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &c))
	var k struct {
		Images []struct {
			Name, NewName, NewTag string
		} `json:"images"`
	}
	b, err = os.ReadFile(filepath.Join(root(), "config", "manager", "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &k))
	require.Len(t, k.Images, 1)
	require.Equal(t, c.AppVersion, k.Images[0].NewTag, "Chart.yaml appVersion vs config/manager/kustomization.yaml newTag")
	require.Equal(t, "ghcr.io/tfrs-io/tfrs", k.Images[0].NewName)
	require.Equal(t, "v"+c.Version, c.AppVersion, "chart version and appVersion move together")
	require.NotEqual(t, "latest", c.AppVersion)
}
