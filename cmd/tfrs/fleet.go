package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/fleet"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// `tfrs fleet preview`: what this build's programs would change across many stacks (package
// stacks/fleet). The objects come from the files given, or from the cluster's custom
// resources (--from-cluster: a list, so read-only RBAC on the three kinds does), narrowed by
// the selector flags. Each is proven unchanged from its recorded inputs when it can be, and
// previewed for real otherwise; nothing is written to the backend (a fleet preview always
// runs read-only), so read-only backend credentials do.

type fleetFlags struct {
	// io loads the inputs as preview does (source policy, local sources snapshotted) and
	// opens the engine; its report flags are fleetFlags' own.
	io          stackCmdFlags
	fromCluster bool
	kinds       []string
	namespace   string
	labels      string
	cluster     string
	full        bool
	format      string
	detailed    bool
	failOnLoss  bool
}

func newFleetCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "fleet",
		Short:   "Questions about many stacks at once: what would this build change across them",
		GroupID: groupStacks,
		Args:    noArgs,
	}
	cmd.AddCommand(newFleetPreviewCmd(a))
	return cmd
}

func newFleetPreviewCmd(_ *app) *cobra.Command {
	var f fleetFlags
	cmd := &cobra.Command{
		Use:   "preview (--from-cluster | -f FILE|DIR|- | -k DIR)... [selector flags] [-o text|json|markdown]",
		Short: "Preview this build's programs across every selected stack, in one report",
		Long: `Fleet preview answers "what does this tfrs build change across our stacks?". It takes the
objects from the cluster's TFRS custom resources (--from-cluster) or from files, narrowed by
--kind, --namespace, --selector and --cluster, and looks at each with this binary's programs
against the recorded state, --parallel at a time:

  - a stack whose inputs (spec, program revision, parent outputs, namespace, Kubernetes
    version) equal those its last successful up recorded, with nothing run on it since, is
    reported unchanged without running Pulumi ("proven"); --full previews it anyway;
  - every other stack is previewed for real;
  - a suspended object (spec.suspend) is reported as such and not looked at.

The report lists each stack (unchanged, create, update, replace, delete, suspended or error,
with data-loss flags) and groups the changes across the fleet by component and change, with
the stacks each appears on. Nothing is written to the backend: read-only backend credentials
do, and so do read-only Kubernetes credentials (list on the three kinds, and what the
programs read: namespaces, the kubernetes Service).

Exit codes: 0 no changes (or changes without --detailed-exitcode), 1 an error (including a
stack that could not be previewed), 2 changes with --detailed-exitcode, 3 data loss with
--fail-on-data-loss.`,
		Example: `  # CI, after building a new tfrs: what does it change across the cluster's tenants?
  tfrs fleet preview --from-cluster --kind tenant -o markdown --detailed-exitcode
  tfrs fleet preview --from-cluster --cluster prod --selector tier=gold -o json
  tfrs fleet preview -f deploy/ -R --full`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	f.io.inputs.bind(cmd, fs)
	fs.BoolVar(&f.fromCluster, "from-cluster", false, "take the objects from the cluster's TFRCluster, TFRTenant and TFRServer resources (--kubeconfig, --context)")
	fs.StringArrayVar(&f.kinds, "kind", nil, "only objects of this kind: cluster, tenant or server; repeatable")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "only objects of this namespace")
	fs.StringVarP(&f.labels, "selector", "l", "", "only objects whose labels match this selector (team=a,tier!=free)")
	fs.StringVar(&f.cluster, "cluster", "", "only this TFRCluster, its tenants and their servers")
	fs.BoolVar(&f.full, "full", false, "preview every stack for real, also those proven unchanged from their recorded inputs")
	outputFlag(cmd, &f.format, "report format", reportFormats...)
	fs.BoolVar(&f.detailed, "detailed-exitcode", false, "exit 2 when a stack changes, 0 when none does, 1 on error")
	fs.BoolVar(&f.failOnLoss, "fail-on-data-loss", false, "exit 3 when a change would replace or delete stateful data")
	f.io.stack.bind(fs)
	f.io.sources.bind(fs, "cli")
	return cmd
}

func (f *fleetFlags) run(ctx context.Context, stdin io.Reader, out io.Writer) error {
	if f.fromCluster == f.io.inputs.given() {
		return fmt.Errorf("%w: give either --from-cluster or -f/-k", errUsage)
	}
	if err := oneOf("-o", f.format, reportFormats...); err != nil {
		return err
	}
	sel := fleet.Selector{Namespace: f.namespace, Labels: f.labels, Cluster: f.cluster}
	for _, k := range f.kinds {
		kind, err := fleet.ParseKind(k)
		if err != nil {
			return fmt.Errorf("%w: --kind: %v", errUsage, err)
		}
		sel.Kinds = append(sel.Kinds, kind)
	}
	objs, closeInputs, err := f.objects(ctx, stdin)
	if err != nil {
		return err
	}
	defer closeInputs()
	if objs, err = sel.Select(objs); err != nil {
		return fmt.Errorf("%w: --selector: %v", errUsage, err)
	}
	f.io.stack.readOnly = true // a fleet preview never writes the backend
	eng, rn, err := f.io.stack.runner(ctx)
	if err != nil {
		return err
	}
	defer eng.Close()
	progress := func(e fleet.Entry, done, total int) {
		fmt.Fprintf(os.Stderr, "[%d/%d] %s: %s\n", done, total, e.Target.Stack, e.Status)
	}
	rep := fleet.Preview(ctx, rn, objs, fleet.Options{Parallel: f.io.stack.parallel, Full: f.full, Done: progress})
	switch f.format {
	case "json":
		err = rep.WriteJSON(out)
	case "markdown":
		err = rep.WriteMarkdown(out)
	default:
		err = rep.WriteText(out)
	}
	if err != nil {
		return err
	}
	switch {
	case f.failOnLoss && rep.DataLoss:
		return &exitError{code: exitDataLoss, msg: "a change would replace or delete stateful data (--fail-on-data-loss)"}
	case rep.Counts[fleet.StatusError] > 0:
		return fmt.Errorf("%d stack(s) could not be previewed", rep.Counts[fleet.StatusError])
	case f.detailed && rep.Changed() > 0:
		return &exitError{code: exitChanges, msg: "changes pending (--detailed-exitcode)"}
	}
	return nil
}

// objects are the fleet's objects, prepared (defaults applied, validated), parents first,
// checked against the source policy as every door checks them; close when done.
func (f *fleetFlags) objects(ctx context.Context, stdin io.Reader) ([]v1alpha1.Object, func(), error) {
	var ps []prepared
	closeInputs := func() {}
	if f.io.inputs.given() {
		in, err := f.io.loadInputs(stdin, false)
		if err != nil {
			return nil, nil, err
		}
		ps, closeInputs = in.objs, in.close
	} else {
		var err error
		if ps, err = f.clusterObjects(ctx); err != nil {
			return nil, nil, err
		}
		pol, err := f.io.sources.policy()
		if err != nil {
			return nil, nil, err
		}
		if err := checkSources(withClusterMirrors(pol, ps), ps); err != nil {
			return nil, nil, err
		}
	}
	objs := make([]v1alpha1.Object, len(ps))
	for i, p := range ps {
		objs[i] = p.obj
	}
	return objs, closeInputs, nil
}

// clusterObjects lists the cluster's TFRS custom resources, parents first. The API server
// applied the schema's defaults; Prepare applies the rest and validates, as for every door:
// an object that does not pass is an error naming it.
func (f *fleetFlags) clusterObjects(ctx context.Context) ([]prepared, error) {
	cfg, err := f.io.stack.restConfig()
	if err != nil {
		return nil, fmt.Errorf("--from-cluster: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("--from-cluster: %w", err)
	}
	var (
		clusters v1alpha1.TFRClusterList
		tenants  v1alpha1.TFRTenantList
		servers  v1alpha1.TFRServerList
		objs     []v1alpha1.Object
	)
	for _, l := range []client.ObjectList{&clusters, &tenants, &servers} {
		if err := c.List(ctx, l); err != nil {
			return nil, fmt.Errorf("--from-cluster: %w", err)
		}
	}
	for i := range clusters.Items {
		objs = append(objs, &clusters.Items[i])
	}
	for i := range tenants.Items {
		objs = append(objs, &tenants.Items[i])
	}
	for i := range servers.Items {
		objs = append(objs, &servers.Items[i])
	}
	out := make([]prepared, 0, len(objs))
	for _, o := range objs {
		t, p, err := kinds.Prepare(o)
		if err != nil {
			return nil, fmt.Errorf("--from-cluster: %s: %w", kinds.Target{Kind: o.KindName(), Namespace: o.GetNamespace(), Name: o.GetName()}, err)
		}
		out = append(out, prepared{obj: p, target: t})
	}
	return out, nil
}
