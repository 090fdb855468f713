// Command tfrs provisions the TFRobot platform on Kubernetes: one binary for the operator, the
// HTTP API, the CI-facing CLI and the local development environment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand: its flags are parsed from the arguments after its name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

// errUsage marks a usage error: the message is printed with the usage, exit code 2.
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage()
		return 2
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "tfrs: unknown command %q\n\n", args[0])
		usage()
		return 2
	}
	// Ctrl-C cancels the context; commands stop what they started and return.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 2
		}
		fmt.Fprintf(os.Stderr, "tfrs %s: %v\n", args[0], err)
		var ec exitCoder
		if errors.As(err, &ec) {
			return ec.ExitCode()
		}
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// exitCoder lets a command choose its exit code (e.g. preview --detailed-exitcode).
type exitCoder interface{ ExitCode() int }

func usage() {
	fmt.Fprintln(os.Stderr, "usage: tfrs <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
}
