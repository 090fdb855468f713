package main

import (
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
)

// A file with a cluster and its mirrors passes the CLI's source policy without flags: the
// mirrors are the cluster's own (an admin's choice); without the cluster they are refused.
func TestCLIAllowsTheClustersOwnMirrors(t *testing.T) {
	var f sourceFlags
	f.bind(pflag.NewFlagSet("t", pflag.ContinueOnError), "cli")
	pol, err := f.policy()
	require.NoError(t, err)
	objs, err := (&inputFlags{files: []string{filepath.Join(testenv.RepoRoot(), "examples", "cluster-tke.yaml")}}).load(nil, false)
	require.NoError(t, err)
	require.Error(t, checkSources(pol, objs), "the example's mirrors are not pinned upstream hosts")
	require.NoError(t, checkSources(withClusterMirrors(pol, objs), objs))
}
