package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// runCaptured runs the CLI in-process and returns its exit code and stdout.
func runCaptured(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var code int
	out := capture(t, &os.Stdout, func() { code = run(args) })
	return code, out
}

// capture returns what fn writes to *f (os.Stdout or os.Stderr).
func capture(t *testing.T, f **os.File, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	old := *f
	*f = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	fn()
	*f = old
	w.Close()
	return <-done
}

func TestGraphJSONFromExamples(t *testing.T) {
	code, out := runCaptured(t, "graph", "-f", filepath.Join("..", "..", "examples", "cluster.yaml"), "-o", "json")
	require.Equal(t, 0, code)
	var g struct {
		Nodes []struct{ ID, Type string }
		Edges []struct{ From, To string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &g))
	require.Len(t, g.Nodes, 12)
	require.Contains(t, g.Edges, struct{ From, To string }{"istio", "istio-ingress"})
	require.Contains(t, g.Edges, struct{ From, To string }{"envoyfilter-cookie", "cluster-virtualservice"})

	code, out = runCaptured(t, "graph", "-f", filepath.Join("..", "..", "examples", "tenant-enterprise.yaml"), "-o", "json")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &g))
	require.Contains(t, g.Edges, struct{ From, To string }{"postgresql", "timescaledb"})
	require.Contains(t, g.Edges, struct{ From, To string }{"jaeger", "otel-collector"})
}

func TestGraphRejectsBadInput(t *testing.T) {
	code, _ := runCaptured(t, "graph")
	require.Equal(t, 2, code, "missing -f is a usage error")
	code, _ = runCaptured(t, "graph", "-f", filepath.Join("..", "..", "examples", "cluster.yaml"), "-o", "png")
	require.Equal(t, 2, code)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: tfrs.io/v1alpha1\nkind: TFRCluster\nmetadata: {name: x}\nspec: {domain: \"Not A Domain\"}\n"), 0o600))
	code, _ = runCaptured(t, "graph", "-f", bad)
	require.Equal(t, 1, code, "an invalid CR is refused before any program runs")
}
