package diff

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	tenantStack  = "tenant.tfrs-system.acme"
	clusterStack = "cluster.dev"
)

func urn(stack, qualified, name string) string {
	return "urn:pulumi:" + stack + "::tfrs::" + qualified + "::" + name
}

// tenantPreview is an enterprise tenant's preview with every kind of change: a CNPG cluster
// replaced (data loss), the shared-cache PVC deleted (data loss), a Deployment updated and a
// new component created, among unchanged resources. Steps are deliberately out of order: the
// report must sort them.
func tenantPreview() *runner.Outcome {
	s := tenantStack
	steps := []engine.Step{
		{URN: urn(s, "pulumi:pulumi:Stack", "tfrs-"+s), Type: "pulumi:pulumi:Stack", Op: engine.StepSame},
		{URN: urn(s, "tfrs:tenant:TFRobotFront$kubernetes:core/v1:Service", "tfrobot-front"), Type: "kubernetes:core/v1:Service", Op: engine.StepCreate},
		{URN: urn(s, "pulumi:providers:kubernetes", "default_4_25_0"), Type: "pulumi:providers:kubernetes", Op: engine.StepSame},
		// Pulumi's own default providers come and go between runs; a report ignores them.
		{URN: urn(s, "pulumi:providers:kubernetes", "default"), Type: "pulumi:providers:kubernetes", Op: engine.StepDelete},
		{URN: urn(s, "tfrs:tenant:Namespace", "namespace"), Type: "tfrs:tenant:Namespace", Op: engine.StepSame},
		{URN: urn(s, "tfrs:tenant:Namespace$kubernetes:core/v1:Namespace", "acme"), Type: "kubernetes:core/v1:Namespace", Op: engine.StepSame},
		{URN: urn(s, "tfrs:tenant:PostgreSQL", "postgresql"), Type: "tfrs:tenant:PostgreSQL", Op: engine.StepSame},
		{URN: urn(s, "tfrs:tenant:PostgreSQL$kubernetes:postgresql.cnpg.io/v1:Cluster", "acme-pg"), Type: "kubernetes:postgresql.cnpg.io/v1:Cluster", Op: engine.StepReplace,
			Diffs: []string{"spec.bootstrap.initdb.database", "spec.instances"}, ReplaceKeys: []string{"spec.bootstrap"}},
		{URN: urn(s, "tfrs:tenant:PostgreSQL$kubernetes:core/v1:Secret", "acme-pg-app"), Type: "kubernetes:core/v1:Secret", Op: engine.StepSame},
		{URN: urn(s, "tfrs:tenant:SharedCache", "shared-cache"), Type: "tfrs:tenant:SharedCache", Op: engine.StepSame},
		{URN: urn(s, "tfrs:tenant:SharedCache$kubernetes:core/v1:PersistentVolumeClaim", "shared-cache"), Type: "kubernetes:core/v1:PersistentVolumeClaim", Op: engine.StepDelete},
		{URN: urn(s, "tfrs:tenant:Prometheus", "prometheus"), Type: "tfrs:tenant:Prometheus", Op: engine.StepSame},
		{URN: urn(s, "tfrs:tenant:Prometheus$kubernetes:apps/v1:Deployment", "prometheus"), Type: "kubernetes:apps/v1:Deployment", Op: engine.StepUpdate,
			Diffs: []string{"spec.template.spec.containers[0].args[1]"}},
		{URN: urn(s, "tfrs:tenant:TFRobotFront", "tfrobot-front"), Type: "tfrs:tenant:TFRobotFront", Op: engine.StepCreate},
		{URN: urn(s, "tfrs:tenant:TFRobotFront$kubernetes:apps/v1:Deployment", "tfrobot-front"), Type: "kubernetes:apps/v1:Deployment", Op: engine.StepCreate},
	}
	return &runner.Outcome{
		Target: kinds.Target{Kind: v1alpha1.KindTFRTenant, Namespace: "tfrs-system", Name: "acme", Stack: s,
			Parent: clusterStack, ParentKind: v1alpha1.KindTFRCluster, ParentName: "dev"},
		Stacks: []runner.StackResult{{Stack: s, Result: &engine.Result{Stack: s, Operation: engine.OpPreview, Steps: steps}}},
	}
}

// clusterPreview changes nothing.
func clusterPreview() *runner.Outcome {
	s := clusterStack
	return &runner.Outcome{
		Target: kinds.Target{Kind: v1alpha1.KindTFRCluster, Name: "dev", Stack: s},
		Stacks: []runner.StackResult{{Stack: s, Result: &engine.Result{Stack: s, Operation: engine.OpPreview, Steps: []engine.Step{
			{URN: urn(s, "pulumi:pulumi:Stack", "tfrs-"+s), Type: "pulumi:pulumi:Stack", Op: engine.StepSame},
			{URN: urn(s, "tfrs:cluster:Istio", "istio"), Type: "tfrs:cluster:Istio", Op: engine.StepSame},
			{URN: urn(s, "tfrs:cluster:Istio$kubernetes:core/v1:Namespace", "istio-system"), Type: "kubernetes:core/v1:Namespace", Op: engine.StepSame},
		}}}},
	}
}

// tenantGraph is a small hand-made graph, so the golden files do not move with the program.
func tenantGraph() *stacks.Graph {
	return &stacks.Graph{Nodes: []stacks.GraphNode{
		{ID: "namespace", Type: "tfrs:tenant:Namespace"},
		{ID: "postgresql", Type: "tfrs:tenant:PostgreSQL", DependsOn: []string{"namespace"}},
		{ID: "prometheus", Type: "tfrs:tenant:Prometheus", DependsOn: []string{"namespace"}},
		{ID: "shared-cache", Type: "tfrs:tenant:SharedCache", DependsOn: []string{"namespace"}},
		{ID: "tfrobot-front", Type: "tfrs:tenant:TFRobotFront", DependsOn: []string{"namespace"}},
	}}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run `go test ./stacks/diff/ -update` to create it")
	require.Equal(t, string(want), string(got), "%s differs; if the change is intended, rerun with -update", path)
}

func TestFromOutcome(t *testing.T) {
	r := FromOutcome(tenantPreview())
	require.Equal(t, engine.OpPreview, r.Operation)
	require.True(t, r.HasChanges())
	require.True(t, r.HasDataLoss())
	require.Equal(t, map[engine.StepOp]int{engine.StepSame: 7, engine.StepCreate: 3, engine.StepUpdate: 1, engine.StepReplace: 1, engine.StepDelete: 1}, r.Summary)
	require.Equal(t, map[engine.StepOp]int{engine.StepCreate: 3, engine.StepUpdate: 1, engine.StepReplace: 1, engine.StepDelete: 1}, r.Counts())

	var got []string
	for _, c := range r.Changes {
		got = append(got, string(c.Op)+" "+c.Component+" "+c.Type+" "+c.Name)
	}
	require.Equal(t, []string{
		"replace postgresql kubernetes:postgresql.cnpg.io/v1:Cluster acme-pg",
		"update prometheus kubernetes:apps/v1:Deployment prometheus",
		"delete shared-cache kubernetes:core/v1:PersistentVolumeClaim shared-cache",
		"create tfrobot-front kubernetes:apps/v1:Deployment tfrobot-front",
		"create tfrobot-front kubernetes:core/v1:Service tfrobot-front",
		"create tfrobot-front tfrs:tenant:TFRobotFront tfrobot-front",
	}, got, "changes sorted by component, type, name; no same steps")
	require.Len(t, r.DataLoss, 2)
	require.Equal(t, "acme-pg", r.DataLoss[0].Name)
	require.Equal(t, []string{"spec.bootstrap"}, r.DataLoss[0].ReplaceKeys)
	require.Equal(t, "shared-cache", r.DataLoss[1].Name)
	require.Equal(t, []string{"postgresql", "prometheus", "shared-cache", "tfrobot-front"}, r.Components())

	none := FromOutcome(clusterPreview())
	require.False(t, none.HasChanges())
	require.False(t, none.HasDataLoss())
	require.NotNil(t, none.Changes, "JSON must say [] rather than null")

	empty := FromOutcome(nil)
	require.False(t, empty.HasChanges())
}

func TestIsDataLoss(t *testing.T) {
	cases := []struct {
		op    engine.StepOp
		typ   string
		stack string
		want  bool
	}{
		{engine.StepDelete, TypePVC, tenantStack, true},
		{engine.StepReplace, TypeCNPGCluster, tenantStack, true},
		{engine.StepDelete, TypeMinIOTenant, "tenant.personal-chat._shared", true},
		{engine.StepReplace, TypeNamespace, tenantStack, true},
		{engine.StepDelete, TypeNamespace, "organization/tfrs/" + tenantStack, true},
		{engine.StepDelete, TypeNamespace, clusterStack, false}, // istio-system holds no tenant data
		{engine.StepUpdate, TypePVC, tenantStack, false},
		{engine.StepCreate, TypeCNPGCluster, tenantStack, false},
		{engine.StepDelete, "kubernetes:apps/v1:Deployment", tenantStack, false},
		{engine.StepDelete, TypePVC, "server.ns.bot", true},
	}
	for _, c := range cases {
		got := IsDataLoss(Change{Op: c.op, Type: c.typ, Stack: c.stack})
		require.Equal(t, c.want, got, "%s %s in %s", c.op, c.typ, c.stack)
	}
}

func TestComponentOf(t *testing.T) {
	q, name := ParseURN("urn:pulumi:s::tfrs::tfrs:server:APIWorker$tfrs:server:Workload$kubernetes:apps/v1:Deployment::bot::api")
	require.Equal(t, []string{"tfrs:server:APIWorker", "tfrs:server:Workload", "kubernetes:apps/v1:Deployment"}, q)
	require.Equal(t, "bot::api", name, "a name may hold ::")
	require.Equal(t, "api-worker", componentOf(q, name, map[string]string{"tfrs:server:APIWorker": "api-worker"}))
	require.Equal(t, "apiworker", componentOf(q, name, nil), "without the component's own step, the type stands in")
	q, name = ParseURN("urn:pulumi:s::tfrs::pulumi:providers:kubernetes::default")
	require.Equal(t, "", componentOf(q, name, nil))
	q, _ = ParseURN("not a urn")
	require.Nil(t, q)
}

func TestFormatsGolden(t *testing.T) {
	reports := []*Report{FromOutcome(clusterPreview()), FromOutcome(tenantPreview())}
	graphs := map[string]*stacks.Graph{tenantStack: tenantGraph()}

	var text, js, markdown bytes.Buffer
	require.NoError(t, WriteText(&text, reports...))
	require.NoError(t, WriteJSON(&js, reports...))
	require.NoError(t, WriteMarkdown(&markdown, graphs, reports...))
	golden(t, "preview.txt", text.Bytes())
	golden(t, "preview.json", js.Bytes())
	golden(t, "preview.md", markdown.Bytes())

	// Data loss is listed before anything else in every format.
	require.Regexp(t, `^WARNING: DATA LOSS`, text.String())
	require.Regexp(t, "^"+MarkdownMarker+"\n## tfrs preview\n\n> \\[!CAUTION\\]", markdown.String())
	var doc Document
	require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
	require.Equal(t, SchemaVersion, doc.SchemaVersion)
	require.True(t, doc.HasDataLoss)
	require.Len(t, doc.DataLoss, 2)
	require.Len(t, doc.Reports, 2)
	require.Contains(t, markdown.String(), "class shared_cache changed", "changed components are highlighted in the graph")
	require.NotContains(t, markdown.String(), "class namespace changed", "unchanged components are not")
}

func TestFormatsNoChanges(t *testing.T) {
	r := FromOutcome(clusterPreview())
	var text, js, markdown bytes.Buffer
	require.NoError(t, WriteText(&text, r))
	require.NoError(t, WriteJSON(&js, r))
	require.NoError(t, WriteMarkdown(&markdown, nil, r))
	golden(t, "nochange.txt", text.Bytes())
	golden(t, "nochange.json", js.Bytes())
	golden(t, "nochange.md", markdown.Bytes())
	require.NotContains(t, text.String(), "DATA LOSS")
	require.NotContains(t, markdown.String(), "CAUTION")
}

// An applied operation reads in the past tense; a skipped or failed object is reported.
func TestAppliedAndSkipped(t *testing.T) {
	o := tenantPreview()
	o.Stacks[0].Result.Operation = engine.OpUp
	r := FromOutcome(o)
	var text bytes.Buffer
	require.NoError(t, WriteText(&text, r))
	require.Contains(t, text.String(), "3 created, 1 updated, 1 replaced, 1 deleted, 7 unchanged")

	skipped := &Report{Target: kinds.Target{Kind: v1alpha1.KindTFRServer, Namespace: "ns", Name: "bot", Stack: "server.ns.bot"},
		Operation: engine.OpPreview, Summary: map[engine.StepOp]int{}, Skipped: "waits for TFRTenant acme, created by this run"}
	require.True(t, skipped.HasChanges(), "pending work is a change for --detailed-exitcode")
	var md bytes.Buffer
	require.NoError(t, WriteMarkdown(&md, nil, skipped))
	require.Contains(t, md.String(), "Not previewed: waits for TFRTenant acme")
}

// Under deletionPolicy Retain a destroy keeps the data objects: their deletes are marked
// retained and leave the data-loss list; a replacement stays flagged.
func TestMarkRetained(t *testing.T) {
	r := FromOutcome(tenantPreview())
	r.MarkRetained()
	require.Len(t, r.DataLoss, 1)
	require.Equal(t, engine.StepReplace, r.DataLoss[0].Op)
	var pvc Change
	for _, c := range r.Changes {
		if c.Type == TypePVC {
			pvc = c
		}
	}
	require.True(t, pvc.Retained)
	require.False(t, pvc.DataLoss)
	var text bytes.Buffer
	require.NoError(t, WriteText(&text, r))
	require.Contains(t, text.String(), "shared-cache (retained in the cluster)")
}

func TestComponentStates(t *testing.T) {
	o := tenantPreview()
	st := ComponentStates(o)
	require.Equal(t, map[string]string{
		"namespace":     StateUpToDate,
		"postgresql":    "pending: 1 replace",
		"shared-cache":  "pending: 1 delete",
		"prometheus":    "pending: 1 update",
		"tfrobot-front": StateNotCreated,
	}, st)
	o.Stacks[0].Result.Steps[6].Failed = true // the postgresql component
	require.Equal(t, "failed", ComponentStates(o)["postgresql"])
	require.Empty(t, ComponentStates(nil))
}

// A cluster's support warnings travel from the outcome into every format: text, Markdown and
// JSON.
func TestSupportWarnings(t *testing.T) {
	out := &runner.Outcome{Support: []stacks.SupportFinding{{Project: "cert-manager", Reason: stacks.SupportKubeTooNew,
		Message: "cert-manager v1.21.2 supports Kubernetes 1.33 to 1.36, and the cluster runs 1.37"}}}
	rep := FromOutcome(out)
	require.Equal(t, []string{out.Support[0].Message}, rep.Warnings)
	var text, md, js bytes.Buffer
	require.NoError(t, WriteText(&text, rep))
	require.NoError(t, WriteMarkdown(&md, nil, rep))
	require.NoError(t, WriteJSON(&js, rep))
	require.Contains(t, text.String(), "  warning: cert-manager v1.21.2 supports Kubernetes 1.33 to 1.36")
	require.Contains(t, md.String(), "> [!CAUTION]\n> Outside upstream support: cert-manager v1.21.2")
	require.Contains(t, js.String(), `"warnings": [`)
}
