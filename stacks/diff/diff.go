// Package diff turns the outcome of a stack operation (runner.Outcome) into a review of what
// changes: per resource, with the component of the stack graph it belongs to, the changed
// property paths, and a data-loss flag for the replaces and deletes that would destroy
// stateful data. The CLI prints it (text, JSON, Markdown for a pull-request comment) and the
// HTTP API returns it, so every door reports a preview the same way.
//
// Only metadata is reported: resource names, types and property *paths*. Property values
// never reach a report, because previews run against real state and values may be secrets.
package diff

import (
	"sort"
	"strings"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Change is one resource's planned or applied change.
type Change struct {
	Stack string        `json:"stack"`
	URN   string        `json:"urn"`
	Op    engine.StepOp `json:"op"`
	// Type is the Pulumi type token, e.g. kubernetes:apps/v1:Deployment.
	Type string `json:"type"`
	// Name is the resource name from the URN.
	Name string `json:"name"`
	// Component is the component id of the stack graph ("postgresql", "api-worker"…) the
	// resource belongs to, "" for the stack root and resources outside any component.
	Component string `json:"component"`
	// Paths are the changed property paths ("spec.instances", "data.key").
	Paths []string `json:"paths,omitempty"`
	// ReplaceKeys are the paths that force a replacement.
	ReplaceKeys []string `json:"replaceKeys,omitempty"`
	// DataLoss marks a replace or delete of stateful data (see IsDataLoss).
	DataLoss bool `json:"dataLoss,omitempty"`
	// Retained marks a delete of stateful data that the deletion policy keeps in the cluster:
	// the object only leaves the stack (see Report.MarkRetained).
	Retained bool `json:"retained,omitempty"`
}

// Report is what one operation on one object changes (or would change).
type Report struct {
	Target kinds.Target `json:"target"`
	// Operation is preview, up, refresh or destroy.
	Operation engine.OpKind `json:"operation"`
	// Summary counts every step by op, unchanged ("same") ones included.
	Summary map[engine.StepOp]int `json:"summary"`
	// Changes are the steps that change something (no "same", "read" or "refresh").
	Changes []Change `json:"changes"`
	// DataLoss are the changes that destroy stateful data; they are also in Changes.
	DataLoss []Change `json:"dataLoss"`
	// Warnings are the cluster's components outside their upstream support (or unknown to
	// TFRS's support matrix) that were not refused: stacks.SupportFinding messages.
	Warnings []string `json:"warnings,omitempty"`
	// Skipped says why the object was not (fully) previewed, e.g. its parent is created by
	// the same run and has no outputs yet.
	Skipped string `json:"skipped,omitempty"`
	// Error is the error the operation ended with, if any; the changes before it are kept.
	Error string `json:"error,omitempty"`
}

// Types whose replace or delete loses data.
const (
	TypeCNPGCluster = "kubernetes:postgresql.cnpg.io/v1:Cluster" // PostgreSQL and TimescaleDB
	TypeMinIOTenant = "kubernetes:minio.min.io/v2:Tenant"
	TypePVC         = "kubernetes:core/v1:PersistentVolumeClaim"
	TypeNamespace   = "kubernetes:core/v1:Namespace" // only a tenant stack's
)

// IsDataLoss reports whether a change destroys stateful data: a replace or delete of a CNPG
// cluster (PostgreSQL, TimescaleDB), a MinIO tenant, a PVC, or the Namespace of a tenant stack
// (deleting it deletes everything in it). The cluster stack's namespaces (istio-system …) hold
// no tenant data and are not flagged. A Retain deletion policy keeps the object in the
// cluster, yet the change is still flagged: the data then leaves the stack's management, which
// a reviewer must see too.
func IsDataLoss(c Change) bool {
	if c.Op != engine.StepReplace && c.Op != engine.StepDelete {
		return false
	}
	switch c.Type {
	case TypeCNPGCluster, TypeMinIOTenant, TypePVC:
		return true
	case TypeNamespace:
		return isTenantStack(c.Stack)
	}
	return false
}

func isTenantStack(stack string) bool {
	if i := strings.LastIndex(stack, "/"); i >= 0 { // org/project/stack
		stack = stack[i+1:]
	}
	return strings.HasPrefix(stack, stackname.LevelTenant+".")
}

// changing reports whether a step op changes something.
func changing(op engine.StepOp) bool {
	switch op {
	case engine.StepSame, engine.StepRead, engine.StepRefresh:
		return false
	}
	return true
}

// FromOutcome builds the report of an outcome (nil gives an empty report). Changes are
// ordered by stack (in the order they ran), then component, type and name, so the same
// change gives the same report whatever order the engine ran steps in.
func FromOutcome(o *runner.Outcome) *Report {
	r := &Report{Summary: map[engine.StepOp]int{}, Changes: []Change{}, DataLoss: []Change{}}
	if o == nil {
		return r
	}
	r.Target, r.Skipped = o.Target, o.Skipped
	for _, f := range o.Support {
		r.Warnings = append(r.Warnings, f.Message)
	}
	for _, s := range o.Stacks {
		if s.Result == nil {
			continue
		}
		if r.Operation == "" {
			r.Operation = s.Result.Operation
		}
		components := componentNames(s.Result.Steps)
		var changes []Change
		for _, st := range s.Result.Steps {
			qualified, name := ParseURN(st.URN)
			if isDefaultProvider(qualified, name) {
				continue
			}
			r.Summary[st.Op]++
			if !changing(st.Op) {
				continue
			}
			c := Change{
				Stack: s.Stack, URN: st.URN, Op: st.Op, Type: st.Type, Name: name,
				Component:   componentOf(qualified, name, components),
				Paths:       append([]string(nil), st.Diffs...),
				ReplaceKeys: append([]string(nil), st.ReplaceKeys...),
			}
			if c.Type == "" && len(qualified) > 0 {
				c.Type = qualified[len(qualified)-1]
			}
			c.DataLoss = IsDataLoss(c)
			changes = append(changes, c)
		}
		sort.SliceStable(changes, func(i, j int) bool { return lessChange(changes[i], changes[j]) })
		r.Changes = append(r.Changes, changes...)
	}
	for _, c := range r.Changes {
		if c.DataLoss {
			r.DataLoss = append(r.DataLoss, c)
		}
	}
	return r
}

func lessChange(a, b Change) bool {
	if a.Component != b.Component {
		return a.Component < b.Component
	}
	if a.Type != b.Type {
		return a.Type < b.Type
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.URN < b.URN
}

// HasChanges reports whether anything changes (or failed to be previewed: a skipped object
// is pending work, not "no changes").
func (r *Report) HasChanges() bool { return r != nil && (len(r.Changes) > 0 || r.Skipped != "") }

// HasDataLoss reports whether any change destroys stateful data.
func (r *Report) HasDataLoss() bool { return r != nil && len(r.DataLoss) > 0 }

// MarkRetained records that the object's deletion policy is Retain: its stateful objects
// carry Pulumi's retainOnDelete, so their deletes leave them in the cluster and only drop them
// from the stack. Those deletes are marked Retained and leave DataLoss; replaces stay (a
// replacement still swaps the live object). The engine's steps do not carry retainOnDelete,
// so the caller, who knows the object's spec, says so.
func (r *Report) MarkRetained() {
	if r == nil {
		return
	}
	r.DataLoss = []Change{}
	for i := range r.Changes {
		c := &r.Changes[i]
		if c.DataLoss && c.Op == engine.StepDelete {
			c.DataLoss, c.Retained = false, true
		}
		if c.DataLoss {
			r.DataLoss = append(r.DataLoss, *c)
		}
	}
}

// Counts are the report's changes by op (no "same").
func (r *Report) Counts() map[engine.StepOp]int {
	out := map[engine.StepOp]int{}
	for _, c := range r.Changes {
		out[c.Op]++
	}
	return out
}

// Components lists the component ids with changes, sorted ("" for the stack root included).
func (r *Report) Components() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range r.Changes {
		if !seen[c.Component] {
			seen[c.Component] = true
			out = append(out, c.Component)
		}
	}
	sort.Strings(out)
	return out
}

// ParseURN splits "urn:pulumi:<stack>::<project>::<qualified type>::<name>" into the
// qualified type's parts (outermost parent first, the resource's own type last) and the name.
// The name is everything after the third "::", since a resource name may itself hold "::".
func ParseURN(urn string) (qualified []string, name string) {
	parts := strings.SplitN(urn, "::", 4)
	if len(parts) < 4 {
		return nil, ""
	}
	return strings.Split(parts[2], "$"), parts[3]
}

// componentNames maps the type of each top-level component (a resource whose parent is the
// stack) to its name. The programs register each component type once per stack under its
// graph id, so the name *is* the component id. Children carry only their parents' types in
// their URNs, not the names; this map closes the gap.
func componentNames(steps []engine.Step) map[string]string {
	out := map[string]string{}
	for _, st := range steps {
		qualified, name := ParseURN(st.URN)
		if len(qualified) == 1 && isComponentType(qualified[0]) {
			out[qualified[0]] = name
		}
	}
	return out
}

// componentOf is the component id of a resource: the name of its outermost tfrs component.
// When the component's own step is missing (it should not be: the engine reports every step,
// unchanged ones included), the type token's last segment, lower-cased, stands in.
func componentOf(qualified []string, name string, components map[string]string) string {
	if len(qualified) == 0 || !isComponentType(qualified[0]) {
		return ""
	}
	if len(qualified) == 1 {
		return name
	}
	if id, ok := components[qualified[0]]; ok {
		return id
	}
	t := qualified[0]
	return strings.ToLower(t[strings.LastIndex(t, ":")+1:])
}

// isDefaultProvider: the providers Pulumi registers on its own ("default", "default_4_25_0").
// Pulumi's own display and change summary leave them out; so does a report, since their
// comings and goings (e.g. an unversioned default provider that one run used and the next
// drops) change nothing in the cluster.
func isDefaultProvider(qualified []string, name string) bool {
	return len(qualified) == 1 && strings.HasPrefix(qualified[0], "pulumi:providers:") &&
		(name == "default" || strings.HasPrefix(name, "default_"))
}

// isComponentType: the project's components are typed "tfrs:<level>:<Name>".
func isComponentType(t string) bool { return strings.HasPrefix(t, "tfrs:") }
