package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// `tfrs status`: what the backend records of each object's stack, whichever door ran it:
// whether it exists and is ready, the door that owns it, its last operation and the program
// revision of its last successful up. It reads the state only (no program runs, nothing is
// written), so read-only backend credentials do.

type statusFlags struct {
	inputs inputFlags
	format string
	stack  stackFlags
}

var statusFormats = []string{"text", "json"}

func newStatusCmd(_ *app) *cobra.Command {
	var f statusFlags
	cmd := &cobra.Command{
		Use:   "status (-f FILE|DIR|- | -k DIR)... [-o text|json] [flags]",
		Short: "Show what the state records of the CRs' stacks: ready, owner, last operation, revision",
		Long: `Status reads each object's stack from the backend: whether it exists, whether its last update
succeeded (Ready), the door that owns it, its last recorded operation, and the revision of the
tfrs build whose up last applied it (the same as the CR's status.revision and the HTTP view's).
No program runs and nothing is written.`,
		Example: `  tfrs status -f examples/tenant-enterprise.yaml
  tfrs status -f deploy/ -R -o json | jq -r '.[] | select(.revision.id != "a1b2c3d4e5f6") | .stack'`,
		GroupID: groupStacks,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	f.inputs.bind(cmd, fs)
	outputFlag(cmd, &f.format, "output format", statusFormats...)
	f.stack.bind(fs)
	return cmd
}

// stackState is one object's line of `tfrs status`.
type stackState struct {
	Kind      v1alpha1.Kind        `json:"kind"`
	Namespace string               `json:"namespace,omitempty"`
	Name      string               `json:"name"`
	Stack     string               `json:"stack"`
	Exists    bool                 `json:"exists"`
	Ready     bool                 `json:"ready"`
	ManagedBy engine.ManagedBy     `json:"managedBy,omitempty"`
	Last      *engine.HistoryEntry `json:"lastOperation,omitempty"`
	Revision  *v1alpha1.Revision   `json:"revision,omitempty"`
}

func (f *statusFlags) run(ctx context.Context, stdin io.Reader, out io.Writer) error {
	if !f.inputs.given() {
		return errNoInput
	}
	if err := oneOf("-o", f.format, statusFormats...); err != nil {
		return err
	}
	objs, err := f.inputs.load(stdin, false)
	if err != nil {
		return err
	}
	eng, err := f.stack.engine(ctx)
	if err != nil {
		return err
	}
	defer eng.Close()
	states := make([]stackState, 0, len(objs))
	for _, p := range objs {
		s, err := stateOf(ctx, eng, p.target)
		if err != nil {
			return fmt.Errorf("%s: %w", p.target, err)
		}
		states = append(states, s)
	}
	return writeStates(out, f.format, states)
}

// stateOf reads one object's stack; a stack not in the backend is a state too (not created).
func stateOf(ctx context.Context, eng *engine.Engine, t kinds.Target) (stackState, error) {
	s := stackState{Kind: t.Kind, Namespace: t.Namespace, Name: t.Name, Stack: t.Stack}
	st, err := eng.Status(ctx, t.Stack)
	if errors.Is(err, engine.ErrNotFound) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	s.Exists, s.Ready, s.ManagedBy, s.Last = true, st.Ready, st.ManagedBy, st.Last
	s.Revision = stacks.RevisionFromTags(st.Tags)
	return s, nil
}

func writeStates(w io.Writer, format string, states []stackState) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(states)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tSTACK\tREADY\tMANAGED BY\tREVISION\tLAST OPERATION")
	for _, s := range states {
		name := s.Name
		if s.Namespace != "" {
			name = s.Namespace + "/" + s.Name
		}
		ready, by, rev, last := "-", "-", "-", "not created"
		if s.Exists {
			ready, by, last = fmt.Sprint(s.Ready), string(s.ManagedBy), "none"
			if s.Last != nil {
				last = fmt.Sprintf("%s %s %s", s.Last.Kind, s.Last.Result, s.Last.Started.UTC().Format(time.RFC3339))
			}
		}
		if r := s.Revision; r != nil {
			rev = r.ID + " (" + r.Version
			if r.Commit != "" {
				rev += " " + shortCommit(r.Commit)
			}
			rev += ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Kind, name, s.Stack, ready, by, rev, last)
	}
	return tw.Flush()
}

// shortCommit is a commit's first 12 characters, with its -dirty mark.
func shortCommit(c string) string {
	base, dirty := strings.CutSuffix(c, "-dirty")
	if len(base) > 12 {
		base = base[:12]
	}
	if dirty {
		base += "-dirty"
	}
	return base
}
