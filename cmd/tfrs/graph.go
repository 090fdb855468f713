package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// graphFlags are `tfrs graph`'s flags.
type graphFlags struct {
	inputs inputFlags
	format string
	fenced bool
	status bool
	stack  stackFlags
}

var graphFormats = []string{"mermaid", "dot", "json"}

func newGraphCmd(_ *app) *cobra.Command {
	var f graphFlags
	cmd := &cobra.Command{
		Use:   "graph (-f FILE|DIR|- | -k DIR)... [-o mermaid|dot|json] [flags]",
		Short: "Print the component graph of each CR in the inputs (mermaid, dot or json)",
		Long: `Graph prints each object's component graph as its program registers it (the program runs
under mocks: no cluster, no state). An edge A → B means B waits for A.

Every object gets its own labelled graph, titled with its kind, name and stack: Mermaid
flowcharts one after the other (--fenced wraps each in a ` + "```mermaid" + ` block, ready to paste
into Markdown), Graphviz digraphs one after the other (dot renders each), and for JSON a single
document: the graph object for one CR, an array of them for several.

With --status (and the backend and kubeconfig flags) every node carries its live state from a
preview of its stack: up to date, not created, pending: 1 update, to remove, failed.`,
		Example: `  tfrs graph -f examples/tenant-enterprise.yaml
  tfrs graph -f examples/cluster.yaml -o mermaid --fenced >> README.md
  tfrs graph -f examples/cluster.yaml -o dot | dot -Tsvg > cluster.svg
  tfrs graph -f examples/ -o json | jq '.[].stack'
  tfrs graph -f examples/tenant-enterprise.yaml --status --kubeconfig ~/.kube/config`,
		GroupID: groupInspect,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	f.inputs.bind(cmd, fs)
	outputFlag(cmd, &f.format, "output format", graphFormats...)
	fs.BoolVar(&f.fenced, "fenced", false, "mermaid: wrap each graph in a ```mermaid fenced block (Markdown)")
	fs.BoolVar(&f.status, "status", false, "show each component's live state, from a preview of its stack (needs the backend and the cluster)")
	f.stack.bind(fs)
	return cmd
}

func (f *graphFlags) run(ctx context.Context, stdin io.Reader, out io.Writer) error {
	if !f.inputs.given() {
		return errNoInput
	}
	if err := oneOf("-o", f.format, graphFormats...); err != nil {
		return err
	}
	if f.fenced && f.format != "mermaid" {
		return fmt.Errorf("%w: --fenced goes with -o mermaid", errUsage)
	}
	objs, err := f.inputs.load(stdin, false)
	if err != nil {
		return err
	}
	var rn *runner.Runner
	if f.status {
		var closeRunner func()
		if rn, closeRunner, err = openRunner(ctx, &f.stack); err != nil {
			return err
		}
		defer closeRunner()
	}
	graphs := make([]labelledGraph, 0, len(objs))
	for _, p := range objs {
		g, err := kinds.Graph(p.obj)
		if err != nil {
			return fmt.Errorf("%s: %w", p.target, err)
		}
		lg := labelledGraph{target: p.target, graph: g}
		if rn != nil {
			if lg.status, err = liveStates(ctx, rn, p); err != nil {
				return fmt.Errorf("%s: %w", p.target, err)
			}
		}
		graphs = append(graphs, lg)
	}
	return writeGraphs(out, f.format, f.fenced, graphs)
}

// labelledGraph is one object's graph, with what titles it and the live states (optional).
type labelledGraph struct {
	target kinds.Target
	graph  *stacks.Graph
	status map[string]string
}

// title names the object and its stack, e.g. "TFRTenant tfrs-system/acme (stack tenant.tfrs-system.acme)".
func (g labelledGraph) title() string {
	return fmt.Sprintf("%s (stack %s)", g.target, g.target.Stack)
}

// graphJSON is one object's graph in `tfrs graph -o json`: which object and stack, then the
// graph document (stacks.GraphDocument).
type graphJSON struct {
	Stack     string `json:"stack"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	stacks.GraphDocument
}

// writeGraphs prints the graphs: one JSON document for all of them (the object for one, an
// array for several), or one labelled Mermaid flowchart or DOT digraph per object.
func writeGraphs(w io.Writer, format string, fenced bool, graphs []labelledGraph) error {
	if format == "json" {
		docs := make([]graphJSON, len(graphs))
		for i, g := range graphs {
			t := g.target
			docs[i] = graphJSON{Stack: t.Stack, Kind: string(t.Kind), Namespace: t.Namespace, Name: t.Name, GraphDocument: g.graph.Document(g.status)}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if len(docs) == 1 {
			return enc.Encode(docs[0])
		}
		return enc.Encode(docs)
	}
	for i, g := range graphs {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		var err error
		switch format {
		case "dot":
			err = g.graph.WriteDOT(w, g.target.Stack, g.title(), g.status)
		default:
			err = writeMermaid(w, g, fenced)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeMermaid writes one flowchart titled by Mermaid front matter, fenced for Markdown when
// asked.
func writeMermaid(w io.Writer, g labelledGraph, fenced bool) error {
	if fenced {
		if _, err := io.WriteString(w, "```mermaid\n"); err != nil {
			return err
		}
	}
	// A JSON string is a YAML double-quoted scalar: the title survives any character.
	if _, err := fmt.Fprintf(w, "---\ntitle: %s\n---\n", strconv.Quote(g.title())); err != nil {
		return err
	}
	if err := g.graph.WriteMermaid(w, nil, g.status); err != nil {
		return err
	}
	if fenced {
		_, err := io.WriteString(w, "```\n")
		return err
	}
	return nil
}

// liveStates previews the object's stacks (a preview changes nothing) and reads each
// component's state from it. A stack that was never brought up shows every component as not
// created; a parent that is not up yet is reported as such on every node.
func liveStates(ctx context.Context, rn *runner.Runner, p prepared) (map[string]string, error) {
	out, err := rn.Preview(ctx, p.obj, runner.Op{Door: engine.ManagedByCLI})
	if errors.Is(err, kinds.ErrParentNotReady) {
		g, gerr := kinds.Graph(p.obj)
		if gerr != nil {
			return nil, gerr
		}
		states := map[string]string{}
		for _, n := range g.Nodes {
			if !n.External {
				states[n.ID] = "waiting for parent"
			}
		}
		return states, nil
	}
	if err != nil {
		return nil, err
	}
	return diff.ComponentStates(out), nil
}
