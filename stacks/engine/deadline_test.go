package engine

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeadlineParse: the flag's format, its refusals, and the defaults under it.
func TestDeadlineParse(t *testing.T) {
	got, err := ParseDeadlines(" up=45m, preview=10m ")
	require.NoError(t, err)
	assert.Equal(t, map[OpKind]time.Duration{OpUp: 45 * time.Minute, OpPreview: 10 * time.Minute}, got)
	got, err = ParseDeadlines("")
	require.NoError(t, err)
	assert.Empty(t, got)

	for in, want := range map[string]string{
		"up":              "want <kind>=<duration>",
		"up=soon":         "invalid duration",
		"deploy=1m":       `unknown operation kind "deploy"`,
		"up=0s":           "must be positive",
		"destroy=-1m":     "must be positive",
		"up=1m,up=2m":     "given twice",
		"up=1m,,status=1": "want <kind>=<duration>",
	} {
		_, err := ParseDeadlines(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}

	r, err := resolveDeadlines(map[OpKind]time.Duration{OpUp: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, time.Hour, r[OpUp])
	assert.Equal(t, DefaultDeadlines[OpPreview], r[OpPreview])
	for _, k := range deadlineKinds {
		assert.Positive(t, r[k], "every kind that takes a slot has a deadline: %s", k)
	}
	assert.Equal(t, 30*time.Minute, DefaultDeadlines[OpUp])
	// The provider waits up to 10 minutes for one resource; a deadline below that would cut
	// off a wait that is still within the provider's own rules.
	for _, k := range []OpKind{OpUp, OpDestroy} {
		assert.Greater(t, DefaultDeadlines[k], 10*time.Minute, k)
	}
	_, err = resolveDeadlines(map[OpKind]time.Duration{"nope": time.Minute})
	require.Error(t, err)
}

// TestDeadlineError: the engine's deadline and the caller's own end are told apart.
func TestDeadlineError(t *testing.T) {
	e := &Engine{opts: &resolved{Options: Options{Deadlines: map[OpKind]time.Duration{OpUp: 10 * time.Millisecond}}}}
	ctx, stop := e.withDeadline(context.Background(), OpUp)
	defer stop()
	<-ctx.Done()
	err := classify(ctx, OpUp, "tenant.ns.x", errors.New("update canceled\ncode: 255\nstdout: \nstderr: error: update canceled"), newRedactor(nil), nil)
	require.ErrorIs(t, err, ErrDeadline)
	require.NotErrorIs(t, err, ErrCanceled, "the operator re-runs a canceled job at once; this one failed")
	require.NotErrorIs(t, err, context.DeadlineExceeded, "not a request's own timeout")
	assert.Contains(t, err.Error(), "up ran longer than its deadline of 10ms")
	assert.Contains(t, err.Error(), "--deadline up=")

	// The caller's own timeout inside a longer deadline stays ErrCanceled.
	caller, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	e.opts.Deadlines[OpUp] = time.Hour
	ctx, stop2 := e.withDeadline(caller, OpUp)
	defer stop2()
	<-ctx.Done()
	err = classify(ctx, OpUp, "tenant.ns.x", errors.New("x"), newRedactor(nil), nil)
	require.ErrorIs(t, err, ErrCanceled)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, ErrDeadline)
}

// neverProgram signals that it runs and then never finishes on its own, like an operation
// stuck waiting on something that will not come: it ends only when the CLI that runs it goes
// away (the program's context is the CLI's request), or after 90 s as a safety net.
func neverProgram(holdFile string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		if err := os.WriteFile(holdFile, []byte("held"), 0o600); err != nil {
			return err
		}
		select {
		case <-ctx.Context().Done():
		case <-time.After(90 * time.Second):
		}
		return ctx.Context().Err()
	}
}
