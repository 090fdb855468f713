package stacks

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// recordingFetcher stands in for sourcepolicy.Fetcher: it records what the programs ask.
type recordingFetcher struct {
	calls []string
	err   error
}

func (f *recordingFetcher) Manifest(_ context.Context, url string) (string, error) {
	f.calls = append(f.calls, "manifest "+url)
	return "/cache/manifest.yaml", f.err
}

func (f *recordingFetcher) Chart(_ context.Context, repo, chart, version string) (string, error) {
	f.calls = append(f.calls, "chart "+repo+" "+chart+" "+version)
	return "/cache/" + chart + ".tgz", f.err
}

func TestOverridesGoThroughTheFetcher(t *testing.T) {
	f := &recordingFetcher{}
	UseSourceFetcher(f)
	t.Cleanup(func() { UseSourceFetcher(nil) })

	refs, err := resolveManifests(ClusterCNPGOperator, v1alpha1.ComponentSource{ManifestURL: "https://mirror.example.cn/cnpg.yaml"})
	require.NoError(t, err)
	require.Equal(t, "/cache/manifest.yaml", refs[0].File)

	charts, err := resolveCharts(ClusterIstio, v1alpha1.ComponentSource{ChartRepo: "https://mirror.example.cn/istio"}, "")
	require.NoError(t, err)
	require.Equal(t, "/cache/base.tgz", charts[0].Chart)
	require.Empty(t, charts[0].Repo, "the provider gets a local archive, never the URL")
	require.Equal(t, "/cache/istiod.tgz", charts[1].Chart)

	// Pinned upstream sources, oci:// and local overrides are not fetched here.
	_, err = resolveCharts(ClusterCertManager, v1alpha1.ComponentSource{}, "")
	require.NoError(t, err)
	oci, err := resolveCharts(ClusterCertManager, v1alpha1.ComponentSource{ChartRepo: "oci://mirror.example.cn/charts"}, "")
	require.NoError(t, err)
	require.Equal(t, "oci://mirror.example.cn/charts/cert-manager", oci[0].Chart)
	require.Equal(t, []string{
		"manifest https://mirror.example.cn/cnpg.yaml",
		"chart https://mirror.example.cn/istio base 1.32.0",
		"chart https://mirror.example.cn/istio istiod 1.32.0",
		"chart https://mirror.example.cn/istio cni 1.32.0",
	}, f.calls)

	f.err = errors.New("refused by the source policy")
	_, err = resolveManifests(ClusterCNPGOperator, v1alpha1.ComponentSource{ManifestURL: "https://mirror.example.cn/cnpg.yaml"})
	require.ErrorContains(t, err, "cnpg")
	require.ErrorContains(t, err, "refused")
}

func TestPinnedHosts(t *testing.T) {
	hosts := PinnedHosts()
	require.Contains(t, hosts, "charts.jetstack.io")
	require.Contains(t, hosts, "github.com")
	require.Contains(t, hosts, "grafana-community.github.io")
	require.IsNonDecreasing(t, hosts)
}
