package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// fakeEngine stands in for the Pulumi engine (see package enginetest): every operation
// answers with the steps set for its stack, a stack is ready once it was brought up, and every
// call is logged in order.
type fakeEngine struct {
	*enginetest.Engine
	steps map[string][]engine.Step // by stack: what a preview/up/destroy reports
}

func newFakeEngine() *fakeEngine {
	f := &fakeEngine{Engine: enginetest.New(), steps: map[string][]engine.Step{}}
	f.Steps = func(c enginetest.Call) []engine.Step { return f.steps[c.Stack] }
	return f
}

// ready puts stacks as the CLI made them, brought up.
func (f *fakeEngine) ready(stacks ...string) {
	for _, s := range stacks {
		f.Put(s, enginetest.Stack{Tags: enginetest.Tags(engine.ManagedByCLI, nil), Outputs: enginetest.DefaultOutputs(s), Ready: true})
	}
}

// fail makes every operation on stack fail with err.
func (f *fakeEngine) fail(stack string, err error) {
	f.Hook = enginetest.FailOn(err, stack, engine.OpUp, engine.OpPreview, engine.OpRefresh, engine.OpDestroy)
}

// recorded returns the operations run since the last call (the removes that follow every
// destroy left out) and forgets them.
func (f *fakeEngine) recorded() []string {
	out := f.CallsOf(engine.OpUp, engine.OpPreview, engine.OpRefresh, engine.OpDestroy)
	f.Reset()
	return out
}

// useFakeEngine makes the commands run on f.
func useFakeEngine(t *testing.T, f *fakeEngine) {
	old := openRunner
	openRunner = func(context.Context, *stackFlags) (*runner.Runner, func(), error) {
		return runner.New(f, runner.Options{Namespaces: absentNamespaces{}}), func() {}, nil
	}
	t.Cleanup(func() { openRunner = old })
}

const (
	testCluster = "cluster.dev"
	testTenant  = "tenant.tfrs-system.acme"
)

// writeCRs writes a tenant and its cluster, the tenant first: the commands must order them.
func writeCRs(t *testing.T, policy string) string {
	path := filepath.Join(t.TempDir(), "crs.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: tfrs.io/v1alpha1
kind: TFRTenant
metadata: {name: acme, namespace: tfrs-system}
spec: {clusterRef: dev, type: enterprise, namespace: acme, deletionPolicy: `+policy+`}
---
apiVersion: tfrs.io/v1alpha1
kind: TFRCluster
metadata: {name: dev}
spec: {domain: tfrobot.local, ingress: {mode: NodePort}}
`), 0o600))
	return path
}

func step(stack, qualified, name string, op engine.StepOp, diffs ...string) engine.Step {
	parts := strings.Split(qualified, "$")
	return engine.Step{URN: "urn:pulumi:" + stack + "::tfrs::" + qualified + "::" + name, Type: parts[len(parts)-1], Op: op, Diffs: diffs}
}

func sameSteps(stack string) []engine.Step {
	return []engine.Step{
		step(stack, "pulumi:pulumi:Stack", "tfrs-"+stack, engine.StepSame),
		step(stack, "tfrs:tenant:Namespace", "namespace", engine.StepSame),
	}
}

func parseDoc(t *testing.T, out string) diff.Document {
	t.Helper()
	var d diff.Document
	require.NoError(t, json.Unmarshal([]byte(out), &d), out)
	return d
}

// A first preview of a file with a new cluster and its tenant previews the cluster and
// reports the tenant as pending (its parent has no outputs yet); up then runs both, parent
// first; a preview with nothing to change exits 0 under --detailed-exitcode.
func TestPreviewUpOrderAndPendingChildren(t *testing.T) {
	f := newFakeEngine()
	useFakeEngine(t, f)
	file := writeCRs(t, "Retain")
	f.steps[testCluster] = []engine.Step{step(testCluster, "tfrs:cluster:Istio", "istio", engine.StepCreate)}

	code, out := runCaptured(t, "preview", "-f", file, "-o", "json", "--detailed-exitcode")
	require.Equal(t, exitChanges, code, out)
	require.Equal(t, []string{"preview " + testCluster}, f.recorded())
	doc := parseDoc(t, out)
	require.Len(t, doc.Reports, 2)
	require.Equal(t, v1alpha1.KindTFRCluster, doc.Reports[0].Target.Kind, "clusters first, whatever the file order")
	require.Contains(t, doc.Reports[1].Skipped, "waits for TFRCluster dev")
	require.Empty(t, doc.Reports[1].Error)

	code, _ = runCaptured(t, "up", "-f", file)
	require.Equal(t, 0, code)
	require.Equal(t, []string{"up " + testCluster, "up " + testTenant}, f.recorded())

	f.steps[testCluster], f.steps[testTenant] = sameSteps(testCluster), sameSteps(testTenant)
	code, out = runCaptured(t, "preview", "-f", file, "--detailed-exitcode")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "no changes")

	f.steps[testTenant] = append(sameSteps(testTenant), step(testTenant, "tfrs:tenant:Namespace$kubernetes:core/v1:Namespace", "acme", engine.StepUpdate, "metadata.labels"))
	code, out = runCaptured(t, "preview", "-f", file, "-o", "json", "--detailed-exitcode")
	require.Equal(t, exitChanges, code)
	doc = parseDoc(t, out)
	require.Len(t, doc.Reports[1].Changes, 1)
	require.Equal(t, []string{"metadata.labels"}, doc.Reports[1].Changes[0].Paths)
	require.Equal(t, "namespace", doc.Reports[1].Changes[0].Component)
	code, _ = runCaptured(t, "preview", "-f", file)
	require.Equal(t, 0, code, "without --detailed-exitcode changes exit 0")
}

// The data-loss guard: a preview exits 3, an up stops before applying the object that would
// lose data, and the Markdown comment leads with the warning and pictures the graph.
func TestDataLossGuard(t *testing.T) {
	f := newFakeEngine()
	useFakeEngine(t, f)
	file := writeCRs(t, "Retain")
	f.ready(testCluster, testTenant)
	f.steps[testCluster] = sameSteps(testCluster)
	f.steps[testTenant] = append(sameSteps(testTenant),
		step(testTenant, "tfrs:tenant:PostgreSQL", "postgresql", engine.StepSame),
		step(testTenant, "tfrs:tenant:PostgreSQL$kubernetes:postgresql.cnpg.io/v1:Cluster", "acme-pg", engine.StepReplace, "spec.bootstrap"))

	code, out := runCaptured(t, "preview", "-f", file, "--detailed-exitcode")
	require.Equal(t, exitChanges, code, "unguarded, data loss is just a change")
	require.True(t, strings.HasPrefix(out, "WARNING: DATA LOSS"), out)

	code, out = runCaptured(t, "preview", "-f", file, "-o", "markdown", "--detailed-exitcode", "--fail-on-data-loss")
	require.Equal(t, exitDataLoss, code)
	require.Contains(t, out, "> [!CAUTION]")
	require.Less(t, strings.Index(out, "[!CAUTION]"), strings.Index(out, "**Summary:**"), "the warning comes first")
	require.Contains(t, out, "```mermaid")
	require.Contains(t, out, "class postgresql changed")
	f.recorded()

	code, _ = runCaptured(t, "up", "-f", file, "--fail-on-data-loss")
	require.Equal(t, exitDataLoss, code)
	require.Equal(t, []string{"preview " + testCluster, "up " + testCluster, "preview " + testTenant}, f.recorded(),
		"the tenant is previewed and not applied")
}

// Destroy needs --yes, goes children first, and under Retain the data objects' deletes are
// retained rather than lost; under Delete the guard refuses before anything runs.
func TestDestroy(t *testing.T) {
	f := newFakeEngine()
	useFakeEngine(t, f)
	file := writeCRs(t, "Retain")
	f.ready(testCluster, testTenant)
	f.steps[testTenant] = []engine.Step{
		step(testTenant, "tfrs:tenant:SharedCache", "shared-cache", engine.StepDelete),
		step(testTenant, "tfrs:tenant:SharedCache$kubernetes:core/v1:PersistentVolumeClaim", "shared-cache-claim", engine.StepDelete),
	}

	code, _ := runCaptured(t, "destroy", "-f", file)
	require.Equal(t, 1, code, "destroy without --yes is a usage error")
	require.Empty(t, f.recorded())

	code, out := runCaptured(t, "destroy", "-f", file, "--yes", "--fail-on-data-loss", "-o", "json")
	require.Equal(t, 0, code, out)
	require.Equal(t, []string{"destroy " + testTenant, "destroy " + testCluster}, f.recorded())
	doc := parseDoc(t, out)
	require.False(t, doc.HasDataLoss, "Retain keeps the claim")
	require.Equal(t, diff.TypePVC, doc.Reports[0].Changes[0].Type)
	require.True(t, doc.Reports[0].Changes[0].Retained)

	code, _ = runCaptured(t, "destroy", "-f", writeCRs(t, "Delete"), "--yes", "--fail-on-data-loss")
	require.Equal(t, exitDataLoss, code)
	require.Empty(t, f.recorded(), "refused before anything ran")
}

// An engine error exits 1 and still prints the report; a preview goes on with the next
// object.
func TestErrorsAndUsage(t *testing.T) {
	f := newFakeEngine()
	useFakeEngine(t, f)
	file := writeCRs(t, "Retain")
	f.ready(testCluster, testTenant)
	f.fail(testCluster, errors.New("boom"))

	code, out := runCaptured(t, "preview", "-f", file, "-o", "json", "--detailed-exitcode")
	require.Equal(t, 1, code, "an error wins over changes")
	doc := parseDoc(t, out)
	require.Equal(t, "boom", doc.Reports[0].Error)
	require.Equal(t, []string{"preview " + testCluster, "preview " + testTenant}, f.recorded(), "a preview goes on")

	code, _ = runCaptured(t, "up", "-f", file)
	require.Equal(t, 1, code)
	require.Equal(t, []string{"up " + testCluster}, f.recorded(), "an up stops at the first error")

	for _, args := range [][]string{
		{"preview"},
		{"preview", "-f", file, "-o", "yaml"},
		{"preview", "-f", file, "extra"},
		{"render", "-f", file},
	} {
		code, _ = runCaptured(t, args...)
		require.Equal(t, 1, code, "%v is a usage error", args)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: tfrs.io/v1alpha1\nkind: TFRCluster\nmetadata: {name: x}\nspec: {domain: \"Not A Domain\"}\n"), 0o600))
	code, _ = runCaptured(t, "preview", "-f", bad)
	require.Equal(t, 1, code)
	require.Empty(t, f.recorded(), "nothing runs before every document validates")
}

func TestLoadObjects(t *testing.T) {
	file := writeCRs(t, "Retain")
	load := func(reverse bool, files ...string) ([]prepared, error) {
		return (&inputFlags{files: files}).load(nil, reverse)
	}
	objs, err := load(false, file)
	require.NoError(t, err)
	require.Equal(t, []string{testCluster, testTenant}, []string{objs[0].target.Stack, objs[1].target.Stack})
	objs, err = load(true, file)
	require.NoError(t, err)
	require.Equal(t, []string{testTenant, testCluster}, []string{objs[0].target.Stack, objs[1].target.Stack})
	_, err = load(false, file, file)
	require.ErrorContains(t, err, "is also in")
}

// graph --status previews the stack and labels each component with its state.
func TestGraphStatus(t *testing.T) {
	f := newFakeEngine()
	useFakeEngine(t, f)
	file := writeCRs(t, "Retain")
	f.ready(testCluster, testTenant)
	f.steps[testTenant] = append(sameSteps(testTenant),
		step(testTenant, "tfrs:tenant:Redis", "redis", engine.StepSame),
		step(testTenant, "tfrs:tenant:Redis$kubernetes:apps/v1:Deployment", "redis", engine.StepUpdate),
		step(testTenant, "tfrs:tenant:Grafana", "grafana", engine.StepCreate))
	code, out := runCaptured(t, "graph", "-f", file, "-o", "json", "--status")
	require.Equal(t, 0, code, out)
	// One JSON document: the cluster's graph, then the tenant's.
	var graphs []struct {
		Stack string
		Nodes []struct{ ID, Status string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &graphs), out)
	require.Len(t, graphs, 2)
	require.Equal(t, testTenant, graphs[1].Stack)
	states := map[string]string{}
	for _, n := range graphs[1].Nodes {
		states[n.ID] = n.Status
	}
	require.Equal(t, diff.StateUpToDate, states["namespace"])
	require.Equal(t, "pending: 1 update", states["redis"])
	require.Equal(t, diff.StateNotCreated, states["grafana"])
}

// absentNamespaces finds no namespace: every tenant creates its own.
type absentNamespaces struct{}

func (absentNamespaces) GetNamespace(context.Context, string) (bool, map[string]string, error) {
	return false, nil, nil
}

// An up of a file whose tenant changed an immutable field (its namespace) against the
// existing stacks exits 1 naming the field, and runs nothing, not even the cluster's up.
func TestUpRefusesChangedImmutableField(t *testing.T) {
	f := newFakeEngine()
	useFakeEngine(t, f)
	file := writeCRs(t, "Retain")
	code, out := runCaptured(t, "up", "-f", file)
	require.Equal(t, 0, code, out)
	require.Equal(t, []string{"up " + testCluster, "up " + testTenant}, f.recorded())
	before, err := f.Tags(context.Background(), testTenant)
	require.NoError(t, err)
	require.Contains(t, before[engine.TagImmutable], `"spec.namespace":"acme"`)

	for field, edit := range map[string][2]string{
		"spec.namespace":  {"namespace: acme", "namespace: other"},
		"spec.type":       {"type: enterprise, namespace: acme", "type: personal, jobType: chat"},
		"spec.clusterRef": {"clusterRef: dev", "clusterRef: prod"},
	} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		changed := filepath.Join(t.TempDir(), "changed.yaml")
		require.NoError(t, os.WriteFile(changed, []byte(strings.Replace(string(b), edit[0], edit[1], 1)), 0o600))
		var stderr string
		stderr = capture(t, &os.Stderr, func() { code, out = runCaptured(t, "up", "-f", changed) })
		require.Equal(t, 1, code, "%s: %s %s", field, out, stderr)
		require.Contains(t, out+stderr, field+" is immutable", field)
		require.Empty(t, f.recorded(), "%s: nothing ran", field)
		after, err := f.Tags(context.Background(), testTenant)
		require.NoError(t, err)
		require.Equal(t, before, after, "%s: the stack is unchanged", field)
	}
}

// A suspended object in the files is skipped by preview, up and refresh, each saying so, and
// the others run; a destroy that includes it refuses before anything runs.
func TestSuspendedObjectsAreSkipped(t *testing.T) {
	f := newFakeEngine()
	useFakeEngine(t, f)
	f.ready(testCluster, testTenant)
	path := filepath.Join(t.TempDir(), "crs.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: tfrs.io/v1alpha1
kind: TFRTenant
metadata: {name: acme, namespace: tfrs-system}
spec: {clusterRef: dev, type: enterprise, namespace: acme, suspend: true}
---
apiVersion: tfrs.io/v1alpha1
kind: TFRCluster
metadata: {name: dev}
spec: {domain: tfrobot.local, ingress: {mode: NodePort}}
`), 0o600))
	for _, cmd := range []string{"preview", "up", "refresh"} {
		code, out := runCaptured(t, cmd, "-f", path, "-o", "json")
		require.Equal(t, 0, code, "%s: %s", cmd, out)
		assert.Equal(t, []string{cmd + " " + testCluster}, f.recorded(), cmd)
		doc := parseDoc(t, out)
		require.Len(t, doc.Reports, 2, cmd)
		assert.Equal(t, testTenant, doc.Reports[1].Target.Stack)
		assert.Contains(t, doc.Reports[1].Skipped, "TFRTenant tfrs-system/acme is suspended (spec.suspend: true)", cmd)
		assert.Empty(t, doc.Reports[1].Error)
	}
	code, out := runCaptured(t, "preview", "-f", path)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "skipped: TFRTenant tfrs-system/acme is suspended")
	f.recorded()

	code, out = runCaptured(t, "destroy", "-f", path, "--yes")
	require.Equal(t, 1, code, out)
	assert.Contains(t, out, "is suspended")
	assert.Empty(t, f.recorded(), "refused before anything ran")
}
