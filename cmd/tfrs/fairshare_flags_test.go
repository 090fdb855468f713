//go:build integration

package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestFairShareFlags: --parallel-per-namespace and --deadline reach the engine's options, and
// values the engine could not honour are usage errors naming the flag.
func TestFairShareFlags(t *testing.T) {
	parse := func(args ...string) *stackFlags {
		t.Helper()
		f := &stackFlags{}
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.bind(fs)
		require.NoError(t, fs.Parse(append([]string{"--state-dir", t.TempDir(), "--allow-empty-passphrase"}, args...)))
		return f
	}
	var got engine.Options
	capture := func(o *engine.Options) { got = *o }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	e, err := parse("--parallel", "6", "--parallel-per-namespace", "2", "--deadline", "up=45m,preview=10m").engine(ctx, capture)
	require.NoError(t, err)
	require.NoError(t, e.Close())
	require.Equal(t, 6, got.MaxConcurrent)
	require.Equal(t, 2, got.MaxPerNamespace)
	require.Equal(t, map[engine.OpKind]time.Duration{engine.OpUp: 45 * time.Minute, engine.OpPreview: 10 * time.Minute}, got.Deadlines)

	e, err = parse().engine(ctx, capture)
	require.NoError(t, err)
	require.NoError(t, e.Close())
	require.Zero(t, got.MaxPerNamespace, "unset: the engine's default (parallel minus 1)")
	require.Empty(t, got.Deadlines, "unset: the engine's defaults")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--parallel", "4", "--parallel-per-namespace", "5"}, "--parallel-per-namespace must be between 1 and --parallel (4)"},
		{[]string{"--parallel-per-namespace", "-1"}, "--parallel-per-namespace"},
		{[]string{"--deadline", "deploy=1m"}, `--deadline unknown operation kind "deploy"`},
		{[]string{"--deadline", "up=0s"}, "--deadline up=0s: a deadline must be positive"},
		{[]string{"--deadline", "up"}, "--deadline"},
	} {
		_, err := parse(c.args...).engine(ctx)
		require.Error(t, err, c.args)
		require.True(t, errors.Is(err, errUsage), "%v: %v", c.args, err)
		require.Contains(t, err.Error(), c.want, c.args)
	}
}
