package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The operation tests: one operation per stack, its event stream (SSE), its cancel, and what
// shutdown does to the operations running. Apart from resources_test.go, which drives the
// resource routes, as operation.go, registry.go and sse.go are apart from resources.go.

// TestConcurrentCreatesOneRuns: of many simultaneous POSTs of one tenant, exactly one gets an
// operation; the others get 409 at once, pointing at it, and the runner runs once.
func TestConcurrentCreatesOneRuns(t *testing.T) {
	h := newHarness(t)
	release := h.hold()
	const n = 8
	codes := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
			codes[i], bodies[i] = w.Code, w.Body.String()
		}()
	}
	wg.Wait()
	var opID string
	conflicts := 0
	for i, c := range codes {
		switch c {
		case http.StatusAccepted:
			require.Empty(t, opID, "two operations were started")
			var v OperationView
			require.NoError(t, json.Unmarshal([]byte(bodies[i]), &v))
			opID = v.ID
		case http.StatusConflict:
			conflicts++
		default:
			t.Fatalf("unexpected %d: %s", c, bodies[i])
		}
	}
	require.NotEmpty(t, opID)
	require.Equal(t, n-1, conflicts)
	for i, c := range codes {
		if c == http.StatusConflict {
			var p Problem
			require.NoError(t, json.Unmarshal([]byte(bodies[i]), &p))
			require.Contains(t, []string{problemTypeBase + "busy", problemTypeBase + "already-exists"}, p.Type)
		}
	}
	release()
	require.Equal(t, StateSucceeded, h.waitOperation(opID).State)
	require.Equal(t, 1, h.f.count("Up "))
}

// TestBusyPointsAtOperation: while an operation holds a stack, a PUT or DELETE of it is 409
// with the operation's URL.
func TestBusyPointsAtOperation(t *testing.T) {
	h := newHarness(t)
	release := h.hold()
	defer release()
	w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	id := decodeJSON[OperationView](t, w).ID
	<-h.f.gate.Entered

	for _, r := range []*httptest.ResponseRecorder{
		h.admin(http.MethodPut, tenantsPath+"/globex", tenantBody("globex")),
		h.admin(http.MethodDelete, tenantsPath+"/globex", nil),
	} {
		require.Equal(t, http.StatusConflict, r.Code, r.Body.String())
		p := problemOfResponse(t, r)
		require.Equal(t, problemTypeBase+"busy", p.Type)
		require.Equal(t, operationPath(id), p.Operation)
	}
	require.Equal(t, StateRunning, decodeJSON[OperationView](t, h.admin(http.MethodGet, operationPath(id), nil)).State)
}

// TestDisconnectNeverCancels: a client streaming events goes away mid-operation; the
// operation keeps running and succeeds.
func TestDisconnectNeverCancels(t *testing.T) {
	h := newHarness(t)
	srv := httptest.NewServer(h.s.Handler())
	defer srv.Close()
	release := h.hold()
	defer release()

	w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	id := decodeJSON[OperationView](t, w).ID
	<-h.f.gate.Entered

	ctx, cancel := context.WithCancel(context.Background())
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+operationPath(id)+"/events", nil)
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+readerToken)
	resp, err := srv.Client().Do(hr)
	require.NoError(t, err)
	sc := bufio.NewScanner(resp.Body)
	sawProgress := false
	for !sawProgress && sc.Scan() {
		sawProgress = sc.Text() == "event: progress"
	}
	require.True(t, sawProgress, "the stream delivers the engine's progress")
	cancel()
	resp.Body.Close()

	time.Sleep(100 * time.Millisecond)
	require.Equal(t, StateRunning, decodeJSON[OperationView](t, h.admin(http.MethodGet, operationPath(id), nil)).State)
	release()
	require.Equal(t, StateSucceeded, h.waitOperation(id).State)
}

// TestEventsResumeAfterLastEventID: a reconnecting client gets only what it missed.
func TestEventsResumeAfterLastEventID(t *testing.T) {
	h := newHarness(t)
	w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	id := decodeJSON[OperationView](t, w).ID
	h.waitOperation(id)
	all := parseSSE(t, h.admin(http.MethodGet, operationPath(id)+"/events", nil).Body.String())
	require.GreaterOrEqual(t, len(all), 4) // state, progress x2, state, done
	last := all[1].id
	rest := parseSSE(t, h.do(req{method: http.MethodGet, path: operationPath(id) + "/events", token: adminToken,
		header: map[string]string{"Last-Event-ID": fmt.Sprint(last)}}).Body.String())
	require.Equal(t, len(all)-2, len(rest))
	require.Equal(t, last+1, rest[0].id)
}

// TestCancelOperation: an explicit cancel stops a running operation; a second cancel of the
// ended operation is 409.
func TestCancelOperation(t *testing.T) {
	h := newHarness(t)
	release := h.hold()
	defer release()
	w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	id := decodeJSON[OperationView](t, w).ID
	<-h.f.gate.Entered

	require.Equal(t, http.StatusForbidden, h.do(req{method: http.MethodPost, path: operationPath(id) + "/cancel", token: readerToken}).Code)
	w = h.admin(http.MethodPost, operationPath(id)+"/cancel", nil)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.True(t, decodeJSON[OperationView](t, w).CancelRequested)
	v := h.waitOperation(id)
	require.Equal(t, StateCanceled, v.State)
	require.Contains(t, v.Error.Detail, "canceled on request")

	w = h.admin(http.MethodPost, operationPath(id)+"/cancel", nil)
	require.Equal(t, http.StatusConflict, w.Code)
	require.Equal(t, problemTypeBase+"operation-ended", problemOfResponse(t, w).Type)
}

// TestShutdownLetsOperationsFinish: within the grace period a running operation completes;
// new work is refused with 503 meanwhile, and readiness turns 503.
func TestShutdownLetsOperationsFinish(t *testing.T) {
	h := newHarness(t)
	release := h.hold()
	w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	id := decodeJSON[OperationView](t, w).ID
	<-h.f.gate.Entered

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- h.s.Shutdown(ctx)
	}()
	require.Eventually(t, func() bool { return h.s.shuttingDown.Load() }, 5*time.Second, 5*time.Millisecond)
	w = h.admin(http.MethodPost, tenantsPath, tenantBody("initech"))
	require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
	require.Equal(t, problemTypeBase+"shutting-down", problemOfResponse(t, w).Type)
	require.Equal(t, http.StatusServiceUnavailable, h.do(req{method: http.MethodGet, path: "/readyz"}).Code)
	require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: "/healthz"}).Code)

	release()
	require.NoError(t, <-done)
	require.Equal(t, StateSucceeded, h.waitOperation(id).State)
}

// TestShutdownCancelsAfterGrace: past the grace period, running operations are canceled and
// recorded as such, with a detail that says why.
func TestShutdownCancelsAfterGrace(t *testing.T) {
	h := newHarness(t)
	release := h.hold()
	defer release()
	w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	id := decodeJSON[OperationView](t, w).ID
	<-h.f.gate.Entered

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.NoError(t, h.s.Shutdown(ctx))
	v := h.waitOperation(id)
	require.Equal(t, StateCanceled, v.State)
	require.Contains(t, v.Error.Detail, "shut down")
}

type sse struct {
	id   int64
	name string
	data string
}

func parseSSE(t *testing.T, s string) []sse {
	t.Helper()
	var out []sse
	for _, block := range strings.Split(s, "\n\n") {
		var e sse
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "id: "):
				_, err := fmt.Sscan(strings.TrimPrefix(line, "id: "), &e.id)
				require.NoError(t, err)
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.data = strings.TrimPrefix(line, "data: ")
			}
		}
		if e.name != "" {
			out = append(out, e)
		}
	}
	return out
}

func names(evs []sse) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.name)
	}
	return out
}
