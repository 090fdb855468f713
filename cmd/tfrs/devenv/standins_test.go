package devenv

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/internal/upstream"
)

// TestStandInCRDsCoverTheUpstreamOnes: the bare-clone fallback of `tfrs dev` must serve every
// kind the real upstream CRDs of the pins serve that TFRS creates, or the demo fails there.
func TestStandInCRDsCoverTheUpstreamOnes(t *testing.T) {
	stand, err := upstream.ReadFile(standInCRDs)
	require.NoError(t, err)
	standIn := map[string]bool{}
	for _, d := range stand {
		for _, v := range d.Spec.Versions {
			standIn[d.Spec.Group+"/"+v.Name+" "+d.Spec.Names.Kind] = v.Served
		}
	}
	served := map[string]bool{}
	for _, d := range testenv.PinnedCRDs(t) {
		for _, v := range d.Spec.Versions {
			served[d.Spec.Group+"/"+v.Name+" "+d.Spec.Names.Kind] = v.Served
		}
	}
	for _, k := range testenv.CustomResourceKinds {
		require.True(t, served[k], "the pinned upstream CRDs serve %s", k)
		require.True(t, standIn[k], "the stand-in CRDs of a bare clone must serve %s", k)
	}
	// What the test control planes install (testenv.InstallCRDs) serves every one of them too.
	installed := map[string]bool{}
	for _, d := range testenv.CreatedKinds(testenv.PinnedCRDs(t)) {
		for _, v := range d.Spec.Versions {
			installed[d.Spec.Group+"/"+v.Name+" "+d.Spec.Names.Kind] = v.Served
		}
	}
	for _, k := range testenv.CustomResourceKinds {
		require.True(t, installed[k], "testenv.InstallCRDs installs %s", k)
	}
}
