//go:build integration

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestCLIPreviewShowsExactlyTheEdit drives the CLI in-process against a local control plane
// and a file:// backend: up a stand-in cluster and an enterprise tenant from one file, edit
// one tenant spec field, and the preview reports exactly the resource that field shapes;
// after an up the preview reports nothing and --detailed-exitcode exits 0, and graph --status
// shows every component up to date.
func TestCLIPreviewShowsExactlyTheEdit(t *testing.T) {
	start := time.Now()
	cp := testenv.ControlPlane(t)
	t.Setenv("TFRS_PASSPHRASE", "cli-integration-"+t.Name())
	state := t.TempDir()
	common := []string{"--state-dir", state, "--kubeconfig", cp.KubeconfigPath}
	cmd := func(args ...string) []string { return append(args, common...) }

	dir := t.TempDir()
	file := standInCRs(t, dir, "")
	code, out := runCaptured(t, cmd("up", "-f", file, "-o", "json")...)
	require.Equal(t, 0, code, out)
	doc := parseDoc(t, out)
	require.Len(t, doc.Reports, 2)
	require.Equal(t, "cluster.e2e", doc.Reports[0].Target.Stack, "the cluster goes up first")
	require.NotZero(t, doc.Summary[engine.StepCreate])
	t.Logf("up cluster + tenant: %s", time.Since(start))

	edited := standInCRs(t, t.TempDir(), "  prometheus: {retention: 7d}")
	mark := time.Now()
	code, out = runCaptured(t, cmd("preview", "-f", edited, "-o", "json", "--detailed-exitcode")...)
	require.Equal(t, exitChanges, code, out)
	doc = parseDoc(t, out)
	require.Empty(t, doc.Reports[0].Changes, "the cluster is untouched: %+v", doc.Reports[0].Changes)
	changes := doc.Reports[1].Changes
	require.Len(t, changes, 1, "exactly the edited resource changes: %+v", changes)
	c := changes[0]
	require.Equal(t, engine.StepUpdate, c.Op)
	require.Equal(t, "kubernetes:apps/v1:Deployment", c.Type)
	require.Equal(t, "prometheus", c.Component)
	require.NotEmpty(t, c.Paths)
	for _, p := range c.Paths {
		require.Contains(t, p, "spec.template.spec.containers", "only the container args change")
	}
	require.False(t, doc.HasDataLoss)
	t.Logf("preview of the edit: %s", time.Since(mark))

	code, out = runCaptured(t, cmd("up", "-f", edited)...)
	require.Equal(t, 0, code, out)
	mark = time.Now()
	code, out = runCaptured(t, cmd("preview", "-f", edited, "--detailed-exitcode")...)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "no changes")
	t.Logf("no-op preview: %s", time.Since(mark))

	// graph --status reads each component's live state from the stacks: all up to date.
	code, out = runCaptured(t, cmd("graph", "-f", edited, "-o", "json", "--status")...)
	require.Equal(t, 0, code, out)
	var graphs []struct {
		Nodes []struct {
			ID, Status string
			External   bool
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &graphs), out)
	require.Len(t, graphs, 2, "the cluster's graph, then the tenant's")
	for _, g := range graphs {
		for _, n := range g.Nodes {
			if n.ID != "rabbitmq-operator-ready" { // the tenant's external gate: another stack's
				require.Equal(t, diff.StateUpToDate, n.Status, "component %s", n.ID)
			}
		}
	}

	// status reads what the backend records: both stacks ready, owned by the CLI, applied by
	// this build's revision (the test binary's: a build without a clean commit is named by its
	// bytes); a stack not created yet is reported as such.
	code, out = runCaptured(t, cmd("status", "-f", edited, "-o", "json")...)
	require.Equal(t, 0, code, out)
	var states []stackState
	require.NoError(t, json.Unmarshal([]byte(out), &states), out)
	require.Len(t, states, 2)
	want := programRevision()
	require.NotNil(t, want)
	for _, s := range states {
		require.True(t, s.Exists && s.Ready, "%+v", s)
		require.Equal(t, engine.ManagedByCLI, s.ManagedBy)
		require.Equal(t, want, s.Revision, "%s: applied by this build", s.Stack)
		require.NotNil(t, s.Last)
	}
	code, out = runCaptured(t, cmd("status", "-f", edited)...)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, want.ID)
	later := filepath.Join(t.TempDir(), "later.yaml")
	require.NoError(t, os.WriteFile(later, []byte("apiVersion: tfrs.io/v1alpha1\nkind: TFRTenant\n"+
		"metadata: {name: later, namespace: tfrs-system}\nspec: {clusterRef: e2e, type: enterprise}\n"), 0o600))
	code, out = runCaptured(t, cmd("status", "-f", later, "-o", "json")...)
	require.Equal(t, 0, code, out)
	states = nil
	require.NoError(t, json.Unmarshal([]byte(out), &states), out)
	require.Len(t, states, 1)
	require.False(t, states[0].Exists, "a stack not created yet")
	require.Nil(t, states[0].Revision)
	t.Logf("whole test %s", time.Since(start))
}
