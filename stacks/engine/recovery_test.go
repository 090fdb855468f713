package engine

import (
	"encoding/json"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const provURN = "urn:pulumi:s::tfrs::pulumi:providers:kubernetes::k8s"

func testEngine() *Engine {
	return &Engine{opts: &resolved{Options: Options{DataBearing: DefaultDataBearing}}, red: newRedactor(nil)}
}

func pendingCreate(urn, typ string, md map[string]any) map[string]any {
	return map[string]any{"type": "creating", "resource": map[string]any{
		"urn": urn, "type": typ, "custom": true, "provider": provURN + "::pid",
		"inputs": map[string]any{"apiVersion": "v1", "kind": "X", "metadata": md},
	}}
}

func deployment(t *testing.T, resources []map[string]any, pending ...map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"manifest":           map[string]any{"time": "t", "magic": "m"},
		"secrets_providers":  map[string]any{"type": "passphrase"},
		"resources":          resources,
		"pending_operations": pending,
	})
	require.NoError(t, err)
	return b
}

var baseResources = []map[string]any{
	{"urn": "urn:pulumi:s::tfrs::pulumi:pulumi:Stack::tfrs-s", "type": "pulumi:pulumi:Stack", "custom": false},
	{"urn": provURN, "type": "pulumi:providers:kubernetes", "custom": true, "id": "pid", "inputs": map[string]any{"namespace": "team"}},
}

func TestKubernetesID(t *testing.T) {
	provs := map[string]string{provURN + "::pid": "team"}
	r := func(typ string, md map[string]any) resourceDoc {
		return resourceDoc{Type: typ, Custom: true, Provider: provURN + "::pid", Inputs: map[string]any{"metadata": md}}
	}
	assert.Equal(t, "ns/cm", kubernetesID(r("kubernetes:core/v1:ConfigMap", map[string]any{"name": "cm", "namespace": "ns"}), provs))
	assert.Equal(t, "team/cm", kubernetesID(r("kubernetes:core/v1:ConfigMap", map[string]any{"name": "cm"}), provs), "provider namespace")
	assert.Equal(t, "default/cm", kubernetesID(r("kubernetes:core/v1:ConfigMap", map[string]any{"name": "cm"}), nil))
	assert.Equal(t, "ns1", kubernetesID(r("kubernetes:core/v1:Namespace", map[string]any{"name": "ns1"}), provs))
	assert.Equal(t, "ci", kubernetesID(r("kubernetes:cert-manager.io/v1:ClusterIssuer", map[string]any{"name": "ci"}), provs))
	assert.Equal(t, "team/pg", kubernetesID(r("kubernetes:postgresql.cnpg.io/v1:Cluster", map[string]any{"name": "pg"}), provs), "CNPG Cluster is namespaced")
	assert.Equal(t, "", kubernetesID(r("kubernetes:core/v1:ConfigMap", map[string]any{}), provs))
}

func TestEditPendingAdoptsPlainObjectsAndDropsOthers(t *testing.T) {
	e := testEngine()
	cm := "urn:pulumi:s::tfrs::kubernetes:core/v1:ConfigMap::cm"
	prov := "urn:pulumi:s::tfrs::pulumi:providers:kubernetes::other"
	upd := map[string]any{"type": "updating", "resource": map[string]any{"urn": "urn:x", "type": "kubernetes:core/v1:Secret"}}
	raw := deployment(t, baseResources,
		pendingCreate(cm, "kubernetes:core/v1:ConfigMap", map[string]any{"name": "cm-abc", "namespace": "ns"}),
		map[string]any{"type": "creating", "resource": map[string]any{"urn": prov, "type": "pulumi:providers:kubernetes", "custom": true}},
		upd)
	out, adopted, forgotten, err := e.editPending(raw, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{cm}, adopted)
	assert.Equal(t, []string{prov}, forgotten)

	var doc stateDoc
	require.NoError(t, json.Unmarshal(out, &doc))
	require.Len(t, doc.Resources, 3)
	last := doc.Resources[2]
	assert.Equal(t, cm, last.URN)
	assert.Equal(t, "ns/cm-abc", last.ID)
	assert.Equal(t, "X", last.Outputs["kind"], "outputs seeded from inputs")
	require.Len(t, doc.Pending, 1, "pending update stays for the refresh")
	assert.Equal(t, "updating", doc.Pending[0].Type)

	var generic map[string]any
	require.NoError(t, json.Unmarshal(out, &generic))
	assert.Contains(t, generic, "secrets_providers", "unknown fields survive the edit")
}

func TestEditPendingReplacementMarksOldForDeletion(t *testing.T) {
	e := testEngine()
	dep := "urn:pulumi:s::tfrs::kubernetes:apps/v1:Deployment::web"
	res := append([]map[string]any{}, baseResources...)
	res = append(res, map[string]any{"urn": dep, "type": "kubernetes:apps/v1:Deployment", "custom": true, "id": "ns/web-old"})
	out, adopted, _, err := e.editPending(deployment(t, res,
		pendingCreate(dep, "kubernetes:apps/v1:Deployment", map[string]any{"name": "web-new", "namespace": "ns"})), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{dep}, adopted)
	var generic struct {
		Resources []map[string]any `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(out, &generic))
	require.Len(t, generic.Resources, 4)
	assert.Equal(t, true, generic.Resources[2]["delete"])
	assert.Equal(t, "ns/web-new", generic.Resources[3]["id"])

	// The same object already in state: the pending create is just dropped.
	_, adopted, forgotten, err := e.editPending(deployment(t, res,
		pendingCreate(dep, "kubernetes:apps/v1:Deployment", map[string]any{"name": "web-old", "namespace": "ns"})), nil)
	require.NoError(t, err)
	assert.Empty(t, adopted)
	assert.Equal(t, []string{dep}, forgotten)
}

func TestEditPendingDataBearingFollowsDecisions(t *testing.T) {
	e := testEngine()
	pvc := "urn:pulumi:s::tfrs::kubernetes:core/v1:PersistentVolumeClaim::data"
	raw := deployment(t, baseResources, pendingCreate(pvc, "kubernetes:core/v1:PersistentVolumeClaim", map[string]any{"name": "data", "namespace": "ns"}))

	_, adopted, forgotten, err := e.editPending(raw, nil)
	require.NoError(t, err)
	assert.Empty(t, adopted, "never adopted without a decision")
	assert.Equal(t, []string{pvc}, forgotten, "editPending is only reached after recover checked decisions")

	_, adopted, _, err = e.editPending(raw, map[string]Decision{pvc: DecisionAdopt})
	require.NoError(t, err)
	assert.Equal(t, []string{pvc}, adopted)
}

func TestDescribePendingFlagsDataBearing(t *testing.T) {
	e := testEngine()
	for typ, want := range map[string]bool{
		"kubernetes:postgresql.cnpg.io/v1:Cluster": true,
		"kubernetes:minio.min.io/v2:Tenant":        true,
		"kubernetes:core/v1:PersistentVolumeClaim": true,
		"kubernetes:core/v1:ConfigMap":             false,
		"kubernetes:apps/v1:StatefulSet":           false,
	} {
		p := e.describePending(resourceDoc{URN: "u", Type: typ, Custom: true}, "creating", nil)
		assert.Equal(t, want, p.DataBearing, typ)
	}
}

func TestPlainString(t *testing.T) {
	v, ok := plainString(map[string]any{secretSig: "1b47061264138c4ac30d75fd1eb44270", "plaintext": `"s3cr3t"`})
	assert.True(t, ok)
	assert.Equal(t, "s3cr3t", v)
	_, ok = plainString(map[string]any{secretSig: "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:abc"})
	assert.False(t, ok)
	v, ok = plainString("plain")
	assert.True(t, ok)
	assert.Equal(t, "plain", v)
}

// TestAbortedCreates: a create the cancel cut off in flight is kept for settling (secrets
// dropped: the event stream only has them blinded); one the server refused is not.
func TestAbortedCreates(t *testing.T) {
	c := newCollector(OpUp, "s", nil, newRedactor(nil))
	failed := func(urn, typ string, inputs map[string]any) {
		c.handle(apitype.EngineEvent{ResOpFailedEvent: &apitype.ResOpFailedEvent{Metadata: apitype.StepEventMetadata{
			Op: "create", URN: urn, Type: typ,
			New: &apitype.StepEventStateMetadata{URN: urn, Type: typ, Custom: true, Parent: "urn:parent", Provider: provURN + "::pid", Inputs: inputs},
		}}})
	}
	diag := func(urn, msg string) {
		c.handle(apitype.EngineEvent{DiagnosticEvent: &apitype.DiagnosticEvent{URN: urn, Severity: "error", Message: msg}})
	}
	secret := map[string]any{secretSig: "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "[secret]"}
	md := map[string]any{"name": "app-1234", "namespace": "ns"}
	failed("urn:s1", "kubernetes:core/v1:Secret", map[string]any{"kind": "Secret", "metadata": md, "stringData": secret, "list": []any{secret, "x"}})
	diag("urn:s1", `resource "urn:s1" was not successfully created by the Kubernetes API server: unexpected error when reading response body. Please retry. Original error: context canceled`)
	failed("urn:c1", "kubernetes:core/v1:ConfigMap", map[string]any{"kind": "ConfigMap", "metadata": md})
	diag("urn:c1", `resource "urn:c1" was not successfully created by the Kubernetes API server: configmaps "app-1234" already exists`)
	failed("urn:chart", "kubernetes:helm.sh/v3:Release", map[string]any{"name": "r"})
	diag("urn:chart", "context canceled")

	got := c.abortedCreates()
	require.Len(t, got, 1, "only the create cut off in flight")
	assert.Equal(t, map[string]any{
		"urn": "urn:s1", "type": "kubernetes:core/v1:Secret", "custom": true, "parent": "urn:parent", "provider": provURN + "::pid",
		"inputs": map[string]any{"kind": "Secret", "metadata": md, "list": []any{"x"}},
	}, got[0])

	// Settling turns it into a pending create adopted with the ID the provider gives it.
	dep, decisions, err := withAborted(deployment(t, nil), got, nil)
	require.NoError(t, err)
	_, adopted, forgotten, err := testEngine().editPending(dep, decisions)
	require.NoError(t, err)
	assert.Equal(t, []string{"urn:s1"}, adopted)
	assert.Empty(t, forgotten)

	// A state with pending operations of its own is left to the next up's recovery.
	_, _, err = withAborted(deployment(t, nil, pendingCreate("urn:p", "kubernetes:core/v1:ConfigMap", md)), got, nil)
	assert.ErrorIs(t, err, errPendingLeft)
}
