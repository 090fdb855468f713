package crd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefinitionsAreTheThreeKinds(t *testing.T) {
	defs, err := Definitions()
	require.NoError(t, err)
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
		assert.Equal(t, "tfrs.io", d.Spec.Group)
	}
	assert.ElementsMatch(t, []string{"tfrclusters.tfrs.io", "tfrtenants.tfrs.io", "tfrservers.tfrs.io"}, names)
}
