package stacks

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// The renderings of a Graph that `tfrs graph` prints and preview comments embed. An edge
// From → To means To waits for From, the direction the seeds draw.

// GraphDocument is the documented JSON shape of a graph:
// {"nodes":[{"id":"cert-manager","type":"tfrs:cluster:CertManager"}…],"edges":[{"from":"cert-manager","to":"istio"}…]}
type GraphDocument struct {
	Nodes   []GraphDocumentNode `json:"nodes"`
	Edges   []GraphEdge         `json:"edges"`
	Skipped []GraphSkip         `json:"skipped,omitempty"`
}

// GraphDocumentNode is a node of a GraphDocument.
type GraphDocumentNode struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status,omitempty"`
}

// Document is the graph's JSON document; status (optional) adds each node's live state.
func (g *Graph) Document(status map[string]string) GraphDocument {
	out := GraphDocument{Nodes: []GraphDocumentNode{}, Edges: g.Edges(), Skipped: g.Skipped}
	if out.Edges == nil {
		out.Edges = []GraphEdge{}
	}
	for _, n := range g.Nodes {
		out.Nodes = append(out.Nodes, GraphDocumentNode{ID: n.ID, Type: n.Type, Status: status[n.ID]})
	}
	return out
}

// WriteJSON writes the graph's Document, indented.
func (g *Graph) WriteJSON(w io.Writer, status map[string]string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(g.Document(status))
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

// WriteDOT writes a Graphviz digraph named name ("tfrs" when empty) with the title label
// (none when empty). Node labels are the id, the type and the status on separate lines.
func (g *Graph) WriteDOT(w io.Writer, name, label string, status map[string]string) error {
	if name == "" {
		name = "tfrs"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(name))
	if label != "" {
		fmt.Fprintf(&b, "  label=%s;\n  labelloc=t;\n", dotQuote(label))
	}
	b.WriteString("  rankdir=TB;\n  node [shape=box];\n")
	for _, n := range g.Nodes {
		lines := []string{n.ID, n.Type}
		if s := status[n.ID]; s != "" {
			lines = append(lines, s)
		}
		fmt.Fprintf(&b, "  %s [label=%s];\n", dotQuote(n.ID), dotQuote(strings.Join(lines, "\n")))
	}
	for _, e := range g.Edges() {
		fmt.Fprintf(&b, "  %s -> %s;\n", dotQuote(e.From), dotQuote(e.To))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dotQuote is s as a DOT quoted string: quotes and backslashes escaped, a newline as DOT's
// \n line break (Go's %q would double the backslash, which Graphviz prints literally).
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// mermaidID makes an id Mermaid accepts as a node name (it dislikes "-" in some positions).
func mermaidID(id string) string { return strings.ReplaceAll(id, "-", "_") }
