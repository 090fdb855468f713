//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
)

// TestCLISavedPlans is the pull-request → merge → apply-the-reviewed-plan workflow against a
// local control plane with the real engine: plans saved by `preview --save-plan` are what
// `up --plan` applies (the cluster's charts and manifests, then a whole tenant, each created
// from its plan, then a server); an up that would reach an object without a plan, or one whose spec changed
// after the review, fails before anything runs; a Manual tenant is applied only from a plan.
func TestCLISavedPlans(t *testing.T) {
	start := time.Now()
	cp := testenv.ControlPlane(t)
	t.Setenv("TFRS_PASSPHRASE", "cli-plans-"+t.Name())
	state := t.TempDir()
	common := []string{"--state-dir", state, "--kubeconfig", cp.KubeconfigPath}
	cmd := func(args ...string) []string { return append(args, common...) }
	kube, err := cp.Client()
	require.NoError(t, err)
	ctx := context.Background()
	nsExists := func(ns string) bool {
		_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false
		}
		require.NoError(t, err)
		return true
	}

	// runErr runs a command that must fail and returns its stderr (where the reason goes).
	runErr := func(args ...string) string {
		t.Helper()
		var code int
		var out string
		stderr := capture(t, &os.Stderr, func() { code, out = runCaptured(t, cmd(args...)...) })
		require.Equal(t, 1, code, out)
		return stderr
	}

	both := standInCRs(t, t.TempDir(), "")
	raw, err := os.ReadFile(both)
	require.NoError(t, err)
	parts := strings.SplitN(string(raw), "\n---\n", 2)
	require.Len(t, parts, 2)
	clusterOnly := filepath.Join(t.TempDir(), "cluster.yaml")
	require.NoError(t, os.WriteFile(clusterOnly, []byte(parts[1]), 0o600))

	// The pull request: nothing exists, so only the cluster can be planned; the tenant waits
	// for it and gets no plan.
	plans := t.TempDir()
	code, out := runCaptured(t, cmd("preview", "-f", both, "--save-plan", plans)...)
	require.Equal(t, 0, code, out)
	files, _ := filepath.Glob(filepath.Join(plans, "*.plan.json"))
	require.Len(t, files, 1, "%v", files)
	assert.Equal(t, "cluster.e2e.plan.json", filepath.Base(files[0]))
	fi, err := os.Stat(files[0])
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.False(t, nsExists("istio-system"), "a plan preview creates nothing in the cluster")

	// Applying both with those plans fails before anything runs: the tenant has no plan.
	assert.Contains(t, runErr("up", "-f", both, "--plan", plans), "no plan of stack tenant.tfrs-system.acme")
	assert.False(t, nsExists("istio-system"), "refused without changes")

	// The cluster alone, from its plan: charts and manifests are created exactly as planned.
	mark := time.Now()
	code, out = runCaptured(t, cmd("up", "-f", clusterOnly, "--plan", plans)...)
	require.Equal(t, 0, code, out)
	assert.True(t, nsExists("istio-system"))
	t.Logf("cluster from its plan: %s", time.Since(mark))

	// Now the tenant can be planned, and is created from its plan (the cluster's plan says
	// "same" for every resource).
	plans2 := t.TempDir()
	code, out = runCaptured(t, cmd("preview", "-f", both, "--save-plan", plans2)...)
	require.Equal(t, 0, code, out)
	files, _ = filepath.Glob(filepath.Join(plans2, "*.plan.json"))
	require.Len(t, files, 2, "%v", files)
	mark = time.Now()
	code, out = runCaptured(t, cmd("up", "-f", both, "--plan", plans2)...)
	require.Equal(t, 0, code, out)
	assert.True(t, nsExists("acme"))
	t.Logf("tenant from its plan: %s", time.Since(mark))
	code, out = runCaptured(t, cmd("preview", "-f", both, "--detailed-exitcode")...)
	require.Equal(t, 0, code, "the plan left nothing to do: %s", out)

	// A server of that tenant, created from its plan: the server-side dry run of its Grafana
	// RoleBinding passes although its Role does not exist yet (the applier holds bind on its
	// namespace's Roles; without it every preview of new RBAC failed). An edit of it is then
	// planned and applied from the plan: every kind of the server program (Deployments, init
	// Jobs, Secrets, ConfigMaps, RBAC) held to it.
	serverDoc := func(replicas int) string {
		return fmt.Sprintf(`
---
apiVersion: tfrs.io/v1alpha1
kind: TFRServer
metadata: {name: bot1, namespace: tfrs-system}
spec: {tenantRef: acme, robotId: bot1, robotType: chat, image: "tfrobot/tfrobot-server:1.0.0", apiWorker: {replicas: %d}}
`, replicas)
	}
	withServer := filepath.Join(t.TempDir(), "with-server.yaml")
	require.NoError(t, os.WriteFile(withServer, append(raw, serverDoc(1)...), 0o600))
	plansNew := t.TempDir()
	code, out = runCaptured(t, cmd("preview", "-f", withServer, "--save-plan", plansNew, "-o", "json")...)
	require.Equal(t, 0, code, out)
	doc := parseDoc(t, out)
	require.Len(t, doc.Reports, 3)
	require.NotEmpty(t, doc.Reports[2].Changes, "the new server is planned")
	mark = time.Now()
	code, out = runCaptured(t, cmd("up", "-f", withServer, "--plan", plansNew)...)
	require.Equal(t, 0, code, out)
	t.Logf("new server from its plan: %s", time.Since(mark))
	_, err = kube.RbacV1().RoleBindings("acme").Get(ctx, "chat-bot1-grafana-sa", metav1.GetOptions{})
	require.NoError(t, err, "the planned Grafana RoleBinding exists")
	require.NoError(t, os.WriteFile(withServer, append(raw, serverDoc(2)...), 0o600))
	plansS := t.TempDir()
	code, out = runCaptured(t, cmd("preview", "-f", withServer, "--save-plan", plansS, "-o", "json")...)
	require.Equal(t, 0, code, out)
	doc = parseDoc(t, out)
	require.Len(t, doc.Reports, 3)
	require.NotEmpty(t, doc.Reports[2].Changes, "the server's edit is planned")
	files, _ = filepath.Glob(filepath.Join(plansS, "*.plan.json"))
	require.Len(t, files, 3, "%v", files)
	mark = time.Now()
	code, out = runCaptured(t, cmd("up", "-f", withServer, "--plan", plansS)...)
	require.Equal(t, 0, code, out)
	t.Logf("server edit from its plan: %s", time.Since(mark))
	code, out = runCaptured(t, cmd("preview", "-f", withServer, "--detailed-exitcode")...)
	require.Equal(t, 0, code, "the plan left nothing to do: %s", out)

	// A Manual tenant: a plain up is refused; an edit after the review makes the reviewed plan
	// fail without changes; the reviewed spec applies from its plan.
	manual := "  approval: {mode: Manual}\n  prometheus: {retention: 7d}"
	reviewed := standInCRs(t, t.TempDir(), manual)
	assert.Contains(t, runErr("up", "-f", reviewed), "spec.approval.mode is Manual")
	plans3 := t.TempDir()
	code, out = runCaptured(t, cmd("preview", "-f", reviewed, "--save-plan", plans3, "-o", "json")...)
	require.Equal(t, 0, code, out)
	doc = parseDoc(t, out)
	require.Len(t, doc.Reports, 2)
	require.NotEmpty(t, doc.Reports[1].Changes, "the edit is in the reviewed plan")

	edited := standInCRs(t, t.TempDir(), "  approval: {mode: Manual}\n  prometheus: {retention: 5d}")
	assert.Contains(t, runErr("up", "-f", edited, "--plan", plans3), "the spec changed since the plan was saved")
	code, out = runCaptured(t, cmd("preview", "-f", reviewed, "--detailed-exitcode")...)
	require.Equal(t, exitChanges, code, "the refused up changed nothing: %s", out)

	code, out = runCaptured(t, cmd("up", "-f", reviewed, "--plan", plans3)...)
	require.Equal(t, 0, code, out)
	code, out = runCaptured(t, cmd("preview", "-f", reviewed, "--detailed-exitcode")...)
	require.Equal(t, 0, code, "the reviewed plan is applied: %s", out)

	// An edited plan file is refused: its id no longer matches its content.
	tenantPlan := filepath.Join(plans3, "tenant.tfrs-system.acme.plan.json")
	b, err := os.ReadFile(tenantPlan)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tenantPlan, []byte(strings.Replace(string(b), `"spec":"`, `"spec":"0`, 1)), 0o600))
	assert.Contains(t, runErr("up", "-f", reviewed, "--plan", plans3), "does not match its id")
	t.Logf("whole test %s", time.Since(start))
}
