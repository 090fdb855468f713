package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// TestHistoryLimit: a stack keeps its newest HistoryLimit updates of history and backups, and
// the rest of the backend is untouched.
func TestHistoryLimit(t *testing.T) {
	e := newEngine(t, Options{HistoryLimit: 3})
	const stack, other = "tenant.hist.a", "tenant.hist.b"
	req := Request{Stack: stack, Program: outputsProgram("v")}
	_, err := e.Up(tctx(t, time.Minute), req)
	require.NoError(t, err)
	unlimited := newEngine(t, Options{StateDir: e.opts.StateDir, HistoryLimit: -1})
	for range 5 {
		_, err := unlimited.Up(tctx(t, time.Minute), Request{Stack: other, Program: outputsProgram("w")})
		require.NoError(t, err)
	}
	for i := range 8 {
		_, err := e.Refresh(tctx(t, time.Minute), Request{Stack: stack})
		require.NoError(t, err, "refresh %d", i)
		h, b, _ := countEntries(t, e, stack)
		assert.LessOrEqual(t, h, 4, "history after refresh %d: the newest 3 and the last update", i)
		assert.LessOrEqual(t, b, 3, "backups after refresh %d", i)
	}
	h, _, _ := countEntries(t, e, stack)
	assert.Equal(t, 4, h, "the newest 3, plus the last update however old")
	st, err := e.Status(context.Background(), stack)
	require.NoError(t, err)
	require.NotNil(t, st.Last)
	assert.Equal(t, "refresh", st.Last.Kind)
	assert.True(t, st.Ready, "eight drift checks later the stack is still ready: its last update is kept")
	ho, _, _ := countEntries(t, e, other)
	assert.Equal(t, 5, ho, "another stack's history is not touched by this one's operations")
}

// TestHistoryLimitHoldsAcross100DriftChecks: a hundred drift checks (refreshes) with the
// default limit leave the stack at the newest DefaultHistoryLimit entries plus its last update,
// and its state stops growing once the limit is reached.
func TestHistoryLimitHoldsAcross100DriftChecks(t *testing.T) {
	e := newEngine(t, Options{})
	const stack = "tenant.hist.drift"
	_, err := e.Up(tctx(t, time.Minute), Request{Stack: stack, Program: outputsProgram("v")})
	require.NoError(t, err)
	var atLimit int64
	for i := range 100 {
		_, err := e.Refresh(tctx(t, time.Minute), Request{Stack: stack})
		require.NoError(t, err, "refresh %d", i)
		h, b, bytes := countEntries(t, e, stack)
		require.LessOrEqual(t, h, DefaultHistoryLimit+1, "history after refresh %d", i)
		require.LessOrEqual(t, b, DefaultHistoryLimit, "backups after refresh %d", i)
		if i == DefaultHistoryLimit+5 {
			atLimit = bytes
		}
		if i > DefaultHistoryLimit+5 {
			// Every refresh writes a checkpoint of the same shape; only timestamps differ.
			require.InDelta(t, atLimit, bytes, float64(atLimit)/20, "state after refresh %d grew past the limit", i)
		}
	}
	h, b, _ := countEntries(t, e, stack)
	assert.Equal(t, DefaultHistoryLimit+1, h, "the newest %d, plus the last update however old", DefaultHistoryLimit)
	assert.Equal(t, DefaultHistoryLimit, b)
	st, err := e.Status(context.Background(), stack)
	require.NoError(t, err)
	assert.True(t, st.Ready, "a hundred drift checks later the stack is still ready")
}
