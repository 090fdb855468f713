//go:build integration

package engine

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeadlineEndsANeverEndingOperation: with the real CLI, an up and a preview whose
// programs never finish fail with ErrDeadline after the configured deadline (plus the cancel
// grace), their slots come back, and the stack is usable afterwards.
func TestDeadlineEndsANeverEndingOperation(t *testing.T) {
	e := newEngine(t, Options{
		Deadlines:   map[OpKind]time.Duration{OpUp: 4 * time.Second, OpPreview: 3 * time.Second},
		CancelGrace: 3 * time.Second,
	})
	const stack = "tenant.deadline.never"
	dir := t.TempDir()

	_, err := e.Up(tctx(t, time.Minute), Request{Stack: stack, Program: emptyProgram})
	require.NoError(t, err, "the stack exists before the never-ending up")

	start := time.Now()
	_, err = e.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: neverProgram(filepath.Join(dir, "hold"))})
	took := time.Since(start)
	t.Logf("up ended after %s: %v", took, err)
	require.ErrorIs(t, err, ErrDeadline)
	require.NotErrorIs(t, err, ErrCanceled)
	var oe *OpError
	require.True(t, errors.As(err, &oe))
	assert.Equal(t, OpUp, oe.Op)
	assert.Contains(t, oe.Detail, "deadline of 4s")
	require.FileExists(t, filepath.Join(dir, "hold"), "the program ran")
	require.Less(t, took, 60*time.Second, "ended by the deadline, not by the program's own 90 s")
	require.Empty(t, e.fair.snapshot(), "its slot came back")

	start = time.Now()
	_, err = e.Preview(tctx(t, 2*time.Minute), Request{Stack: stack, Program: neverProgram(filepath.Join(dir, "hold2"))})
	t.Logf("preview ended after %s: %v", time.Since(start), err)
	require.ErrorIs(t, err, ErrDeadline)
	assert.Contains(t, err.Error(), "preview ran longer than its deadline of 3s")

	res, err := e.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: outputsProgram("after")})
	require.NoError(t, err, "the stack is unlocked and usable")
	assert.Equal(t, "after", res.Outputs.String("plain"))
	if res.Recovery != nil {
		t.Logf("recovery after the deadline: %+v", *res.Recovery)
	}
}
