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
