package diff

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// SchemaVersion is the version of the JSON document WriteJSON writes. It changes only when a
// field is removed or changes meaning; new fields may appear without a bump.
const SchemaVersion = 1

// Document is the JSON that WriteJSON writes (`tfrs preview -o json`). Schema version 1:
//
//	{
//	  "schemaVersion": 1,
//	  "operation": "preview",          // preview | up | refresh | destroy
//	  "hasChanges": true,              // any report has changes (or was skipped)
//	  "hasDataLoss": false,            // any change destroys stateful data
//	  "summary": {"create": 2, "same": 40, …},   // step counts by op over all reports
//	  "dataLoss": [Change…],           // every data-loss change, listed first
//	  "reports": [{                    // one per object, in the order they ran
//	    "target": {"kind": "TFRTenant", "namespace": "tfrs-system", "name": "acme",
//	               "stack": "tenant.tfrs-system.acme", "shared": "…", "parent": "cluster.dev", …},
//	    "operation": "preview",
//	    "summary": {"update": 1, "same": 40},
//	    "changes": [Change…],          // steps that change something, never "same"
//	    "dataLoss": [Change…],         // the subset of changes that lose data
//	    "skipped": "…",                // optional: why the object was not previewed
//	    "error": "…"                   // optional: the error it stopped with
//	  }]
//	}
//
// where a Change is
//
//	{"stack": "tenant.tfrs-system.acme", "urn": "urn:pulumi:…", "op": "update",
//	 "type": "kubernetes:postgresql.cnpg.io/v1:Cluster", "name": "acme-pg",
//	 "component": "postgresql", "paths": ["spec.instances"], "replaceKeys": […], "dataLoss": true}
//
// and op is one of create, update, replace, delete, import, other. Arrays are never null;
// map keys and changes are sorted, so equal inputs give byte-equal documents.
type Document struct {
	SchemaVersion int                   `json:"schemaVersion"`
	Operation     engine.OpKind         `json:"operation,omitempty"`
	HasChanges    bool                  `json:"hasChanges"`
	HasDataLoss   bool                  `json:"hasDataLoss"`
	Summary       map[engine.StepOp]int `json:"summary"`
	DataLoss      []Change              `json:"dataLoss"`
	Reports       []*Report             `json:"reports"`
}

// NewDocument aggregates reports (nil entries are skipped).
func NewDocument(reports ...*Report) *Document {
	d := &Document{SchemaVersion: SchemaVersion, Summary: map[engine.StepOp]int{}, DataLoss: []Change{}, Reports: []*Report{}}
	for _, r := range reports {
		if r == nil {
			continue
		}
		d.Reports = append(d.Reports, r)
		if d.Operation == "" {
			d.Operation = r.Operation
		}
		d.HasChanges = d.HasChanges || r.HasChanges()
		d.HasDataLoss = d.HasDataLoss || r.HasDataLoss()
		for op, n := range r.Summary {
			d.Summary[op] += n
		}
		d.DataLoss = append(d.DataLoss, r.DataLoss...)
	}
	return d
}

// WriteJSON writes the reports as one Document (see its schema), indented.
func WriteJSON(w io.Writer, reports ...*Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewDocument(reports...))
}

// displayOps is the order ops are listed in; anything else follows alphabetically.
var displayOps = []engine.StepOp{engine.StepCreate, engine.StepUpdate, engine.StepReplace, engine.StepDelete, engine.StepImport}

func symbol(op engine.StepOp) string {
	switch op {
	case engine.StepCreate:
		return "+"
	case engine.StepUpdate:
		return "~"
	case engine.StepReplace:
		return "+-"
	case engine.StepDelete:
		return "-"
	case engine.StepImport:
		return "="
	}
	return "?"
}

// orderedOps lists the ops of counts in display order, "same" last.
func orderedOps(counts map[engine.StepOp]int) []engine.StepOp {
	var out []engine.StepOp
	seen := map[engine.StepOp]bool{engine.StepSame: true}
	for _, op := range displayOps {
		seen[op] = true
		if counts[op] > 0 {
			out = append(out, op)
		}
	}
	var rest []string
	for op, n := range counts {
		if !seen[op] && n > 0 {
			rest = append(rest, string(op))
		}
	}
	sort.Strings(rest)
	for _, op := range rest {
		out = append(out, engine.StepOp(op))
	}
	if counts[engine.StepSame] > 0 {
		out = append(out, engine.StepSame)
	}
	return out
}

// summaryLine is "1 to create, 2 to update, 40 unchanged" (a preview) or "1 created, …".
func summaryLine(op engine.OpKind, counts map[engine.StepOp]int) string {
	var parts []string
	for _, s := range orderedOps(counts) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], verb(op, s)))
	}
	if len(parts) == 0 {
		return "no resources"
	}
	return strings.Join(parts, ", ")
}

// verb phrases a step op for a planned (preview) or applied operation.
func verb(op engine.OpKind, s engine.StepOp) string {
	if s == engine.StepSame {
		return "unchanged"
	}
	if op == engine.OpPreview {
		return "to " + string(s)
	}
	switch s {
	case engine.StepCreate, engine.StepUpdate, engine.StepReplace, engine.StepDelete:
		return strings.TrimSuffix(string(s), "e") + "ed"
	case engine.StepImport, engine.StepRefresh:
		return string(s) + "ed"
	}
	return string(s)
}

// group is the changes of one component of one stack.
type group struct {
	stack, component string
	changes          []Change
}

// groups splits a report's changes by stack (in report order) and component (sorted).
func (r *Report) groups() []group {
	var out []group
	idx := map[[2]string]int{}
	for _, c := range r.Changes {
		k := [2]string{c.Stack, c.Component}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, group{stack: c.Stack, component: c.Component})
		}
		out[i].changes = append(out[i].changes, c)
	}
	return out
}

func componentLabel(c string) string {
	if c == "" {
		return "(stack)"
	}
	return c
}

func (g group) label(own string) string {
	if g.stack != "" && g.stack != own {
		return componentLabel(g.component) + " (stack " + g.stack + ")"
	}
	return componentLabel(g.component)
}

func paths(c Change) string {
	if len(c.Paths) == 0 {
		return ""
	}
	return strings.Join(c.Paths, ", ")
}

// WriteText writes a plain-text review: data loss first, then each object's changes grouped
// by component, then totals. It is what `tfrs preview` prints by default.
func WriteText(w io.Writer, reports ...*Report) error {
	d := NewDocument(reports...)
	b := bufio.NewWriter(w)
	if len(d.DataLoss) > 0 {
		fmt.Fprintf(b, "WARNING: DATA LOSS: %d change(s) replace or delete stateful data:\n", len(d.DataLoss))
		for _, c := range d.DataLoss {
			fmt.Fprintf(b, "  %-2s %-7s %s %s (component %s, stack %s)\n", symbol(c.Op), c.Op, c.Type, c.Name, componentLabel(c.Component), c.Stack)
		}
		b.WriteString("\n")
	}
	for _, r := range d.Reports {
		fmt.Fprintf(b, "%s (stack %s): %s\n", r.Target, r.Target.Stack, r.Operation)
		for _, wn := range r.Warnings {
			fmt.Fprintf(b, "  warning: %s\n", wn)
		}
		if r.Skipped != "" {
			fmt.Fprintf(b, "  skipped: %s\n", r.Skipped)
		}
		if r.Error != "" {
			fmt.Fprintf(b, "  error: %s\n", r.Error)
		}
		if len(r.Changes) == 0 {
			fmt.Fprintf(b, "  no changes (%s)\n\n", summaryLine(r.Operation, r.Summary))
			continue
		}
		for _, g := range r.groups() {
			fmt.Fprintf(b, "  %s\n", g.label(r.Target.Stack))
			for _, c := range g.changes {
				fmt.Fprintf(b, "    %-2s %-7s %s %s", symbol(c.Op), c.Op, c.Type, c.Name)
				if p := paths(c); p != "" {
					fmt.Fprintf(b, " [%s]", p)
				}
				if len(c.ReplaceKeys) > 0 {
					fmt.Fprintf(b, " (replace: %s)", strings.Join(c.ReplaceKeys, ", "))
				}
				if c.DataLoss {
					b.WriteString(" DATA LOSS")
				}
				if c.Retained {
					b.WriteString(" (retained in the cluster)")
				}
				b.WriteString("\n")
			}
		}
		fmt.Fprintf(b, "  %s\n\n", summaryLine(r.Operation, r.Summary))
	}
	if len(d.Reports) > 1 {
		fmt.Fprintf(b, "total: %s\n", summaryLine(d.Operation, d.Summary))
	}
	return b.Flush()
}

// MarkdownMarker opens every Markdown report, so a CI job can find and update its previous
// comment instead of adding a new one per push.
const MarkdownMarker = "<!-- tfrs-preview -->"

// WriteMarkdown writes a pull-request comment: a data-loss warning first, the summary counts,
// then per object a table of changes per component, the resources of each component in a
// collapsible <details>, and the component graph as a Mermaid picture with the changed components
// highlighted. graphs are keyed by the object's own stack (Report.Target.Stack); a report
// without a graph gets no picture.
func WriteMarkdown(w io.Writer, graphs map[string]*stacks.Graph, reports ...*Report) error {
	d := NewDocument(reports...)
	b := bufio.NewWriter(w)
	title := "tfrs " + string(d.Operation)
	if d.Operation == "" {
		title = "tfrs"
	}
	fmt.Fprintf(b, "%s\n## %s\n\n", MarkdownMarker, title)
	if len(d.DataLoss) > 0 {
		b.WriteString("> [!CAUTION]\n")
		fmt.Fprintf(b, "> **Data loss:** %d change(s) replace or delete stateful data (databases, object storage, volumes or a tenant namespace):\n>\n", len(d.DataLoss))
		for _, c := range d.DataLoss {
			fmt.Fprintf(b, "> - **%s** `%s` %s — component `%s`, stack `%s`\n", c.Op, md(c.Name), md(c.Type), md(componentLabel(c.Component)), md(c.Stack))
		}
		b.WriteString("\n")
	}
	if !d.HasChanges {
		fmt.Fprintf(b, "**No changes.** %s.\n", summaryLine(d.Operation, d.Summary))
	} else {
		fmt.Fprintf(b, "**Summary:** %s.\n", summaryLine(d.Operation, d.Summary))
	}
	for _, r := range d.Reports {
		fmt.Fprintf(b, "\n### %s `%s`\n\n", r.Target.Kind, md(targetName(r)))
		fmt.Fprintf(b, "Stack `%s`: %s.\n", md(r.Target.Stack), summaryLine(r.Operation, r.Summary))
		for _, wn := range r.Warnings {
			fmt.Fprintf(b, "\n> [!CAUTION]\n> Outside upstream support: %s\n", md(wn))
		}
		if r.Skipped != "" {
			fmt.Fprintf(b, "\n> [!NOTE]\n> Not previewed: %s\n", md(r.Skipped))
		}
		if r.Error != "" {
			fmt.Fprintf(b, "\n> [!WARNING]\n> Failed: %s\n", md(r.Error))
		}
		groups := r.groups()
		if len(groups) > 0 {
			writeComponentTable(b, r, groups)
			for _, g := range groups {
				writeComponentDetails(b, r, g)
			}
		}
		if g := graphs[r.Target.Stack]; g != nil {
			hl := map[string]bool{}
			for _, c := range r.Changes {
				if c.Component != "" {
					hl[c.Component] = true
				}
			}
			b.WriteString("\nComponent graph, changed components highlighted:\n\n```mermaid\n")
			if err := g.WriteMermaid(b, hl, nil); err != nil {
				return err
			}
			b.WriteString("```\n")
		}
	}
	return b.Flush()
}

func targetName(r *Report) string {
	if r.Target.Namespace == "" {
		return r.Target.Name
	}
	return r.Target.Namespace + "/" + r.Target.Name
}

// tableOps are the columns of the per-component table.
var tableOps = []engine.StepOp{engine.StepCreate, engine.StepUpdate, engine.StepReplace, engine.StepDelete}

func writeComponentTable(b *bufio.Writer, r *Report, groups []group) {
	b.WriteString("\n| component | create | update | replace | delete | other | data loss |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, g := range groups {
		counts := map[engine.StepOp]int{}
		loss := 0
		for _, c := range g.changes {
			counts[c.Op]++
			if c.DataLoss {
				loss++
			}
		}
		other := len(g.changes)
		fmt.Fprintf(b, "| `%s` |", md(g.label(r.Target.Stack)))
		for _, op := range tableOps {
			other -= counts[op]
			fmt.Fprintf(b, " %s |", count(counts[op]))
		}
		fmt.Fprintf(b, " %s |", count(other))
		if loss > 0 {
			fmt.Fprintf(b, " :warning: %d |\n", loss)
		} else {
			b.WriteString("  |\n")
		}
	}
}

func count(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func writeComponentDetails(b *bufio.Writer, r *Report, g group) {
	counts := map[engine.StepOp]int{}
	for _, c := range g.changes {
		counts[c.Op]++
	}
	fmt.Fprintf(b, "\n<details><summary><code>%s</code>: %s</summary>\n\n", html(g.label(r.Target.Stack)), summaryLine(r.Operation, counts))
	b.WriteString("| op | type | name | changed paths |\n|---|---|---|---|\n")
	for _, c := range g.changes {
		op := string(c.Op)
		if c.DataLoss {
			op = ":warning: **" + op + "**"
		}
		if c.Retained {
			op += " (retained)"
		}
		ps := make([]string, 0, len(c.Paths))
		for _, p := range c.Paths {
			ps = append(ps, "`"+md(p)+"`")
		}
		cell := strings.Join(ps, " ")
		if len(c.ReplaceKeys) > 0 {
			ks := make([]string, 0, len(c.ReplaceKeys))
			for _, k := range c.ReplaceKeys {
				ks = append(ks, "`"+md(k)+"`")
			}
			cell = strings.TrimSpace(cell + " (replace: " + strings.Join(ks, " ") + ")")
		}
		fmt.Fprintf(b, "| %s | `%s` | `%s` | %s |\n", op, md(c.Type), md(c.Name), cell)
	}
	b.WriteString("\n</details>\n")
}

// md keeps a value from breaking a table cell or a code span.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "`", "'", "\n", " ").Replace(s)
}

// html escapes text inside an HTML tag body.
func html(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
