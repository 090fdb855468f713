package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/fleet"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The fleet preview over HTTP: POST /v1/fleet/preview starts an operation that previews,
// with this build's programs, every stored spec the caller may preview, picked as
// `tfrs fleet preview` picks them (query parameters kind, namespace, selector, cluster and
// full). Its progress streams as "fleet" events and its result is the fleet report
// (stacks/fleet), JSON.
//
// Who sees what: an object is in the report only when the caller may get it and create its
// preview, the two checks of a single preview; the others are left out without a word, as a
// list leaves out what RBAC hides. So the operation belongs to whoever started it: only that
// principal may read it, follow its events or cancel it (authz.go, requestAttributes).
//
// The operation reads and holds no stack (a preview takes no lock), so it runs beside any
// other operation. A stored spec whose secret values the API does not keep, or that the
// source policy now refuses, is an error entry: its preview would show the redaction or
// fetch what the policy forbids.

// FleetPreviewPath is the route of the fleet preview.
const FleetPreviewPath = "/v1/fleet/preview"

// OpFleetPreview is the kind of a fleet preview operation; FleetKind its resource's kind.
const (
	OpFleetPreview OperationKind = "fleet-preview"
	FleetKind      v1alpha1.Kind = "Fleet"
)

// FleetEvent names a fleet preview's event of one object looked at (an operation's
// "progress" events are the engine's).
const FleetEvent = "fleet"

// FleetProgress is the data of a FleetEvent.
type FleetProgress struct {
	Done   int          `json:"done"`
	Total  int          `json:"total"`
	Target kinds.Target `json:"target"`
	Status fleet.Status `json:"status"`
	Proven bool         `json:"proven,omitempty"`
}

// fleetPreview: POST /v1/fleet/preview.
func (s *Server) fleetPreview(c echo.Context) error {
	ctx := c.Request().Context()
	sel, full, err := fleetParams(c)
	if err != nil {
		return err
	}
	objs, redacted, err := s.fleetObjects(ctx, principal(c), sel)
	if err != nil {
		return err
	}
	op, err := s.ops.reserveFleet(principalOf(c), requestIDOf(c))
	if err != nil {
		return err
	}
	s.ops.start(op, func(ctx context.Context, _ engine.Sink) (*runner.Outcome, error) {
		rep := fleet.Preview(ctx, s.run, objs, fleet.Options{
			Full: full,
			Check: func(ctx context.Context, obj v1alpha1.Object) error {
				return s.fleetCheck(ctx, obj, redacted[obj])
			},
			Done: func(e fleet.Entry, done, total int) {
				op.publish(FleetEvent, FleetProgress{Done: done, Total: total, Target: e.Target, Status: e.Status, Proven: e.Proven})
			},
		})
		op.setFleet(rep)
		return nil, ctx.Err()
	})
	return accepted(c, op)
}

// reserveFleet reserves a fleet preview for principal, refused (409 busy) while one of
// theirs runs on this replica: a fleet preview can run a preview of every object, so one
// caller starting many at once would take the engine from everyone else.
func (r *registry) reserveFleet(principal, requestID string) (*Operation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, op := range r.ops {
		if op.kind == OpFleetPreview && op.principal == principal && !op.currentState().terminal() {
			return nil, &BusyError{Operation: op.id, Detail: "your fleet preview " + op.id + " is still running; wait for it to end or cancel it"}
		}
	}
	return r.reserveLocked(OpFleetPreview, ResourceRef{Kind: FleetKind, Href: FleetPreviewPath}, nil, principal, requestID)
}

// fleetParams reads the selection; a bad parameter is a 400 naming it.
func fleetParams(c echo.Context) (fleet.Selector, bool, error) {
	q := c.QueryParams()
	sel := fleet.Selector{Namespace: q.Get("namespace"), Labels: q.Get("selector"), Cluster: q.Get("cluster")}
	for _, k := range q["kind"] {
		kind, err := fleet.ParseKind(k)
		if err != nil {
			return sel, false, invalid("bad query parameter kind", FieldProblem{Field: "kind", Reason: "notSupported", Detail: err.Error()})
		}
		sel.Kinds = append(sel.Kinds, kind)
	}
	if _, err := sel.Select(nil); err != nil {
		return sel, false, invalid("bad query parameter selector", FieldProblem{Field: "selector", Reason: "invalid", Detail: err.Error()})
	}
	full := false
	if v := q.Get("full"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return sel, false, invalid("bad query parameter full", FieldProblem{Field: "full", Reason: "invalid", Detail: "want true or false"})
		}
		full = b
	}
	return sel, full, nil
}

// fleetObjects are the stored specs sel picks that p may preview, in stack order, and which
// of them were stored redacted. The cluster rule of the selector sees every stored tenant, so
// a cluster's servers are found even when the caller may not preview their tenant.
func (s *Server) fleetObjects(ctx context.Context, p Principal, sel fleet.Selector) ([]v1alpha1.Object, map[v1alpha1.Object]bool, error) {
	var all []v1alpha1.Object
	redacted := map[v1alpha1.Object]bool{}
	for _, k := range resourceKinds {
		recs, err := s.specs.List(ctx, k.level+".")
		if err != nil {
			return nil, nil, err
		}
		for i := range recs {
			if recs[i].Kind != k.kind {
				continue
			}
			obj, err := k.fromRecord(&recs[i])
			if err != nil {
				return nil, nil, fmt.Errorf("stored spec of %s: %w", recs[i].Stack, err)
			}
			all = append(all, obj)
			redacted[obj] = recs[i].Redacted
		}
	}
	picked, err := sel.Select(all)
	if err != nil {
		return nil, nil, err
	}
	var out []v1alpha1.Object
	for _, obj := range picked {
		ok := true
		for _, at := range previewAttrs(kindByName(obj.KindName()), obj.GetNamespace(), obj.GetName()) {
			if err := s.authz.Authorize(ctx, p, at); errors.Is(err, ErrForbidden) {
				ok = false
				break
			} else if err != nil {
				return nil, nil, err
			}
		}
		if ok {
			out = append(out, obj)
		}
	}
	return out, redacted, nil
}

// errRedactedSpec: a stored spec whose secret values the API does not keep.
var errRedactedSpec = errors.New("the stored spec has secret values the API does not keep: preview it with its full document (POST …/preview with a body) or with `tfrs fleet preview --from-cluster`")

// fleetCheck is what a single preview of a stored spec checks before it runs: the spec is
// whole, and the source policy, which may have changed since it was stored, allows it.
func (s *Server) fleetCheck(ctx context.Context, obj v1alpha1.Object, redacted bool) error {
	if redacted {
		return errRedactedSpec
	}
	_, prepared, err := kinds.Prepare(obj)
	if err != nil {
		return err
	}
	return s.checkSources(ctx, prepared)
}
