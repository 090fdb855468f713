package checkout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRootHoldsTheModule: the root found from the source path and the one found from the
// package's working directory (what a -trimpath test binary uses) are the same checkout.
func TestRootHoldsTheModule(t *testing.T) {
	root := Root()
	require.NotEmpty(t, root)
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	assert.True(t, isModule(b))
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, root, rootAbove(wd))
}

// TestRootAboveSkipsOtherModules: a nested module (a tool's build directory) or a directory
// outside any checkout is not taken for the checkout.
func TestRootAboveSkipsOtherModules(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+module+"\n\ngo 1.26\n"), 0o644))
	nested := filepath.Join(dir, "hack", "tools", "build")
	require.NoError(t, os.MkdirAll(nested, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(nested, "go.mod"), []byte("// a tool\nmodule example.com/tools\n"), 0o644))
	assert.Equal(t, dir, rootAbove(nested))
	assert.Equal(t, "", rootAbove(t.TempDir()))
	assert.False(t, isModule([]byte("module "+module+"/sub\n")))
}
