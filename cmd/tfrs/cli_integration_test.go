//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/manifest"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/fleet"
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

	// A fleet preview right after the up proves both stacks unchanged from their recorded
	// inputs, without a Pulumi run; --full previews them for real, with the same answer.
	fleetOf := func(args ...string) (int, fleet.Report) {
		t.Helper()
		code, out := runCaptured(t, cmd(append([]string{"fleet", "preview", "-o", "json"}, args...)...)...)
		var rep fleet.Report
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		return code, rep
	}
	mark = time.Now()
	code, rep := fleetOf("-f", edited, "--detailed-exitcode")
	require.Equal(t, 0, code)
	require.Equal(t, map[fleet.Status]int{fleet.StatusUnchanged: 2}, rep.Counts)
	require.Equal(t, 2, rep.Proven, "%+v", rep.Entries)
	t.Logf("fleet preview, proven: %s", time.Since(mark))
	code, rep = fleetOf("-f", edited, "--full")
	require.Equal(t, 0, code)
	require.Equal(t, map[fleet.Status]int{fleet.StatusUnchanged: 2}, rep.Counts)
	require.Zero(t, rep.Proven)
	// A refresh that finds the cluster as the up left it keeps the proof.
	code, out = runCaptured(t, cmd("refresh", "-f", edited)...)
	require.Equal(t, 0, code, out)
	_, rep = fleetOf("-f", edited)
	require.Equal(t, 2, rep.Proven, "after a refresh that changed nothing: %+v", rep.Entries)
	// The same objects as custom resources (the API server applies the CRD's defaults), read
	// from the cluster: their local sources are the original paths, not the snapshots the
	// CLI applied, so they are previewed for real, and nothing changes.
	data, err := os.ReadFile(edited)
	require.NoError(t, err)
	crs, err := manifest.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, corev1.AddToScheme(scheme))
	kc, err := client.New(cp.RESTConfig, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tfrs-system"}}
	if err := kc.Create(context.Background(), ns); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for _, o := range crs {
		require.NoError(t, kc.Create(context.Background(), o))
	}
	code, rep = fleetOf("--from-cluster", "--kind", "tenant", "--kind", "cluster", "--detailed-exitcode")
	require.Equal(t, 0, code)
	require.Len(t, rep.Entries, 2)
	require.Equal(t, map[fleet.Status]int{fleet.StatusUnchanged: 2}, rep.Counts, "custom resources read back: %+v", rep.Entries)
	_, rep = fleetOf("--from-cluster", "--kind", "server")
	require.Empty(t, rep.Entries)

	// The files as they were: the tenant's Prometheus changes back, the cluster stays proven.
	code, rep = fleetOf("-f", file, "--detailed-exitcode")
	require.Equal(t, exitChanges, code)
	require.Equal(t, map[fleet.Status]int{fleet.StatusUnchanged: 1, fleet.StatusUpdate: 1}, rep.Counts)
	require.True(t, rep.Entries[0].Proven, "the cluster")
	require.Len(t, rep.Groups, 1)
	require.Equal(t, "prometheus", rep.Groups[0].Component)
	require.Equal(t, []string{"tenant.tfrs-system.acme"}, rep.Groups[0].Stacks)

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
