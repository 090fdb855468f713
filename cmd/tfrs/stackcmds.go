package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The CI-facing stack commands: `tfrs preview|up|refresh|destroy -f FILE…`. Each runs the
// objects of the inputs through the same runner the operator and the HTTP API use, prints one
// report (text, JSON or Markdown, see stacks/diff) on stdout and progress on stderr.
//
// Exit codes: 0 success; 1 an error or a usage error; 2 changes, only with
// --detailed-exitcode; 3 data loss, only with --fail-on-data-loss (this wins over everything
// else, because it is the signal a pipeline must never miss).

// stackCmdFlags are the flags of the four stack commands.
type stackCmdFlags struct {
	stack            stackFlags
	sources          sourceFlags
	inputs           inputFlags
	untrusted        untrustedFlags // preview --untrusted (untrusted.go)
	format           string
	detailedExitCode bool
	failOnDataLoss   bool
	progress         bool
	message          string
	yes              bool
	savePlan         string // preview: the directory the plans go to
	planDir          string // up: the directory of the plans to apply
	plans            map[string]*engine.Plan
}

func (f *stackCmdFlags) bind(cmd *cobra.Command, op engine.OpKind) {
	fs := cmd.Flags()
	f.inputs.bind(cmd, fs)
	outputFlag(cmd, &f.format, "report format", reportFormats...)
	fs.BoolVar(&f.detailedExitCode, "detailed-exitcode", false, "exit 2 when there are changes, 0 when there are none, 1 on error")
	fs.BoolVar(&f.failOnDataLoss, "fail-on-data-loss", false, "exit 3 when a change would replace or delete stateful data (databases, object storage, PVCs, a tenant namespace); up previews each object first and stops before applying it")
	fs.BoolVar(&f.progress, "progress", false, "print progress on stderr even when it is not a terminal")
	fs.StringVar(&f.message, "message", "", "message recorded in the stack history (default: the command line)")
	if op == engine.OpDestroy {
		fs.BoolVar(&f.yes, "yes", false, "required: confirm the destroy")
	}
	if op == engine.OpPreview {
		fs.StringVar(&f.savePlan, "save-plan", "", "also save each stack's update plan into this directory (<stack>.plan.json), for `tfrs up --plan` to apply exactly; a stack that does not exist yet gets its empty record")
	}
	if op == engine.OpUp {
		fs.StringVar(&f.planDir, "plan", "", "apply exactly the plans `tfrs preview --save-plan` saved in this directory; an object without a plan, or whose spec or program now differs, fails without changes")
	}
	if op == engine.OpPreview {
		f.untrusted.bind(fs)
		fs.BoolVar(&f.stack.readOnly, "read-only", false, "never write the backend (no lock, no repair; new stacks are previewed on a throwaway state), so the backend credentials may be read-only: for pull requests")
	}
	f.stack.bind(fs)
	f.sources.bind(fs, "cli")
}

var reportFormats = []string{"text", "json", "markdown"}

// stackCmdDocs are each stack command's help.
var stackCmdDocs = map[engine.OpKind]struct{ short, long, example string }{
	engine.OpPreview: {
		short: "Show what up would change for the CRs in the inputs",
		long: `Preview runs each object's program against its stack and reports what an up would change:
resources per component, the changed property paths (never values), and first of all any
replace or delete of stateful data. Nothing is changed. Objects run parents first: clusters,
tenants, servers; a child whose parent the same run creates is reported as pending. A
preview never creates a stack: an object whose stack does not exist yet is previewed on a
throwaway state. With --read-only nothing at all is written to the backend (no repairs), so
it runs with read-only backend credentials, as a pull request's CI job should.

With --save-plan DIR each stack's update plan is saved as DIR/<stack>.plan.json for
` + "`tfrs up --plan DIR`" + ` to apply exactly; such a preview creates the empty record of a stack that
does not exist yet (its plan must be encrypted with the stack's own key), unless --read-only.

Exit codes: 0 no changes (or changes without --detailed-exitcode), 1 an error or a usage
error, 2 changes with --detailed-exitcode, 3 data loss with --fail-on-data-loss.`,
		example: `  tfrs preview -f examples/cluster.yaml -f examples/tenant-enterprise.yaml
  tfrs preview --read-only -f deploy/ -R -o markdown   # CI with read-only backend credentials
  # a pull-request comment; exit 2 on changes, 3 on data loss
  tfrs preview -f deploy/ -R -o markdown --detailed-exitcode --fail-on-data-loss
  # from a kustomization, or from another tool through stdin
  tfrs preview -k deploy/overlays/prod
  kustomize build deploy/overlays/prod | tfrs preview -f -`,
	},
	engine.OpUp: {
		short: "Create or update the stacks of the CRs in the inputs, clusters first",
		long: `Up brings each object's stack to its spec, parents first (clusters, tenants, servers), and
stops at the first error: later objects depend on earlier ones. With --fail-on-data-loss each
object is previewed first and not applied when the change would lose data (exit 3). With
--plan DIR it applies exactly the plans ` + "`tfrs preview --save-plan DIR`" + ` saved: every object is
checked first (a plan of its stack, taken for this spec) and nothing runs when one fails; an
object with spec.approval.mode Manual is applied only this way.`,
		example: `  tfrs up -f examples/cluster.yaml -f examples/tenant-enterprise.yaml
  tfrs up -f deploy/ -R --fail-on-data-loss -o json
  # apply exactly what a reviewed preview saved
  tfrs preview -f deploy/ -R --save-plan plans/ && tfrs up -f deploy/ -R --plan plans/`,
	},
	engine.OpRefresh: {
		short: "Read the live state of the CRs' resources back into their stacks",
		long: `Refresh reads every resource of each object's stack from the cluster and records what it
finds, so the next preview compares the spec with reality (drift). The cluster is not changed.`,
		example: `  tfrs refresh -f examples/tenant-enterprise.yaml
  tfrs refresh -f deploy/ -R -o json`,
	},
	engine.OpDestroy: {
		short: "Delete the stacks of the CRs in the inputs, servers first",
		long: `Destroy deletes every resource of each object's stack, children first (servers, tenants,
clusters). A tenant's deletionPolicy decides its data: Retain (the default) keeps databases,
object storage and volumes in the cluster. --yes is required; with --fail-on-data-loss a
tenant whose deletionPolicy is Delete is refused before anything runs (exit 3).`,
		example: `  tfrs destroy -f examples/server.yaml --yes
  tfrs destroy -f deploy/ -R --yes --fail-on-data-loss`,
	},
}

func newStackCmd(a *app, op engine.OpKind) *cobra.Command {
	var f stackCmdFlags
	doc := stackCmdDocs[op]
	cmd := &cobra.Command{
		Use:     string(op) + " (-f FILE|DIR|- | -k DIR)... [flags]",
		Short:   doc.short,
		Long:    doc.long,
		Example: doc.example,
		GroupID: groupStacks,
		Args:    noArgs,
	}
	f.bind(cmd, op)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return f.run(cmd, a, op)
	}
	return cmd
}

func (f *stackCmdFlags) run(cmd *cobra.Command, a *app, op engine.OpKind) error {
	ctx := cmd.Context()
	if !f.inputs.given() {
		return errNoInput
	}
	if err := oneOf("-o", f.format, reportFormats...); err != nil {
		return err
	}
	if op == engine.OpDestroy && !f.yes {
		return fmt.Errorf("%w: destroy deletes every resource of the CRs' stacks; add --yes to confirm", errUsage)
	}
	if f.message == "" {
		f.message = "tfrs " + strings.Join(a.args, " ")
	}
	if f.planDir != "" && f.failOnDataLoss {
		return fmt.Errorf("%w: --plan applies a reviewed plan; --fail-on-data-loss belongs on the preview that saved it", errUsage)
	}
	if f.savePlan != "" {
		if err := os.MkdirAll(f.savePlan, 0o700); err != nil {
			return fmt.Errorf("--save-plan: %w", err)
		}
	}
	if f.planDir != "" {
		var err error
		if f.plans, err = readPlans(f.planDir); err != nil {
			return err
		}
	}
	// Inputs, source policy, local sources confined; the untrusted mode's setup (untrusted.go).
	in, err := f.loadInputs(cmd.InOrStdin(), op == engine.OpDestroy)
	if err != nil {
		return err
	}
	defer in.close()
	objs := in.objs
	rn, closeRunner, err := openRunner(ctx, &f.stack)
	if err != nil {
		return err
	}
	defer closeRunner()
	if op == engine.OpDestroy && f.failOnDataLoss {
		// A destroy cannot be previewed; what it deletes is decided by the deletion policy.
		if err := refuseDestroyingData(ctx, rn, objs); err != nil {
			return err
		}
	}
	prog := newProgress(os.Stderr, f.progress, a.palette(os.Stderr))
	s := &stackRun{op: op, flags: f, runner: rn, sink: in.scrub.sink(prog.sink())}
	reports, runErr := s.run(ctx, objs)
	prog.close()
	reports = in.scrub.reports(reports)
	if err := writeReports(cmd.OutOrStdout(), f.format, reports, objs); err != nil {
		return err
	}
	return in.scrub.error(exitFor(op, f, reports, runErr))
}

// openRunner opens the engine and runner the flags describe; tests substitute a fake engine.
var openRunner = func(ctx context.Context, f *stackFlags) (*runner.Runner, func(), error) {
	eng, rn, err := f.runner(ctx)
	if err != nil {
		return nil, nil, err
	}
	return rn, func() { _ = eng.Close() }, nil
}

// refuseDestroyingData stops a guarded destroy of a tenant whose deletionPolicy is Delete
// (under Retain the data objects stay in the cluster, under Delete they go with the stack),
// and of a personal robot whose job type's deletionPolicy is Delete (its data is removed
// first: runner.PurgesRobotData).
func refuseDestroyingData(ctx context.Context, rn *runner.Runner, objs []prepared) error {
	var names []string
	for _, p := range objs {
		purges, err := rn.PurgesRobotData(ctx, p.obj)
		if err != nil {
			return err
		}
		if purges || p.obj.DataDeletionPolicy() == v1alpha1.DeletionDelete {
			names = append(names, p.target.String())
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &exitError{code: exitDataLoss, msg: fmt.Sprintf("refusing to destroy (--fail-on-data-loss): deletionPolicy Delete would delete the databases, object storage and volumes of %s", strings.Join(names, ", "))}
}

// stackRun runs one command over the ordered objects.
type stackRun struct {
	op     engine.OpKind
	flags  *stackCmdFlags
	runner *runner.Runner
	sink   engine.Sink
}

// run returns one report per object it reached. A preview or refresh goes on after an error
// (the other objects' diffs are still worth reviewing); up and destroy stop, since later
// objects depend on earlier ones.
func (s *stackRun) run(ctx context.Context, objs []prepared) ([]*diff.Report, error) {
	var (
		reports []*diff.Report
		errs    []error
		pending = map[string]bool{} // stacks of this run that a preview found changing
	)
	// A suspended object is skipped by up, preview and refresh (reported as such), and stops a
	// destroy before anything runs: a destroy of the others would leave it without a parent.
	if s.op == engine.OpDestroy {
		for _, p := range objs {
			if err := runner.CheckSuspended(p.obj); err != nil {
				err = fmt.Errorf("%s: %w", p.target, err)
				return []*diff.Report{report(nil, p, s.op, err)}, err
			}
		}
	}
	if s.op == engine.OpUp {
		// Every object's stack admits it (door, identity, immutable fields) and every object
		// passes the approval gate before any runs.
		for _, p := range objs {
			if p.obj.Suspended() {
				continue
			}
			err := s.gate(ctx, p)
			if err == nil {
				err = s.runner.Admit(ctx, p.obj, runner.Op{Door: engine.ManagedByCLI})
			}
			if err != nil {
				err = fmt.Errorf("%s: %w", p.target, err)
				return []*diff.Report{report(nil, p, s.op, err)}, err
			}
		}
	}
	for _, p := range objs {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if err := runner.CheckSuspended(p.obj); err != nil {
			reports = append(reports, report(runner.Skip(p.target, err), p, s.op, nil))
			continue
		}
		rep, err := s.one(ctx, p, pending)
		reports = append(reports, rep)
		if rep.HasChanges() {
			pending[p.target.Stack] = true
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.target, err))
			var ee *exitError
			if errors.As(err, &ee) || s.op == engine.OpUp || s.op == engine.OpDestroy {
				break
			}
		}
	}
	return reports, errors.Join(errs...)
}

// one runs the command on one object and reports it, also when it fails part-way.
func (s *stackRun) one(ctx context.Context, p prepared, pending map[string]bool) (*diff.Report, error) {
	op := runner.Op{Door: engine.ManagedByCLI, Sink: s.sink, Message: s.flags.message}
	var (
		out *runner.Outcome
		err error
	)
	switch s.op {
	case engine.OpPreview:
		op.SavePlans = s.flags.savePlan != ""
		out, err = s.runner.Preview(ctx, p.obj, op)
		if err == nil && op.SavePlans {
			err = writePlans(s.flags.savePlan, out)
		}
	case engine.OpUp:
		op.Plans = s.plansOf(p)
		if s.flags.failOnDataLoss {
			pre, perr := s.runner.Preview(ctx, p.obj, op)
			if rep := report(pre, p, engine.OpPreview, perr); perr != nil || rep.HasDataLoss() {
				if perr == nil {
					perr = &exitError{code: exitDataLoss, msg: fmt.Sprintf("not applied (--fail-on-data-loss): %d change(s) would lose data", len(rep.DataLoss))}
				}
				return rep, perr
			}
		}
		out, err = s.runner.Up(ctx, p.obj, op)
	case engine.OpRefresh:
		out, err = s.runner.Refresh(ctx, p.obj, op)
	case engine.OpDestroy:
		out, err = s.runner.Destroy(ctx, p.obj, op)
	}
	rep := report(out, p, s.op, err)
	// A preview of a child whose parent this same run creates or changes cannot run yet: the
	// parent's outputs do not exist. That is pending work, not an error.
	if s.op == engine.OpPreview && errors.Is(err, kinds.ErrParentNotReady) && pending[p.target.Parent] {
		rep.Error = ""
		rep.Skipped = fmt.Sprintf("waits for %s %s (stack %s), which this preview creates or changes; it is previewed once that is up", p.target.ParentKind, p.target.ParentName, p.target.Parent)
		return rep, nil
	}
	if s.op == engine.OpDestroy {
		if dp := p.obj.DataDeletionPolicy(); dp != "" && dp != v1alpha1.DeletionDelete {
			rep.MarkRetained()
		}
	}
	return rep, err
}

// report builds an object's report; the target comes from the object when nothing ran.
func report(out *runner.Outcome, p prepared, op engine.OpKind, err error) *diff.Report {
	rep := diff.FromOutcome(out)
	rep.Target = p.target
	if rep.Operation == "" {
		rep.Operation = op
	}
	if err != nil {
		rep.Error = err.Error()
	}
	return rep
}

// writeReports prints the reports in the chosen format; Markdown gets each object's graph.
func writeReports(w io.Writer, format string, reports []*diff.Report, objs []prepared) error {
	switch format {
	case "json":
		return diff.WriteJSON(w, reports...)
	case "markdown":
		graphs := map[string]*stacks.Graph{}
		for _, p := range objs {
			// A kind without a graph yet just gets no picture; the diff is what matters.
			if g, err := kinds.Graph(p.obj); err == nil {
				graphs[p.target.Stack] = g
			}
		}
		return diff.WriteMarkdown(w, graphs, reports...)
	default:
		return diff.WriteText(w, reports...)
	}
}

// exitFor picks the exit code: data loss (3, when guarded) over errors (1) over changes (2,
// with --detailed-exitcode).
func exitFor(op engine.OpKind, f *stackCmdFlags, reports []*diff.Report, runErr error) error {
	doc := diff.NewDocument(reports...)
	var ee *exitError
	switch {
	case errors.As(runErr, &ee):
		return runErr
	case f.failOnDataLoss && doc.HasDataLoss && op != engine.OpDestroy:
		return &exitError{code: exitDataLoss, msg: fmt.Sprintf("%d change(s) replace or delete stateful data (--fail-on-data-loss)", len(doc.DataLoss))}
	case runErr != nil:
		return runErr
	case f.detailedExitCode && doc.HasChanges:
		return &exitError{code: exitChanges, msg: "changes pending (--detailed-exitcode)"}
	}
	return nil
}
