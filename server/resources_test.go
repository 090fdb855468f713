package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
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

func itemNames(l ResourceList) []string {
	out := []string{}
	for _, it := range l.Items {
		out = append(out, it.Metadata.Name)
	}
	return out
}

// TestResourceViewShowsRevision: the view names the program revision the stack's last
// successful up recorded, whichever door ran it.
func TestResourceViewShowsRevision(t *testing.T) {
	f := newStackedFake()
	rev := v1alpha1.Revision{ID: "0123456789ab", Version: "v1.2.3", Commit: "abcdef0123456789"}
	f.addStack("tenant.tfrs-system.rev", engine.ManagedByCLI, true, stacks.RevisionTags(&rev))
	h := newHarnessOn(t, f)
	w := h.admin(http.MethodGet, tenantsPath+"/rev", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, &rev, decodeJSON[ResourceView](t, w).Status.Revision)
	w = h.admin(http.MethodGet, tenantsPath+"/acme", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Nil(t, decodeJSON[ResourceView](t, w).Status.Revision, "a stack applied by no recording build has none")
}

// Suspending over HTTP is storing a spec with spec.suspend: nothing runs, the operation says
// why, a DELETE is refused until a PUT clears it, and that PUT runs the up.
func TestSuspendedResourceRunsNothing(t *testing.T) {
	h := newHarness(t)
	w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateSucceeded, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)
	ups := h.f.count("Up tenant.tfrs-system.globex")
	require.Equal(t, 1, ups)

	suspended := tenantBody("globex")
	suspended["spec"].(map[string]any)["suspend"] = true
	suspended["spec"].(map[string]any)["prometheus"] = map[string]any{"retention": "7d"}
	w = h.admin(http.MethodPut, tenantsPath+"/globex", suspended)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	done := h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateSucceeded, done.State, "%+v", done.Error)
	require.NotNil(t, done.Result.Changes)
	assert.Contains(t, done.Result.Changes.Skipped, "TFRTenant tfrs-system/globex is suspended")
	assert.Equal(t, ups, h.f.count("Up tenant.tfrs-system.globex"), "a suspended spec is stored, not applied")

	w = h.admin(http.MethodGet, tenantsPath+"/globex", nil)
	v := decodeJSON[ResourceView](t, w)
	var spec map[string]any
	require.NoError(t, json.Unmarshal(v.Spec, &spec))
	assert.Equal(t, true, spec["suspend"])
	assert.Equal(t, int64(2), v.Metadata.Generation)

	w = h.admin(http.MethodDelete, tenantsPath+"/globex", nil)
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	p := decodeJSON[Problem](t, w)
	assert.Equal(t, problemTypeBase+"suspended", p.Type)
	require.Len(t, p.Errors, 1)
	assert.Equal(t, "spec.suspend", p.Errors[0].Field)
	assert.Zero(t, h.f.count("Destroy"), "no destroy while suspended")

	// A PUT without it resumes: the up runs.
	w = h.admin(http.MethodPut, tenantsPath+"/globex", tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateSucceeded, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)
	assert.Equal(t, ups+1, h.f.count("Up tenant.tfrs-system.globex"))
	w = h.admin(http.MethodDelete, tenantsPath+"/globex", nil)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateSucceeded, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)
}
