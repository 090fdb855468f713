package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/progress"
)

func TestOperationURL(t *testing.T) {
	const id = "0123456789abcdef01234567"
	for _, c := range []struct{ ref, base, want, err string }{
		{ref: "http://h:1/v1/operations/" + id, want: "http://h:1/v1/operations/" + id},
		{ref: "https://h/api/v1/operations/" + id + "/events", want: "https://h/api/v1/operations/" + id},
		{ref: "/v1/operations/" + id, base: "http://h:2/", want: "http://h:2/v1/operations/" + id},
		{ref: id, base: "http://h:2", want: "http://h:2/v1/operations/" + id},
		{ref: "/v1/operations/" + id, err: "give --api-url or set TFRS_API_URL"},
		{ref: "http://h/v1/tenants/acme", err: "does not name an operation"},
		{ref: "http://h/v1/operations/xyz", err: "does not name an operation"},
		{ref: "ftp://h/v1/operations/" + id, err: "not an http(s) URL"},
		{ref: "operations", err: "not an http(s) URL"},
	} {
		got, err := operationURL(c.ref, c.base)
		if c.err != "" {
			require.ErrorIs(t, err, errUsage, c.ref)
			require.ErrorContains(t, err, c.err, c.ref)
			continue
		}
		require.NoError(t, err, c.ref)
		require.Equal(t, c.want, got, c.ref)
	}
}

// The watcher resumes a dropped stream with Last-Event-ID, renders progress events (not raw
// SSE), ignores comments, and turns a failed operation into an error naming the problem.
func TestWatcherResumesAndNamesTheFailure(t *testing.T) {
	var (
		mu    sync.Mutex
		calls []string // Last-Event-ID of each connection
	)
	const stack = "tenant.ns.acme"
	urn := "urn:pulumi:" + stack + "::tfrs::tfrs:tenant:Redis::redis"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "Bearer tok-123", r.Header.Get("Authorization"))
		mu.Lock()
		calls = append(calls, r.Header.Get("Last-Event-ID"))
		n := len(calls)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			fmt.Fprintf(w, "retry: 10\n\n: keep-alive\n\nid: 1\nevent: state\ndata: {\"state\":\"running\"}\n\n")
			fmt.Fprintf(w, "id: 2\nevent: progress\ndata: {\"stack\":%q,\"operation\":\"up\",\"kind\":\"start\",\"resources\":2}\n\n", stack)
			return // the connection drops
		}
		fmt.Fprintf(w, "id: 3\nevent: progress\ndata: {\"stack\":%q,\"operation\":\"up\",\"kind\":\"step-failed\",\"urn\":%q,\"type\":\"tfrs:tenant:Redis\",\"op\":\"create\"}\n\n", stack, urn)
		fmt.Fprintf(w, "id: 4\nevent: state\ndata: {\"state\":\"failed\"}\n\n")
		fmt.Fprintf(w, "event: done\ndata: {\"id\":\"0123456789abcdef01234567\",\"kind\":\"create\",\"state\":\"failed\","+
			"\"resource\":{\"kind\":\"TFRTenant\",\"namespace\":\"ns\",\"name\":\"acme\"},"+
			"\"error\":{\"title\":\"Update failed\",\"detail\":\"the up failed\",\"failedResources\":[%q]}}\n\n", urn)
	}))
	defer srv.Close()

	var out strings.Builder
	w := &watcher{url: srv.URL + "/v1/operations/0123456789abcdef01234567", token: "tok-123",
		r: progress.NewRenderer(&out, progress.RenderOptions{}), client: srv.Client(), reconnects: 2, wait: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	final, err := w.follow(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"", "2"}, calls, "the second connection resumes after event 2")
	require.Equal(t, 10*time.Millisecond, w.wait, "the stream's retry: field sets the reconnect delay")
	got := out.String()
	require.Contains(t, got, "operation running\n[tenant.ns.acme] up started: 2 resources in the stack\n")
	require.Contains(t, got, "(stream interrupted: the stream ended before the operation did; resuming after event 2)")
	require.Contains(t, got, "[tenant.ns.acme] failed: tfrs:tenant:Redis "+urn)
	require.NotContains(t, got, "data:")
	err = final.outcome(palette{})
	require.EqualError(t, err, "operation 0123456789abcdef01234567 (create TFRTenant ns/acme) failed: Update failed: the up failed; failed resources: "+urn)
}

// A refusal that cannot change by retrying (401, 404) ends the watch at once with the problem.
func TestWatcherStopsOnARefusal(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n++
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"title":"Not found","detail":"operation 0123456789abcdef01234567 not found"}`)
	}))
	defer srv.Close()
	var out strings.Builder
	w := &watcher{url: srv.URL + "/v1/operations/0123456789abcdef01234567", token: "t",
		r: progress.NewRenderer(&out, progress.RenderOptions{}), client: srv.Client(), reconnects: 5, wait: time.Millisecond}
	_, err := w.follow(context.Background())
	require.ErrorContains(t, err, "404 Not Found: Not found: operation 0123456789abcdef01234567 not found")
	require.Equal(t, 1, n, "no retry")
}
