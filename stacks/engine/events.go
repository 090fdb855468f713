package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
)

// EventKind classifies progress events.
type EventKind string

const (
	EventStart      EventKind = "start"       // the operation began (after locks were taken)
	EventStepStart  EventKind = "step-start"  // a resource step began (or is planned, in a preview)
	EventStepDone   EventKind = "step-done"   // a resource step finished
	EventStepFailed EventKind = "step-failed" // a resource step failed
	EventDiag       EventKind = "diag"        // a diagnostic message (see Severity)
	EventRecovery   EventKind = "recovery"    // the engine repaired an interrupted earlier run
	EventSummary    EventKind = "summary"     // the final change counts
)

// Event is one progress record. Messages are redacted of known secrets; property values are
// never included.
type Event struct {
	Time      time.Time `json:"time"`
	Stack     string    `json:"stack"`
	Operation OpKind    `json:"operation"`
	Kind      EventKind `json:"kind"`
	URN       string    `json:"urn,omitempty"`
	Type      string    `json:"type,omitempty"`
	// Parent is the URN of a step's parent resource (a component's children name it), so a
	// progress display can group resources by component.
	Parent string `json:"parent,omitempty"`
	// Resources, on EventStart, is how many resources the stack's state held before the
	// operation (the stack itself and its providers included): the expected number of steps
	// of an update, refresh or destroy; 0 for a new stack.
	Resources int    `json:"resources,omitempty"`
	Op        StepOp `json:"op,omitempty"`
	Severity  string `json:"severity,omitempty"` // info, warning, error (diagnostics)
	Message   string `json:"message,omitempty"`
	// Ephemeral diagnostics are status lines ("waiting for pods…") that a terminal overwrites.
	Ephemeral bool `json:"ephemeral,omitempty"`
}

// Sink receives events. It is called from one goroutine per operation, in order; it must not
// block for long, because Pulumi's event stream waits for it.
type Sink func(Event)

// collector turns the Automation API event stream into Events for the sink and into the
// Result's steps and counts.
type collector struct {
	op    OpKind
	stack string
	sink  Sink
	red   *redactor

	mu       sync.Mutex
	steps    map[string]*Step
	order    []string
	summary  map[string]int
	errs     []string
	warnings []string
	seen     int
	// failedCreates are the create steps that failed, with their checked inputs (secrets
	// dropped), and urnErrs the error diagnostics by URN: together they tell which creates a
	// cancel aborted in flight (abortedCreates).
	failedCreates map[string]map[string]any
	urnErrs       map[string][]string
	dones         []chan struct{}
	quit          chan struct{}
	quitOnce      sync.Once
	closed        bool // after the operation returned: late events are dropped, not delivered
}

func newCollector(op OpKind, stack string, sink Sink, red *redactor) *collector {
	return &collector{op: op, stack: stack, sink: sink, red: red, steps: map[string]*Step{}}
}

// emit delivers an engine-made event (start, recovery) through the same path.
func (c *collector) emit(kind EventKind, msg string) {
	c.deliver(Event{Kind: kind, Message: c.red.redact(msg)})
}

// warn records a warning of the engine's own (not the CLI's) in the result and delivers it.
func (c *collector) warn(msg string) {
	msg = c.red.redact(msg)
	c.mu.Lock()
	c.warnings = append(c.warnings, msg)
	c.mu.Unlock()
	c.deliver(Event{Kind: EventDiag, Severity: "warning", Message: msg})
}

func (c *collector) deliver(e Event) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed || c.sink == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Stack, e.Operation = c.stack, c.op
	c.sink(e)
}

// stream returns a fresh channel for one Automation API call (a retried call needs a new one:
// the event server closes its receivers when the CLI's stream ends).
func (c *collector) stream() chan events.EngineEvent {
	ch := make(chan events.EngineEvent)
	done := make(chan struct{})
	c.mu.Lock()
	c.dones = append(c.dones, done)
	if c.quit == nil {
		c.quit = make(chan struct{})
	}
	quit := c.quit
	c.mu.Unlock()
	go c.consume(ch, done, quit)
	return ch
}

// consume drains ch until it is closed. While the Automation API call runs it must keep
// reading: the event server blocks on every send, and stopping early would hang the call.
// quit is closed only after the call returned (its server is stopped by then), for streams the
// CLI never opened.
func (c *collector) consume(ch <-chan events.EngineEvent, done chan<- struct{}, quit <-chan struct{}) {
	defer close(done)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if ev.Error == nil {
				c.handle(ev.EngineEvent)
			}
		case <-quit:
			return
		}
	}
}

// drain waits (briefly) for the streams to end after the Automation API call returned.
func (c *collector) drain(timeout time.Duration) {
	c.mu.Lock()
	dones := append([]chan struct{}(nil), c.dones...)
	quit := c.quit
	c.mu.Unlock()
	deadline := time.After(timeout)
	for _, d := range dones {
		select {
		case <-d:
		case <-deadline:
		}
	}
	if quit != nil {
		c.quitOnce.Do(func() { close(quit) })
	}
}

func (c *collector) handle(ev apitype.EngineEvent) {
	t := time.Unix(int64(ev.Timestamp), 0)
	if ev.Timestamp == 0 {
		t = time.Now()
	}
	c.mu.Lock()
	c.seen++
	c.mu.Unlock()
	switch {
	case ev.PreludeEvent != nil:
		// The prelude carries config; it says nothing the caller needs and may hold values.
	case ev.ResourcePreEvent != nil:
		m := ev.ResourcePreEvent.Metadata
		op := c.step(m, false, false)
		c.deliver(Event{Time: t, Kind: EventStepStart, URN: m.URN, Type: m.Type, Parent: parentOf(m), Op: op, Message: stepMessage(op, m)})
	case ev.ResOutputsEvent != nil:
		m := ev.ResOutputsEvent.Metadata
		op := c.step(m, true, false)
		c.deliver(Event{Time: t, Kind: EventStepDone, URN: m.URN, Type: m.Type, Parent: parentOf(m), Op: op})
	case ev.ResOpFailedEvent != nil:
		m := ev.ResOpFailedEvent.Metadata
		op := c.step(m, false, true)
		c.failedCreate(m)
		c.deliver(Event{Time: t, Kind: EventStepFailed, URN: m.URN, Type: m.Type, Parent: parentOf(m), Op: op, Severity: "error"})
	case ev.DiagnosticEvent != nil:
		d := ev.DiagnosticEvent
		msg := c.red.redact(strings.TrimSpace(d.Prefix + d.Message))
		sev := strings.TrimSuffix(d.Severity, "#err")
		c.mu.Lock()
		switch sev {
		case "error":
			c.errs = append(c.errs, msg)
			if d.URN != "" {
				if c.urnErrs == nil {
					c.urnErrs = map[string][]string{}
				}
				c.urnErrs[d.URN] = append(c.urnErrs[d.URN], msg)
			}
		case "warning":
			c.warnings = append(c.warnings, msg)
		}
		c.mu.Unlock()
		c.deliver(Event{Time: t, Kind: EventDiag, URN: d.URN, Severity: sev, Message: msg, Ephemeral: d.Ephemeral})
	case ev.StdoutEvent != nil:
		msg := c.red.redact(strings.TrimSpace(ev.StdoutEvent.Message))
		if msg != "" {
			c.deliver(Event{Time: t, Kind: EventDiag, Severity: "info", Message: msg})
		}
	case ev.SummaryEvent != nil:
		s := ev.SummaryEvent
		c.mu.Lock()
		c.summary = map[string]int{}
		for op, n := range s.ResourceChanges {
			c.summary[string(op)] += n
		}
		c.mu.Unlock()
		c.deliver(Event{Time: t, Kind: EventSummary, Message: summaryMessage(s.ResourceChanges)})
	case ev.CancelEvent != nil:
		// Pulumi closes every event stream with a CancelEvent, canceled or not: it marks the
		// end of the stream, not a cancellation. A real cancellation surfaces as ErrCanceled
		// from the operation itself.
	}
}

// failedCreate remembers a failed create of a Kubernetes object as the state would hold it,
// without its secret values: the event stream only carries them blinded.
func (c *collector) failedCreate(m apitype.StepEventMetadata) {
	if (m.Op != "create" && m.Op != "create-replacement") || m.New == nil {
		return
	}
	r := resourceDoc{URN: m.URN, Type: m.Type, Custom: m.New.Custom, Inputs: m.New.Inputs}
	if !isKubernetesObject(r) {
		return
	}
	res := map[string]any{"urn": m.URN, "type": m.Type, "custom": true, "inputs": withoutSecrets(m.New.Inputs)}
	if m.New.Parent != "" {
		res["parent"] = m.New.Parent
	}
	if m.New.Provider != "" {
		res["provider"] = m.New.Provider
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failedCreates == nil {
		c.failedCreates = map[string]map[string]any{}
	}
	c.failedCreates[m.URN] = res
}

// abortedCreates are the failed creates whose request was cut off by the operation's context
// (the cancel reached the provider while the request was in flight): the API server may have
// made the object although the step failed, and Pulumi keeps no pending operation for it.
// A create the server refused (a schema error, AlreadyExists) is not among them.
func (c *collector) abortedCreates() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, urn := range c.order {
		res, ok := c.failedCreates[urn]
		if !ok {
			continue
		}
		if slices.ContainsFunc(c.urnErrs[urn], func(msg string) bool {
			return strings.Contains(msg, "context canceled") || strings.Contains(msg, "context deadline exceeded")
		}) {
			out = append(out, res)
		}
	}
	return out
}

// withoutSecrets drops every secret value (and the key holding it) from serialized properties.
func withoutSecrets(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if v, keep := dropSecrets(v); keep {
			out[k] = v
		}
	}
	return out
}

func dropSecrets(v any) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		if _, secret := t[secretSig]; secret {
			return nil, false
		}
		return withoutSecrets(t), true
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			if e, keep := dropSecrets(e); keep {
				out = append(out, e)
			}
		}
		return out, true
	}
	return v, true
}

// step records a step; a replacement's several events fold into one entry per URN.
func (c *collector) step(m apitype.StepEventMetadata, done, failed bool) StepOp {
	op := stepOpOf(string(m.Op))
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.steps[m.URN]
	if !ok {
		s = &Step{URN: m.URN, Type: m.Type, Op: op}
		c.steps[m.URN] = s
		c.order = append(c.order, m.URN)
	} else if op == StepReplace || s.Op == StepSame {
		s.Op = op
	}
	if diffs := diffPaths(m); len(diffs) > 0 {
		s.Diffs = diffs
	}
	if len(m.Keys) > 0 {
		s.ReplaceKeys = append([]string(nil), m.Keys...)
	}
	s.Done = s.Done || done
	s.Failed = s.Failed || failed
	return s.Op
}

// parentOf is a step's parent URN, from its new state or (a delete) its old one.
func parentOf(m apitype.StepEventMetadata) string {
	if m.New != nil && m.New.Parent != "" {
		return m.New.Parent
	}
	if m.Old != nil {
		return m.Old.Parent
	}
	return ""
}

// diffPaths prefers the detailed diff (full property paths) over top-level keys.
func diffPaths(m apitype.StepEventMetadata) []string {
	var out []string
	for k := range m.DetailedDiff {
		out = append(out, k)
	}
	if len(out) == 0 {
		out = append(out, m.Diffs...)
	}
	sort.Strings(out)
	return out
}

func stepMessage(op StepOp, m apitype.StepEventMetadata) string {
	name := m.URN
	if i := strings.LastIndex(name, "::"); i >= 0 {
		name = name[i+2:]
	}
	return fmt.Sprintf("%s %s %s", op, m.Type, name)
}

func summaryMessage(ch map[apitype.OpType]int) string {
	keys := make([]string, 0, len(ch))
	for k := range ch {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, ch[apitype.OpType(k)]))
	}
	return strings.Join(parts, " ")
}

// finish stops delivery and fills the result.
func (c *collector) finish(res *Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	res.Steps = make([]Step, 0, len(c.order))
	counted := Changes{}
	for _, urn := range c.order {
		s := *c.steps[urn]
		res.Steps = append(res.Steps, s)
		counted[s.Op]++
	}
	if c.summary != nil {
		res.Changes = Changes{}
		for op, n := range c.summary {
			res.Changes[stepOpOf(op)] += n
		}
	} else {
		res.Changes = counted
	}
	res.Warnings = append([]string(nil), c.warnings...)
}

func (c *collector) errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errs...)
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}
