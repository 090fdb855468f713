package server

import (
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

const globexStack = "tenant.tfrs-system.globex"

// withApproval sets spec.approval.mode of a body.
func withApproval(body map[string]any, mode string) map[string]any {
	body["spec"].(map[string]any)["approval"] = map[string]any{"mode": mode}
	return body
}

// edited is a tenant body with a harmless change (a ConfigMap-only edit in the fake).
func edited(name, retention string) map[string]any {
	b := tenantBody(name)
	b["spec"].(map[string]any)["prometheus"] = map[string]any{"retention": retention}
	return b
}

// createGlobex brings tenant globex up (mode sets spec.approval.mode unless "").
func createGlobex(t *testing.T, h *harness, mode string) {
	t.Helper()
	body := tenantBody("globex")
	if mode != "" {
		withApproval(body, mode)
	}
	w := h.admin(http.MethodPost, tenantsPath, body)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	done := h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateSucceeded, done.State, "%+v", done.Error)
}

func configMapStep(op engine.StepOp) engine.Step {
	return engine.Step{URN: "urn:pulumi:" + globexStack + "::tfrs::kubernetes:core/v1:ConfigMap::cm", Type: "kubernetes:core/v1:ConfigMap", Op: op}
}

func postgresReplace() engine.Step {
	return engine.Step{URN: "urn:pulumi:" + globexStack + "::tfrs::kubernetes:postgresql.cnpg.io/v1:Cluster::pg", Type: "kubernetes:postgresql.cnpg.io/v1:Cluster", Op: engine.StepReplace}
}

func (h *harness) savePlan(body any) SavedPreview {
	h.t.Helper()
	w := h.admin(http.MethodPost, tenantsPath+"/globex/preview?save=true", body)
	require.Equal(h.t, http.StatusOK, w.Code, w.Body.String())
	sp := decodeJSON[SavedPreview](h.t, w)
	require.True(h.t, engine.ValidPlanID(sp.PlanID), sp.PlanID)
	return sp
}

func (h *harness) applyPlan(id string) OperationView {
	h.t.Helper()
	w := h.admin(http.MethodPost, tenantsPath+"/globex/apply", map[string]any{"planId": id})
	require.Equal(h.t, http.StatusAccepted, w.Code, w.Body.String())
	op := decodeJSON[OperationView](h.t, w)
	require.Equal(h.t, OpApply, op.Kind)
	return h.waitOperation(op.ID)
}

// A new stack under OnDataLoss (the default) has nothing to lose: a plain up, no preview.
func TestOnDataLossCreateIsAPlainUp(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "")
	require.Zero(t, h.f.count("Preview"), h.f.Calls())
	require.Equal(t, []map[string]*engine.Plan{nil}, h.f.upPlans)
}

// preview?save=true answers the diff and a planId; apply runs exactly that plan, makes the
// previewed document the spec, and the plan is gone afterwards.
func TestSavedPlanApplies(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "")
	h.f.previewSteps = []engine.Step{configMapStep(engine.StepUpdate)}

	sp := h.savePlan(edited("globex", "7d"))
	require.Equal(t, map[string]string{globexStack: sp.PlanID}, sp.Plans)
	require.Equal(t, tenantsPath+"/globex/apply", sp.Apply)
	require.Len(t, sp.Changes, 1)
	require.Equal(t, []string{sp.PlanID}, h.f.savedPlans(globexStack), "the plan is in the engine's store")
	// Saving changes nothing: the stored spec is still generation 1.
	w := h.admin(http.MethodGet, tenantsPath+"/globex", nil)
	require.Equal(t, int64(1), decodeJSON[ResourceView](t, w).Metadata.Generation)

	done := h.applyPlan(sp.PlanID)
	require.Equal(t, StateSucceeded, done.State, "%+v", done.Error)
	require.NotNil(t, done.Plan)
	require.Equal(t, sp.PlanID, done.Plan.ID)
	last := h.f.upPlans[len(h.f.upPlans)-1]
	require.Equal(t, sp.PlanID, last[globexStack].ID, "the up applied the saved plan")

	w = h.admin(http.MethodGet, tenantsPath+"/globex", nil)
	v := decodeJSON[ResourceView](t, w)
	require.Equal(t, int64(2), v.Metadata.Generation, "the applied document is the spec now")
	require.Contains(t, string(v.Spec), `"retention":"7d"`)
	require.Empty(t, h.f.savedPlans(globexStack), "a plan applies once")

	w = h.admin(http.MethodPost, tenantsPath+"/globex/apply", map[string]any{"planId": sp.PlanID})
	require.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
}

// A PUT after the save makes the plan stale: its apply is refused (409 plan-mismatch naming
// planId), nothing runs, and the plan is discarded.
func TestStalePlanRefused(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "")
	h.f.previewSteps = []engine.Step{configMapStep(engine.StepUpdate)}
	sp := h.savePlan(nil) // the stored spec

	w := h.admin(http.MethodPut, tenantsPath+"/globex", edited("globex", "9d"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateSucceeded, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)
	ups := h.f.count("Up")

	w = h.admin(http.MethodPost, tenantsPath+"/globex/apply", map[string]any{"planId": sp.PlanID})
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	p := problemOfResponse(t, w)
	require.True(t, strings.HasSuffix(p.Type, "/plan-mismatch"), p.Type)
	require.Equal(t, "planId", p.Errors[0].Field)
	require.Contains(t, p.Detail, "the spec changed since the plan was saved")
	require.Equal(t, ups, h.f.count("Up"), "nothing ran")
	require.Empty(t, h.f.savedPlans(globexStack), "the stale plan is discarded")

	w = h.admin(http.MethodPost, tenantsPath+"/globex/apply", map[string]any{"planId": sp.PlanID})
	require.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
}

// Pulumi refusing a step the plan lacks fails the apply with plan-mismatch and discards it.
func TestPlanRefusedByPulumi(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "")
	sp := h.savePlan(nil)
	h.f.planRefuse = true
	done := h.applyPlan(sp.PlanID)
	require.Equal(t, StateFailed, done.State)
	require.True(t, strings.HasSuffix(done.Error.Type, "/plan-mismatch"), done.Error.Type)
	require.Contains(t, done.Error.Detail, "preview again")
	require.Empty(t, h.f.savedPlans(globexStack))
}

// A missing, malformed or unknown planId is refused naming the field, before anything runs.
func TestApplyBadPlanID(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "")
	sp := h.savePlan(nil)
	ups := h.f.count("Up")
	for _, c := range []struct {
		body   any
		status int
		reason string
	}{
		{map[string]any{}, http.StatusBadRequest, "required"},
		{map[string]any{"planId": "../../etc"}, http.StatusBadRequest, "invalid"},
		{map[string]any{"planId": strings.ToUpper(sp.PlanID)}, http.StatusBadRequest, "invalid"},
		{map[string]any{"planId": "0123456789abcdef"}, http.StatusNotFound, "not-found"},
	} {
		w := h.admin(http.MethodPost, tenantsPath+"/globex/apply", c.body)
		require.Equal(t, c.status, w.Code, "%v: %s", c.body, w.Body.String())
		p := problemOfResponse(t, w)
		require.Equal(t, "planId", p.Errors[0].Field, "%v", c.body)
		require.Equal(t, c.reason, p.Errors[0].Reason, "%v", c.body)
	}
	w := h.admin(http.MethodPost, tenantsPath+"/globex/apply", `{"planId":"`+sp.PlanID+`","extra":1}`)
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	w = h.admin(http.MethodPost, tenantsPath+"/nobody/apply", map[string]any{"planId": sp.PlanID})
	require.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
	require.Equal(t, ups, h.f.count("Up"))
	require.Equal(t, []string{sp.PlanID}, h.f.savedPlans(globexStack), "a refused apply keeps the plan")
}

// Saving and applying need update: a read-only token may preview but neither save nor apply.
func TestApprovalNeedsUpdate(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "")
	sp := h.savePlan(nil)
	reader := func(method, path string, body any) int {
		return h.do(req{method: method, path: path, body: body, token: readerToken}).Code
	}
	require.Equal(t, http.StatusOK, reader(http.MethodPost, tenantsPath+"/globex/preview", nil))
	require.Equal(t, http.StatusForbidden, reader(http.MethodPost, tenantsPath+"/globex/preview?save=true", nil))
	require.Equal(t, http.StatusForbidden, reader(http.MethodPost, tenantsPath+"/globex/preview?save=yes", nil))
	w := h.do(req{method: http.MethodPost, path: tenantsPath + "/globex/apply", body: map[string]any{"planId": sp.PlanID}, token: readerToken})
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Equal(t, VerbUpdate, problemOfResponse(t, w).Denied.Verb)
	require.Equal(t, []string{sp.PlanID}, h.f.savedPlans(globexStack))

	w = h.admin(http.MethodPost, tenantsPath+"/globex/preview?save=yes", nil)
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Equal(t, "save", problemOfResponse(t, w).Errors[0].Field)
}

// A PUT in Manual mode ends awaiting-approval, naming its plan, change counts and data loss;
// nothing is applied until the plan is.
func TestManualPutAwaitsApproval(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "Auto")
	h.f.previewSteps = []engine.Step{configMapStep(engine.StepUpdate)}
	ups := h.f.count("Up")

	w := h.admin(http.MethodPut, tenantsPath+"/globex", withApproval(edited("globex", "7d"), "Manual"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	id := decodeJSON[OperationView](t, w).ID
	done := h.waitOperation(id)
	require.Equal(t, StateAwaitingApproval, done.State, "%+v", done.Error)
	require.Nil(t, done.Error)
	require.NotNil(t, done.Plan)
	require.Equal(t, PlanReasonManual, done.Plan.Reason)
	require.Equal(t, map[engine.StepOp]int{engine.StepUpdate: 1}, done.Plan.Changes)
	require.Equal(t, tenantsPath+"/globex/apply", done.Plan.Apply)
	require.Equal(t, ups, h.f.count("Up"), "nothing applied")

	// The state streams like any other: the stream ends with it.
	w = h.admin(http.MethodGet, operationPath(id)+"/events", nil)
	evs := parseSSE(t, w.Body.String())
	require.Equal(t, "done", evs[len(evs)-1].name)
	require.Contains(t, evs[len(evs)-1].data, `"state":"awaiting-approval"`)
	require.Contains(t, evs[len(evs)-1].data, done.Plan.ID)
	// The resource shows it, and its stored spec is the new one (as a CR's would be).
	w = h.admin(http.MethodGet, tenantsPath+"/globex", nil)
	v := decodeJSON[ResourceView](t, w)
	require.Equal(t, StateAwaitingApproval, v.Status.Operation.State)
	require.Equal(t, int64(2), v.Metadata.Generation)

	applied := h.applyPlan(done.Plan.ID)
	require.Equal(t, StateSucceeded, applied.State, "%+v", applied.Error)
	require.Equal(t, done.Plan.ID, h.f.upPlans[len(h.f.upPlans)-1][globexStack].ID)
	w = h.admin(http.MethodGet, tenantsPath+"/globex", nil)
	require.Equal(t, int64(2), decodeJSON[ResourceView](t, w).Metadata.Generation, "applying the PUT's own plan is no new generation")
}

// A Manual create waits too (the first up included).
func TestManualCreateAwaitsApproval(t *testing.T) {
	h := newHarness(t)
	h.f.previewSteps = []engine.Step{configMapStep(engine.StepCreate)}
	w := h.admin(http.MethodPost, tenantsPath, withApproval(tenantBody("globex"), "Manual"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	done := h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateAwaitingApproval, done.State, "%+v", done.Error)
	require.Zero(t, h.f.count("Up"))
	applied := h.applyPlan(done.Plan.ID)
	require.Equal(t, StateSucceeded, applied.State, "%+v", applied.Error)
	w = h.admin(http.MethodGet, tenantsPath+"/globex", nil)
	require.True(t, decodeJSON[ResourceView](t, w).Status.Ready)
}

// A personal tenant's runs follow its cluster's spec.personal.approval (Manual here), not
// its own spec (which validation keeps at the default): its create waits for approval.
func TestPersonalTenantFollowsClusterApproval(t *testing.T) {
	h := newHarness(t)
	h.f.mu.Lock()
	h.f.personalMode = v1alpha1.ApprovalManual
	h.f.mu.Unlock()
	h.f.previewSteps = []engine.Step{configMapStep(engine.StepCreate)}
	body := tenantBody("personal-alice")
	body["spec"] = map[string]any{"clusterRef": "dev", "type": "personal", "jobType": "chat"}
	w := h.admin(http.MethodPost, tenantsPath, body)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	done := h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateAwaitingApproval, done.State, "%+v", done.Error)
	require.Equal(t, PlanReasonManual, done.Plan.Reason)
	require.Zero(t, h.f.count("Up"))
}

// OnDataLoss (the default): a PUT whose plan would replace a database waits, with the
// data-loss list.
func TestOnDataLossPutAwaitsApproval(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "")
	h.f.previewSteps = []engine.Step{configMapStep(engine.StepUpdate), postgresReplace()}
	ups := h.f.count("Up")
	w := h.admin(http.MethodPut, tenantsPath+"/globex", edited("globex", "7d"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	done := h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateAwaitingApproval, done.State, "%+v", done.Error)
	require.Equal(t, PlanReasonDataLoss, done.Plan.Reason)
	require.Equal(t, []string{"replace kubernetes:postgresql.cnpg.io/v1:Cluster pg"}, done.Plan.DataLoss)
	require.Equal(t, ups, h.f.count("Up"))
	require.Len(t, done.Result.Changes.DataLoss, 1, "the result is the diff that waits")
}

// OnDataLoss with a harmless change: applied at once, and exactly the previewed plan.
func TestOnDataLossHarmlessPutApplies(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "")
	h.f.previewSteps = []engine.Step{configMapStep(engine.StepUpdate)}
	w := h.admin(http.MethodPut, tenantsPath+"/globex", edited("globex", "7d"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	done := h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateSucceeded, done.State, "%+v", done.Error)
	require.NotNil(t, done.Plan)
	require.Empty(t, done.Plan.Reason)
	require.Equal(t, 1, h.f.count("Preview"))
	last := h.f.upPlans[len(h.f.upPlans)-1]
	require.Equal(t, done.Plan.ID, last[globexStack].ID, "the up applied the previewed plan")
	require.Empty(t, h.f.savedPlans(globexStack), "a plan applied at once is not kept")
}

// A plan of a spec with secret values is applied by sending the document again; another
// document (a changed secret) is refused.
func TestPlanOfSecretsNeedsTheDocument(t *testing.T) {
	h := newHarness(t)
	srvPath := tenantsPath + "/acme/servers/bot"
	h.f.previewSteps = []engine.Step{{URN: "urn:pulumi:server.tfrs-system.bot::tfrs::kubernetes:core/v1:Secret::bot-secret", Type: "kubernetes:core/v1:Secret", Op: engine.StepCreate}}
	body := withApproval(serverBody("bot"), "Manual")
	w := h.admin(http.MethodPost, tenantsPath+"/acme/servers", body)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	done := h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateAwaitingApproval, done.State, "%+v", done.Error)

	w = h.admin(http.MethodPost, srvPath+"/apply", map[string]any{"planId": done.Plan.ID})
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	require.Equal(t, "document", problemOfResponse(t, w).Errors[0].Field)

	other := withApproval(serverBody("bot"), "Manual")
	other["spec"].(map[string]any)["secretData"] = map[string]string{"OPENAI_API_KEY": "sk-another-key-0123456789"}
	w = h.admin(http.MethodPost, srvPath+"/apply", map[string]any{"planId": done.Plan.ID, "document": other})
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	require.NotContains(t, w.Body.String(), "sk-another-key")

	// The refusal discarded the plan: a new PUT proposes a new one, applied with its document.
	w = h.admin(http.MethodPut, srvPath, body)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	done = h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateAwaitingApproval, done.State, "%+v", done.Error)
	w = h.admin(http.MethodPost, srvPath+"/apply", map[string]any{"planId": done.Plan.ID, "document": body})
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	applied := h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateSucceeded, applied.State, "%+v", applied.Error)
	require.NotContains(t, h.logs.String(), "sk-live-do-not-leak")
}

// A plan saved through one replica is applied through another, and an awaiting-approval
// operation reads the same on both: pending plans live in the backend beside the specs.
func TestReplicasSharePlans(t *testing.T) {
	hs, _ := replicas(t, 2)
	a, b := hs[0], hs[1]
	createGlobex(t, a, "")
	a.f.previewSteps = []engine.Step{postgresReplace()}

	w := a.admin(http.MethodPut, tenantsPath+"/globex", edited("globex", "7d"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	id := decodeJSON[OperationView](t, w).ID
	done := a.waitOperation(id)
	require.Equal(t, StateAwaitingApproval, done.State, "%+v", done.Error)
	onB := b.waitOperation(id)
	require.Equal(t, StateAwaitingApproval, onB.State)
	require.Equal(t, done.Plan, onB.Plan)

	applied := b.applyPlan(done.Plan.ID)
	require.Equal(t, StateSucceeded, applied.State, "%+v", applied.Error)
	w = a.admin(http.MethodPost, tenantsPath+"/globex/apply", map[string]any{"planId": done.Plan.ID})
	require.Equal(t, http.StatusNotFound, w.Code, "applied once, on any replica")
}

// A save of a resource that does not exist yet leaves an empty stack that is no resource: GET
// is 404, and either the apply or a plain create takes it.
func TestSavedPlanOfANewResource(t *testing.T) {
	h := newHarness(t)
	sp := h.savePlan(tenantBody("globex"))
	_, ok := h.f.Stack(globexStack)
	require.True(t, ok, "the fake leaves the empty stack record, as the engine does")
	w := h.admin(http.MethodGet, tenantsPath+"/globex", nil)
	require.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
	w = h.admin(http.MethodDelete, tenantsPath+"/globex", nil)
	require.Equal(t, http.StatusNotFound, w.Code, w.Body.String())

	done := h.applyPlan(sp.PlanID)
	require.Equal(t, StateSucceeded, done.State, "%+v", done.Error)
	w = h.admin(http.MethodGet, tenantsPath+"/globex", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	v := decodeJSON[ResourceView](t, w)
	require.True(t, v.Status.Ready)
	require.Equal(t, int64(1), v.Metadata.Generation)

	// Another save of a new resource, then a plain create instead of the apply.
	w = h.admin(http.MethodPost, tenantsPath+"/hooli/preview?save=true", tenantBody("hooli"))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	w = h.admin(http.MethodPost, tenantsPath, tenantBody("hooli"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateSucceeded, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)
}

// Manual with nothing to change in the cluster has nothing to review: its plan applies at
// once. A DELETE drops the resource's pending plan.
func TestManualNoChangeAppliesAndDeleteDropsPlan(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "Manual") // the fake previews no change
	require.Equal(t, 1, h.f.count("Up"))

	h.f.previewSteps = []engine.Step{configMapStep(engine.StepUpdate)}
	sp := h.savePlan(nil)
	w := h.admin(http.MethodDelete, tenantsPath+"/globex", nil)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, StateSucceeded, h.waitOperation(decodeJSON[OperationView](t, w).ID).State)
	require.Empty(t, h.f.savedPlans(globexStack))
	w = h.admin(http.MethodPost, tenantsPath+"/globex/apply", map[string]any{"planId": sp.PlanID})
	require.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
}

// A preview that cannot cover the own stack saves no plan: 409 plan-incomplete, and a Manual
// PUT fails with it instead of waiting on a plan that could never apply.
func TestIncompletePlanRefused(t *testing.T) {
	h := newHarness(t)
	createGlobex(t, h, "")
	h.f.previewNothing = true
	w := h.admin(http.MethodPost, tenantsPath+"/globex/preview?save=true", nil)
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	require.True(t, strings.HasSuffix(problemOfResponse(t, w).Type, "/plan-incomplete"))
	require.Empty(t, h.f.savedPlans(globexStack))

	w = h.admin(http.MethodPut, tenantsPath+"/globex", withApproval(edited("globex", "7d"), "Manual"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	done := h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Equal(t, StateFailed, done.State)
	require.True(t, strings.HasSuffix(done.Error.Type, "/plan-incomplete"), done.Error.Type)
}
