//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/server"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// TestHTTPTenantLifecycle drives an enterprise tenant through the HTTP API, with the real
// engine and the real tenant program on the local control plane (after the stand-in cluster
// stack, made by the CLI door): two concurrent POSTs of the tenant start exactly one
// operation (the other is 409), its events stream as SSE until done, GET shows it Ready with
// outputs whose secrets are redacted, a preview of the stored spec shows no changes, a PUT
// changes it, and DELETE destroys it. No response body ever holds a secret value.
func TestHTTPTenantLifecycle(t *testing.T) {
	e := newEnv(t, 20*time.Minute)
	ctx := e.ctx
	tc, _ := upStandInCluster(ctx, t, e.eng, e.cfg)

	c := serveAPI(t, e)

	root, err := filepath.Abs(filepath.Join("..", "..", "stacks", "testdata", "tenant", "charts"))
	require.NoError(t, err)
	tenant := map[string]any{
		"apiVersion": "tfrs.io/v1alpha1", "kind": "TFRTenant",
		"metadata": map[string]any{"name": "globex"},
		"spec": map[string]any{
			"clusterRef": tc.Name, "type": "enterprise", "namespace": "globex",
			"jaeger":  map[string]any{"localPath": filepath.Join(root, "jaeger")},
			"grafana": map[string]any{"localPath": filepath.Join(root, "grafana")},
		},
	}
	const tenants = "/v1/namespaces/tfrs-system/tenants"

	// Two POSTs at once: one operation, one 409.
	type answer struct {
		code     int
		body     []byte
		location string
	}
	answers := make([]answer, 2)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := c.do(http.MethodPost, tenants, tenant)
			answers[i] = answer{resp.StatusCode, body, resp.Header.Get("Location")}
		}()
	}
	wg.Wait()
	var opURL string
	for _, a := range answers {
		switch a.code {
		case http.StatusAccepted:
			require.Empty(t, opURL, "both POSTs started an operation")
			opURL = a.location
		case http.StatusConflict:
			var p server.Problem
			require.NoError(t, json.Unmarshal(a.body, &p))
			require.Contains(t, []string{"https://tfrs.io/problems/busy", "https://tfrs.io/problems/already-exists"}, p.Type)
		default:
			t.Fatalf("POST: %d %s", a.code, a.body)
		}
	}
	require.NotEmpty(t, opURL, "neither POST started an operation")

	// The events stream until the operation is done.
	events := c.stream(opURL + "/events")
	require.Contains(t, events, "event: progress")
	require.Contains(t, events, `"kind":"step-done"`)
	final := events[strings.LastIndex(events, "event: done"):]
	require.Contains(t, final, `"state":"succeeded"`, "the operation failed: %s", final)
	op := c.operation(opURL)
	require.Equal(t, server.StateSucceeded, op.State)
	t.Logf("create: %s, %v", op.EndedAt.Sub(op.StartedAt).Round(time.Millisecond), op.Result.Changes.Summary)

	// GET: ready, outputs present, secrets redacted.
	resp, body := c.do(http.MethodGet, tenants+"/globex", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var v server.ResourceView
	require.NoError(t, json.Unmarshal(body, &v))
	require.True(t, v.Status.Ready)
	require.Equal(t, "api", v.Status.ManagedBy)
	require.Equal(t, "globex-pg-rw", v.Status.Outputs["postgresHost"])
	require.Equal(t, server.RedactedValue, v.Status.Outputs["postgresPassword"])

	// The secret values, read from the stack the way a child program would.
	outs, err := e.eng.Outputs(ctx, v.Status.Stack)
	require.NoError(t, err)
	var secrets []string
	for _, k := range outs.Keys() {
		if outs[k].Secret {
			if s, ok := outs[k].Reveal().(string); ok && len(s) >= 8 {
				secrets = append(secrets, s)
			}
		}
	}
	require.NotEmpty(t, secrets)

	// A preview of the stored spec changes nothing.
	began := time.Now()
	resp, body = c.do(http.MethodPost, tenants+"/globex/preview", nil)
	t.Logf("preview: %s", time.Since(began).Round(time.Millisecond))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var rep diff.Report
	require.NoError(t, json.Unmarshal(body, &rep))
	require.Empty(t, rep.Changes, "preview right after up: %+v", rep.Changes)
	require.NotZero(t, rep.Summary[engine.StepSame])

	// PUT a change.
	tenant["spec"].(map[string]any)["prometheus"] = map[string]any{"retention": "7d"}
	resp, body = c.do(http.MethodPut, tenants+"/globex", tenant)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(body))
	op = c.wait(resp.Header.Get("Location"))
	require.Equal(t, server.StateSucceeded, op.State, "%+v", op.Error)
	require.NotZero(t, op.Result.Changes.Summary[engine.StepUpdate], "the retention edit updates something: %+v", op.Result.Changes.Summary)
	t.Logf("update: %s, %v", op.EndedAt.Sub(op.StartedAt).Round(time.Millisecond), op.Result.Changes.Summary)

	// DELETE.
	resp, body = c.do(http.MethodDelete, tenants+"/globex", nil)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(body))
	op = c.wait(resp.Header.Get("Location"))
	require.Equal(t, server.StateSucceeded, op.State, "%+v", op.Error)
	t.Logf("delete: %s", op.EndedAt.Sub(op.StartedAt).Round(time.Millisecond))
	resp, body = c.do(http.MethodGet, tenants+"/globex", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(body))

	for _, b := range c.bodies() {
		for _, s := range secrets {
			require.NotContains(t, b, s, "a response body holds a secret value")
		}
	}
}

// apiClient calls the API and keeps every response body it saw.
type apiClient struct {
	t     *testing.T
	ctx   context.Context
	base  string
	token string
	mu    sync.Mutex
	seen  []string
}

func (c *apiClient) request(method, path string, body any) *http.Request {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.ctx, method, c.base+path, rd)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

func (c *apiClient) keep(b []byte) {
	c.mu.Lock()
	c.seen = append(c.seen, string(b))
	c.mu.Unlock()
}

func (c *apiClient) bodies() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

func (c *apiClient) do(method, path string, body any) (*http.Response, []byte) {
	c.t.Helper()
	resp, err := http.DefaultClient.Do(c.request(method, path, body))
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	c.keep(b)
	return resp, b
}

// stream reads an event stream to its end (the `done` event).
func (c *apiClient) stream(path string) string {
	c.t.Helper()
	resp, err := http.DefaultClient.Do(c.request(http.MethodGet, path, nil))
	require.NoError(c.t, err)
	defer resp.Body.Close()
	require.Equal(c.t, http.StatusOK, resp.StatusCode)
	require.Equal(c.t, "text/event-stream", resp.Header.Get("Content-Type"))
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	require.NoError(c.t, sc.Err())
	c.keep([]byte(b.String()))
	return b.String()
}

func (c *apiClient) operation(path string) server.OperationView {
	c.t.Helper()
	resp, body := c.do(http.MethodGet, path, nil)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, string(body))
	var v server.OperationView
	require.NoError(c.t, json.Unmarshal(body, &v))
	return v
}

// wait polls an operation until it ends.
func (c *apiClient) wait(path string) server.OperationView {
	c.t.Helper()
	for {
		v := c.operation(path)
		if v.State == server.StateSucceeded || v.State == server.StateFailed || v.State == server.StateCanceled || v.State == server.StateAwaitingApproval {
			return v
		}
		select {
		case <-c.ctx.Done():
			c.t.Fatalf("operation %s did not end: %v", path, c.ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// tlogWriter sends the server's log to the test log.
type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// serveAPI serves the HTTP API over e's engine and backend (specs and operations in the
// backend, one admin token) until the test ends. The tenant's charts are the stand-ins: the
// API allows local paths under them only.
func serveAPI(t *testing.T, e *env) *apiClient {
	t.Helper()
	const token = "e2e-admin-token-0123456789"
	run := runner.New(e.eng, runner.Options{Kubeconfig: e.cfg["kubernetes:kubeconfig"].Value})
	bkt, err := e.eng.Bucket(e.ctx)
	require.NoError(t, err)
	sources := server.DefaultSourcePolicy()
	sources.LocalRoots = []string{filepath.Dir(testenv.StandIns("tenant"))}
	srv := server.New(server.Config{
		Runner: run, Engine: e.eng, Specs: server.NewBackendSpecStore(bkt), Sources: sources, Operations: server.NewOperationStore(bkt, "e2e"),
		Tokens: []server.Token{{Name: "e2e", Role: server.RoleAdmin, Value: token}},
		Logger: slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveCtx, stop := context.WithCancel(e.ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, l) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-served)
	})
	return &apiClient{t: t, ctx: e.ctx, base: "http://" + l.Addr().String(), token: token}
}
