// Package progress turns the engine's event stream of an operation into what people watch:
// resources done out of an expected total, per component, and the component being worked on.
// The operator writes it to status.lastOperation.progress (throttled, see Throttle); the CLI
// renders it as a progress bar with one line per component (Renderer), for its own operations
// and for an HTTP operation's Server-Sent Events (`tfrs watch`).
package progress

import (
	"strings"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// StackLabel is the group of the resources that belong to no TFRS component: the stack
// itself, its providers and the engine's generated credentials.
const StackLabel = "stack"

// Tracker folds the events of one operation — one stack, or several in order (a personal
// tenant's shared stack, then its own; the CLI's several objects) — into counts. It is not safe
// for concurrent use; the engine calls a sink from one goroutine per operation.
//
// The total is what the engine knows when it is asked: the number of resources in the stack's
// state before the operation (engine.EventStart carries it), which is exact for a no-op or an
// update, a refresh and a destroy, or the number of distinct resources that had a step so far
// when that is larger (a first up, whose state is empty, or an update that adds resources).
// Pulumi announces no plan before an up, so a first up's total grows as the program registers
// resources; it never shrinks, and done never exceeds it.
type Tracker struct {
	stacks []*Stack
	byName map[string]*Stack
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker { return &Tracker{byName: map[string]*Stack{}} }

// Stack is one stack's part of the operation.
type Stack struct {
	Name      string
	Operation engine.OpKind
	// Expected is the resources in the stack's state before the operation.
	Expected int
	// Summary is the engine's final change counts ("create=3 same=12"), once it reported them.
	Summary    string
	Components []*Component

	steps   map[string]*step
	parents map[string]string // URN → parent URN, as the events name them
	comps   map[string]*Component
	current string // the component of the latest step that started
}

// Component is one TFRS component (a ComponentResource of a program, with its children) or
// the stack group (StackLabel).
type Component struct {
	// Label is "<Type> <name>", e.g. "PostgreSQL acme-pg", or StackLabel.
	Label                string
	Done, Total, Failed  int
	Running              int
	LastStep             string // the message of the latest step that started ("create kubernetes:… acme-pg")
	changed              bool   // a step changed something (not only "same")
	started, wasComplete bool
}

// Complete reports whether every step of the component seen so far has finished.
func (c *Component) Complete() bool {
	return c.Total > 0 && c.Running == 0 && c.Done+c.Failed >= c.Total
}

type step struct {
	comp    *Component
	done    bool
	failed  bool
	running bool
}

// Observe folds one event in and reports whether the counts changed.
func (t *Tracker) Observe(e engine.Event) bool {
	if e.Stack == "" {
		return false
	}
	s := t.byName[e.Stack]
	if s == nil {
		s = &Stack{Name: e.Stack, Operation: e.Operation, steps: map[string]*step{}, parents: map[string]string{}, comps: map[string]*Component{}}
		t.byName[e.Stack] = s
		t.stacks = append(t.stacks, s)
	}
	switch e.Kind {
	case engine.EventStart:
		s.Operation, s.Expected = e.Operation, e.Resources
		return true
	case engine.EventSummary:
		s.Summary = e.Message
		s.settle()
		return true
	case engine.EventStepStart, engine.EventStepDone, engine.EventStepFailed:
	default:
		return false
	}
	if e.URN == "" {
		return false
	}
	if e.Parent != "" {
		s.parents[e.URN] = e.Parent
	}
	st := s.steps[e.URN]
	if st == nil {
		c := s.component(e.URN)
		st = &step{comp: c}
		s.steps[e.URN] = st
		c.Total++
	}
	c := st.comp
	c.started = true
	switch e.Kind {
	case engine.EventStepStart:
		// A replacement has several steps on one URN: running again until the next is done.
		if st.done {
			st.done = false
			c.Done--
		}
		if !st.running {
			st.running = true
			c.Running++
		}
		c.LastStep = e.Message
		if e.Op != engine.StepSame && e.Op != "" {
			c.changed = true
		}
		s.current = c.Label
	case engine.EventStepDone:
		if st.running {
			st.running = false
			c.Running--
		}
		if !st.done && !st.failed {
			st.done = true
			c.Done++
		}
	case engine.EventStepFailed:
		if st.running {
			st.running = false
			c.Running--
		}
		if st.done {
			st.done = false
			c.Done--
		}
		if !st.failed {
			st.failed = true
			c.Failed++
		}
		s.current = c.Label
	}
	return true
}

// settle counts as done the steps still running when the stack's summary arrives. The engine
// reports the summary after every step ended, so those are remote components (a Helm v4
// Chart, a yaml/v2 ConfigFile: the provider constructs them and their step has no outputs event
// of its own), not work still going on.
func (s *Stack) settle() {
	for _, st := range s.steps {
		if st.running && !st.failed {
			st.running, st.done = false, true
			st.comp.Running--
			st.comp.Done++
		}
	}
}

// component returns the component a resource belongs to, creating it on first sight.
func (s *Stack) component(urn string) *Component {
	label := s.labelOf(urn)
	c := s.comps[label]
	if c == nil {
		c = &Component{Label: label}
		s.comps[label] = c
		s.Components = append(s.Components, c)
	}
	return c
}

// labelOf finds the outermost TFRS component above urn: the ancestor (or urn itself) whose
// type chain has one element, by the parents the events named. Without them (an event stream
// of an older server) the component's type alone labels it.
func (s *Stack) labelOf(urn string) string {
	chain, _ := splitURN(urn)
	if len(chain) == 0 || !isComponentType(chain[0]) {
		return StackLabel
	}
	cur := urn
	for range 64 { // bounded: a malformed stream must not loop
		ch, name := splitURN(cur)
		if len(ch) == 1 {
			return shortType(ch[0]) + " " + name
		}
		p, ok := s.parents[cur]
		if !ok {
			break
		}
		cur = p
	}
	return shortType(chain[0])
}

// isComponentType: the programs' components are tfrs:<level>:<Name>; tfrs:engine:* are the
// engine's own resources (generated credentials), grouped with the stack.
func isComponentType(t string) bool {
	return strings.HasPrefix(t, "tfrs:") && !strings.HasPrefix(t, "tfrs:engine:")
}

// splitURN returns a URN's type chain (outermost parent type first) and its name:
// urn:pulumi:<stack>::<project>::<type>$<type>…::<name>.
func splitURN(urn string) ([]string, string) {
	rest, ok := strings.CutPrefix(urn, "urn:pulumi:")
	if !ok {
		return nil, ""
	}
	parts := strings.SplitN(rest, "::", 4)
	if len(parts) != 4 {
		return nil, ""
	}
	return strings.Split(parts[2], "$"), parts[3]
}

// shortType is the last element of a type token: tfrs:tenant:PostgreSQL → PostgreSQL.
func shortType(t string) string {
	if i := strings.LastIndex(t, ":"); i >= 0 {
		return t[i+1:]
	}
	return t
}

// Done is the resources whose step finished (failed ones included: they are not pending).
func (s *Stack) Done() int {
	n := 0
	for _, c := range s.Components {
		n += c.Done + c.Failed
	}
	return n
}

// Total is the expected resources: the state's count before the operation, or the resources
// seen so far when more.
func (s *Stack) Total() int { return max(s.Expected, len(s.steps), s.Done()) }

// Failed is the resources whose step failed.
func (s *Stack) Failed() int {
	n := 0
	for _, c := range s.Components {
		n += c.Failed
	}
	return n
}

// Current is the label of the component whose step started last ("" before any).
func (s *Stack) Current() string { return s.current }

// Snapshot is the operation's progress at one moment.
type Snapshot struct {
	Done, Total, Failed int
	// Stack and Component are where the work is now: the latest stack and the component of
	// its latest step.
	Stack, Component string
}

// Snapshot sums the stacks seen so far.
func (t *Tracker) Snapshot() Snapshot {
	var sn Snapshot
	for _, s := range t.stacks {
		sn.Done += s.Done()
		sn.Total += s.Total()
		sn.Failed += s.Failed()
		sn.Stack = s.Name
		if c := s.Current(); c != "" {
			sn.Component = c
		}
	}
	return sn
}

// Complete is the snapshot of an operation that succeeded: every step finished, so the total
// is what was done (the state's earlier count may include resources the run removed without
// a step of their own).
func (t *Tracker) Complete() Snapshot {
	sn := t.Snapshot()
	sn.Done, sn.Total = 0, 0
	for _, s := range t.stacks {
		sn.Done += len(s.steps)
	}
	sn.Total = sn.Done
	return sn
}

// Stacks are the stacks seen, in order.
func (t *Tracker) Stacks() []*Stack { return t.stacks }
