package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireNotInDir fails when any file under dir contains secret in plain text (state files,
// logs, workspaces).
func requireNotInDir(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // sockets, files removed meanwhile
		}
		require.False(t, strings.Contains(string(b), secret), "%s contains a secret in plain text", path)
		return nil
	})
	require.NoError(t, err)
}
