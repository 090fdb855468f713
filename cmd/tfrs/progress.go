package main

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/tfrs-io/tfrs-operator/internal/progress"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// One progress display for everything the CLI runs or follows: `tfrs up|preview|refresh|
// destroy|render` (the engine's events of their own operations, on stderr) and `tfrs watch`
// (an HTTP operation's events, on stdout). On a terminal with colour allowed (no NO_COLOR, no
// TERM=dumb, --color not never) it is a live progress bar with one line per component; anywhere
// else plain lines without cursor movement, fit for CI logs (internal/progress.Renderer).

// cliProgress is a renderer, or nil when nothing is to be printed.
type cliProgress struct{ r *progress.Renderer }

// newProgress renders on w when w is a terminal, or when force asks for progress anyway
// (plain lines then). pal decides colour.
func newProgress(w io.Writer, force bool, pal palette) *cliProgress {
	f, isFile := w.(*os.File)
	tty := isFile && isTerminal(f)
	if !force && !tty {
		return nil
	}
	return &cliProgress{r: progress.NewRenderer(w, renderOptions(f, tty, pal))}
}

// renderOptions: the live block only on a terminal with colour on, as wide as the terminal.
func renderOptions(f *os.File, tty bool, pal palette) progress.RenderOptions {
	o := progress.RenderOptions{Terminal: tty && pal.on, Color: pal.on}
	if tty {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			o.Width = w
		}
	}
	return o
}

// sink is the engine sink (nil when nothing is printed).
func (p *cliProgress) sink() engine.Sink {
	if p == nil {
		return nil
	}
	return p.r.Event
}

// close draws the final state.
func (p *cliProgress) close() {
	if p != nil {
		p.r.Close()
	}
}

// progressSink is the sink of newProgress, for callers that need no final draw.
func progressSink(w io.Writer, force bool, pal palette) engine.Sink {
	return newProgress(w, force, pal).sink()
}
