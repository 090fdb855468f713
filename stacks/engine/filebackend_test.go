package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFileBackendSkipsSidecars(t *testing.T) {
	require.Equal(t, "file:///state?metadata=skip", normalizeFileURL("file:///state"))
	require.Equal(t, "file:///state?metadata=", normalizeFileURL("file:///state?metadata="), "an explicit choice is kept")
	require.Equal(t, "s3://b?endpoint=x", normalizeFileURL("s3://b?endpoint=x"))
}

// An empty sidecar is what a kill between os.Create and the write leaves; it must go, a valid
// one must stay.
func TestRepairFileSidecars(t *testing.T) {
	dir := t.TempDir()
	stacks := filepath.Join(dir, ".pulumi", "stacks", "tfrs")
	require.NoError(t, os.MkdirAll(stacks, 0o700))
	broken := filepath.Join(stacks, "a.json.attrs")
	good := filepath.Join(stacks, "b.json.attrs")
	require.NoError(t, os.WriteFile(broken, nil, 0o600))
	require.NoError(t, os.WriteFile(good, []byte(`{"user.content_type":"application/json"}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(stacks, "a.json"), []byte(`{}`), 0o600))

	removed := repairFileSidecars("file://" + dir + "?metadata=skip")
	require.Equal(t, []string{broken}, removed)
	require.NoFileExists(t, broken)
	require.FileExists(t, good)
	require.FileExists(t, filepath.Join(stacks, "a.json"))
}

// mustFileBackendDir is the directory of the test engine's file:// backend.
func mustFileBackendDir(t testing.TB, u string) string {
	t.Helper()
	dir, ok := fileBackendDir(u)
	require.True(t, ok, "not a file:// backend: %s", u)
	return dir
}
