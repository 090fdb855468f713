package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/manifest"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

func init() {
	register("graph", "print the component graph of each TFRCluster/TFRTenant in -f FILE, taken from the program itself (mermaid|dot|json)", runGraph)
}

func runGraph(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	file := fs.String("f", "", "file with one or more TFRS CRs (the YAML kubectl apply takes)")
	format := fs.String("o", "mermaid", "output format: mermaid, dot or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return fmt.Errorf("%w: -f FILE is required", errUsage)
	}
	objs, err := manifest.DecodeFile(*file)
	if err != nil {
		return err
	}
	for _, o := range objs {
		var g *stacks.Graph
		switch x := o.(type) {
		case *v1alpha1.TFRCluster:
			x.Default()
			if errs := x.Validate(); len(errs) > 0 {
				return fmt.Errorf("%s/%s is invalid: %v", "TFRCluster", x.Name, errs.ToAggregate())
			}
			g, err = stacks.ClusterGraph(x)
		case *v1alpha1.TFRTenant:
			x.Default()
			if errs := x.Validate(); len(errs) > 0 {
				return fmt.Errorf("%s/%s is invalid: %v", "TFRTenant", x.Name, errs.ToAggregate())
			}
			g, err = stacks.TenantGraph(x)
		default:
			return fmt.Errorf("graph: %s is not supported yet (TFRCluster and TFRTenant have programs so far)", o.GetObjectKind().GroupVersionKind().Kind)
		}
		if err != nil {
			return err
		}
		switch *format {
		case "mermaid":
			err = g.WriteMermaid(os.Stdout, nil, nil)
		case "dot":
			err = g.WriteDOT(os.Stdout, nil)
		case "json":
			err = g.WriteJSON(os.Stdout, nil)
		default:
			return fmt.Errorf("%w: -o must be mermaid, dot or json, not %q", errUsage, *format)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
