package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// RenderOptions shape a Renderer.
type RenderOptions struct {
	// Terminal draws a live block — a progress bar and one line per component — redrawn in
	// place with ANSI cursor movement. Otherwise the output is plain lines, nothing redrawn,
	// no escape sequence unless Color: for logs, pipes and NO_COLOR.
	Terminal bool
	// Color paints symbols, failures and warnings.
	Color bool
	// Width truncates the terminal block's lines (default 100).
	Width int
	// Now is the clock of the redraw and progress-line throttles (default time.Now).
	Now func() time.Time
	// Redraw bounds the terminal redraws (default 100ms); PlainEvery is how often plain output
	// prints a "progress n/m" line (default 10s).
	Redraw, PlainEvery time.Duration
}

// Renderer prints an operation's engine events as progress. Event is an engine.Sink; it is safe
// for concurrent use. Close draws the final state.
type Renderer struct {
	w  io.Writer
	o  RenderOptions
	mu sync.Mutex
	tr *Tracker
	// The stack whose block is live (terminal) and the lines it took when drawn last.
	live      *Stack
	lines     int
	redraw    Throttle
	plainLine Throttle
	closed    bool
}

// NewRenderer renders on w.
func NewRenderer(w io.Writer, o RenderOptions) *Renderer {
	if o.Width <= 0 {
		o.Width = 100
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Redraw <= 0 {
		o.Redraw = 100 * time.Millisecond
	}
	if o.PlainEvery <= 0 {
		o.PlainEvery = 10 * time.Second
	}
	r := &Renderer{w: w, o: o, tr: NewTracker(), redraw: Throttle{Interval: o.Redraw}, plainLine: Throttle{Interval: o.PlainEvery}}
	r.plainLine.Allow(o.Now()) // the first progress line comes one period after the start
	return r
}

// Tracker is the renderer's count of the events seen.
func (r *Renderer) Tracker() *Tracker { return r.tr }

// Event renders one engine event.
func (r *Renderer) Event(e engine.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.tr.Observe(e)
	s := r.tr.byName[e.Stack]
	if s == nil {
		return
	}
	if r.o.Terminal {
		r.terminal(e, s)
		return
	}
	r.plain(e, s)
}

// Note prints a line of the caller's (an operation's state, a reconnect) above the progress.
func (r *Renderer) Note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.o.Terminal {
		r.above(msg)
		return
	}
	fmt.Fprintln(r.w, msg)
}

// Close draws the final state of the live block (terminal) and stops rendering.
func (r *Renderer) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	if r.o.Terminal && r.live != nil {
		r.draw()
		r.live, r.lines = nil, 0
	}
}

// message is the line an event prints above the progress (both modes), "" for none: steps
// that change something, failures, warnings and errors, recoveries. Unchanged steps and
// ephemeral status lines stay out, so a log stays readable.
func (r *Renderer) message(e engine.Event) string {
	switch e.Kind {
	case engine.EventRecovery:
		return e.Message
	case engine.EventStepStart:
		if e.Op == engine.StepSame || e.Op == engine.StepRead || e.Op == engine.StepRefresh || e.Op == "" {
			return ""
		}
		if r.o.Terminal {
			return "" // the component's line shows it
		}
		if e.Op == engine.StepDelete || e.Op == engine.StepReplace {
			return r.paint("33", e.Message)
		}
		return e.Message
	case engine.EventStepFailed:
		return r.paint("31", fmt.Sprintf("failed: %s %s", e.Type, e.URN))
	case engine.EventDiag:
		if e.Ephemeral || (e.Severity != "warning" && e.Severity != "error") {
			return ""
		}
		line := e.Message // Pulumi's prefix already says "warning:" or "error:"
		if !strings.HasPrefix(line, e.Severity) {
			line = e.Severity + ": " + line
		}
		if e.Severity == "error" {
			return r.paint("31", line)
		}
		return r.paint("33", line)
	}
	return ""
}

// plain prints line-oriented progress: the start, changing steps, a progress line at most
// every PlainEvery, warnings and errors, and at the end one line per component and the summary.
// (A component is not reported as complete while it runs: the engine may see a component's
// outputs before its children register, so "complete" mid-run can be premature.)
func (r *Renderer) plain(e engine.Event, s *Stack) {
	prefix := r.paint("1", "["+s.Name+"]")
	say := func(line string) { fmt.Fprintf(r.w, "%s %s\n", prefix, line) }
	switch e.Kind {
	case engine.EventStart:
		if s.Expected > 0 {
			say(fmt.Sprintf("%s started: %d resources in the stack", s.Operation, s.Expected))
		} else {
			say(fmt.Sprintf("%s started: a new stack", s.Operation))
		}
		r.plainLine = Throttle{Interval: r.o.PlainEvery}
		r.plainLine.Allow(r.o.Now())
		return
	case engine.EventSummary:
		// The summary closes the stack: one line per component, then the counts.
		width := 0
		for _, c := range s.Components {
			width = max(width, utf8.RuneCountInString(c.Label))
		}
		for _, c := range s.Components {
			mark := r.paint("32", "ok    ")
			switch {
			case c.Failed > 0:
				mark = r.paint("31", "failed")
			case !c.Complete():
				mark = "-     " // steps that never finished (the operation stopped)
			}
			say(fmt.Sprintf("  %s %-*s %d/%d", mark, width, c.Label, c.Done+c.Failed, c.Total))
		}
		say(fmt.Sprintf("%s %s (%d/%d resources)", r.paint("32", "done:"), e.Message, s.Done(), s.Total()))
		return
	}
	if m := r.message(e); m != "" {
		say(m)
	}
	if r.plainLine.Allow(r.o.Now()) {
		line := fmt.Sprintf("progress %d/%d resources", s.Done(), s.Total())
		if cur := s.Current(); cur != "" {
			line += ", now " + cur
		}
		say(line)
	}
}

// terminal keeps the live block of the current stack up to date.
func (r *Renderer) terminal(e engine.Event, s *Stack) {
	if r.live != s {
		if r.live != nil {
			r.draw() // the previous stack's final state stays on screen
		}
		r.live, r.lines = s, 0
		r.redraw = Throttle{Interval: r.o.Redraw}
	}
	if m := r.message(e); m != "" {
		r.above(m)
		return
	}
	structural := e.Kind == engine.EventStart || e.Kind == engine.EventSummary || e.Kind == engine.EventStepFailed
	if r.redraw.Allow(r.o.Now()) || structural {
		r.draw()
	}
}

// above prints a line above the live block and draws the block again under it.
func (r *Renderer) above(line string) {
	r.erase()
	fmt.Fprintln(r.w, line)
	if r.live != nil {
		r.draw()
	}
}

// erase moves the cursor to the block's first line and clears to the end of the screen.
func (r *Renderer) erase() {
	if r.lines > 0 {
		fmt.Fprintf(r.w, "\x1b[%dF\x1b[J", r.lines)
		r.lines = 0
	}
}

// draw redraws the live block in place.
func (r *Renderer) draw() {
	s := r.live
	if s == nil {
		return
	}
	lines := r.block(s)
	var b strings.Builder
	if r.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dF", r.lines)
	}
	for _, l := range lines {
		b.WriteString("\x1b[2K")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if len(lines) < r.lines {
		b.WriteString("\x1b[J") // the block shrank (it never does; safe anyway)
	}
	io.WriteString(r.w, b.String())
	r.lines = len(lines)
}

// block is the live block: the stack's bar, then one line per component.
func (r *Renderer) block(s *Stack) []string {
	done, total := s.Done(), s.Total()
	head := fmt.Sprintf("%s %s  %s  %d/%d", s.Operation, s.Name, bar(done, total, 24), done, total)
	switch {
	case s.Summary != "":
		head += "  done: " + s.Summary
	case s.Current() != "":
		head += "  " + s.Current()
	}
	lines := []string{r.paint("1", truncate(head, r.o.Width))}
	width := 0
	for _, c := range s.Components {
		width = max(width, utf8.RuneCountInString(c.Label))
	}
	for _, c := range s.Components {
		var mark string
		switch {
		case c.Failed > 0:
			mark = r.paint("31", "✗")
		case c.Complete():
			mark = r.paint("32", "✓")
		case c.Running > 0:
			mark = r.paint("33", "▸")
		default:
			mark = "·"
		}
		text := fmt.Sprintf("%-*s %3d/%-3d", width, c.Label, c.Done+c.Failed, c.Total)
		if c.Running > 0 && c.LastStep != "" {
			text += "  " + c.LastStep
		}
		lines = append(lines, "  "+mark+" "+strings.TrimRight(truncate(text, r.o.Width-4), " "))
	}
	return lines
}

// bar is a fixed-width bar of done out of total.
func bar(done, total, width int) string {
	n := 0
	if total > 0 {
		n = min(width, done*width/total)
	}
	return "[" + strings.Repeat("█", n) + strings.Repeat("░", width-n) + "]"
}

func truncate(s string, n int) string {
	if n <= 1 || utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n-1]) + "…"
}

func (r *Renderer) paint(code, s string) string {
	if !r.o.Color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
