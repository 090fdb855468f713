// Command tfrs provisions the TFRobot platform on Kubernetes: one binary for the operator, the
// HTTP API, the CI-facing CLI and the local development environment.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// Exit codes. 2 and 3 mean something only under the flags that ask for them, so a pipeline can
// tell "changes" and "data loss" from a broken command line, which is always 1.
const (
	exitOK       = 0
	exitFailure  = 1 // an error, including a usage error (the usage is printed)
	exitChanges  = 2 // changes pending, only with --detailed-exitcode
	exitDataLoss = 3 // stateful data would be lost, only with --fail-on-data-loss
)

// errUsage marks a usage error: the message is printed with the command's usage, exit code 1.
var errUsage = errors.New("usage error")

// exitCoder lets a command choose its exit code (e.g. preview --detailed-exitcode).
type exitCoder interface{ ExitCode() int }

// exitError carries a chosen exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the command line in args and returns the exit code. Tests call it in-process;
// the commands read and write os.Stdin, os.Stdout and os.Stderr as they are at the call.
func run(args []string) int {
	// Ctrl-C cancels the context; commands stop what they started and return.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp()
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	app.args = args
	app.root.SetArgs(args)
	cmd, err := app.root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	pal := app.palette(os.Stderr)
	fmt.Fprintf(os.Stderr, "%s %s\n", pal.red(cmd.CommandPath()+":"), strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
	// Everything cobra refuses before a command runs (an unknown command or flag, a bad flag
	// value, stray arguments) is a usage error, like what a command itself reports as one.
	if !app.entered || errors.Is(err, errUsage) {
		fmt.Fprintf(os.Stderr, "\n%s\nRun '%s --help' for the synopsis and examples.\n", strings.TrimRight(cmd.UsageString(), "\n"), cmd.CommandPath())
		return exitFailure
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return exitFailure
}

// app is one command tree with its global flags. A fresh one per run: flag values live in it.
type app struct {
	root *cobra.Command
	// color is the --color flag: auto (terminals only, unless NO_COLOR is set), always, never.
	color string
	// args is the command line after the program name (stack histories record it).
	args []string
	// entered is set once a command's own code runs (after cobra parsed and checked the line).
	entered bool
}

func newApp() *app {
	a := &app{}
	root := &cobra.Command{
		Use:   "tfrs",
		Short: "Provision the TFRobot platform on Kubernetes: operator, HTTP API and CI CLI in one binary",
		Long: `tfrs provisions the TFRobot platform on Kubernetes at three levels — TFRCluster,
TFRTenant and TFRServer — each a Pulumi stack. The operator, the HTTP API and the CLI run the
same programs on the same state.`,
		Example: `  # everything on this machine: control plane, operator, HTTP API
  tfrs dev
  # what a change would do, as a pull-request comment
  tfrs preview -f deploy/ -R -o markdown --detailed-exitcode --fail-on-data-loss
  # the component graph of a tenant
  tfrs graph -f examples/tenant-enterprise.yaml -o mermaid --fenced`,
		Version:       buildVersion().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("%w: a command is required", errUsage)
		},
		PersistentPreRunE: func(*cobra.Command, []string) error {
			switch a.color {
			case "auto", "always", "never":
				return nil
			}
			return fmt.Errorf("%w: --color must be auto, always or never, not %q", errUsage, a.color)
		},
	}
	// No SetIn/SetOut/SetErr: cobra then resolves os.Stdin, os.Stdout and os.Stderr when it
	// writes, and prints flag warnings (deprecations) on stderr rather than with the output.
	root.SetVersionTemplate("tfrs {{.Version}}\n")
	root.PersistentFlags().StringVar(&a.color, "color", "auto", "colour: auto (terminals only, never with NO_COLOR set), always or never")
	_ = root.RegisterFlagCompletionFunc("color", fixedCompletion("auto", "always", "never"))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", errUsage, err) })
	root.AddGroup(
		&cobra.Group{ID: groupStacks, Title: "Stack commands (CI and scripts):"},
		&cobra.Group{ID: groupInspect, Title: "Without a cluster:"},
		&cobra.Group{ID: groupServers, Title: "Long-running:"},
	)
	root.AddCommand(
		newStackCmd(a, engine.OpPreview), newStackCmd(a, engine.OpUp), newStackCmd(a, engine.OpRefresh), newStackCmd(a, engine.OpDestroy),
		newStatusCmd(a), newWatchCmd(a), newFleetCmd(a),
		newGraphCmd(a), newRenderCmd(a),
		newServeCmd(), newOperatorCmd(), newDevCmd(),
		newVersionCmd(),
	)
	a.root = root
	a.markEntry(root)
	return a
}

// Command groups of the root's help.
const (
	groupStacks  = "stacks"
	groupInspect = "inspect"
	groupServers = "servers"
)

// markEntry wraps every command's RunE so that run can tell cobra's refusals from the
// command's own errors.
func (a *app) markEntry(c *cobra.Command) {
	if orig := c.RunE; orig != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			a.entered = true
			return orig(cmd, args)
		}
	}
	for _, sub := range c.Commands() {
		a.markEntry(sub)
	}
}

// noArgs refuses positional arguments as a usage error that names them (cobra.NoArgs would
// call the first one an unknown command).
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected arguments %q (files go after -f)", errUsage, args)
	}
	return nil
}

// fixedCompletion completes a flag from a fixed list of values.
func fixedCompletion(values ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// outputFlag binds -o, --output to one of formats (the first is the default), completed
// from the list.
func outputFlag(cmd *cobra.Command, p *string, what string, formats ...string) {
	cmd.Flags().StringVarP(p, "output", "o", formats[0], what+": "+orList(formats))
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion(formats...))
}

// oneOf checks an enumerated flag value.
func oneOf(flag, value string, allowed ...string) error {
	for _, v := range allowed {
		if v == value {
			return nil
		}
	}
	return fmt.Errorf("%w: %s must be %s, not %q", errUsage, flag, orList(allowed), value)
}

func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
