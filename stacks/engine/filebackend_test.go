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
// one must stay. The repair touches only what an operation on the stack reads: another stack's
// broken sidecars are left for that stack's own operations (an operation never walks the
// backend), and a listing repairs every checkpoint's.
func TestRepairFileSidecars(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, ".pulumi")
	write := func(rel string, body string) string {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	const good = `{"user.content_type":"application/json"}`
	mine := []string{
		write("meta.yaml.attrs", ""),
		write("stacks/tfrs/a.json.attrs", ""),
		write("stacks/tfrs/a.json.gz.attrs", "{"),
		write("stacks/tfrs/a.pulumi-tags.attrs", ""),
		write("history/tfrs/a/a-1764600000000000001.history.json.attrs", ""),
		write("backups/tfrs/a/a.1764600000000000001.json.attrs", ""),
		write("locks/organization/tfrs/a/0b1c.json.attrs", ""),
	}
	kept := []string{
		write("stacks/tfrs/a.json", `{}`),
		write("stacks/tfrs/a.json.bak.attrs", good),
		write("history/tfrs/a/a-1764600000000000002.history.json.attrs", good),
	}
	others := []string{
		write("stacks/tfrs/ab.json.attrs", ""), // a name that a prefix match would catch
		write("history/tfrs/ab/ab-1764600000000000001.history.json.attrs", ""),
		write("locks/organization/tfrs/b/0b1c.json.attrs", ""),
	}

	removed := repairFileSidecars("file://"+dir+"?metadata=skip", "a")
	require.ElementsMatch(t, mine, removed)
	for _, p := range mine {
		require.NoFileExists(t, p)
	}
	for _, p := range append(kept, others...) {
		require.FileExists(t, p)
	}

	removed = repairFileSidecars("file://"+dir+"?metadata=skip", "")
	require.Equal(t, []string{others[0]}, removed, "a listing reads every checkpoint, not their history or locks")
	require.Nil(t, repairFileSidecars("s3://bucket", "a"))
}

// mustFileBackendDir is the directory of the test engine's file:// backend.
func mustFileBackendDir(t testing.TB, u string) string {
	t.Helper()
	dir, ok := fileBackendDir(u)
	require.True(t, ok, "not a file:// backend: %s", u)
	return dir
}
