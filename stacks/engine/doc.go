// Package engine is the only place in tfrs that drives Pulumi. The operator, the HTTP API and
// the CLI call it; none of them touch the Automation API directly. Everything that makes stack
// operations safe lives here:
//
//   - one operation per stack at a time in this process, a global limit on concurrent
//     operations with a per-namespace share of it, and a deadline per operation kind
//     (locks.go, fairshare.go, deadline.go);
//   - a backend lock held by a live process elsewhere maps to [ErrConflict]; a lock whose owner
//     is provably gone (same host, pid dead or reused) is broken (locks.go);
//   - interrupted runs are recovered before the next mutation: pending creates of plain
//     Kubernetes objects are adopted and refreshed, data-bearing kinds stop with
//     [ErrPendingNeedsDecision] (recovery.go);
//   - typed results and a typed progress stream (results.go, events.go), with secret values
//     never exposed unless asked for, and redacted from every message (redact.go);
//   - the Pulumi CLI and the Kubernetes provider come from the tools cache and never touch
//     the network (backend.go, command.go);
//   - stable generated credentials are bound from each stack's state (ops.go; the programs'
//     side is package program) and stack names follow package stackname;
//   - few CLI processes, each ~0.4 s: an operation is its own process, and a new stack is
//     created in-process too (stackinit.go; `stack init` only on a backend no CLI has used,
//     another secrets provider, or a held lock). The state around it (existence, checkpoint with secrets decrypted by the
//     passphrase key derived once per salt, tags, history head) is read and the tags and
//     secret config written in-process (inproc.go); the CLI version is cached (command.go);
//     [Engine.StackVersion] tells a file:// stack's changes without any.
//
// Programs stay outside: every operation takes a pulumi.RunFunc, run as an Automation API
// inline program (the Go language host is not shipped).
package engine
