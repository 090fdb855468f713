package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEntryTime(t *testing.T) {
	for name, want := range map[string]int64{
		"tenant.a.b-1764600000000000001.history.json":       1764600000000000001,
		"tenant.a.b-1764600000000000001.checkpoint.json.gz": 1764600000000000001,
		"tenant.a.b-x.history.json":                         -1,
		"tenant.a.bc-17.history.json":                       -1, // another stack's name
		"tenant.a.b-.history.json":                          -1,
	} {
		ts, ok := entryTime(name, "tenant.a.b-")
		if want < 0 {
			assert.False(t, ok, name)
			continue
		}
		assert.True(t, ok, name)
		assert.Equal(t, want, ts, name)
	}
	ts, ok := entryTime("tenant.a.b.1764600000000000002.json", "tenant.a.b.")
	assert.True(t, ok)
	assert.Equal(t, int64(1764600000000000002), ts)
}

// countEntries counts a stack's history entries and backups in a file backend.
func countEntries(t *testing.T, e *Engine, stack string) (history, backups int, bytes int64) {
	t.Helper()
	dir, _ := fileBackendDir(e.opts.BackendURL)
	for _, d := range []string{filepath.Join(dir, ".pulumi", "history", ProjectName, stack), filepath.Join(dir, ".pulumi", "backups", ProjectName, stack)} {
		entries, err := os.ReadDir(d)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		for _, en := range entries {
			fi, err := en.Info()
			require.NoError(t, err)
			bytes += fi.Size()
			switch {
			case filepath.Base(d) == stack && filepath.Base(filepath.Dir(filepath.Dir(d))) == "history":
				if filepath.Ext(en.Name()) == ".json" && len(en.Name()) > len(".history.json") && en.Name()[len(en.Name())-len(".history.json"):] == ".history.json" {
					history++
				}
			default:
				backups++
			}
		}
	}
	return history, backups, bytes
}
