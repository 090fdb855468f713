package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Deadlines bound how long one operation may hold its slot (fairshare.go), per kind. The clock
// starts when the operation is admitted, not when it is asked for: waiting is bounded by the
// caller's context, and an operation must not lose its run time to others' operations ahead
// of it. At the deadline the operation's context ends, which is the ordinary cancellation path:
// the CLI gets SIGINT, has Options.CancelGrace to finish in-flight steps and save its state,
// and is killed after that; an interrupted Up then settles as any canceled Up does. The
// operation fails with ErrDeadline (not ErrCanceled: see errors.go).

// DefaultDeadlines are the deadlines of the kinds Options.Deadlines leaves out. The Kubernetes
// provider waits at most 10 minutes for one resource to become ready or go away (its await
// default for Deployments, StatefulSets, Jobs, Pods, Services, Ingresses and any other object,
// unless the resource sets customTimeouts; none of ours does). An up or a destroy may wait
// for a few such resources one after another (an operator's Deployment, then its custom
// resource), so it gets three of those waits; a refresh or a preview never waits for
// readiness, and a removal or a read is one short CLI process.
var DefaultDeadlines = map[OpKind]time.Duration{
	OpUp:      30 * time.Minute,
	OpDestroy: 30 * time.Minute,
	OpRefresh: 15 * time.Minute,
	OpPreview: 15 * time.Minute,
	OpRemove:  5 * time.Minute,
	OpOutputs: 5 * time.Minute,
	OpStatus:  5 * time.Minute,
	OpList:    5 * time.Minute,
}

// deadlineKinds are the kinds that take a slot, in the order they are listed to users.
var deadlineKinds = []OpKind{OpUp, OpDestroy, OpRefresh, OpPreview, OpRemove, OpOutputs, OpStatus, OpList}

// ParseDeadlines reads "up=45m,preview=10m" (kinds as in OpKind, durations as in
// time.ParseDuration). Every kind must be known and every duration positive: a deadline
// cannot be switched off, because it is what ends an operation that never would.
func ParseDeadlines(s string) (map[OpKind]time.Duration, error) {
	out := map[OpKind]time.Duration{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want <kind>=<duration>, e.g. up=45m", item)
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		kind := OpKind(strings.TrimSpace(k))
		if _, dup := out[kind]; dup {
			return nil, fmt.Errorf("%q: %s is given twice", item, kind)
		}
		out[kind] = d
	}
	return out, checkDeadlines(out)
}

// checkDeadlines refuses unknown kinds and non-positive durations.
func checkDeadlines(m map[OpKind]time.Duration) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch {
		case !slices.Contains(deadlineKinds, k):
			errs = append(errs, fmt.Errorf("unknown operation kind %q (want one of %s)", k, kindList()))
		case m[k] <= 0:
			errs = append(errs, fmt.Errorf("%s=%s: a deadline must be positive", k, m[k]))
		}
	}
	return errors.Join(errs...)
}

func kindList() string {
	s := make([]string, len(deadlineKinds))
	for i, k := range deadlineKinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// resolveDeadlines is the given deadlines over the defaults.
func resolveDeadlines(given map[OpKind]time.Duration) (map[OpKind]time.Duration, error) {
	if err := checkDeadlines(given); err != nil {
		return nil, fmt.Errorf("deadlines: %w", err)
	}
	out := maps.Clone(DefaultDeadlines)
	maps.Copy(out, given)
	return out, nil
}

// deadlineCause is the cause of a context the engine's deadline ended (context.Cause), which
// tells it apart from the caller's own cancellation or deadline.
type deadlineCause struct {
	op    OpKind
	limit time.Duration
}

func (c *deadlineCause) Error() string {
	return fmt.Sprintf("%s ran longer than its deadline of %s and was canceled (set with --deadline %s=<duration>)", c.op, c.limit, c.op)
}

// withDeadline bounds ctx by op's deadline; stop releases the timer.
func (e *Engine) withDeadline(ctx context.Context, op OpKind) (context.Context, context.CancelFunc) {
	d := e.opts.Deadlines[op]
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d, &deadlineCause{op: op, limit: d})
}

// ctxError is the error of an operation whose context ended: ErrDeadline when the engine's
// deadline ended it, else ErrCanceled with the caller's context error.
func ctxError(ctx context.Context, op OpKind, stack, detail string) *OpError {
	var dc *deadlineCause
	if errors.As(context.Cause(ctx), &dc) {
		// Not wrapping context.DeadlineExceeded on purpose: callers that map a request's own
		// timeout (the HTTP API's 504 "the request took too long") must not take this for it.
		return &OpError{Op: op, Stack: stack, Kind: ErrDeadline, Detail: dc.Error()}
	}
	return &OpError{Op: op, Stack: stack, Kind: ErrCanceled, ctxErr: ctx.Err(), Detail: detail}
}
