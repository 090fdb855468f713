//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/server"
)

// TestHTTPApprovedPlan: review before apply over HTTP, with the real engine and tenant
// program on the local control plane. A preview?save=true of a tenant that does not exist
// yet answers its planId; applying that plan creates the tenant (its namespace and database
// exist); a plan saved next is made stale by a PUT, and its apply is refused (409
// plan-mismatch) with nothing run: the stack's last update is still the PUT's. A Manual PUT
// then ends awaiting-approval, and applying its plan runs it.
func TestHTTPApprovedPlan(t *testing.T) {
	e := newEnv(t, 20*time.Minute)
	ctx := e.ctx
	tc, _ := upStandInCluster(ctx, t, e.eng, e.cfg)

	c := serveAPI(t, e)

	root, err := filepath.Abs(filepath.Join("..", "..", "stacks", "testdata", "tenant", "charts"))
	require.NoError(t, err)
	tenant := map[string]any{
		"apiVersion": "tfrs.io/v1alpha1", "kind": "TFRTenant",
		"metadata": map[string]any{"name": "initech"},
		"spec": map[string]any{
			"clusterRef": tc.Name, "type": "enterprise", "namespace": "initech",
			"jaeger":  map[string]any{"localPath": filepath.Join(root, "jaeger")},
			"grafana": map[string]any{"localPath": filepath.Join(root, "grafana")},
		},
	}
	const path = "/v1/namespaces/tfrs-system/tenants/initech"
	save := func(body any) server.SavedPreview {
		t.Helper()
		began := time.Now()
		resp, b := c.do(http.MethodPost, path+"/preview?save=true", body)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		var sp server.SavedPreview
		require.NoError(t, json.Unmarshal(b, &sp))
		t.Logf("preview?save=true: %s, plan %s, %v", time.Since(began).Round(time.Millisecond), sp.PlanID, sp.Summary)
		return sp
	}

	// Save a plan of the new tenant, then apply exactly it.
	sp := save(tenant)
	require.NotEmpty(t, sp.Changes)
	resp, b := c.do(http.MethodPost, path+"/apply", map[string]any{"planId": sp.PlanID})
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(b))
	op := c.wait(resp.Header.Get("Location"))
	require.Equal(t, server.StateSucceeded, op.State, "%+v", op.Error)
	require.Equal(t, server.OpApply, op.Kind)
	require.Equal(t, sp.PlanID, op.Plan.ID)
	t.Logf("apply: %s, %v", op.EndedAt.Sub(op.StartedAt).Round(time.Millisecond), op.Result.Changes.Summary)

	cs, err := e.cp.Client()
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Get(ctx, "initech", metav1.GetOptions{})
	require.NoError(t, err, "the applied plan created the tenant's namespace")
	resp, b = c.do(http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var v server.ResourceView
	require.NoError(t, json.Unmarshal(b, &v))
	require.True(t, v.Status.Ready)
	require.Equal(t, "initech-pg-rw", v.Status.Outputs["postgresHost"])

	// Save a plan of an edit, then PUT another edit: the saved plan is stale.
	tenant["spec"].(map[string]any)["prometheus"] = map[string]any{"retention": "7d"}
	stale := save(tenant)
	tenant["spec"].(map[string]any)["prometheus"] = map[string]any{"retention": "9d"}
	resp, b = c.do(http.MethodPut, path, tenant)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(b))
	op = c.wait(resp.Header.Get("Location"))
	require.Equal(t, server.StateSucceeded, op.State, "%+v", op.Error)
	require.NotNil(t, op.Plan, "OnDataLoss applied the previewed plan of the harmless edit")
	t.Logf("put (OnDataLoss, harmless): %s, %v", op.EndedAt.Sub(op.StartedAt).Round(time.Millisecond), op.Result.Changes.Summary)
	before, err := e.eng.Status(ctx, v.Status.Stack)
	require.NoError(t, err)

	resp, b = c.do(http.MethodPost, path+"/apply", map[string]any{"planId": stale.PlanID})
	require.Equal(t, http.StatusConflict, resp.StatusCode, string(b))
	var p server.Problem
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, "https://tfrs.io/problems/plan-mismatch", p.Type)
	after, err := e.eng.Status(ctx, v.Status.Stack)
	require.NoError(t, err)
	require.Equal(t, before.Last, after.Last, "the refused apply ran nothing")
	resp, b = c.do(http.MethodPost, path+"/apply", map[string]any{"planId": stale.PlanID})
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the stale plan was discarded: %s", b)

	// Manual: the PUT ends awaiting approval with its plan; applying that plan runs it.
	tenant["spec"].(map[string]any)["approval"] = map[string]any{"mode": "Manual"}
	tenant["spec"].(map[string]any)["prometheus"] = map[string]any{"retention": "5d"}
	resp, b = c.do(http.MethodPut, path, tenant)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(b))
	waiting := c.wait(resp.Header.Get("Location"))
	require.Equal(t, server.StateAwaitingApproval, waiting.State, "%+v", waiting.Error)
	require.Equal(t, server.PlanReasonManual, waiting.Plan.Reason)
	require.NotEmpty(t, waiting.Plan.Changes)
	unchanged, err := e.eng.Status(ctx, v.Status.Stack)
	require.NoError(t, err)
	require.Equal(t, after.Last, unchanged.Last, "awaiting approval, nothing ran")
	resp, b = c.do(http.MethodPost, waiting.Plan.Apply, map[string]any{"planId": waiting.Plan.ID})
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(b))
	op = c.wait(resp.Header.Get("Location"))
	require.Equal(t, server.StateSucceeded, op.State, "%+v", op.Error)
	t.Logf("apply of the Manual PUT's plan: %s, %v", op.EndedAt.Sub(op.StartedAt).Round(time.Millisecond), op.Result.Changes.Summary)

	resp, b = c.do(http.MethodDelete, path, nil)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(b))
	require.Equal(t, server.StateSucceeded, c.wait(resp.Header.Get("Location")).State)
}
