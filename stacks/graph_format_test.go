package stacks

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGraphRenderingsFromTheProgram(t *testing.T) {
	g, err := ClusterGraph(newTestCluster(nil))
	require.NoError(t, err)

	var js bytes.Buffer
	require.NoError(t, g.WriteJSON(&js, map[string]string{ClusterIstio: "ready"}))
	var parsed struct {
		Nodes []struct{ ID, Type, Status string }
		Edges []struct{ From, To string }
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &parsed))
	require.Len(t, parsed.Nodes, 13)
	require.Contains(t, parsed.Edges, struct{ From, To string }{ClusterCertManager, ClusterIstio})
	require.Contains(t, js.String(), `"type": "tfrs:cluster:CertManager"`)
	require.Contains(t, js.String(), `"status": "ready"`)

	var mm bytes.Buffer
	require.NoError(t, g.WriteMermaid(&mm, map[string]bool{ClusterGateway: true}, nil))
	require.True(t, strings.HasPrefix(mm.String(), "graph TD\n"))
	require.Contains(t, mm.String(), "cert_manager --> istio")
	require.Contains(t, mm.String(), "class gateway changed")

	var dot bytes.Buffer
	require.NoError(t, g.WriteDOT(&dot, "cluster.dev", `TFRCluster "dev"`, map[string]string{ClusterIstio: "ready"}))
	require.Contains(t, dot.String(), `"istio" -> "istio-telemetry";`)
	require.True(t, strings.HasPrefix(dot.String(), "digraph \"cluster.dev\" {\n  label=\"TFRCluster \\\"dev\\\"\";\n"), dot.String())
	require.Contains(t, dot.String(), `"istio" [label="istio\ntfrs:cluster:Istio\nready"];`, "one backslash: DOT's line break")
}
