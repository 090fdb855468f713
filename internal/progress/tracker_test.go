package progress

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// recorded reads testdata/cluster-up.jsonl: the engine events of a real `up` of the stand-in
// cluster over the HTTP API (recorded by cmd/tfrs TestWatchFollowsARealOperation).
func recorded(t *testing.T) []engine.Event {
	t.Helper()
	f, err := os.Open("testdata/cluster-up.jsonl")
	require.NoError(t, err)
	defer f.Close()
	var evs []engine.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e engine.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		evs = append(evs, e)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, evs)
	return evs
}

func TestTrackerOnARecordedUp(t *testing.T) {
	tr := NewTracker()
	lastTotal := 0
	for _, e := range recorded(t) {
		tr.Observe(e)
		sn := tr.Snapshot()
		require.LessOrEqual(t, sn.Done, sn.Total, "after %s %s", e.Kind, e.URN)
		require.GreaterOrEqual(t, sn.Total, lastTotal, "the total never shrinks")
		lastTotal = sn.Total
	}
	sn := tr.Snapshot()
	require.Equal(t, 45, sn.Total)
	require.Equal(t, 45, sn.Done, "remote components (Charts, ConfigFiles) count as done at the summary")
	require.Equal(t, "cluster.e2e", sn.Stack)
	require.Equal(t, tr.Complete(), sn)
	st := tr.Stacks()[0]
	require.Equal(t, "create=42", st.Summary)
	var labels []string
	for _, c := range st.Components {
		labels = append(labels, c.Label)
		require.True(t, c.Complete(), c.Label)
	}
	require.Equal(t, []string{StackLabel, "CertManager cert-manager", "Istio istio", "IstioIngress istio-ingress", "Gateway gateway",
		"EnvoyFilterCookie envoyfilter-cookie", "EnvoyFilterLuaRouting envoyfilter-lua-routing", "ClusterVirtualService cluster-virtualservice",
		"IstioTelemetry istio-telemetry", "CNPGOperator cnpg-operator", "MinIOOperator minio-operator", "RabbitMQOperator rabbitmq-operator"}, labels)
	// A Chart's children belong to the component above the Chart (found through the parents).
	require.Equal(t, 6, st.comps["Istio istio"].Total, "Istio, its Namespace, two Charts, the istiod ConfigMap and Deployment")
}

// An update of a stack with state: the state's count is the total from the start; a failed
// step counts as finished (not pending) and is reported.
func TestTrackerExpectedTotalAndFailure(t *testing.T) {
	const stack = "tenant.ns.acme"
	urn := func(chain, name string) string { return "urn:pulumi:" + stack + "::tfrs::" + chain + "::" + name }
	pg := urn("tfrs:tenant:PostgreSQL", "acme-pg")
	cl := urn("tfrs:tenant:PostgreSQL$kubernetes:postgresql.cnpg.io/v1:Cluster", "acme-pg-cluster")
	ev := func(kind engine.EventKind, u, parent string, op engine.StepOp) engine.Event {
		return engine.Event{Stack: stack, Operation: engine.OpUp, Kind: kind, URN: u, Parent: parent, Op: op, Message: string(op) + " " + u}
	}
	tr := NewTracker()
	tr.Observe(engine.Event{Stack: stack, Operation: engine.OpUp, Kind: engine.EventStart, Resources: 10})
	require.Equal(t, Snapshot{Total: 10, Stack: stack}, tr.Snapshot())
	tr.Observe(ev(engine.EventStepStart, pg, "", engine.StepSame))
	tr.Observe(ev(engine.EventStepDone, pg, "", engine.StepSame))
	tr.Observe(ev(engine.EventStepStart, cl, pg, engine.StepUpdate))
	require.Equal(t, Snapshot{Done: 1, Total: 10, Stack: stack, Component: "PostgreSQL acme-pg"}, tr.Snapshot())
	tr.Observe(ev(engine.EventStepFailed, cl, pg, engine.StepUpdate))
	require.Equal(t, Snapshot{Done: 2, Total: 10, Failed: 1, Stack: stack, Component: "PostgreSQL acme-pg"}, tr.Snapshot())
	c := tr.Stacks()[0].Components[0]
	require.Equal(t, 1, c.Failed)
	require.True(t, c.Complete())

	// A child whose parent is unknown (an older event stream) is labelled by its type alone.
	tr2 := NewTracker()
	tr2.Observe(ev(engine.EventStepStart, cl, "", engine.StepCreate))
	require.Equal(t, "PostgreSQL", tr2.Snapshot().Component)
	// The engine's own resources and the providers group with the stack.
	tr2.Observe(ev(engine.EventStepStart, urn("tfrs:engine:Credential", "pg-password"), "", engine.StepCreate))
	require.Equal(t, StackLabel, tr2.Snapshot().Component)
}
