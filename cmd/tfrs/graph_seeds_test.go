package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

type edge struct{ From, To string }

// graphEdges runs `tfrs graph -o json` on an example and returns its edges.
func graphEdges(t *testing.T, example string) []edge {
	t.Helper()
	code, out := runCaptured(t, "graph", "-f", filepath.Join("..", "..", "examples", example), "-o", "json")
	require.Equal(t, 0, code, out)
	var g struct{ Edges []edge }
	require.NoError(t, json.Unmarshal([]byte(out), &g))
	return g.Edges
}

// The graph each level's program registers is the seeds' deployment graph ("Deployment
// Dependency Graph"), with the seeds' node names mapped to component ids.
func TestGraphJSONEqualsSeeds(t *testing.T) {
	require.ElementsMatch(t, []edge{
		{"cert-manager", "istio"},
		{"istio", "istio-ingress"},
		{"istio-ingress", "gateway"},
		{"istio", "envoyfilter-cookie"},
		{"istio", "envoyfilter-lua-routing"},
		{"gateway", "cluster-virtualservice"},
		{"envoyfilter-cookie", "cluster-virtualservice"},
		{"istio", "istio-telemetry"},
	}, graphEdges(t, "cluster.yaml"))

	seeds := []edge{
		{"namespace", "postgresql"}, {"namespace", "redis"}, {"namespace", "minio"},
		{"namespace", "jaeger"}, {"namespace", "prometheus"}, {"namespace", "vector"},
		{"namespace", "shared-cache"}, {"namespace", "tfrobot-front"}, {"namespace", "tfrs-utils"},
		{"postgresql", "timescaledb"}, {"jaeger", "otel-collector"},
		{"rabbitmq-operator-ready", "rabbitmq"}, {"namespace", "grafana"},
	}
	// What the seeds leave implicit: every object of a tenant lives in its namespace, so
	// timescaledb, otel-collector and rabbitmq wait for it too (see stacks/tenant.go).
	implicit := []edge{{"namespace", "timescaledb"}, {"namespace", "otel-collector"}, {"namespace", "rabbitmq"}}
	for _, example := range []string{"tenant-enterprise.yaml", "tenant-personal.yaml"} {
		require.ElementsMatch(t, append(append([]edge{}, seeds...), implicit...), graphEdges(t, example), example)
	}

	// The seeds draw no server graph; the program's: Secret, config and Confz before the init
	// Jobs, and all of them before the two workers.
	var server []edge
	for _, from := range []string{"secret", "config", "confz"} {
		for _, to := range []string{"db-init", "minio-init", "grafana-sa", "api-worker", "robot-worker"} {
			server = append(server, edge{from, to})
		}
	}
	for _, from := range []string{"db-init", "minio-init", "grafana-sa"} {
		for _, to := range []string{"api-worker", "robot-worker"} {
			server = append(server, edge{from, to})
		}
	}
	require.ElementsMatch(t, server, graphEdges(t, "server.yaml"))
}
