package fleet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Report is the answer of a fleet preview.
type Report struct {
	// Entries, one per object, in the order the objects were given.
	Entries []Entry `json:"entries"`
	// Counts are the entries by status.
	Counts map[Status]int `json:"counts"`
	// Proven counts the entries reported unchanged without running Pulumi.
	Proven int `json:"proven"`
	// Groups are the changes across the fleet: one per component and kind of change, with the
	// stacks it appears on, data loss first, then the most widespread.
	Groups []Group `json:"groups"`
	// DataLoss is true when any change replaces or deletes stateful data.
	DataLoss bool `json:"dataLoss"`
	// Seconds is the wall time of the whole preview.
	Seconds float64 `json:"seconds"`
}

// Group is one kind of change and where it appears.
type Group struct {
	// Component is the component id ("grafana", "postgresql"…; "" for the stack root).
	Component string `json:"component"`
	Op        string `json:"op"`
	// Type is the resource's Pulumi type, Paths the changed property paths (never values).
	Type     string   `json:"type"`
	Paths    []string `json:"paths,omitempty"`
	DataLoss bool     `json:"dataLoss,omitempty"`
	// Stacks are where it appears, sorted.
	Stacks []string `json:"stacks"`
}

// Label describes the change in a line: "update kubernetes:helm.sh/v3:Release (spec.version)".
func (g Group) Label() string {
	s := g.Op + " " + g.Type
	if len(g.Paths) > 0 {
		s += " (" + strings.Join(g.Paths, ", ") + ")"
	}
	return s
}

func newReport(entries []Entry, wall time.Duration) *Report {
	r := &Report{Entries: entries, Counts: map[Status]int{}, Seconds: wall.Seconds()}
	groups := map[string]*Group{}
	for _, e := range entries {
		r.Counts[e.Status]++
		if e.Proven {
			r.Proven++
		}
		r.DataLoss = r.DataLoss || e.DataLoss
		if e.Report == nil {
			continue
		}
		for _, c := range e.Report.Changes {
			g := Group{Component: c.Component, Op: string(c.Op), Type: c.Type, Paths: c.Paths, DataLoss: c.DataLoss}
			key := g.Component + "\x00" + g.Label() + fmt.Sprint(g.DataLoss)
			if groups[key] == nil {
				groups[key] = &g
			}
			gs := groups[key]
			if n := len(gs.Stacks); n == 0 || gs.Stacks[n-1] != e.Target.Stack {
				gs.Stacks = append(gs.Stacks, e.Target.Stack)
			}
		}
	}
	for _, g := range groups {
		sort.Strings(g.Stacks)
		g.Stacks = compact(g.Stacks)
		r.Groups = append(r.Groups, *g)
	}
	sort.Slice(r.Groups, func(i, j int) bool {
		a, b := r.Groups[i], r.Groups[j]
		switch {
		case a.DataLoss != b.DataLoss:
			return a.DataLoss
		case len(a.Stacks) != len(b.Stacks):
			return len(a.Stacks) > len(b.Stacks)
		case a.Component != b.Component:
			return a.Component < b.Component
		}
		return a.Label() < b.Label()
	})
	return r
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// Changed counts the entries with changes.
func (r *Report) Changed() int {
	n := 0
	for s, c := range r.Counts {
		if s.Changed() {
			n += c
		}
	}
	return n
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// summary is the report's first line.
func (r *Report) summary() string {
	parts := []string{fmt.Sprintf("%d stack(s)", len(r.Entries))}
	for _, s := range []Status{StatusReplace, StatusDelete, StatusUpdate, StatusCreate, StatusUnchanged, StatusSuspended, StatusError} {
		if n := r.Counts[s]; n > 0 {
			p := fmt.Sprintf("%d %s", n, s)
			if s == StatusUnchanged && r.Proven > 0 {
				p += fmt.Sprintf(" (%d proven from recorded inputs, no Pulumi run)", r.Proven)
			}
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ") + fmt.Sprintf("; %.1fs", r.Seconds)
}

// WriteText writes the report for a terminal: the summary, the changes across the fleet, then
// the stacks that changed, were skipped or failed.
func (r *Report) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	if r.DataLoss {
		fmt.Fprintln(b, "WARNING: DATA LOSS: a change replaces or deletes stateful data")
	}
	fmt.Fprintf(b, "fleet preview: %s\n", r.summary())
	if len(r.Groups) > 0 {
		fmt.Fprintln(b, "\nchanges:")
		for _, g := range r.Groups {
			loss := ""
			if g.DataLoss {
				loss = " [DATA LOSS]"
			}
			fmt.Fprintf(b, "  %s: %s on %d stack(s)%s: %s\n", componentName(g.Component), g.Label(), len(g.Stacks), loss, joinShort(g.Stacks, 5))
		}
	}
	for _, e := range r.Entries {
		switch {
		case e.Status.Changed():
			fmt.Fprintf(b, "%-9s %s\n", e.Status, e.Target.Stack)
		case e.Status == StatusSuspended || e.Status == StatusError:
			fmt.Fprintf(b, "%-9s %s: %s\n", e.Status, e.Target.Stack, e.Error)
		}
	}
	return b.Flush()
}

// WriteMarkdown writes the report as a pull-request comment.
func (r *Report) WriteMarkdown(w io.Writer) error {
	b := bufio.NewWriter(w)
	fmt.Fprintln(b, "### tfrs fleet preview")
	if r.DataLoss {
		fmt.Fprintln(b, "\n> [!CAUTION]\n> A change replaces or deletes stateful data (databases, object storage, volumes).")
	}
	fmt.Fprintf(b, "\n**Summary:** %s\n", md(r.summary()))
	if len(r.Groups) > 0 {
		fmt.Fprintln(b, "\n| component | change | stacks | |\n|---|---|---|---|")
		for _, g := range r.Groups {
			loss := ""
			if g.DataLoss {
				loss = "**data loss**"
			}
			fmt.Fprintf(b, "| %s | %s | %d: %s | %s |\n", md(componentName(g.Component)), md(g.Label()), len(g.Stacks), md(joinShort(g.Stacks, 5)), loss)
		}
	}
	fmt.Fprintln(b, "\n<details><summary>Per stack</summary>\n\n| stack | status | |\n|---|---|---|")
	for _, e := range r.Entries {
		note := e.Error
		switch {
		case e.Proven:
			note = "proven from recorded inputs"
		case e.DataLoss:
			note = "**data loss**"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", md(e.Target.Stack), e.Status, md(note))
	}
	fmt.Fprintln(b, "\n</details>")
	return b.Flush()
}

func componentName(c string) string {
	if c == "" {
		return "(stack)"
	}
	return c
}

// md keeps a value from breaking a Markdown table.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

// joinShort joins up to n names, then says how many more.
func joinShort(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, … (%d more)", strings.Join(names[:n], ", "), len(names)-n)
}
