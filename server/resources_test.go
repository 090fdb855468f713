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

	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestTenantLifecycle walks one tenant through every route with the fake: create (202 and an
// operation), events, get (ready, outputs with the secret redacted), list, preview, update,
// delete, and 404 afterwards. No response body ever holds the secret output's value.
func TestTenantLifecycle(t *testing.T) {
	h := newHarness(t)
	var bodies []string
	keep := func(w *httptest.ResponseRecorder) *httptest.ResponseRecorder {
		bodies = append(bodies, w.Body.String())
		return w
	}

	w := keep(h.admin(http.MethodPost, tenantsPath, tenantBody("globex")))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	op := decodeJSON[OperationView](t, w)
	require.Equal(t, operationPath(op.ID), w.Header().Get("Location"))
	require.Equal(t, OpCreate, op.Kind)
	require.Equal(t, []string{"tenant.tfrs-system.globex"}, op.Stacks)
	require.Equal(t, tenantsPath+"/globex", op.Resource.Href)

	done := h.waitOperation(op.ID)
	require.Equal(t, StateSucceeded, done.State, "%+v", done.Error)
	require.Equal(t, RedactedValue, done.Result.Outputs["postgresPassword"])
	require.Equal(t, "acme-pg-rw", done.Result.Outputs["postgresHost"])
	require.Len(t, done.Result.Changes.Changes, 1)

	w = keep(h.admin(http.MethodGet, operationPath(op.ID)+"/events", nil))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
	evs := parseSSE(t, w.Body.String())
	require.Equal(t, "done", evs[len(evs)-1].name)
	require.Contains(t, names(evs), "progress")

	w = keep(h.admin(http.MethodGet, tenantsPath+"/globex", nil))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	v := decodeJSON[ResourceView](t, w)
	require.True(t, v.Status.Ready)
	require.True(t, v.Status.Exists)
	require.Equal(t, "api", v.Status.ManagedBy)
	require.Equal(t, RedactedValue, v.Status.Outputs["postgresPassword"])
	require.Equal(t, op.ID, v.Status.Operation.ID)
	require.Equal(t, int64(1), v.Metadata.Generation)
	var spec map[string]any
	require.NoError(t, json.Unmarshal(v.Spec, &spec))
	require.Equal(t, "Retain", spec["deletionPolicy"], "the stored spec is the defaulted one")

	w = keep(h.do(req{method: http.MethodGet, path: tenantsPath, token: readerToken}))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	list := decodeJSON[ResourceList](t, w)
	require.Equal(t, "TFRTenantList", list.Kind)
	require.Equal(t, []string{"acme", "globex"}, itemNames(list))

	h.f.previewSteps = []engine.Step{{URN: "urn:pulumi:tenant.tfrs-system.globex::tfrs::kubernetes:core/v1:ConfigMap::cm", Type: "kubernetes:core/v1:ConfigMap", Op: engine.StepSame}}
	w = keep(h.admin(http.MethodPost, tenantsPath+"/globex/preview", nil))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	rep := decodeJSON[diff.Report](t, w)
	require.Empty(t, rep.Changes, "an unchanged stored spec previews no changes")

	changed := tenantBody("globex")
	changed["spec"].(map[string]any)["prometheus"] = map[string]any{"retention": "7d"}
	w = keep(h.admin(http.MethodPut, tenantsPath+"/globex", changed))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateSucceeded, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)
	w = keep(h.admin(http.MethodGet, tenantsPath+"/globex", nil))
	require.Equal(t, int64(2), decodeJSON[ResourceView](t, w).Metadata.Generation)

	w = keep(h.admin(http.MethodDelete, tenantsPath+"/globex", nil))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	del := h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateSucceeded, del.State, "%+v", del.Error)
	w = keep(h.admin(http.MethodGet, tenantsPath+"/globex", nil))
	require.Equal(t, http.StatusNotFound, w.Code)

	for _, b := range bodies {
		require.NotContains(t, b, "s3cr3t-pg-password-value")
	}
	require.NotContains(t, h.logs.String(), "s3cr3t-pg-password-value")
	require.NotContains(t, h.logs.String(), adminToken)
}

// TestServerSecretsNeverReturned: a server's secretData values are kept out of responses,
// stored records and logs; sending the placeholder back is refused; a stored spec with
// redacted secrets cannot be previewed without a body.
func TestServerSecretsNeverReturned(t *testing.T) {
	h := newHarness(t)
	path := tenantsPath + "/acme/servers"
	w := h.admin(http.MethodPost, path, serverBody("bot"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateSucceeded, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)

	w = h.admin(http.MethodGet, path+"/bot", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.NotContains(t, w.Body.String(), "sk-live-do-not-leak")
	v := decodeJSON[ResourceView](t, w)
	require.True(t, v.Status.SpecRedacted)
	require.Contains(t, string(v.Spec), `"OPENAI_API_KEY":"[secret]"`)

	rec, err := h.specs.Get(context.Background(), "server.tfrs-system.bot")
	require.NoError(t, err)
	require.NotContains(t, string(rec.Document), "sk-live-do-not-leak")
	require.NotContains(t, h.logs.String(), "sk-live-do-not-leak")

	// The GET response sent back as is: refused, nothing started.
	back := map[string]any{"metadata": map[string]any{"name": "bot"}}
	require.NoError(t, json.Unmarshal(v.Spec, new(map[string]any)))
	var spec map[string]any
	require.NoError(t, json.Unmarshal(v.Spec, &spec))
	back["spec"] = spec
	ups := h.f.count("Up ")
	w = h.admin(http.MethodPut, path+"/bot", back)
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	require.Equal(t, "spec.secretData[OPENAI_API_KEY]", problemOfResponse(t, w).Errors[0].Field)
	require.Equal(t, ups, h.f.count("Up "))

	w = h.admin(http.MethodPost, path+"/bot/preview", nil)
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	w = h.admin(http.MethodPost, path+"/bot/preview", serverBody("bot"))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
}

// TestServersLiveUnderTheirTenant: a server is only visible under its own tenant's URL.
func TestServersLiveUnderTheirTenant(t *testing.T) {
	h := newHarness(t)
	h.f.addStack("tenant.tfrs-system.other", engine.ManagedByCLI, true, map[string]string{engine.TagParent: "cluster.dev"})
	w := h.admin(http.MethodPost, tenantsPath+"/acme/servers", serverBody("bot"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	h.waitOperation(decodeJSON[OperationView](t, w).ID)

	require.Equal(t, http.StatusOK, h.admin(http.MethodGet, tenantsPath+"/acme/servers/bot", nil).Code)
	require.Equal(t, http.StatusNotFound, h.admin(http.MethodGet, tenantsPath+"/other/servers/bot", nil).Code)
	require.Equal(t, http.StatusNotFound, h.admin(http.MethodDelete, tenantsPath+"/other/servers/bot", nil).Code)

	require.Equal(t, []string{"bot"}, itemNames(decodeJSON[ResourceList](t, h.admin(http.MethodGet, tenantsPath+"/acme/servers", nil))))
	require.Empty(t, itemNames(decodeJSON[ResourceList](t, h.admin(http.MethodGet, tenantsPath+"/other/servers", nil))))

	// A server stack made by the CLI for the other tenant is listed there, by its tag.
	h.f.addStack("server.tfrs-system.cli-bot", engine.ManagedByCLI, true, map[string]string{engine.TagParent: "tenant.tfrs-system.other"})
	require.Equal(t, []string{"cli-bot"}, itemNames(decodeJSON[ResourceList](t, h.admin(http.MethodGet, tenantsPath+"/other/servers", nil))))
}

// TestListPagination pages through stacks from the backend and specs stored here, in name
// order, each exactly once; the shared stacks of personal tenants are not tenants.
func TestListPagination(t *testing.T) {
	h := newHarness(t)
	for _, n := range []string{"e", "b", "d"} {
		h.f.addStack("tenant.tfrs-system."+n, engine.ManagedByOperator, true, nil)
	}
	h.f.addStack("tenant.personal-chat._shared", engine.ManagedByOperator, true, nil)
	h.f.addStack("tenant.tfrs-system._shared", engine.ManagedByOperator, true, nil)
	// A spec accepted whose stack does not exist yet (its first up failed).
	h.f.upErr = &engine.OpError{Op: engine.OpUp, Stack: "tenant.tfrs-system.c", Kind: engine.ErrFailed, Detail: "boom"}
	w := h.admin(http.MethodPost, tenantsPath, tenantBody("c"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateFailed, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)

	var got []string
	next := ""
	pages := 0
	for {
		path := tenantsPath + "?limit=2"
		if next != "" {
			path += "&continue=" + next
		}
		w := h.do(req{method: http.MethodGet, path: path, token: readerToken})
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		l := decodeJSON[ResourceList](t, w)
		require.LessOrEqual(t, len(l.Items), 2)
		got = append(got, itemNames(l)...)
		pages++
		if next = l.Metadata.Continue; next == "" {
			break
		}
	}
	require.Equal(t, []string{"acme", "b", "c", "d", "e"}, got)
	require.Equal(t, 3, pages)

	w = h.admin(http.MethodGet, tenantsPath+"/c", nil)
	require.Equal(t, http.StatusOK, w.Code)
	v := decodeJSON[ResourceView](t, w)
	require.False(t, v.Status.Exists)
	require.Equal(t, StateFailed, v.Status.Operation.State)
}

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

// TestServeAndShutdownOverTCP runs Serve on a real listener and stops it by its context.
func TestServeAndShutdownOverTCP(t *testing.T) {
	h := newHarness(t)
	srv := httptest.NewUnstartedServer(nil)
	l := srv.Listener
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- h.s.Serve(ctx, l) }()
	url := "http://" + l.Addr().String()
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-errc)
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

func itemNames(l ResourceList) []string {
	out := []string{}
	for _, it := range l.Items {
		out = append(out, it.Metadata.Name)
	}
	return out
}
