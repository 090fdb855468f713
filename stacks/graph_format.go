package stacks

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// The renderings of a Graph that `tfrs graph` prints and preview comments embed. An edge
// From → To means To waits for From, the direction the seeds draw.

// graphJSON is the documented JSON shape:
// {"nodes":[{"id":"cert-manager","type":"tfrs:cluster:CertManager"}…],"edges":[{"from":"cert-manager","to":"istio"}…]}
type graphJSON struct {
	Nodes   []graphJSONNode `json:"nodes"`
	Edges   []GraphEdge     `json:"edges"`
	Skipped []GraphSkip     `json:"skipped,omitempty"`
}

type graphJSONNode struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status,omitempty"`
}

// WriteJSON writes the graph as JSON; status (optional) adds each node's live state.
func (g *Graph) WriteJSON(w io.Writer, status map[string]string) error {
	out := graphJSON{Nodes: []graphJSONNode{}, Edges: g.Edges(), Skipped: g.Skipped}
	if out.Edges == nil {
		out.Edges = []GraphEdge{}
	}
	for _, n := range g.Nodes {
		out.Nodes = append(out.Nodes, graphJSONNode{ID: n.ID, Type: n.Type, Status: status[n.ID]})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteMermaid writes a Mermaid flowchart. Nodes in highlight (e.g. changed by a preview) get
// the "changed" class; status (optional) is shown under each node's id.
func (g *Graph) WriteMermaid(w io.Writer, highlight map[string]bool, status map[string]string) error {
	var b strings.Builder
	b.WriteString("graph TD\n")
	for _, n := range g.Nodes {
		label := n.ID
		if s := status[n.ID]; s != "" {
			label += "<br/>" + s
		}
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", mermaidID(n.ID), label)
	}
	for _, e := range g.Edges() {
		fmt.Fprintf(&b, "  %s --> %s\n", mermaidID(e.From), mermaidID(e.To))
	}
	if len(highlight) > 0 {
		b.WriteString("  classDef changed fill:#fff3b0,stroke:#d4a000,stroke-width:2px\n")
		for _, n := range g.Nodes {
			if highlight[n.ID] {
				fmt.Fprintf(&b, "  class %s changed\n", mermaidID(n.ID))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDOT writes a Graphviz digraph.
func (g *Graph) WriteDOT(w io.Writer, status map[string]string) error {
	var b strings.Builder
	b.WriteString("digraph tfrs {\n  rankdir=TB;\n  node [shape=box];\n")
	for _, n := range g.Nodes {
		label := n.ID + `\n` + n.Type
		if s := status[n.ID]; s != "" {
			label += `\n` + s
		}
		fmt.Fprintf(&b, "  %q [label=%q];\n", n.ID, label)
	}
	for _, e := range g.Edges() {
		fmt.Fprintf(&b, "  %q -> %q;\n", e.From, e.To)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// mermaidID makes an id Mermaid accepts as a node name (it dislikes "-" in some positions).
func mermaidID(id string) string { return strings.ReplaceAll(id, "-", "_") }
