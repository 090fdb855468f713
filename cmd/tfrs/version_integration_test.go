//go:build integration

package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// `tfrs version` finds the Pulumi CLI and the Kubernetes provider as the engine does and
// reports the versions hack/tools/versions.env pins, without the network.
func TestVersionReportsTheTools(t *testing.T) {
	want := pinnedVersions(t)
	inv := invoke(t, "", "version", "-o", "json")
	require.Equal(t, 0, inv.code, "stdout:\n%s\nstderr:\n%s", inv.stdout, inv.stderr)
	var v versions
	require.NoError(t, json.Unmarshal([]byte(inv.stdout), &v), inv.stdout)
	require.NotNil(t, v.Pulumi)
	require.NotNil(t, v.Kubernetes)
	require.Equal(t, want["PULUMI_VERSION"], v.Pulumi.Version, v.Pulumi.Error)
	require.Equal(t, want["PULUMI_K8S_PROVIDER_VERSION"], v.Kubernetes.Version, v.Kubernetes.Error)
	require.FileExists(t, v.Kubernetes.Path)

	inv = invoke(t, "", "version")
	require.Equal(t, 0, inv.code)
	require.Regexp(t, `(?m)^tfrs +dev, `, inv.stdout)
	require.Regexp(t, `(?m)^pulumi +`+want["PULUMI_VERSION"]+` +/`, inv.stdout)
	require.Regexp(t, `(?m)^kubernetes +`+want["PULUMI_K8S_PROVIDER_VERSION"]+` +/`, inv.stdout)

	// A tool that is not there, and a binary that is no provider, are reported as such.
	missing := askTool(t.Context(), "pulumi-resource-nothing", providerVersion)
	require.Empty(t, missing.Version)
	require.Contains(t, missing.Error, "run `make tools`")
	_, err := providerVersion(t.Context(), "/bin/true")
	require.ErrorContains(t, err, "no port on stdout")
}
