package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/stacks"
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
	require.Len(t, g.Nodes, 13)
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
	require.Equal(t, 1, code, "missing -f is a usage error")
	code, _ = runCaptured(t, "graph", "-f", filepath.Join("..", "..", "examples", "cluster.yaml"), "-o", "png")
	require.Equal(t, 1, code)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: tfrs.io/v1alpha1\nkind: TFRCluster\nmetadata: {name: x}\nspec: {domain: \"Not A Domain\"}\n"), 0o600))
	code, _ = runCaptured(t, "graph", "-f", bad)
	require.Equal(t, 1, code, "an invalid CR is refused before any program runs")
}

// checkDOT is a small DOT reader: it walks the text as Graphviz's lexer does (quoted strings
// with backslash escapes, braces outside them) and returns each top-level graph's header and
// the labels it holds, unescaped. It fails on an unterminated string, unbalanced braces or
// anything but `digraph ID {…}` at the top level.
func checkDOT(t *testing.T, dot string) (headers []string, labels [][]string) {
	t.Helper()
	depth, start := 0, 0
	var cur []string
	for i := 0; i < len(dot); i++ {
		switch c := dot[i]; c {
		case '"':
			j := i + 1
			var b strings.Builder
			for ; j < len(dot) && dot[j] != '"'; j++ {
				if dot[j] == '\\' && j+1 < len(dot) {
					j++
					if dot[j] == 'n' {
						b.WriteByte('\n') // DOT's line break
						continue
					}
				}
				require.NotEqual(t, byte('\n'), dot[j], "a raw newline inside a string at %d", j)
				b.WriteByte(dot[j])
			}
			require.Less(t, j, len(dot), "unterminated string at %d", i)
			if depth == 1 && strings.HasSuffix(strings.TrimSpace(dot[start:i]), "label=") {
				cur = append(cur, b.String())
			}
			i = j
		case '{':
			if depth == 0 {
				headers = append(headers, strings.TrimSpace(dot[start:i]))
				cur = nil
			}
			depth++
			start = i + 1
		case '}':
			depth--
			require.GreaterOrEqual(t, depth, 0, "unbalanced } at %d", i)
			if depth == 0 {
				labels = append(labels, cur)
			}
			start = i + 1
		case ';', '[', ']', ',':
			start = i + 1
		}
	}
	require.Zero(t, depth, "unbalanced braces")
	return headers, labels
}

// Two objects in DOT are two labelled digraphs that parse, with node labels broken into lines
// by DOT's \n (one backslash: Graphviz prints a doubled one literally).
func TestGraphDOTPastes(t *testing.T) {
	code, out := runCaptured(t, "graph", "-f", exampleCluster, "-f", exampleTenant, "-o", "dot")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, `\\n`)
	headers, labels := checkDOT(t, out)
	require.Equal(t, []string{`digraph "cluster.dev"`, `digraph "tenant.tfrs-system.acme"`}, headers)
	require.Equal(t, "TFRCluster dev (stack cluster.dev)", labels[0][0], "the graph's title")
	require.Contains(t, labels[0], "istio\ntfrs:cluster:Istio")
	require.Equal(t, "TFRTenant tfrs-system/acme (stack tenant.tfrs-system.acme)", labels[1][0])
	require.Contains(t, labels[1], "postgresql\ntfrs:tenant:PostgreSQL")
}

// --fenced gives one ```mermaid block per object, each a flowchart titled by front matter.
func TestGraphMermaidFenced(t *testing.T) {
	code, out := runCaptured(t, "graph", "-f", exampleTenant, "-f", exampleCluster, "--fenced")
	require.Equal(t, 0, code, out)
	blocks := strings.Split(strings.TrimSuffix(out, "```\n"), "```\n\n")
	require.Len(t, blocks, 2, out)
	for i, title := range []string{"TFRCluster dev (stack cluster.dev)", "TFRTenant tfrs-system/acme (stack tenant.tfrs-system.acme)"} {
		require.True(t, strings.HasPrefix(blocks[i], "```mermaid\n---\ntitle: \""+title+"\"\n---\ngraph TD\n"), blocks[i])
		require.NotContains(t, strings.TrimPrefix(blocks[i], "```mermaid\n"), "```", "one fence per graph")
	}
	require.Contains(t, blocks[1], "namespace --> postgresql")

	code, plain := runCaptured(t, "graph", "-f", exampleCluster)
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(plain, "---\ntitle: \"TFRCluster dev (stack cluster.dev)\"\n---\ngraph TD\n"), plain)
	require.NotContains(t, plain, "```", "unfenced without --fenced")
}

// Several objects in JSON are one document, an array in run order, each graph naming its
// object and stack; one object is the graph document itself.
func TestGraphJSONOneDocument(t *testing.T) {
	code, out := runCaptured(t, "graph", "-f", exampleTenant, "-f", exampleCluster, "-o", "json")
	require.Equal(t, 0, code, out)
	require.True(t, json.Valid([]byte(out)), out)
	var docs []graphJSON
	require.NoError(t, json.Unmarshal([]byte(out), &docs))
	require.Len(t, docs, 2)
	require.Equal(t, graphJSON{Stack: "cluster.dev", Kind: "TFRCluster", Name: "dev"}, graphJSON{Stack: docs[0].Stack, Kind: docs[0].Kind, Name: docs[0].Name})
	require.Equal(t, "tfrs-system", docs[1].Namespace)
	require.Len(t, docs[0].Nodes, 13)
	require.Contains(t, docs[1].Edges, stacks.GraphEdge{From: "postgresql", To: "timescaledb"})

	code, out = runCaptured(t, "graph", "-f", exampleCluster, "-o", "json")
	require.Equal(t, 0, code)
	var one graphJSON
	require.NoError(t, json.Unmarshal([]byte(out), &one))
	require.Equal(t, "cluster.dev", one.Stack)
}
