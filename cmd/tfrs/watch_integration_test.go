//go:build integration

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/server"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// TestWatchFollowsARealOperation runs the HTTP API in-process as `tfrs serve` does (the real
// engine, runner and server on a local control plane), POSTs the stand-in cluster and follows
// the operation with `tfrs watch`: plain progress lines (stdout is a pipe here) with the
// cluster's components, no raw SSE and no escape sequence, exit 0. A DELETE canceled at once
// makes watch exit 1 naming the cancellation. `tfrs preview --progress` prints its progress
// through the same renderer.
//
// With TFRS_RECORD_PROGRESS=FILE the operation's engine events are written to FILE as JSON
// lines (how internal/progress/testdata/cluster-up.jsonl was recorded).
func TestWatchFollowsARealOperation(t *testing.T) {
	start := time.Now()
	cp := testenv.ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	pass := "watch-integration-" + t.Name()
	t.Setenv("TFRS_PASSPHRASE", pass)
	state := t.TempDir()
	kubeconfig, err := os.ReadFile(cp.KubeconfigPath)
	require.NoError(t, err)
	eng, err := engine.New(ctx, engine.Options{StateDir: state, Passphrase: pass})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	standIns, err := filepath.Abs(filepath.Join("..", "..", "stacks", "testdata"))
	require.NoError(t, err)
	sources := server.DefaultSourcePolicy()
	sources.LocalRoots = []string{standIns}
	const token = "watch-it-token-0123456789abcdef"
	srv := server.New(server.Config{
		Runner: runner.New(eng, runner.Options{Kubeconfig: string(kubeconfig), Revision: programRevision}), Engine: eng, Sources: sources,
		Tokens: []server.Token{{Name: "it", Role: server.RoleAdmin, Value: token}},
		Logger: slog.New(slog.DiscardHandler), HeartbeatInterval: time.Second,
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, l) }()
	t.Cleanup(func() { stop(); <-served })
	base := "http://" + l.Addr().String()
	t.Setenv("TFRS_API_TOKEN", token)
	t.Setenv("NO_COLOR", "")

	cluster := map[string]any{
		"apiVersion": "tfrs.io/v1alpha1", "kind": "TFRCluster", "metadata": map[string]any{"name": "e2e"},
		"spec": map[string]any{
			"domain": "tfrobot.test", "ingress": map[string]any{"mode": "NodePort"},
			"imageRegistry":    map[string]any{"registry": "mirror.example.com"},
			"certManager":      map[string]any{"localPath": filepath.Join(standIns, "cluster", "charts", "cert-manager")},
			"istio":            map[string]any{"localPath": filepath.Join(standIns, "cluster", "charts", "istio")},
			"istioIngress":     map[string]any{"localPath": filepath.Join(standIns, "cluster", "charts", "gateway")},
			"minioOperator":    map[string]any{"localPath": filepath.Join(standIns, "cluster", "charts", "minio-operator")},
			"cnpgOperator":     map[string]any{"localPath": filepath.Join(standIns, "cluster", "manifests", "cnpg.yaml")},
			"rabbitmqOperator": map[string]any{"localPath": filepath.Join(standIns, "cluster", "manifests", "rabbitmq")},
		},
	}
	loc := apiCall(ctx, t, base, token, http.MethodPost, "/v1/clusters", cluster, http.StatusAccepted)

	var code int
	mark := time.Now()
	out := capture(t, &os.Stdout, func() { code = run([]string{"watch", loc, "--api-url", base}) })
	t.Logf("watch of the cluster up: %s, %d lines", time.Since(mark).Round(100*time.Millisecond), strings.Count(out, "\n"))
	if f := os.Getenv("TFRS_RECORD_PROGRESS"); f != "" {
		recordProgress(ctx, t, base+loc, token, f)
	}
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "[cluster.e2e] up started: a new stack")
	require.Regexp(t, `\[cluster\.e2e\]   ok +CertManager cert-manager +(\d+)/(\d+)`, out)
	require.Regexp(t, `\[cluster\.e2e\]   ok +Istio istio +\d+/\d+`, out)
	require.Regexp(t, `\[cluster\.e2e\] done: create=\d+ \((\d+)/(\d+) resources\)`, out)
	require.Contains(t, out, "(create TFRCluster e2e) succeeded")
	require.NotContains(t, out, "data:", "no raw SSE")
	require.NotContains(t, out, "\x1b[", "plain output on a pipe")
	done := regexpGroups(t, `done: create=\d+ \((\d+)/(\d+) resources\)`, out)
	require.Equal(t, done[0], done[1], "everything done at the end")

	// The same renderer prints the CLI's own progress (forced on a pipe: plain lines).
	dir := t.TempDir()
	file := standInCRs(t, dir, "")
	clusterOnly := strings.SplitN(readFile(t, file), "---\n", 2)[1]
	require.NoError(t, os.WriteFile(file, []byte(clusterOnly), 0o600))
	var stdout string
	mark = time.Now()
	stderr := capture(t, &os.Stderr, func() {
		stdout = capture(t, &os.Stdout, func() {
			code = run([]string{"preview", "-f", file, "--progress", "--state-dir", state, "--kubeconfig", cp.KubeconfigPath})
		})
	})
	t.Logf("preview --progress: %s", time.Since(mark).Round(100*time.Millisecond))
	require.Equal(t, 0, code, stdout+stderr)
	require.Regexp(t, `\[cluster\.e2e\] preview started: \d+ resources in the stack`, stderr)
	require.Regexp(t, `\[cluster\.e2e\]   ok +CertManager cert-manager +\d+/\d+`, stderr)
	require.Contains(t, stderr, "[cluster.e2e] done: same=")

	// The fleet preview over HTTP, followed by watch: the cluster the API brought up is
	// proven unchanged from its recorded inputs (its local charts read in place, as the up
	// read them), without a Pulumi process.
	loc = apiCall(ctx, t, base, token, http.MethodPost, "/v1/fleet/preview", nil, http.StatusAccepted)
	mark = time.Now()
	out = capture(t, &os.Stdout, func() { code = run([]string{"watch", loc, "--api-url", base}) })
	t.Logf("fleet preview over HTTP: %s", time.Since(mark).Round(100*time.Millisecond))
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "fleet 1/1: TFRCluster e2e unchanged (proven from recorded inputs)")
	require.Contains(t, out, "(fleet-preview Fleet) succeeded")

	// A failed (here: canceled) operation exits 1 and names what happened.
	loc = apiCall(ctx, t, base, token, http.MethodDelete, "/v1/clusters/e2e", nil, http.StatusAccepted)
	apiCall(ctx, t, base, token, http.MethodPost, loc+"/cancel", nil, http.StatusAccepted)
	var errOut string
	errOut = capture(t, &os.Stderr, func() {
		out = capture(t, &os.Stdout, func() { code = run([]string{"watch", base + loc}) })
	})
	require.Equal(t, exitFailure, code, out+errOut)
	require.Contains(t, errOut, "(delete TFRCluster e2e) canceled: Canceled: the operation was canceled on request")
	t.Logf("whole test %s", time.Since(start).Round(time.Second))
}

func apiCall(ctx context.Context, t *testing.T, base, token, method, path string, body any, want int) string {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, want, resp.StatusCode, "%s %s: %s", method, path, b)
	if loc := resp.Header.Get("Location"); loc != "" {
		return loc
	}
	var v struct{ Links struct{ Self string } }
	_ = json.Unmarshal(b, &v)
	return v.Links.Self
}

// recordProgress replays an ended operation's stream and writes its progress events' data.
func recordProgress(ctx context.Context, t *testing.T, opURL, token, file string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, opURL+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var buf bytes.Buffer
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok && event == "progress" {
			buf.WriteString(v + "\n")
		}
	}
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))
	t.Logf("recorded %d events to %s", strings.Count(buf.String(), "\n"), file)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// regexpGroups returns the submatches of the last match of re in s.
func regexpGroups(t *testing.T, re, s string) []string {
	t.Helper()
	all := regexp.MustCompile(re).FindAllStringSubmatch(s, -1)
	require.NotEmpty(t, all, "no match of %s", re)
	return all[len(all)-1][1:]
}
