package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
)

// sharedBucket is a state backend two replicas share (a directory, as a file:// backend).
func sharedBucket(t *testing.T) *blob.Bucket {
	t.Helper()
	b, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// fastStore polls and beats often enough for tests.
func fastStore(b *blob.Bucket, replica string) *OperationStore {
	s := NewOperationStore(b, replica)
	s.Poll, s.Heartbeat, s.LostAfter = 20*time.Millisecond, 50*time.Millisecond, 2*time.Second
	return s
}

// replicas are n API servers over one fake engine and one backend, as N pods behind a Service.
func replicas(t *testing.T, n int) ([]*harness, *blob.Bucket) {
	t.Helper()
	f, b := newStackedFake(), sharedBucket(t)
	hs := make([]*harness, n)
	for i := range hs {
		name := fmt.Sprintf("api-%d", i)
		hs[i] = newHarnessOn(t, f, func(c *Config) {
			c.Specs, c.Operations = NewBackendSpecStore(b), fastStore(b, name)
		})
	}
	return hs, b
}

// TestReplicasShareOperations: an operation started on replica A is read, listed, streamed
// (also resumed with Last-Event-ID) and canceled through replica B, and B refuses a second
// operation on the busy stack naming A's operation.
func TestReplicasShareOperations(t *testing.T) {
	hs, _ := replicas(t, 2)
	a, b := hs[0], hs[1]
	release := a.hold()

	w := a.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	id := decodeJSON[OperationView](t, w).ID
	<-a.f.gate.Entered

	// B answers for A's operation and A's spec.
	w = b.admin(http.MethodGet, operationPath(id), nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, StateRunning, decodeJSON[OperationView](t, w).State)
	w = b.admin(http.MethodGet, tenantsPath+"/globex", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	rv := decodeJSON[ResourceView](t, w)
	require.NotNil(t, rv.Status.Operation)
	require.Equal(t, id, rv.Status.Operation.ID)
	w = b.admin(http.MethodGet, tenantsPath, nil)
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), `"globex"`)

	// A second operation on the stack through B: 409 naming A's operation, nothing started.
	upd := tenantBody("globex")
	upd["metadata"].(map[string]any)["labels"] = map[string]string{"tier": "gold"}
	w = b.admin(http.MethodPut, tenantsPath+"/globex", upd)
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	require.Equal(t, operationPath(id), problemOfResponse(t, w).Operation)
	require.Equal(t, 1, a.f.count("Up tenant."))

	// B streams A's events until the end.
	srv := httptest.NewServer(b.s.Handler())
	defer srv.Close()
	hr, err := http.NewRequest(http.MethodGet, srv.URL+operationPath(id)+"/events", nil)
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+readerToken)
	resp, err := srv.Client().Do(hr)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var stream strings.Builder
	for sc.Scan() {
		line := sc.Text()
		stream.WriteString(line + "\n")
		if line == "event: progress" {
			release() // the first progress event reached B through the backend: let A finish
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(stream.String(), "event: done\n") {
			break
		}
	}
	evs := parseSSE(t, stream.String())
	require.Equal(t, "done", evs[len(evs)-1].name)
	var final OperationView
	require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-1].data), &final))
	require.Equal(t, StateSucceeded, final.State)
	require.Equal(t, StateSucceeded, a.waitOperation(id).State)

	// B's stream carries what A's does, and resumes from Last-Event-ID.
	fromA := parseSSE(t, a.admin(http.MethodGet, operationPath(id)+"/events", nil).Body.String())
	require.Equal(t, names(fromA), names(evs))
	rest := parseSSE(t, b.do(req{method: http.MethodGet, path: operationPath(id) + "/events", token: adminToken,
		header: map[string]string{"Last-Event-ID": fmt.Sprint(fromA[1].id)}}).Body.String())
	require.Equal(t, names(fromA[2:]), names(rest))

	// Cancel through B stops an operation running on A.
	release = a.hold()
	defer release()
	w = a.admin(http.MethodPut, tenantsPath+"/globex", upd)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	id2 := decodeJSON[OperationView](t, w).ID
	<-a.f.gate.Entered
	w = b.admin(http.MethodPost, operationPath(id2)+"/cancel", nil)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.True(t, decodeJSON[OperationView](t, w).CancelRequested)
	require.Equal(t, StateCanceled, a.waitOperation(id2).State)
	require.Equal(t, StateCanceled, b.waitOperation(id2).State)
	w = b.admin(http.MethodPost, operationPath(id2)+"/cancel", nil)
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
}

// TestReplicaLost: a replica that stops writing its running operation's record (it died) makes
// readers report the operation failed with replica-lost, and no longer blocks the stack.
func TestReplicaLost(t *testing.T) {
	hs, bkt := replicas(t, 1)
	b := hs[0]
	ctx := context.Background()
	dead := fastStore(bkt, "api-dead")
	const id = "0123456789abcdef01234567"
	v := OperationView{ID: id, Kind: OpCreate, State: StateRunning, Stacks: []string{"tenant.tfrs-system.globex"},
		Resource:  ResourceRef{Kind: "TFRTenant", Name: "globex", Href: tenantsPath + "/globex"},
		CreatedAt: time.Now(), StartedAt: time.Now(), Links: OperationLinks{Self: operationPath(id)}}
	require.NoError(t, dead.put(ctx, v, "root"))
	require.NoError(t, dead.setLatest(ctx, "tenant.tfrs-system.globex", id))

	// Alive: the stack is busy through every replica.
	w := b.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	require.Equal(t, operationPath(id), problemOfResponse(t, w).Operation)

	// Its heartbeat stops: past LostAfter the record reads as failed, replica-lost.
	dead.now = func() time.Time { return time.Now().Add(-time.Minute) }
	require.NoError(t, dead.put(ctx, v, "root"))
	w = b.admin(http.MethodGet, operationPath(id), nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	got := decodeJSON[OperationView](t, w)
	require.Equal(t, StateFailed, got.State)
	require.Equal(t, problemTypeBase+"replica-lost", got.Error.Type)
	require.Contains(t, got.Error.Detail, "api-dead")
	w = b.admin(http.MethodPost, operationPath(id)+"/cancel", nil)
	require.Equal(t, http.StatusConflict, w.Code, "a lost operation has ended: %s", w.Body.String())
	// Its stream ends at once with the same verdict.
	evs := parseSSE(t, b.admin(http.MethodGet, operationPath(id)+"/events", nil).Body.String())
	require.Equal(t, "done", evs[len(evs)-1].name)
	require.Contains(t, evs[len(evs)-1].data, "replica-lost")

	w = b.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateSucceeded, b.waitOperation(decodeJSON[OperationView](t, w).ID).State)
}

// TestOperationStoreSweep: ended and lost records past the TTL go, with their chunks and the
// stack's pointer; running ones and recent ones stay.
func TestOperationStoreSweep(t *testing.T) {
	ctx := context.Background()
	bkt := sharedBucket(t)
	s := fastStore(bkt, "api-0")
	s.LostAfter = 0 // so the pointer sweep may look at fresh pointers
	old := time.Now().Add(-2 * time.Hour)
	put := func(id string, state OperationState, ended time.Time, beat time.Time) {
		st := *s
		st.now = func() time.Time { return beat }
		v := OperationView{ID: id, State: state, EndedAt: ended, Links: OperationLinks{Self: operationPath(id)}}
		require.NoError(t, st.put(ctx, v, ""))
		require.NoError(t, st.appendEvents(ctx, id, []sseEvent{{seq: 1, name: "state", data: []byte(`{}`)}}))
	}
	ids := map[string]string{
		"ended-old": "aaaaaaaaaaaaaaaaaaaaaaa1", "ended-new": "aaaaaaaaaaaaaaaaaaaaaaa2",
		"running": "aaaaaaaaaaaaaaaaaaaaaaa3", "lost-old": "aaaaaaaaaaaaaaaaaaaaaaa4",
	}
	put(ids["ended-old"], StateSucceeded, old, old)
	put(ids["ended-new"], StateSucceeded, time.Now(), time.Now())
	put(ids["running"], StateRunning, time.Time{}, time.Now())
	put(ids["lost-old"], StateRunning, time.Time{}, old)
	s.LostAfter = time.Minute
	require.NoError(t, s.setLatest(ctx, "tenant.a.a", ids["ended-old"]))
	require.NoError(t, s.setLatest(ctx, "tenant.b.b", ids["running"]))

	s.LostAfter = 0
	n, err := s.sweep(ctx, time.Hour)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for name, id := range ids {
		rec, err := s.get(ctx, id)
		require.NoError(t, err)
		chunks, err := s.chunks(ctx, id)
		require.NoError(t, err)
		gone := name == "ended-old" || name == "lost-old"
		require.Equal(t, gone, rec == nil, name)
		require.Equal(t, gone, len(chunks) == 0, name)
	}
	l, err := s.latest(ctx, "tenant.a.a")
	require.NoError(t, err)
	require.Nil(t, l)
	ok, err := bkt.Exists(ctx, latestPrefix+"tenant.a.a.json")
	require.NoError(t, err)
	require.False(t, ok, "the pointer to a swept operation is dropped")
	l, err = s.latest(ctx, "tenant.b.b")
	require.NoError(t, err)
	require.NotNil(t, l)
}

// TestOperationEventsBoundedInTheBackend: chunks the owner's buffer dropped are deleted, and a
// follower that asks for them is told how many it missed.
func TestOperationEventsBoundedInTheBackend(t *testing.T) {
	hs, _ := replicas(t, 2)
	a, b := hs[0], hs[1]
	a.s.ops.ret.events = 3
	release := a.hold()
	w := a.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	id := decodeJSON[OperationView](t, w).ID
	<-a.f.gate.Entered
	op, err := a.s.ops.get(context.Background(), id)
	require.NoError(t, err)
	for i := range 20 {
		op.(*Operation).publish("progress", map[string]int{"i": i})
		time.Sleep(5 * time.Millisecond)
	}
	release()
	a.waitOperation(id)
	chunks, err := a.s.cfg.Operations.chunks(context.Background(), id)
	require.NoError(t, err)
	require.LessOrEqual(t, len(chunks), 3, "no more chunks than the buffer keeps events: %v", chunks)
	evs := parseSSE(t, b.admin(http.MethodGet, operationPath(id)+"/events", nil).Body.String())
	require.Equal(t, "gap", evs[0].name)
	require.Equal(t, "done", evs[len(evs)-1].name)
}

// A client that waits for an operation to end and at once starts the next one on the stack is
// never told the stack is busy: the end is visible only once the stack is free (the final
// record, written to the backend after, used to be inside that window).
func TestNextOperationRightAfterTheEnd(t *testing.T) {
	f, b := newStackedFake(), sharedBucket(t)
	store := fastStore(b, "api-0")
	// A slow backend, as on a loaded machine: every record written takes 20 ms more.
	store.now = func() time.Time { time.Sleep(20 * time.Millisecond); return time.Now() }
	h := newHarnessOn(t, f, func(c *Config) {
		c.Specs, c.Operations = NewBackendSpecStore(b), store
		c.RateLimit, c.RateBurst = 1e6, 1e6 // the polling of 10 rounds is no abuse
	})
	createGlobex(t, h, "")
	for i := range 10 {
		w := h.admin(http.MethodPut, tenantsPath+"/globex", edited("globex", fmt.Sprintf("%dd", i+1)))
		require.Equal(t, http.StatusAccepted, w.Code, "round %d: %s", i, w.Body.String())
		done := h.waitOperation(decodeJSON[OperationView](t, w).ID)
		require.Equal(t, StateSucceeded, done.State, "%+v", done.Error)
	}
}
