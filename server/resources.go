package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The resource handlers that start an operation (create, update, delete) and the request
// reading all resource handlers share: the URL's reference, the body's decoding and checks,
// the stored spec. Apart from the handlers that start none (resources_read.go), from what
// they answer (views.go) and from how an accepted request becomes an operation (launch.go).

var reDNSLabel = regexp.MustCompile(v1alpha1.PatternDNSLabel)

// resources are the handlers of one kind.
type resources struct {
	s *Server
	k *kindInfo
}

// ref reads and checks the URL's path parameters. echo hands them over still escaped, so
// "..%2f" arrives as is; it is unescaped here and must then be a DNS-1123 label like every
// name, which no traversal or separator survives.
func (h resources) ref(c echo.Context, withName bool) (ref, error) {
	r := ref{k: h.k}
	var fields []FieldProblem
	param := func(name, fieldPath string) string {
		v, err := url.PathUnescape(c.Param(name))
		if err != nil || len(v) > v1alpha1.MaxNameLength || !reDNSLabel.MatchString(v) {
			fields = append(fields, FieldProblem{Field: fieldPath, Reason: "invalid",
				Detail: "the URL's " + name + " must be a DNS-1123 label (at most 63 lowercase alphanumerics or '-')"})
		}
		return v
	}
	if h.k.namespaced {
		r.namespace = param("ns", "metadata.namespace")
	}
	if h.k.parent != nil {
		r.tenant = param("tenant", h.k.newObj().Parent().Field.String())
	}
	if withName {
		r.name = param("name", "metadata.name")
	}
	if len(fields) > 0 {
		return r, invalid("the URL names an invalid resource", fields...)
	}
	return r, nil
}

// decodeBody turns the body into a defaulted, validated object bound to the URL. Every
// problem found is reported at once: decoding, URL mismatches, metadata, and the type's own
// Validate (the CRD's rules).
func (h resources) decodeBody(c echo.Context, r ref) (kinds.Target, v1alpha1.Object, error) {
	return h.decodeDocument(c, r, bodyOf(c))
}

// decodeDocument is decodeBody of a document sent otherwise (inside an apply request).
func (h resources) decodeDocument(c echo.Context, r ref, body []byte) (kinds.Target, v1alpha1.Object, error) {
	obj, fields, err := h.k.decode(body)
	if err != nil {
		return kinds.Target{}, nil, err
	}
	errs := r.bind(obj)
	errs = append(errs, checkRequest(obj)...)
	t, prepared, err := kinds.Prepare(obj)
	var rie *kinds.InvalidError
	switch {
	case errors.As(err, &rie):
		errs = append(errs, rie.Errors...)
	case err != nil:
		return kinds.Target{}, nil, err
	}
	fields = append(fields, fieldProblems(errs)...)
	if len(fields) > 0 {
		return kinds.Target{}, nil, invalid(fmt.Sprintf("%d invalid field(s)", len(fields)), fields...)
	}
	if err := h.s.checkSources(c.Request().Context(), prepared); err != nil {
		return kinds.Target{}, nil, err
	}
	return t, prepared, nil
}

// checkUpdate applies ValidateUpdate against the stored spec, when there is one.
func (h resources) checkUpdate(obj v1alpha1.Object, rec *Record) error {
	if rec == nil {
		return nil
	}
	old, err := h.k.fromRecord(rec)
	if err != nil {
		return err
	}
	if errs := obj.ValidateUpdate(old); len(errs) > 0 {
		return invalid(fmt.Sprintf("%d invalid field(s)", len(errs)), fieldProblems(errs)...)
	}
	return nil
}

// create: POST on a collection. 202 with the operation that brings the stacks up.
func (h resources) create(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := h.ref(c, false)
	if err != nil {
		return err
	}
	t, obj, err := h.decodeBody(c, r)
	if err != nil {
		return err
	}
	r.name = obj.GetName()
	// The parent before the stack's reservation: a missing parent is the answer even while
	// another operation holds the stack (checks run auth, decoding, validation, parent, busy).
	if err := h.s.checkParent(ctx, t); err != nil {
		return err
	}
	return h.s.launch(c, OpCreate, r, t, func(op *Operation) (work, error) {
		rec, err := h.s.record(ctx, t.Stack)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			return nil, &ExistsError{What: r.String(), ManagedBy: engine.ManagedByAPI}
		}
		st, err := h.s.status(ctx, t.Stack)
		if err != nil {
			return nil, err
		}
		if st != nil && !emptyStack(st) {
			return nil, &ExistsError{What: r.String(), ManagedBy: st.ManagedBy}
		}
		return h.upWork(c, op, r, t, obj, nil, st)
	})
}

// update: PUT on a resource, the whole document. The spec is checked against the stored one
// with the type's ValidateUpdate (immutable fields), then the stacks are brought up.
func (h resources) update(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := h.ref(c, true)
	if err != nil {
		return err
	}
	t, obj, err := h.decodeBody(c, r)
	if err != nil {
		return err
	}
	rec, err := h.s.record(ctx, t.Stack)
	if err != nil {
		return err
	}
	if err := h.checkUpdate(obj, rec); err != nil {
		return err
	}
	if err := h.s.checkParent(ctx, t); err != nil {
		return err
	}
	return h.s.launch(c, OpUpdate, r, t, func(op *Operation) (work, error) {
		st, err := h.s.status(ctx, t.Stack)
		if err != nil {
			return nil, err
		}
		if (st == nil || emptyStack(st)) && rec == nil {
			return nil, &NotFoundError{What: r.String()}
		}
		if st != nil {
			// A stack the operator manages is changed through its CR (the door rule).
			if err := runner.CheckDoor(t.Stack, st.ManagedBy, engine.ManagedByAPI); err != nil {
				return nil, err
			}
			// A stack without a managed-by tag that the API never accepted is one whose creator
			// has not tagged it yet (the tag is written just after the stack is created): refuse
			// it as well rather than race its owner.
			if st.ManagedBy == "" && rec == nil {
				return nil, &runner.ManagedElsewhereError{Stack: t.Stack, ManagedBy: st.ManagedBy}
			}
		}
		return h.upWork(c, op, r, t, obj, rec, st)
	})
}

// upWork is what create and update share once the request is accepted (its parent was
// found ready before the stack was reserved): the spec is stored (over prev, for an update);
// then the up may start, through the approval gate (approvals.go; st is the own stack's
// status, nil when there is none).
func (h resources) upWork(c echo.Context, op *Operation, r ref, t kinds.Target, obj v1alpha1.Object, prev *Record, st *engine.StackStatus) (work, error) {
	ctx := c.Request().Context()
	rec, err := newRecord(h.k, obj, t, prev, time.Now())
	if err != nil {
		return nil, err
	}
	if err := h.s.specs.Put(ctx, rec); err != nil {
		return nil, err
	}
	if err := runner.CheckSuspended(obj); err != nil {
		// Suspending is storing the spec: nothing runs until a later spec clears it.
		return func(context.Context, engine.Sink) (*runner.Outcome, error) { return runner.Skip(t, err), nil }, nil
	}
	up := h.s.gatedWork(r, obj, op, st, rec)
	if prev != nil {
		return up, nil
	}
	// A create that lost the stack to another door (a CR applied at the same moment: the
	// engine admits only the stack's creator) leaves no spec behind: the stack is not this
	// API's, and the operation fails with 409 managed-elsewhere.
	return func(ctx context.Context, sink engine.Sink) (*runner.Outcome, error) {
		out, err := up(ctx, sink)
		if errors.Is(err, runner.ErrManagedElsewhere) {
			if derr := h.s.specs.Delete(context.WithoutCancel(ctx), t.Stack); derr != nil {
				h.s.log.Error("delete stored spec", "stack", t.Stack, "operation", op.id, "err", derr)
			}
		}
		return out, err
	}, nil
}

// stored resolves the URL of one resource: its reference, its stack and the spec stored for
// it (nil when this API holds none).
func (h resources) stored(c echo.Context) (ref, string, *Record, error) {
	r, err := h.ref(c, true)
	if err != nil {
		return r, "", nil, err
	}
	stack, err := r.stack()
	if err != nil {
		return r, "", nil, err
	}
	rec, err := h.s.record(c.Request().Context(), stack)
	return r, stack, rec, err
}

// remove: DELETE on a resource. The stacks are destroyed under the spec's deletion policy and
// the stored spec goes once that succeeded. A parent with dependents is refused up front.
func (h resources) remove(c echo.Context) error {
	ctx := c.Request().Context()
	r, stack, rec, err := h.stored(c)
	if err != nil {
		return err
	}
	t := kinds.Target{Stack: stack}
	var obj v1alpha1.Object
	if rec != nil {
		if obj, err = h.k.fromRecord(rec); err != nil {
			return err
		}
		if t, err = kinds.TargetOf(obj); err != nil {
			return err
		}
	}
	return h.s.launch(c, OpDelete, r, t, func(op *Operation) (work, error) {
		st, err := h.s.status(ctx, stack)
		if err != nil {
			return nil, err
		}
		if !h.belongs(r, rec, st) {
			return nil, &NotFoundError{What: r.String()}
		}
		if st != nil {
			if err := runner.CheckDoor(stack, st.ManagedBy, engine.ManagedByAPI); err != nil {
				return nil, err
			}
		}
		if rec == nil {
			return nil, &NoSpecError{What: r.String(), ManagedBy: st.ManagedBy}
		}
		if err := runner.CheckSuspended(obj); err != nil {
			return nil, err // 409 now; a PUT that clears spec.suspend comes first
		}
		deps, err := h.s.run.Dependents(ctx, t)
		if err != nil {
			return nil, err
		}
		if len(deps) > 0 {
			return nil, &runner.DependentsError{Stack: stack, Dependents: deps}
		}
		return func(ctx context.Context, sink engine.Sink) (*runner.Outcome, error) {
			out, err := h.s.run.Destroy(ctx, obj, runner.Op{Door: engine.ManagedByAPI, Sink: sink, Message: opMessage(op)})
			if err == nil {
				// The stacks are gone; a record left behind would only show a ghost, so a
				// failure here is logged, not turned into a failed delete.
				if derr := h.s.specs.Delete(context.WithoutCancel(ctx), stack); derr != nil {
					h.s.log.Error("delete stored spec", "stack", stack, "operation", op.id, "err", derr)
				}
				h.s.dropPlans(ctx, stack) // a plan of a resource that is gone is never applied
			}
			return out, err
		}, nil
	})
}

// belongs: the resource exists (stack or stored spec) and, for a server, under the URL's
// tenant.
func (h resources) belongs(r ref, rec *Record, st *engine.StackStatus) bool {
	if rec == nil && (st == nil || emptyStack(st)) {
		return false // an unclaimed empty stack (a saved plan's) is no resource yet
	}
	if h.k.parent == nil {
		return true
	}
	if rec != nil {
		return rec.Parent == r.tenant
	}
	parent, err := r.parentStack()
	return err == nil && st.Tags[engine.TagParent] == parent
}
