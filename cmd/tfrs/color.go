package main

import (
	"os"

	"golang.org/x/term"
)

// palette colours what the CLI itself prints on a stream (errors, progress); reports on
// stdout stay plain text, since they are read by programs and pasted into pull requests.
type palette struct{ on bool }

// palette is the colouring for f under --color: on a terminal only, never with NO_COLOR set
// (https://no-color.org) or TERM=dumb, unless --color always says otherwise.
func (a *app) palette(f *os.File) palette {
	return palette{on: useColor(a.color, os.Getenv("NO_COLOR"), os.Getenv("TERM"), isTerminal(f))}
}

// useColor decides colour from the --color mode, $NO_COLOR, $TERM and whether the stream is a
// terminal. A command-line choice wins over the environment, as no-color.org asks.
func useColor(mode, noColor, termEnv string, terminal bool) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	return noColor == "" && termEnv != "dumb" && terminal
}

func (p palette) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) red(s string) string    { return p.paint("31", s) }
func (p palette) green(s string) string  { return p.paint("32", s) }
func (p palette) yellow(s string) string { return p.paint("33", s) }
func (p palette) bold(s string) string   { return p.paint("1", s) }

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
