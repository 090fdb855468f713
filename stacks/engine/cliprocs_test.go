package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

// Tests of the engine's CLI-process budget: every Pulumi CLI process costs ~0.3–0.5 s, so the
// engine avoids the ones it can answer otherwise.

// writeScript writes an executable shell script.
func writeScript(t *testing.T, path, body string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755))
	return path
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestVersionCache: `pulumi version` runs once per binary; the answer is reused until the
// binary changes, and a corrupt cache only costs the process it saves.
func TestVersionCache(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	bin := writeScript(t, filepath.Join(dir, "pulumi"), `echo "$*" >> `+runs+"\necho v3.274.1\n")
	cacheDir := filepath.Join(dir, "state")
	require.NoError(t, os.MkdirAll(cacheDir, 0o700))
	cache := filepath.Join(cacheDir, versionCacheFile)
	ctx := context.Background()
	start := func(cacheDir string) *pulumiCLI {
		t.Helper()
		c, err := newPulumiCLI(ctx, bin, time.Second, nil, cacheDir)
		require.NoError(t, err)
		assert.Equal(t, "3.274.1", c.Version().String())
		return c
	}

	assert.EqualValues(t, 1, start(cacheDir).calls.Load(), "cold: asks the binary")
	fi, err := os.Stat(cache)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.EqualValues(t, 0, start(cacheDir).calls.Load(), "warm: no process")
	assert.Len(t, lines(t, runs), 1)
	tmps, _ := filepath.Glob(filepath.Join(cacheDir, "*.tmp"))
	assert.Empty(t, tmps, "no temp files left behind")

	// A rebuilt binary (new mtime) is asked again, then cached again.
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(bin, later, later))
	assert.EqualValues(t, 1, start(cacheDir).calls.Load(), "binary changed")
	assert.EqualValues(t, 0, start(cacheDir).calls.Load())

	// A corrupt cache, or one for another binary, falls back to running `version`.
	require.NoError(t, os.WriteFile(cache, []byte("{not json"), 0o600))
	assert.EqualValues(t, 1, start(cacheDir).calls.Load(), "corrupt cache")
	var entry versionCache
	b, err := os.ReadFile(cache)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &entry))
	entry.Path = "/elsewhere/pulumi"
	b, _ = json.Marshal(entry)
	require.NoError(t, os.WriteFile(cache, b, 0o600))
	assert.EqualValues(t, 1, start(cacheDir).calls.Load(), "cache for another binary")
	entry.Path, entry.Version = bin, "not-a-version"
	b, _ = json.Marshal(entry)
	require.NoError(t, os.WriteFile(cache, b, 0o600))
	assert.EqualValues(t, 1, start(cacheDir).calls.Load(), "unparsable cached version")

	// No cache dir, no cache.
	assert.EqualValues(t, 1, start("").calls.Load())

	// A binary without a proper version is refused and never cached.
	bad := writeScript(t, filepath.Join(dir, "pulumi-dev"), "echo garbage\n")
	badState := t.TempDir()
	_, err = newPulumiCLI(ctx, bad, time.Second, nil, badState)
	assert.ErrorIs(t, err, ErrToolsMissing)
	_, err = os.Stat(filepath.Join(badState, versionCacheFile))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

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

// fakeStatusEngine runs a Pulumi CLI stand-in whose `stack tag ls` and `stack history` take a second
// each and fail on demand (FAKE_FAIL_TAGS, FAKE_FAIL_HISTORY in the engine's env).
func fakeStatusEngine(t *testing.T, env map[string]string) *Engine {
	t.Helper()
	dir := t.TempDir()
	bin := writeScript(t, filepath.Join(dir, "pulumi"), `case "$*" in
*" version"*) echo v3.274.1 ;;
*"stack tag ls"*)
  sleep 1
  if [ -n "$FAKE_FAIL_TAGS" ]; then echo "error: no stack named 'tenant.a.b' found" >&2; exit 255; fi
  echo '{"tfrs.io/managed-by":"cli"}' ;;
*"stack history"*)
  sleep 1
  if [ -n "$FAKE_FAIL_HISTORY" ]; then echo "error: history is broken" >&2; exit 255; fi
  echo '[{"kind":"update","result":"succeeded","startTime":"2025-01-01T00:00:00Z","version":1}]' ;;
*) echo "unexpected: $*" >&2; exit 1 ;;
esac
`)
	provider := writeScript(t, filepath.Join(dir, "pulumi-resource-kubernetes"), "exit 1\n")
	// A backend the engine does not open itself (gs://), so Status takes its CLI path.
	return newEngine(t, Options{PulumiPath: bin, ProviderPath: provider, Env: env, BackendURL: "gs://tfrs-fake-bucket"})
}

// TestStatusReadsInParallel: on a backend the engine cannot read in-process, tags and history
// are two processes run side by side, and the errors are what they were when they ran one
// after the other.
func TestStatusReadsInParallel(t *testing.T) {
	ctx := context.Background()
	e := fakeStatusEngine(t, nil)
	before := e.Stats().CLICalls
	start := time.Now()
	st, err := e.Status(ctx, "tenant.a.b")
	wall := time.Since(start)
	require.NoError(t, err)
	assert.EqualValues(t, 2, e.Stats().CLICalls-before)
	assert.Less(t, wall, 1800*time.Millisecond, "two 1 s reads side by side")
	assert.Equal(t, ManagedByCLI, st.ManagedBy)
	assert.True(t, st.Ready)
	require.NotNil(t, st.Last)
	assert.Equal(t, "update", st.Last.Kind)

	// A missing stack is ErrNotFound (from the tag read) even though history fails too.
	e = fakeStatusEngine(t, map[string]string{"FAKE_FAIL_TAGS": "1", "FAKE_FAIL_HISTORY": "1"})
	_, err = e.Status(ctx, "tenant.a.b")
	assert.ErrorIs(t, err, ErrNotFound)
	e = fakeStatusEngine(t, map[string]string{"FAKE_FAIL_TAGS": "1"})
	_, err = e.Status(ctx, "tenant.a.b")
	assert.ErrorIs(t, err, ErrNotFound)
	e = fakeStatusEngine(t, map[string]string{"FAKE_FAIL_HISTORY": "1"})
	_, err = e.Status(ctx, "tenant.a.b")
	assert.ErrorIs(t, err, ErrFailed)
	assert.Contains(t, err.Error(), "history is broken")
}

// TestOutputsFromDeployment: the export-based outputs are what `stack output` renders, for
// every kind of value the checkpoint can hold.
func TestOutputsFromDeployment(t *testing.T) {
	secret := func(v any) map[string]any {
		b, _ := json.Marshal(v)
		return map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "plaintext": string(b)}
	}
	byteString := map[string]any{"4dabf18193072939515e22adb298388d": "803fd3297a5875dc03ca845dda5d2a98", "value": "/w=="} // the byte 0xff
	ref := map[string]any{"4dabf18193072939515e22adb298388d": "5cf8f73096256a8f31e491e813e4eb8e", "urn": "urn:x", "packageVersion": ""}
	outputs := map[string]any{
		"plain":      "v",
		"num":        42,
		"flag":       true,
		"null":       nil,
		"nested":     map[string]any{"a": []any{1, "x"}, "b": map[string]any{"c": "d"}},
		"tok":        secret("s3cret"),
		"secretNum":  secret(7.5),
		"secretMap":  secret(map[string]any{"k": "v", "inner": secret("deeper")}),
		"mixed":      map[string]any{"open": "o", "hidden": secret("h")},
		"list":       []any{"a", secret("b")},
		"looksLike":  "not really [secret]",
		"bytes":      byteString,
		"secretByte": secret(byteString),
		"ref":        ref,
	}
	deployment := map[string]any{"resources": []any{
		map[string]any{"type": "pulumi:providers:kubernetes", "outputs": map[string]any{"x": "y"}},
		map[string]any{"type": "pulumi:pulumi:Stack", "parent": "urn:other", "outputs": map[string]any{"wrong": "stack"}},
		map[string]any{"type": "pulumi:pulumi:Stack", "outputs": outputs},
	}}
	raw, err := json.Marshal(deployment)
	require.NoError(t, err)
	got, err := outputsFromDeployment(raw)
	require.NoError(t, err)
	want := auto.OutputMap{
		"plain":      {Value: "v"},
		"num":        {Value: float64(42)},
		"flag":       {Value: true},
		"null":       {Value: nil},
		"nested":     {Value: map[string]any{"a": []any{float64(1), "x"}, "b": map[string]any{"c": "d"}}},
		"tok":        {Value: "s3cret", Secret: true},
		"secretNum":  {Value: 7.5, Secret: true},
		"secretMap":  {Value: map[string]any{"k": "v", "inner": "deeper"}, Secret: true},
		"mixed":      {Value: map[string]any{"open": "o", "hidden": "h"}, Secret: true},
		"list":       {Value: []any{"a", "b"}, Secret: true},
		"looksLike":  {Value: "not really [secret]", Secret: true}, // as auto's StackOutputs says
		"bytes":      {Value: `b"/w=="`},
		"secretByte": {Value: `b"/w=="`, Secret: true},
		"ref":        {Value: ref},
	}
	assert.Equal(t, want, got)

	got, err = outputsFromDeployment(nil)
	require.NoError(t, err)
	assert.Empty(t, got, "a stack never updated has no outputs")

	// A ciphertext export (secrets not decrypted) is an error, never a silent "[secret]".
	deployment["resources"] = []any{map[string]any{"type": "pulumi:pulumi:Stack", "outputs": map[string]any{
		"tok": map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:abc"},
	}}}
	raw, _ = json.Marshal(deployment)
	_, err = outputsFromDeployment(raw)
	assert.Error(t, err)
}

// richOutputsProgram exports every shape of output: plain and secret, scalar and nested.
func richOutputsProgram(version string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		ctx.Export("plain", pulumi.String("plain-"+version))
		ctx.Export("num", pulumi.Int(42))
		ctx.Export("ratio", pulumi.Float64(0.25))
		ctx.Export("flag", pulumi.Bool(true))
		ctx.Export("nested", pulumi.Map{
			"a":    pulumi.StringArray{pulumi.String("x"), pulumi.String("y")},
			"b":    pulumi.Map{"c": pulumi.Int(1), "d": pulumi.String("e")},
			"none": pulumi.Map{},
		})
		ctx.Export("token", pulumi.ToSecret(pulumi.String("rich-secret-token-value")))
		ctx.Export("secretNum", pulumi.ToSecret(pulumi.Int(7)))
		ctx.Export("mixed", pulumi.Map{
			"open":   pulumi.String("o"),
			"hidden": pulumi.ToSecret(pulumi.String("nested-secret-value")),
		})
		ctx.Export("list", pulumi.Array{pulumi.String("a"), pulumi.ToSecret(pulumi.String("listed-secret-value"))})
		ctx.Export("looksSecret", pulumi.String("this says [secret] but is plain"))
		return nil
	}
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

// tracedEngine runs the real CLI through a wrapper that logs each command line, so a test can
// assert which processes an operation started.
func tracedEngine(t *testing.T, o Options) (*Engine, func() []string) {
	t.Helper()
	real, err := tools.Bin("pulumi")
	require.NoError(t, err)
	dir := t.TempDir()
	log := filepath.Join(dir, "commands")
	bin := writeScript(t, filepath.Join(dir, "pulumi"), `echo "$*" >> `+log+"\nexec "+real+` "$@"`+"\n")
	o.PulumiPath = bin
	e := newEngine(t, o)
	seen := 0
	// next returns the commands run since the last call.
	return e, func() []string {
		all := lines(t, log)
		out := all[seen:]
		seen = len(all)
		return out
	}
}

func countCmd(cmds []string, sub string) int {
	n := 0
	for _, c := range cmds {
		if strings.Contains(c, sub) {
			n++
		}
	}
	return n
}

// secretConfigProgram exports its secret config value (as a secret) and a credential-like
// value derived from it, so a test can check what the program received.
func secretConfigProgram(ctx *pulumi.Context) error {
	c := config.New(ctx, ProjectName)
	ctx.Export("token", c.RequireSecret("token"))
	ctx.Export("plain", pulumi.String(c.Require("plain")))
	return nil
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

// TestStackVersionPicksNewestCheckpoint: like the CLI, the most recently written of
// .json/.json.gz/.json.zst is the checkpoint.
func TestStackVersionPicksNewestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	e := &Engine{opts: &resolved{Options: Options{BackendURL: "file://" + dir + "?metadata=skip"}}}
	stacks := filepath.Join(dir, ".pulumi", "stacks", ProjectName)
	require.NoError(t, os.MkdirAll(stacks, 0o700))
	plain := filepath.Join(stacks, "cluster.x.json")
	require.NoError(t, os.WriteFile(plain, []byte("{}"), 0o600))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(plain, old, old))
	v1, ok := e.StackVersion(context.Background(), "cluster.x")
	require.True(t, ok)
	require.NoError(t, os.WriteFile(plain+".gz", []byte("gzipped"), 0o600))
	v2, ok := e.StackVersion(context.Background(), "cluster.x")
	require.True(t, ok)
	assert.NotEqual(t, v1, v2)
	fi, err := os.Stat(plain + ".gz")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(v2, strings.Join([]string{itoa(fi.ModTime().UnixNano()), itoa(fi.Size())}, "-")), v2)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		assert.True(t, strings.HasSuffix(v2, "-"+itoa(int64(st.Ino))), v2)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
