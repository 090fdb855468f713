//go:build integration

package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
