package stacks

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRevisionChangesWithEveryInput: a revision's ID is stable for one build and moves with
// each of its inputs: the version, the commit, the code digest and the pinned sources table.
func TestRevisionChangesWithEveryInput(t *testing.T) {
	base := NewRevision("v1.2.3", "0123456789abcdef", "")
	require.Len(t, base.ID, 12)
	require.Equal(t, base, NewRevision("v1.2.3", "0123456789abcdef", ""), "stable")
	seen := map[string]string{base.ID: "base"}
	for what, r := range map[string]string{
		"version": NewRevision("v1.2.4", "0123456789abcdef", "").ID,
		"commit":  NewRevision("v1.2.3", "0123456789abcdee", "").ID,
		"code":    NewRevision("v1.2.3", "0123456789abcdef-dirty", "feed").ID,
	} {
		require.NotContains(t, seen, r, "%s changes the ID", what)
		seen[r] = what
	}
	// A chart pin bump in the sources table.
	cm := pinnedSources[ClusterCertManager]
	old := cm.Version
	cm.Version = "v9.9.9"
	pinnedSources[ClusterCertManager] = cm
	bumped := NewRevision("v1.2.3", "0123456789abcdef", "").ID
	cm.Version = old
	pinnedSources[ClusterCertManager] = cm
	require.NotContains(t, seen, bumped, "a pin bump changes the ID")
	require.Equal(t, base.ID, NewRevision("v1.2.3", "0123456789abcdef", "").ID, "restored")

	require.True(t, CleanCommit("0123456789abcdef"))
	require.False(t, CleanCommit("0123456789abcdef-dirty"))
	require.False(t, CleanCommit(""))

	require.Nil(t, RevisionTags(nil))
	require.Nil(t, RevisionFromTags(map[string]string{"tfrs.io/parent": "x"}))
	require.Equal(t, &base, RevisionFromTags(RevisionTags(&base)), "tags round-trip")
}
