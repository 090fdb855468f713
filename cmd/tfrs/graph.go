package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

func init() {
	register("graph", "print the component graph of each CR in -f FILE…, taken from the program itself (mermaid|dot|json); --status adds each component's live state", runGraph)
}

func runGraph(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	var files fileList
	fs.Var(&files, "f", "file with one or more TFRS CRs (the YAML kubectl apply takes); repeatable")
	format := fs.String("o", "mermaid", "output format: mermaid, dot or json")
	status := fs.Bool("status", false, "show each component's live state, from a preview of its stack (needs the backend and the cluster)")
	var sf stackFlags
	sf.bind(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%w: -f FILE is required", errUsage)
	}
	write, err := graphWriter(*format)
	if err != nil {
		return err
	}
	objs, err := loadObjects(files, false)
	if err != nil {
		return err
	}
	var rn *runner.Runner
	if *status {
		var closeRunner func()
		if rn, closeRunner, err = openRunner(ctx, &sf); err != nil {
			return err
		}
		defer closeRunner()
	}
	for _, p := range objs {
		g, err := kinds.Graph(p.obj)
		if err != nil {
			return fmt.Errorf("%s: %w", p.target, err)
		}
		var states map[string]string
		if rn != nil {
			if states, err = liveStates(ctx, rn, p); err != nil {
				return fmt.Errorf("%s: %w", p.target, err)
			}
		}
		if err := write(g, os.Stdout, states); err != nil {
			return err
		}
	}
	return nil
}

func graphWriter(format string) (func(*stacks.Graph, io.Writer, map[string]string) error, error) {
	switch format {
	case "mermaid":
		return func(g *stacks.Graph, w io.Writer, st map[string]string) error { return g.WriteMermaid(w, nil, st) }, nil
	case "dot":
		return (*stacks.Graph).WriteDOT, nil
	case "json":
		return (*stacks.Graph).WriteJSON, nil
	}
	return nil, fmt.Errorf("%w: -o must be mermaid, dot or json, not %q", errUsage, format)
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
