package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/fleet"
)

const teamToken = "team-a-token-0123456789abcdef"

// fleetHarness has tenants t1 (tfrs-system) and t2 (team-a), made through the API, and a
// server of t1 whose secretData the API does not keep; the token team-a may act in team-a only.
func fleetHarness(t *testing.T) *harness {
	h := newHarness(t, func(c *Config) {
		c.Tokens = append(c.Tokens, Token{Name: "team-a", Role: RoleAdmin, Value: teamToken, Scope: Scope{Namespaces: []string{"team-a"}}})
	})
	for _, p := range []struct{ path, name string }{{tenantsPath, "t1"}, {"/v1/namespaces/team-a/tenants", "t2"}} {
		w := h.admin(http.MethodPost, p.path, tenantBody(p.name))
		require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
		require.Equal(t, StateSucceeded, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)
	}
	w := h.admin(http.MethodPost, tenantsPath+"/t1/servers", serverBody("bot"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateSucceeded, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)
	return h
}

// fleetRun starts a fleet preview as token and waits for its end.
func fleetRun(t *testing.T, h *harness, token, query string) OperationView {
	t.Helper()
	w := h.do(req{method: http.MethodPost, path: FleetPreviewPath + query, token: token})
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	op := decodeJSON[OperationView](t, w)
	require.Equal(t, OpFleetPreview, op.Kind)
	require.Empty(t, op.Stacks, "a fleet preview holds no stack")
	// Its owner follows it to the end.
	for range 500 {
		w = h.do(req{method: http.MethodGet, path: operationPath(op.ID), token: token})
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		if op = decodeJSON[OperationView](t, w); op.State.terminal() {
			return op
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the fleet preview did not end")
	return op
}

func entryNames(r *fleet.Report) map[string]fleet.Status {
	out := map[string]fleet.Status{}
	for _, e := range r.Entries {
		out[e.Target.String()] = e.Status
	}
	return out
}

// The fleet preview over HTTP previews every stored spec the caller may preview, as an
// operation with progress events whose result is the fleet report. A spec stored without its
// secret values is an error entry, never a preview of "[secret]".
func TestFleetPreviewOperation(t *testing.T) {
	h := fleetHarness(t)
	op := fleetRun(t, h, adminToken, "")
	require.Equal(t, StateSucceeded, op.State, op.Error)
	require.NotNil(t, op.Result.Fleet)
	got := entryNames(op.Result.Fleet)
	assert.Len(t, got, 3, got)
	for name, st := range got {
		if name == "TFRServer tfrs-system/bot" {
			assert.Equal(t, fleet.StatusError, st)
			continue
		}
		assert.Equal(t, fleet.StatusUnchanged, st, name)
	}
	for _, e := range op.Result.Fleet.Entries {
		if e.Target.Kind == v1alpha1.KindTFRServer {
			assert.Contains(t, e.Error, "secret values the API does not keep")
		}
	}
	evs := parseSSE(t, h.admin(http.MethodGet, operationPath(op.ID)+"/events", nil).Body.String())
	var progress []FleetProgress
	for _, e := range evs {
		if e.name == FleetEvent {
			var p FleetProgress
			require.NoError(t, json.Unmarshal([]byte(e.data), &p))
			progress = append(progress, p)
		}
	}
	require.Len(t, progress, 3)
	assert.Equal(t, 3, progress[len(progress)-1].Total)
	assert.True(t, slices.ContainsFunc(progress, func(p FleetProgress) bool { return p.Done == 3 }))

	// Selection by query parameters, as the CLI's flags.
	op = fleetRun(t, h, adminToken, "?kind=tenant&namespace=team-a")
	assert.Equal(t, map[string]fleet.Status{"TFRTenant team-a/t2": fleet.StatusUnchanged}, entryNames(op.Result.Fleet))

	// A bad parameter is refused before anything runs, naming it.
	for q, field := range map[string]string{"?kind=pods": "kind", "?selector=a%3D%3D%3Db": "selector", "?full=maybe": "full"} {
		w := h.admin(http.MethodPost, FleetPreviewPath+q, nil)
		require.Equal(t, http.StatusBadRequest, w.Code, q)
		assert.Equal(t, field, problemOfResponse(t, w).Errors[0].Field, q)
	}
}

// What a caller may not preview is not in its report, and a fleet preview is visible only to
// the principal that started it: its report was filtered for them.
func TestFleetPreviewSeesOnlyWhatTheCallerMayPreview(t *testing.T) {
	h := fleetHarness(t)
	op := fleetRun(t, h, teamToken, "")
	require.Equal(t, StateSucceeded, op.State)
	assert.Equal(t, map[string]fleet.Status{"TFRTenant team-a/t2": fleet.StatusUnchanged}, entryNames(op.Result.Fleet))

	for _, path := range []string{operationPath(op.ID), operationPath(op.ID) + "/events"} {
		w := h.admin(http.MethodGet, path, nil)
		assert.Equal(t, http.StatusForbidden, w.Code, "another principal reads %s", path)
	}
	w := h.admin(http.MethodPost, operationPath(op.ID)+"/cancel", nil)
	assert.Equal(t, http.StatusForbidden, w.Code)

	// A read-only token may preview (a preview writes nothing), so it may run a fleet
	// preview, of everything it may see.
	op = fleetRun(t, h, readerToken, "?kind=tenant")
	require.Equal(t, StateSucceeded, op.State)
	assert.Len(t, op.Result.Fleet.Entries, 2)
}

// One fleet preview per caller at a time: a second is refused (409 busy, naming the
// running one) until the first ends, since each can preview every object; another caller's
// is not held up.
func TestOneFleetPreviewPerCaller(t *testing.T) {
	h := newHarness(t)
	first, err := h.s.ops.reserveFleet("alice", "r1")
	require.NoError(t, err)
	_, err = h.s.ops.reserveFleet("alice", "r2")
	var be *BusyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, first.id, be.Operation)
	p, _ := problemOf(err)
	assert.Equal(t, http.StatusConflict, p.Status)
	assert.Contains(t, p.Detail, "your fleet preview "+first.id+" is still running")
	other, err := h.s.ops.reserveFleet("bob", "r3")
	require.NoError(t, err, "another caller's fleet preview is not held up")
	h.s.ops.release(other)
	h.s.ops.release(first)
	again, err := h.s.ops.reserveFleet("alice", "r4")
	require.NoError(t, err, "once the first is gone, the caller may start another")
	h.s.ops.release(again)
}
