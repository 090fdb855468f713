package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/tfrs-io/tfrs-operator/api/stackname"
)

// Sentinel errors. Callers branch on them with errors.Is; the HTTP API maps them to status
// codes, the operator to conditions and requeues.
var (
	// ErrConflict: the stack is busy — another operation runs on it in this process, or a
	// live process (here or on another host) holds the backend lock.
	ErrConflict = errors.New("stack is busy")
	// ErrNotFound: the stack does not exist in the backend.
	ErrNotFound = errors.New("stack not found")
	// ErrPendingNeedsDecision: an interrupted run left a pending create of a data-bearing
	// object (CNPG cluster, MinIO tenant, PVC). The engine will neither adopt nor forget it on
	// its own; the caller chooses with Request.Decisions.
	ErrPendingNeedsDecision = errors.New("interrupted operation on a data-bearing resource needs a decision")
	// ErrInvalidName: the stack name breaks the naming rules (the sentinel of package stackname).
	ErrInvalidName = stackname.ErrInvalid
	// ErrNoPassphrase: the passphrase secrets provider has no passphrase and
	// Options.AllowEmptyPassphrase is not set.
	ErrNoPassphrase = errors.New("no secrets passphrase: set TFRS_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE, or a passphrase file)")
	// ErrToolsMissing: the Pulumi CLI or the Kubernetes provider is not installed.
	ErrToolsMissing = errors.New("required tool missing")
	// ErrStackNotEmpty: removal was asked for a stack that still has resources.
	ErrStackNotEmpty = errors.New("stack still has resources; destroy it first")
	// ErrCanceled: the caller's context ended the operation (context.Canceled or
	// context.DeadlineExceeded is in the chain too).
	ErrCanceled = errors.New("operation canceled")
	// ErrDeadline: the operation ran longer than its kind's deadline (Options.Deadlines) and
	// the engine canceled it; Detail names the kind and the deadline. It is deliberately not
	// ErrCanceled: a cancellation is a caller's choice and is retried as if nothing failed
	// (the operator re-runs it at once), while an operation that overran its deadline failed,
	// and a retry at once would take its slot for another full deadline. Callers treat it as
	// a failure: the operator retries with backoff, the HTTP API answers 504, the CLI exits 1.
	ErrDeadline = errors.New("operation deadline exceeded")
	// ErrFailed: the operation ran and failed (a resource or the program failed).
	ErrFailed = errors.New("stack operation failed")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("engine closed")
	// ErrReadOnly: a mutation was asked of a read-only engine (Options.ReadOnly).
	ErrReadOnly = errors.New("the engine is read-only: only previews and reads run")
	// ErrFenced refuses a mutating run that Options.Fence refused (the operator: this
	// replica no longer holds the leader Lease).
	ErrFenced = errors.New("fenced: this process may not take the backend lock now")
)

// OpError is what every failed operation returns. Its message is safe to log: it never holds
// the CLI's stdout (where `--show-secrets` commands print plaintext) and known secret values
// are redacted.
type OpError struct {
	Op     OpKind
	Stack  string
	Kind   error  // one of the sentinels above
	Detail string // redacted, human readable
	// Owners are the holders of the backend lock, for ErrConflict from another process.
	Owners []LockOwner
	// Pending lists the interrupted operations that need a decision (ErrPendingNeedsDecision).
	Pending []PendingOp
	ctxErr  error
}

func (e *OpError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %v", e.Op, e.Stack, e.Kind)
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap exposes the sentinel (and the context error on cancellation), deliberately not the
// Automation API error, whose message embeds the CLI's stdout and stderr.
func (e *OpError) Unwrap() []error {
	if e.ctxErr != nil {
		return []error{e.Kind, e.ctxErr}
	}
	return []error{e.Kind}
}

var (
	reNoStack     = regexp.MustCompile(`no stack named '[^']*' found|no stack named .* found`)
	reStillHasRes = regexp.MustCompile(`still has resources|has \d+ resources`)
	reErrorLine   = regexp.MustCompile(`(?m)^\s*error: (.*)$`)
)

// classify turns an Automation API error into an OpError. diag holds error diagnostics seen on
// the event stream, which say more than the CLI's final "update failed".
func classify(ctx context.Context, op OpKind, stack string, err error, red *redactor, diag []string) *OpError {
	if err == nil {
		return nil
	}
	var oe *OpError
	if errors.As(err, &oe) {
		return oe
	}
	e := &OpError{Op: op, Stack: stack, Kind: ErrFailed}
	raw := err.Error()
	stderr := stderrOf(raw)
	switch {
	case ctx.Err() != nil:
		ce := ctxError(ctx, op, stack, "")
		e.Kind, e.ctxErr = ce.Kind, ce.ctxErr
		if ce.Kind == ErrDeadline {
			// The deadline is the whole story; the CLI's last lines follow it.
			if d := red.redact(summarize(stderr, diag)); d != "" {
				e.Detail = ce.Detail + "; " + d
			} else {
				e.Detail = ce.Detail
			}
			return e
		}
	case isLockConflict(err):
		e.Kind = ErrConflict
		e.Owners = parseLockOwners(stderr)
	case auto.IsSelectStack404Error(err) || reNoStack.MatchString(stderr):
		e.Kind = ErrNotFound
	case reStillHasRes.MatchString(stderr):
		e.Kind = ErrStackNotEmpty
	case isPlanViolation(err, diag):
		e.Kind = ErrPlanMismatch
	}
	e.Detail = red.redact(summarize(stderr, diag))
	return e
}

// isLockConflict recognises a backend lock held by someone else, from the Automation API or
// from a direct CLI call (cliError).
func isLockConflict(err error) bool {
	return auto.IsConcurrentUpdateError(err) || strings.Contains(stderrOf(err.Error()), "the stack is currently locked by")
}

// isTornLockRead recognises a `stack init` that read another creator's lock while it
// changed. The CLI's DIY backend (checkForLock, v3.276.0) lists the stack's lock directory,
// then reads and unmarshals every entry. Between the two, a lock can be released (its key
// is gone: NotFound on S3, "no such file" on a file backend), and on a file backend a
// writer's temporary file (<key>.<hex>.tmp, renamed when complete) is listed too and can be
// read still empty ("unexpected end of JSON input"). Each means another creator held the
// lock a moment ago, as isLockConflict does, so it is retried as one.
func isTornLockRead(err error) bool {
	msg := stderrOf(err.Error())
	return strings.Contains(msg, "could not create stack: unexpected end of JSON input") ||
		reLockGone.MatchString(msg)
}

// reLockGone: a key under the lock directory named in a not-found error.
var reLockGone = regexp.MustCompile(`could not create stack: .*\.pulumi/locks/\S+\.json\S*.*(NotFound|no such file or directory)`)

// stderrOf extracts the stderr section of an Automation API error message. The message is
// "<err>\ncode: N\nstdout: ...\nstderr: ...\n"; errors that are not from the CLI are kept whole.
func stderrOf(msg string) string {
	if i := strings.LastIndex(msg, "\nstderr: "); i >= 0 {
		return strings.TrimSpace(msg[i+len("\nstderr: "):])
	}
	if i := strings.Index(msg, "\ncode: "); i >= 0 {
		return strings.TrimSpace(msg[:i])
	}
	return strings.TrimSpace(msg)
}

// summarize picks the few lines worth showing: error diagnostics from the event stream first,
// then "error:" lines from stderr, then the stderr tail.
func summarize(stderr string, diag []string) string {
	var lines []string
	for _, d := range diag {
		d = strings.TrimSpace(d)
		if d != "" {
			lines = append(lines, d)
		}
	}
	if len(lines) == 0 {
		for _, m := range reErrorLine.FindAllStringSubmatch(stderr, -1) {
			lines = append(lines, strings.TrimSpace(m[1]))
		}
	}
	if len(lines) == 0 && stderr != "" {
		all := strings.Split(stderr, "\n")
		if len(all) > 8 {
			all = all[len(all)-8:]
		}
		lines = all
	}
	s := strings.Join(lines, "; ")
	if len(s) > 4000 {
		s = s[:4000] + "…"
	}
	return s
}

// opErr builds an OpError for failures found by the engine itself.
func opErr(op OpKind, stack string, kind error, format string, args ...any) *OpError {
	return &OpError{Op: op, Stack: stack, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}
