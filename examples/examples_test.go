// Package examples holds the CRs and HTTP bodies users copy. The test keeps them valid: every
// example must decode strictly and pass the same Default() + Validate() as the API server.
package examples

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/manifest"
)

func TestExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	dev, err := filepath.Glob("dev/*.yaml")
	require.NoError(t, err)
	files = append(files, dev...)
	require.NotEmpty(t, files)
	kinds := map[string]bool{}
	for _, f := range files {
		objs, err := manifest.DecodeFile(f)
		require.NoError(t, err)
		require.NotEmpty(t, objs, f)
		for _, o := range objs {
			o.Default()
			require.Empty(t, o.Validate(), "%s: %s", f, o.GetName())
			if x, ok := o.(*v1alpha1.TFRTenant); ok {
				kinds[string(x.Spec.Type)] = true
			}
			kinds[o.GetObjectKind().GroupVersionKind().Kind] = true
		}
	}
	for _, k := range []string{"TFRCluster", "TFRTenant", "TFRServer", "enterprise", "personal"} {
		require.True(t, kinds[k], "examples must show %s", k)
	}
}
