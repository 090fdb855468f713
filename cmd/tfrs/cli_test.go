package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// invocation is what one in-process run of the CLI did.
type invocation struct {
	code           int
	stdout, stderr string
}

// invoke runs the CLI in-process with stdin (when not empty) and captures both streams.
func invoke(t *testing.T, stdin string, args ...string) invocation {
	t.Helper()
	if stdin != "" {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		go func() { _, _ = io.WriteString(w, stdin); w.Close() }()
		old := os.Stdin
		os.Stdin = r
		t.Cleanup(func() { os.Stdin = old; r.Close() })
	}
	var inv invocation
	inv.stderr = capture(t, &os.Stderr, func() { inv.code, inv.stdout = runCaptured(t, args...) })
	return inv
}

var (
	exampleCluster = filepath.Join("..", "..", "examples", "cluster.yaml")
	exampleTenant  = filepath.Join("..", "..", "examples", "tenant-enterprise.yaml")
	inputsDir      = filepath.Join("testdata", "inputs", "dir")
	kustomizeDir   = filepath.Join("testdata", "inputs", "kustomize")
)

// graphStacks parses `graph -o json` output of several objects (one array) into their stacks.
func graphStacks(t *testing.T, out string) []string {
	t.Helper()
	var docs []graphJSON
	require.NoError(t, json.Unmarshal([]byte(out), &docs), out)
	var stacks []string
	for _, d := range docs {
		stacks = append(stacks, d.Stack)
	}
	return stacks
}

// The command lines of the issue, good and bad, with their exit codes and messages. A usage
// error exits 1 with the usage on stderr, never 2 (which means "changes" under
// --detailed-exitcode); help goes to stdout and exits 0.
func TestCLIInvocations(t *testing.T) {
	cluster, err := os.ReadFile(exampleCluster)
	require.NoError(t, err)
	deployment := filepath.Join(t.TempDir(), "app.yaml")
	require.NoError(t, os.WriteFile(deployment, append(append([]byte{}, cluster...), []byte(`
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {}
`)...), 0o600))
	empty := t.TempDir()

	const usage = "Usage:\n"
	for _, tc := range []struct {
		name      string
		args      []string
		stdin     string
		code      int
		stdout    []string // substrings of stdout
		stderr    []string // substrings of stderr
		noStdout  bool
		usageShow bool // the usage is printed on stderr
		anyStderr bool // stderr is not checked (completion reports its directive there)
		check     func(t *testing.T, inv invocation)
	}{
		{name: "no -f with --detailed-exitcode is a usage error, not changes", args: []string{"preview", "--detailed-exitcode"},
			code: 1, stderr: []string{"tfrs preview: -f FILE|DIR|- or -k DIR is required", "Run 'tfrs preview --help'"}, usageShow: true, noStdout: true},
		{name: "unknown flag", args: []string{"preview", "-f", exampleCluster, "--no-such-flag"},
			code: 1, stderr: []string{"unknown flag: --no-such-flag"}, usageShow: true, noStdout: true},
		{name: "unknown command", args: []string{"previwe"},
			code: 1, stderr: []string{`unknown command "previwe" for "tfrs"`, "Did you mean this?", "preview"}, usageShow: true},
		{name: "no command", args: nil, code: 1, stderr: []string{"a command is required", "Stack commands"}, usageShow: true},
		{name: "bad flag value", args: []string{"preview", "-f", exampleCluster, "--parallel", "many"},
			code: 1, stderr: []string{`invalid argument "many"`}, usageShow: true},
		{name: "a positional between flags is refused, not ignored", args: []string{"graph", "-f", exampleCluster, "extra", "-o", "dot"},
			code: 1, stderr: []string{`unexpected arguments ["extra"]`}, usageShow: true, noStdout: true},
		{name: "a stray argument under --detailed-exitcode exits 1", args: []string{"preview", "-f", exampleCluster, "extra", "--detailed-exitcode"},
			code: 1, stderr: []string{`unexpected arguments ["extra"]`}, usageShow: true},
		{name: "a flag at the end is honoured", args: []string{"graph", "-f", exampleCluster, "-o", "dot"},
			code: 0, stdout: []string{"digraph \"cluster.dev\" {\n  label=\"TFRCluster dev (stack cluster.dev)\";"}},
		{name: "flags after the positional of completion are honoured", args: []string{"completion", "bash", "--no-descriptions"},
			code: 0, stdout: []string{"__start_tfrs", "__completeNoDesc"}},
		{name: "--help on stdout", args: []string{"--help"},
			code: 0, stdout: []string{"Usage:", "Stack commands (CI and scripts):", "preview", "Long-running:", "completion", "Examples:"}},
		{name: "subcommand help has a synopsis and examples", args: []string{"preview", "--help"},
			code: 0, stdout: []string{"preview (-f FILE|DIR|- | -k DIR)... [flags]", "Exit codes:", "Examples:", "kustomize build deploy/overlays/prod | tfrs preview -f -", "--detailed-exitcode", "-R, --recursive", "-k, --kustomize"}},
		{name: "help command", args: []string{"help", "graph"}, code: 0, stdout: []string{"--fenced", "Examples:"}},
		{name: "-h", args: []string{"render", "-h"}, code: 0, stdout: []string{"--omit-secrets"}},
		{name: "--version", args: []string{"--version"}, code: 0, stdout: []string{"tfrs dev, "}},
		{name: "stdin", args: []string{"graph", "-f", "-", "-o", "json"}, stdin: string(cluster),
			code: 0, stdout: []string{`"stack": "cluster.dev"`}},
		{name: "stdin twice", args: []string{"graph", "-f", "-", "-f", "-"}, stdin: string(cluster),
			code: 1, stderr: []string{"-f - (stdin) is given twice"}, usageShow: true},
		{name: "a directory, not its subdirectories", args: []string{"graph", "-f", inputsDir, "-o", "json"}, code: 0,
			check: func(t *testing.T, inv invocation) {
				require.Equal(t, []string{"cluster.dev", "tenant.tfrs-system.acme"}, graphStacks(t, inv.stdout))
			}},
		{name: "-R reads subdirectories", args: []string{"graph", "-R", "-f", inputsDir, "-o", "json"}, code: 0,
			check: func(t *testing.T, inv invocation) {
				require.Equal(t, []string{"cluster.dev", "tenant.tfrs-system.acme", "server.tfrs-system.bot"}, graphStacks(t, inv.stdout))
			}},
		{name: "a directory without manifests", args: []string{"graph", "-f", empty},
			code: 1, stderr: []string{empty + ": no .yaml, .yml, .json files in the directory (-R reads its subdirectories)"}},
		{name: "-k builds the kustomization", args: []string{"graph", "-k", kustomizeDir, "-f", exampleCluster, "-o", "json"}, code: 0,
			check: func(t *testing.T, inv invocation) {
				require.Equal(t, []string{"cluster.dev", "tenant.team-a.acme"}, graphStacks(t, inv.stdout), "the kustomization's namespace applies")
			}},
		{name: "-k of a directory without a kustomization", args: []string{"graph", "-k", empty},
			code: 1, stderr: []string{"-k " + empty + ":", "unable to find one of 'kustomization.yaml'"}},
		{name: "a Deployment is not a TFRS resource", args: []string{"preview", "-f", deployment},
			code: 1, stderr: []string{deployment + `: document 2: Deployment "web" (apps/v1) is not a TFRS resource (TFRCluster/TFRTenant/TFRServer)`}, noStdout: true},
		{name: "a missing file", args: []string{"graph", "-f", "no-such.yaml"}, code: 1, stderr: []string{"no-such.yaml: no such file or directory"}},
		{name: "--fenced is for mermaid", args: []string{"graph", "-f", exampleCluster, "-o", "dot", "--fenced"},
			code: 1, stderr: []string{"--fenced goes with -o mermaid"}, usageShow: true},
		{name: "bad --color", args: []string{"graph", "-f", exampleCluster, "--color", "sometimes"},
			code: 1, stderr: []string{"--color must be auto, always or never"}, usageShow: true},
		{name: "version without tools", args: []string{"version", "--client"}, code: 0, stdout: []string{"tfrs        dev, ",
			"upstream support of the pinned components:", "istio                                  1.32.0    1.33-1.37"}},
		{name: "version json", args: []string{"version", "--client", "-o", "json"}, code: 0,
			check: func(t *testing.T, inv invocation) {
				var v versions
				require.NoError(t, json.Unmarshal([]byte(inv.stdout), &v))
				require.Equal(t, "dev", v.TFRS.Version)
				require.Contains(t, v.TFRS.Go, "go1.")
				require.Nil(t, v.Pulumi, "--client asks no tool")
				require.Equal(t, stacks.PinnedSupports(), v.Support, "the support matrix of the pins")
			}},
		{name: "completion bash", args: []string{"completion", "bash"}, code: 0, stdout: []string{"# bash completion V2 for tfrs", "__start_tfrs"}},
		{name: "completion zsh", args: []string{"completion", "zsh"}, code: 0, stdout: []string{"#compdef tfrs", "compdef _tfrs tfrs"}},
		{name: "completion fish", args: []string{"completion", "fish"}, code: 0, stdout: []string{"complete -c tfrs"}},
		{name: "completion of a flag's values", args: []string{"__complete", "graph", "-o", ""}, code: 0, stdout: []string{"mermaid\ndot\njson\n:4\n"}, anyStderr: true},
		{name: "completion of the subcommands", args: []string{"__complete", "re"}, code: 0, stdout: []string{"refresh\t", "render\t"}, anyStderr: true},
		{name: "serve: bad --log-format", args: []string{"serve", "--log-format", "xml"},
			code: 1, stderr: []string{"--log-format must be text or json"}, usageShow: true},
		{name: "operator: bad --log-level", args: []string{"operator", "--log-level", "loud"},
			code: 1, stderr: []string{"--log-level must be debug, info, warn or error"}, usageShow: true},
		{name: "operator: --json-logs is a deprecated alias", args: []string{"operator", "--json-logs", "--log-level", "loud"},
			code: 1, stderr: []string{"Flag --json-logs has been deprecated, use --log-format json"}, usageShow: true},
		{name: "dev: bad --log-format", args: []string{"dev", "--log-format", "xml"},
			code: 1, stderr: []string{"--log-format must be text or json"}, usageShow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := invoke(t, tc.stdin, tc.args...)
			require.Equal(t, tc.code, inv.code, "stdout:\n%s\nstderr:\n%s", inv.stdout, inv.stderr)
			for _, s := range tc.stdout {
				require.Contains(t, inv.stdout, s)
			}
			for _, s := range tc.stderr {
				require.Contains(t, inv.stderr, s)
			}
			if tc.noStdout {
				require.Empty(t, inv.stdout)
			}
			if tc.usageShow {
				require.Contains(t, inv.stderr, usage, "the usage is printed")
			} else {
				require.NotContains(t, inv.stderr, usage)
			}
			if tc.code == 0 && !tc.anyStderr {
				require.Empty(t, inv.stderr, "a good command says nothing on stderr")
			}
			if tc.check != nil {
				tc.check(t, inv)
			}
		})
	}
}

// The kustomization's build is what is loaded: its namespace and its patch apply.
func TestKustomizeInput(t *testing.T) {
	objs, err := (&inputFlags{kustomize: []string{kustomizeDir}}).load(nil, false)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	tn, ok := objs[0].obj.(*v1alpha1.TFRTenant)
	require.True(t, ok, "%T", objs[0].obj)
	require.Equal(t, "team-a", tn.Namespace)
	require.Equal(t, "acme-prod", tn.Spec.Namespace, "the patch applied")
}

// pinnedVersions reads hack/tools/versions.env.
func pinnedVersions(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.RepoRoot(), "hack", "tools", "versions.env"))
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// Colour follows --color, then NO_COLOR and TERM, and is on only for terminals.
func TestUseColor(t *testing.T) {
	for _, tc := range []struct {
		mode, noColor, term string
		terminal, want      bool
	}{
		{"auto", "", "xterm", true, true},
		{"auto", "", "xterm", false, false},
		{"auto", "1", "xterm", true, false},
		{"auto", "", "dumb", true, false},
		{"always", "1", "dumb", false, true},
		{"never", "", "xterm", true, false},
	} {
		require.Equal(t, tc.want, useColor(tc.mode, tc.noColor, tc.term, tc.terminal), "%+v", tc)
	}

	// An error message is red only when asked: stderr is a pipe here.
	inv := invoke(t, "", "graph", "--color", "always")
	require.Contains(t, inv.stderr, "\x1b[31mtfrs graph:\x1b[0m")
	inv = invoke(t, "", "graph")
	require.NotContains(t, inv.stderr, "\x1b[")
	t.Setenv("NO_COLOR", "1")
	inv = invoke(t, "", "graph", "--color", "auto")
	require.NotContains(t, inv.stderr, "\x1b[")
}

// The logging flags: one format and level for every long-running command; --json-logs (and
// TFRS_JSON_LOGS) still mean JSON unless --log-format is given.
func TestLogFlags(t *testing.T) {
	handler := func(args ...string) (string, error) {
		var f logFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.bind(fs)
		require.NoError(t, fs.Parse(args))
		var b strings.Builder
		h, err := f.handler(fs, &b)
		if err != nil {
			return "", err
		}
		require.NoError(t, h.Handle(t.Context(), slog.NewRecord(time.Now(), slog.LevelInfo, "hello", 0)))
		return b.String(), nil
	}
	out, err := handler()
	require.NoError(t, err)
	require.Contains(t, out, "msg=hello", "text by default")
	out, err = handler("--log-format", "json")
	require.NoError(t, err)
	require.Contains(t, out, `"msg":"hello"`)
	out, err = handler("--json-logs")
	require.NoError(t, err)
	require.Contains(t, out, `"msg":"hello"`, "the old flag means json")
	out, err = handler("--json-logs", "--log-format", "text")
	require.NoError(t, err)
	require.Contains(t, out, "msg=hello", "an explicit --log-format wins")
	t.Setenv("TFRS_LOG_FORMAT", "json")
	out, err = handler()
	require.NoError(t, err)
	require.Contains(t, out, `"msg":"hello"`, "TFRS_LOG_FORMAT")

	var f logFlags
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.bind(fs)
	require.NoError(t, fs.Parse([]string{"--log-level", "warn"}))
	h, err := f.handler(fs, io.Discard)
	require.NoError(t, err)
	require.False(t, h.Enabled(t.Context(), -4), "debug is below warn")
	require.True(t, h.Enabled(t.Context(), 8), "error is above warn")
}

// Progress is coloured only through the palette: plain when colour is off, the stack bold and
// a failure red when on; without --progress nothing is printed on a non-terminal.
func TestProgressColour(t *testing.T) {
	failed := engine.Event{Kind: engine.EventStepFailed, Stack: "cluster.dev", Type: "tfrs:cluster:Istio", URN: "urn:x"}
	var plain, coloured strings.Builder
	progressSink(&plain, true, palette{})(failed)
	require.Equal(t, "[cluster.dev] failed: tfrs:cluster:Istio urn:x\n", plain.String())
	progressSink(&coloured, true, palette{on: true})(failed)
	require.Equal(t, "\x1b[1m[cluster.dev]\x1b[0m \x1b[31mfailed: tfrs:cluster:Istio urn:x\x1b[0m\n", coloured.String())
	require.Nil(t, progressSink(&plain, false, palette{on: true}), "not a terminal, not forced")
}
