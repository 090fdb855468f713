//go:build integration

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

// TestEngineStartUsesVersionCache: a second engine on the same state dir (the next `tfrs`
// invocation) starts without any CLI process.
func TestEngineStartUsesVersionCache(t *testing.T) {
	dir := t.TempDir()
	e1 := newEngine(t, Options{StateDir: dir})
	assert.EqualValues(t, 1, e1.Stats().CLICalls)
	e2 := newEngine(t, Options{StateDir: dir})
	assert.EqualValues(t, 0, e2.Stats().CLICalls, "version read from the cache")
	assert.Equal(t, e1.cli.Version(), e2.cli.Version())
}

// TestOutputsOneProcess: Outputs (and the outputs of Up) are exactly what auto's two-process
// StackOutputs gives, read in-process from the checkpoint (no CLI process).
func TestOutputsOneProcess(t *testing.T) {
	e := newEngine(t, Options{})
	const stack = "cluster.outputs"
	up, err := e.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: richOutputsProgram("v1")})
	require.NoError(t, err)

	before := e.Stats().CLICalls
	outs, err := e.Outputs(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	assert.EqualValues(t, 0, e.Stats().CLICalls-before, "read in-process: no CLI process")

	ws, err := e.reader(context.Background())
	require.NoError(t, err)
	m, err := ws.StackOutputs(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	want := convertOutputs(m)
	assert.Equal(t, want, outs)
	assert.Equal(t, want, up.Outputs, "Up's outputs come from the same path")

	// Spot checks of the conversion itself.
	assert.Equal(t, float64(42), outs["num"].Value)
	assert.Equal(t, "plain-v1", outs.String("plain"))
	assert.False(t, outs["nested"].Secret)
	assert.Equal(t, map[string]any{"c": float64(1), "d": "e"}, outs["nested"].Value.(map[string]any)["b"])
	for _, k := range []string{"token", "secretNum", "mixed", "list", "looksSecret"} {
		assert.True(t, outs[k].Secret, k)
		assert.Nil(t, outs[k].Value, k)
	}
	assert.Equal(t, "rich-secret-token-value", outs["token"].Reveal())
	assert.Equal(t, "nested-secret-value", outs["mixed"].Reveal().(map[string]any)["hidden"])
	assert.NotContains(t, e.red.redact("x rich-secret-token-value x"), "rich-secret-token-value",
		"secret outputs are redacted from then on")

	// A missing stack is still ErrNotFound.
	_, err = e.Outputs(tctx(t, time.Minute), "cluster.nothing-here")
	assert.ErrorIs(t, err, ErrNotFound)
}

// TestCLIProcessBudget pins the processes of the common operations: an operation is the
// operation's own process and at most one more (issue 21). Before this budget: engine start 1,
// Up of a new stack 8, Outputs 2, Status 2 (one after the other); before the in-process state
// reads: Up of a new stack 6 (select, init, tag, up, export, history), a second Up 4
// (export, up, export, history), Status 2, Outputs 1, a preview of an existing stack from a new
// engine 3 and more (select, export, config set --secret per secret, preview).
func TestCLIProcessBudget(t *testing.T) {
	e, next := tracedEngine(t, Options{})
	next()
	const stack = "cluster.budget"
	const token = "budget-secret-config-value"
	req := Request{Stack: stack, Program: secretConfigProgram, ManagedBy: ManagedByCLI,
		Tags:   map[string]string{TagParent: "cluster.parent"},
		Config: map[string]ConfigValue{"token": {Value: token, Secret: true}, "plain": {Value: "p"}}}

	// A new stack on a backend no CLI has used yet: init, up (the CLI's first use writes the
	// backend's meta.yaml, which fixes its layout; later stacks are created in-process, below).
	// Existence is a lookup in the backend, the tags are written to its tags file, the secret
	// config is encrypted in-process, and the outputs and the history head that auto's Up reads
	// afterwards come from the backend.
	before := e.Stats().CLICalls
	up, err := e.Up(tctx(t, 2*time.Minute), req)
	require.NoError(t, err)
	cmds := next()
	assert.EqualValues(t, 2, e.Stats().CLICalls-before, "%q", cmds)
	require.Len(t, cmds, 2)
	assert.Contains(t, cmds[0], "stack init")
	assert.Contains(t, cmds[1], " up ")
	assert.Equal(t, token, up.Outputs["token"].Reveal())
	assert.True(t, up.Outputs["token"].Secret)
	assert.Equal(t, "p", up.Outputs.String("plain"))

	// The stack file the CLI read holds the secret encrypted, never in plain text, with the
	// stack's salt (a new one: this engine held no key yet).
	sw := e.slots[stack].ws
	settings, err := sw.ws.StackSettings(context.Background(), stack)
	require.NoError(t, err)
	assert.NotEmpty(t, settings.EncryptionSalt)
	file, err := os.ReadFile(filepath.Join(sw.ws.WorkDir(), "Pulumi."+stack+".yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(file), token)
	assert.Contains(t, string(file), "secure: v1:")

	// The same stack again, from a new engine on the same backend (the next `tfrs` run): the
	// state (credentials, pending operations, the salt) is read in-process, so the update is
	// the only process; the secret config is encrypted with the salt read from the state.
	e2, next2 := tracedEngine(t, Options{BackendURL: e.BackendURL()})
	next2()
	req.Config["token"] = ConfigValue{Value: token + "-2", Secret: true}
	before = e2.Stats().CLICalls
	up, err = e2.Up(tctx(t, 2*time.Minute), req)
	require.NoError(t, err)
	cmds = next2()
	assert.EqualValues(t, 1, e2.Stats().CLICalls-before, "%q", cmds)
	require.Len(t, cmds, 1)
	assert.Contains(t, cmds[0], " up ")
	assert.Equal(t, token+"-2", up.Outputs["token"].Reveal())
	file, err = os.ReadFile(filepath.Join(e2.slots[stack].ws.ws.WorkDir(), "Pulumi."+stack+".yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(file), token)

	// And the cached workspace of the first engine: one process as well.
	before = e.Stats().CLICalls
	_, err = e.Up(tctx(t, 2*time.Minute), req)
	require.NoError(t, err)
	cmds = next()
	assert.EqualValues(t, 1, e.Stats().CLICalls-before, "%q", cmds)

	// Reads: no process at all.
	before = e.Stats().CLICalls
	outs, err := e.Outputs(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	assert.Equal(t, token+"-2", outs["token"].Reveal())
	st, err := e.Status(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	tags, err := e.Tags(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	res, err := e.Resources(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	assert.EqualValues(t, 0, e.Stats().CLICalls-before, "reads: %q", next())
	assert.Empty(t, res, "the program has no custom resources")
	assert.True(t, st.Ready)
	assert.Equal(t, ManagedByCLI, st.ManagedBy)
	assert.Equal(t, map[string]string{TagManagedBy: "cli", TagParent: "cluster.parent"}, tags)
	require.NotNil(t, st.Last)
	assert.Equal(t, "update", st.Last.Kind)
	assert.Equal(t, "succeeded", st.Last.Result)

	// The in-process reads answer what the CLI answers.
	ws, err := e.reader(context.Background())
	require.NoError(t, err)
	cliTags, err := ws.ListTags(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	assert.Equal(t, cliTags, tags)
	cliHist, err := e.history(tctx(t, time.Minute), ws, stack, 20)
	require.NoError(t, err)
	require.NotEmpty(t, cliHist)
	assert.Equal(t, cliHist[0], *st.Last)
	next()

	// A preview of the existing stack from a new engine: the preview only.
	e3, next3 := tracedEngine(t, Options{BackendURL: e.BackendURL()})
	next3()
	before = e3.Stats().CLICalls
	_, err = e3.Preview(tctx(t, 2*time.Minute), req)
	require.NoError(t, err)
	cmds = next3()
	assert.EqualValues(t, 1, e3.Stats().CLICalls-before, "%q", cmds)
	require.Len(t, cmds, 1)
	assert.Contains(t, cmds[0], " preview ")

	// A new stack of an engine that holds a key gets that key's salt, so its secret config
	// costs no second derivation; a fresh engine reads its state back with it.
	const third = "cluster.budget-shared-salt"
	_, err = e2.Up(tctx(t, 2*time.Minute), Request{Stack: third, Program: secretConfigProgram, Config: req.Config})
	require.NoError(t, err)
	cmds = next2()
	require.Len(t, cmds, 1, "no `stack init`: the engine created the stack itself: %q", cmds)
	assert.Contains(t, cmds[0], " up ")
	thirdSettings, err := e2.slots[third].ws.ws.StackSettings(context.Background(), third)
	require.NoError(t, err)
	assert.Equal(t, settings.EncryptionSalt, thirdSettings.EncryptionSalt, "the new stack shares the key the engine derived")
	assert.Len(t, e2.crypt.m, 1, "one key derivation for both stacks")
	e5, _ := tracedEngine(t, Options{BackendURL: e.BackendURL()})
	outs, err = e5.Outputs(tctx(t, time.Minute), third)
	require.NoError(t, err)
	assert.Equal(t, token+"-2", outs["token"].Reveal())

	// A preview of a new stack runs on a throwaway state (init there, preview) and leaves no
	// stack: the Up after it creates the stack itself, so it has no state to export either.
	const other = "cluster.budget-preview"
	before = e.Stats().CLICalls
	_, err = e.Preview(tctx(t, 2*time.Minute), Request{Stack: other, Program: emptyProgram})
	require.NoError(t, err)
	cmds = next()
	assert.LessOrEqual(t, e.Stats().CLICalls-before, int64(2), "%q", cmds)
	assert.Zero(t, countCmd(cmds, "stack export"), "%q", cmds)
	_, ok := e.StackVersion(context.Background(), other)
	assert.False(t, ok, "the preview left no stack")
	_, err = e.Up(tctx(t, 2*time.Minute), Request{Stack: other, Program: emptyProgram})
	require.NoError(t, err)
	cmds = next()
	require.Len(t, cmds, 1, "the up created the stack in-process (the backend has its meta.yaml now): %q", cmds)
	assert.Contains(t, cmds[0], " up ")

	// An engine start on a warm state dir runs nothing.
	e4 := newEngine(t, Options{StateDir: e.opts.StateDir, PulumiPath: e.opts.pulumiBin})
	assert.EqualValues(t, 0, e4.Stats().CLICalls)
}

// TestStackVersion: a change token read from the checkpoint file, no CLI process.
func TestStackVersion(t *testing.T) {
	e := newEngine(t, Options{})
	ctx := context.Background()
	const stack = "cluster.version"
	_, ok := e.StackVersion(ctx, stack)
	assert.False(t, ok, "no such stack yet")

	_, err := e.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: richOutputsProgram("v1")})
	require.NoError(t, err)
	dir := mustFileBackendDir(t, e.BackendURL())
	cp := filepath.Join(dir, ".pulumi", "stacks", ProjectName, stack+".json")
	_, err = os.Stat(cp)
	require.NoError(t, err, "the checkpoint is where StackVersion looks")

	before := e.Stats().CLICalls
	v1, ok := e.StackVersion(ctx, stack)
	require.True(t, ok)
	v1again, ok := e.StackVersion(ctx, stack)
	require.True(t, ok)
	assert.Equal(t, v1, v1again, "stable while nothing runs")
	assert.EqualValues(t, 0, e.Stats().CLICalls-before, "no CLI process")

	_, err = e.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: richOutputsProgram("v2")})
	require.NoError(t, err)
	v2, ok := e.StackVersion(ctx, stack)
	require.True(t, ok)
	assert.NotEqual(t, v1, v2, "an up that changes outputs")

	_, err = e.Refresh(tctx(t, 2*time.Minute), Request{Stack: stack})
	require.NoError(t, err)
	v3, ok := e.StackVersion(ctx, stack)
	require.True(t, ok)
	assert.NotEqual(t, v2, v3, "a refresh writes the checkpoint")

	_, ok = e.StackVersion(ctx, "bad name")
	assert.False(t, ok)
	_, ok = e.StackVersion(ctx, "cluster.missing")
	assert.False(t, ok)

	require.NoError(t, e.Remove(tctx(t, time.Minute), stack, true))
	_, ok = e.StackVersion(ctx, stack)
	assert.False(t, ok, "removed")

	s3 := &Engine{opts: &resolved{Options: Options{BackendURL: "s3://bucket?region=us-east-1"}}}
	_, ok = s3.StackVersion(ctx, stack)
	assert.False(t, ok, "only file:// backends")
}
