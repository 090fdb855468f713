package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Launching an operation from a request: the look-ups and checks made before (the stored
// spec, the stack's status, a ready parent), the reservation of the stacks, the start of the
// work and the 202 naming the operation. Apart from the handlers (resources.go, approvals.go)
// because create, update, delete and apply all go through it, and from the registry
// (registry.go), which knows nothing of requests.

// launch reserves the stacks of an operation, runs prepare (the checks and whatever must
// happen before the work starts) and starts the work it returns; a refused request, or a
// panic in prepare, releases the reservation, so nothing is left half-started.
func (s *Server) launch(c echo.Context, kind OperationKind, r ref, t kinds.Target, prepare func(op *Operation) (work, error)) error {
	op, err := s.reserve(kind, r, t, c)
	if err != nil {
		return err
	}
	started := false
	defer func() {
		if !started {
			s.ops.release(op)
		}
	}()
	w, err := prepare(op)
	if err != nil {
		return err
	}
	s.ops.start(op, w)
	started = true
	return accepted(c, op)
}

// accepted answers 202 with the operation and its URL.
func accepted(c echo.Context, op *Operation) error {
	c.Response().Header().Set(echo.HeaderLocation, operationPath(op.id))
	return c.JSON(http.StatusAccepted, op.view())
}

// reserve takes the resource's stacks for a new operation (409 when one is held).
func (s *Server) reserve(kind OperationKind, r ref, t kinds.Target, c echo.Context) (*Operation, error) {
	stacks := []string{t.Stack}
	if t.Shared != "" {
		// Personal tenants of one job type share a stack that any of them may bring up or
		// release: hold it too, so two of them never race on it.
		stacks = append(stacks, t.Shared)
	}
	if err := s.ops.busyElsewhere(c.Request().Context(), stacks); err != nil {
		return nil, err
	}
	res := ResourceRef{Kind: r.k.kind, Namespace: r.namespace, Name: r.name, Href: r.href()}
	return s.ops.reserve(kind, res, stacks, principalOf(c), requestIDOf(c))
}

// upWork is the body of a create or update operation.
func (s *Server) upWork(obj v1alpha1.Object, op *Operation) work {
	return func(ctx context.Context, sink engine.Sink) (*runner.Outcome, error) {
		return s.run.Up(ctx, obj, runner.Op{Door: engine.ManagedByAPI, Sink: sink, Message: opMessage(op)})
	}
}

// opMessage is recorded in the stack history, linking it to the operation.
func opMessage(op *Operation) string {
	return fmt.Sprintf("tfrs api: %s %s %s (operation %s)", op.kind, op.resource.Kind, op.resource.Href, op.id)
}

// record returns the stored spec of a stack, nil when there is none.
func (s *Server) record(ctx context.Context, stack string) (*Record, error) {
	rec, err := s.specs.Get(ctx, stack)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return rec, err
}

// status returns a stack's status, nil when the stack does not exist.
func (s *Server) status(ctx context.Context, stack string) (*engine.StackStatus, error) {
	st, err := s.eng.Status(ctx, stack)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, nil
	}
	return st, err
}

// checkParent refuses work whose parent stack is missing or not ready (424) before an
// operation starts; the runner checks again when it runs, with the parent's outputs.
func (s *Server) checkParent(ctx context.Context, t kinds.Target) error {
	if t.Parent == "" {
		return nil
	}
	st, err := s.status(ctx, t.Parent)
	if err != nil {
		return err
	}
	switch {
	case st == nil:
		return &kinds.ParentError{Kind: t.ParentKind, Name: t.ParentName, Stack: t.Parent, Reason: "its stack does not exist"}
	case !st.Ready:
		return &kinds.ParentError{Kind: t.ParentKind, Name: t.ParentName, Stack: t.Parent, Reason: "its last update did not succeed"}
	}
	return nil
}
