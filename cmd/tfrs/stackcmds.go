package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/manifest"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The CI-facing stack commands: `tfrs preview|up|refresh|destroy -f FILE…`. Each runs the
// objects of the files through the same runner the operator and the HTTP API use, prints one
// report (text, JSON or Markdown, see stacks/diff) on stdout and progress on stderr.
//
// Exit codes: 0 success; 1 an error; 2 usage error, or changes with --detailed-exitcode;
// 3 data loss with --fail-on-data-loss (this wins over everything else, because it is the
// signal a pipeline must never miss).

func init() {
	register("preview", "show what up would change for the CRs in -f FILE… (text|json|markdown; --detailed-exitcode, --fail-on-data-loss)", stackCommand(engine.OpPreview))
	register("up", "create or update the stacks of the CRs in -f FILE…, clusters first", stackCommand(engine.OpUp))
	register("refresh", "read the live state of the CRs' resources back into their stacks", stackCommand(engine.OpRefresh))
	register("destroy", "delete the stacks of the CRs in -f FILE…, servers first (the tenant's deletionPolicy keeps its data)", stackCommand(engine.OpDestroy))
}

// Exit codes beyond 0/1/2.
const (
	exitChanges  = 2
	exitDataLoss = 3
)

// exitError carries a chosen exit code out of a command (see main's exitCoder).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

// fileList is a repeatable -f flag.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// stackCmdFlags are the flags of the four stack commands.
type stackCmdFlags struct {
	stack            stackFlags
	sources          sourceFlags
	files            fileList
	format           string
	detailedExitCode bool
	failOnDataLoss   bool
	progress         bool
	message          string
	yes              bool
}

func (f *stackCmdFlags) bind(fs *flag.FlagSet, op engine.OpKind) {
	f.stack.bind(fs)
	f.sources.bind(fs, "cli")
	fs.Var(&f.files, "f", "file with one or more TFRS CRs (the YAML kubectl apply takes); repeatable")
	fs.StringVar(&f.format, "o", "text", "report format: text, json or markdown")
	fs.BoolVar(&f.detailedExitCode, "detailed-exitcode", false, "exit 2 when there are changes, 0 when there are none, 1 on error")
	fs.BoolVar(&f.failOnDataLoss, "fail-on-data-loss", false, "exit 3 when a change would replace or delete stateful data (databases, object storage, PVCs, a tenant namespace); up previews each object first and stops before applying it")
	fs.BoolVar(&f.progress, "progress", false, "print progress on stderr even when it is not a terminal")
	fs.StringVar(&f.message, "message", "", "message recorded in the stack history (default: the command line)")
	if op == engine.OpDestroy {
		fs.BoolVar(&f.yes, "yes", false, "required: confirm the destroy")
	}
}

func stackCommand(op engine.OpKind) func(ctx context.Context, args []string) error {
	return func(ctx context.Context, args []string) error {
		fs := flag.NewFlagSet(string(op), flag.ContinueOnError)
		var f stackCmdFlags
		f.bind(fs, op)
		if err := fs.Parse(args); err != nil {
			return err
		}
		if len(f.files) == 0 {
			return fmt.Errorf("%w: -f FILE is required", errUsage)
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
		}
		switch f.format {
		case "text", "json", "markdown":
		default:
			return fmt.Errorf("%w: -o must be text, json or markdown, not %q", errUsage, f.format)
		}
		if op == engine.OpDestroy && !f.yes {
			return fmt.Errorf("%w: destroy deletes every resource of the CRs' stacks; add --yes to confirm", errUsage)
		}
		if f.message == "" {
			f.message = "tfrs " + strings.Join(append([]string{string(op)}, args...), " ")
		}
		objs, err := loadObjects(f.files, op == engine.OpDestroy)
		if err != nil {
			return err
		}
		pol, err := f.sources.policy()
		if err != nil {
			return err
		}
		pol = withClusterMirrors(pol, objs)
		if err := checkSources(pol, objs); err != nil {
			return err
		}
		if err := installFetcher(pol, f.stack.stateDir); err != nil {
			return err
		}
		if op == engine.OpDestroy && f.failOnDataLoss {
			// A destroy cannot be previewed; what it deletes is decided by the deletion policy.
			if err := refuseDestroyingData(objs); err != nil {
				return err
			}
		}
		rn, closeRunner, err := openRunner(ctx, &f.stack)
		if err != nil {
			return err
		}
		defer closeRunner()
		s := &stackRun{op: op, flags: &f, runner: rn, sink: progressSink(os.Stderr, f.progress)}
		reports, runErr := s.run(ctx, objs)
		if err := writeReports(os.Stdout, f.format, reports, objs); err != nil {
			return err
		}
		return exitFor(op, &f, reports, runErr)
	}
}

// openRunner opens the engine and runner the flags describe; tests substitute a fake engine.
var openRunner = func(ctx context.Context, f *stackFlags) (*runner.Runner, func(), error) {
	eng, rn, err := f.runner(ctx)
	if err != nil {
		return nil, nil, err
	}
	return rn, func() { _ = eng.Close() }, nil
}

// prepared is one object of a run, defaulted and validated.
type prepared struct {
	obj    v1alpha1.Object
	target kinds.Target
}

// loadObjects decodes every file, validates every object (so a typo in the last document fails
// before the first one runs) and orders them by level: clusters, tenants, servers, each in
// file order; reversed for a destroy, so children go before their parents.
func loadObjects(files []string, reverse bool) ([]prepared, error) {
	var out []prepared
	seen := map[string]string{}
	for _, file := range files {
		objs, err := manifest.DecodeFile(file)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			t, obj, err := kinds.Prepare(o)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", file, o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
			}
			if prev, dup := seen[t.Stack]; dup {
				return nil, fmt.Errorf("%s: %s is also in %s (stack %s)", file, t, prev, t.Stack)
			}
			seen[t.Stack] = file
			out = append(out, prepared{obj: obj, target: t})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no TFRS objects found", strings.Join(files, ", "))
	}
	sort.SliceStable(out, func(i, j int) bool { return level(out[i].target.Kind) < level(out[j].target.Kind) })
	if reverse {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}

// level orders kinds parents first (v1alpha1.Kinds).
func level(k v1alpha1.Kind) int { return slices.Index(v1alpha1.Kinds, k) }

// refuseDestroyingData stops a guarded destroy of a tenant whose deletionPolicy is Delete:
// under Retain the data objects stay in the cluster, under Delete they go with the stack.
func refuseDestroyingData(objs []prepared) error {
	var names []string
	for _, p := range objs {
		if p.obj.DataDeletionPolicy() == v1alpha1.DeletionDelete {
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
	for _, p := range objs {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
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
		out, err = s.runner.Preview(ctx, p.obj, op)
	case engine.OpUp:
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

// progressSink prints the engine's progress on w when w is a terminal or when forced: the
// steps that change something, warnings, errors and each stack's summary. Unchanged steps and
// ephemeral status lines are left out, so a CI log stays readable.
func progressSink(w *os.File, force bool) engine.Sink {
	if !force && !isTerminal(w) {
		return nil
	}
	var mu sync.Mutex
	return func(e engine.Event) {
		var line string
		switch e.Kind {
		case engine.EventStart, engine.EventRecovery:
			// Not EventCancel: Pulumi ends every event stream with a cancel event.
			line = e.Message
		case engine.EventStepStart:
			if e.Op == engine.StepSame || e.Op == engine.StepRead || e.Op == engine.StepRefresh {
				return
			}
			line = e.Message
		case engine.EventStepFailed:
			line = fmt.Sprintf("failed: %s %s", e.Type, e.URN)
		case engine.EventDiag:
			if e.Ephemeral || (e.Severity != "warning" && e.Severity != "error") {
				return
			}
			line = e.Message // Pulumi's prefix already says "warning:" or "error:"
			if !strings.HasPrefix(line, e.Severity) {
				line = e.Severity + ": " + line
			}
		case engine.EventSummary:
			line = "done: " + e.Message
		default:
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "[%s] %s\n", e.Stack, line)
	}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
