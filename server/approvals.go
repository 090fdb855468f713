package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/approval"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Approvals over HTTP: "review before apply", applying exactly the reviewed plan. The rule
// (which mode holds which change), the plan set and its store are package approval's; this
// file is how the HTTP API shows them.
//
//   - POST …/{name}/preview?save=true previews (the body, or the stored spec), saves the plan of
//     every stack the object runs on (approval.Store, beside the stack in the backend) and
//     answers the diff plus its planId (approval.SetID: the own stack's plan id; a personal
//     tenant's shared stack plan is kept with it and applied with it, and then the id is
//     derived from both).
//   - POST …/{name}/apply {"planId": …} applies exactly that plan (202 + operation). The plan
//     must be the resource's pending one (404 naming planId otherwise), taken on the spec
//     stored now (a PUT since makes it stale: 409 plan-mismatch, and the plan is discarded);
//     Pulumi refusing a step the plan does not hold fails the operation with plan-mismatch
//     (and discards the plan). A plan applies once: after its apply ran, it is gone.
//   - A create or PUT under spec.approval: when approval.NeedsPlan, it previews with saved
//     plans; a change approval.Gate holds (Manual: every change; OnDataLoss, the default: one
//     that destroys stateful data) ends its operation awaiting-approval, naming the plan;
//     any other applies that very plan at once, so exactly the previewed change runs. A stack
//     with no update recorded holds no resources and cannot lose data: OnDataLoss brings it
//     up directly, with no preview first.
//
// Saving and applying both need `update` on the resource (authz.go): a saved plan is a change
// waiting to be applied, and saving one on a missing stack creates the (empty) stack record.

// Plan reasons (OperationPlan.Reason): package approval's.
const (
	PlanReasonManual    = string(approval.ReasonManual)
	PlanReasonDataLoss  = string(approval.ReasonDataLoss)
	PlanReasonRequested = string(approval.ReasonRequested)
)

// OperationPlan is the saved plan an operation waits on or applied.
type OperationPlan struct {
	// ID is the plan id to approve (POST Apply with {"planId": ID}).
	ID string `json:"id"`
	// Stacks are the engine plan ids by stack (a personal tenant's shared stack has its own).
	Stacks map[string]string `json:"stacks,omitempty"`
	// Reason the plan waits (Manual, DataLoss, Requested); "" when it was applied at once.
	Reason string `json:"reason,omitempty"`
	// Changes counts the planned changes by op.
	Changes map[engine.StepOp]int `json:"changes,omitempty"`
	// DataLoss lists "<op> <type> <name>" of the changes that destroy data.
	DataLoss []string `json:"dataLoss,omitempty"`
	// Apply is where to approve it, while it waits.
	Apply string `json:"apply,omitempty"`
}

// awaitingApproval is what a gated operation's work returns instead of applying: the
// operation ends in StateAwaitingApproval, naming its plan.
type awaitingApproval struct{ plan *OperationPlan }

func (a *awaitingApproval) Error() string { return "plan " + a.plan.ID + " awaits approval" }

// PlanNotFoundError: the planId names no pending plan of the resource (404 naming planId).
type PlanNotFoundError struct {
	What, ID string
	// Pending is the id of the resource's pending plan, if another one is.
	Pending string
}

func (e *PlanNotFoundError) Error() string {
	return fmt.Sprintf("%s has no pending plan %s", e.What, e.ID)
}

// PlanStaleError refuses the apply of a plan taken on another spec than the stored one (409
// plan-mismatch); the plan is discarded.
type PlanStaleError struct{ What, ID, Reason string }

func (e *PlanStaleError) Error() string {
	return fmt.Sprintf("plan %s of %s is stale: %s", e.ID, e.What, e.Reason)
}

// Is makes a stale plan an engine.ErrPlanMismatch, as the runner's and Pulumi's refusals are.
func (e *PlanStaleError) Is(target error) bool { return target == engine.ErrPlanMismatch }

// PlanIncompleteError: the preview could not cover every stack the up would run (a personal
// tenant whose job type's shared stack does not exist yet), so no plan can be approved.
type PlanIncompleteError struct{ What, Reason string }

func (e *PlanIncompleteError) Error() string {
	return fmt.Sprintf("no complete plan of %s can be saved: %s", e.What, e.Reason)
}

// hasResources: the stack exists and an update ran on it (approval.NeedsPlan's upDone). A stack
// without one is empty (a plan preview creates such a record) and has no data to lose.
func hasResources(st *engine.StackStatus) bool {
	return st != nil && st.Last != nil && st.Last.Kind != "destroy"
}

// savedPlans is the plan set of a SavePlans preview (approval.Collect). One that does not
// cover the own stack makes it incomplete: no plan could be approved.
func savedPlans(r ref, out *runner.Outcome, rep *diff.Report) (map[string]*engine.Plan, error) {
	if reason := approval.Incomplete(out, rep); reason != "" {
		return nil, &PlanIncompleteError{What: r.String(), Reason: reason}
	}
	return approval.Collect(out)
}

// keepPlans proposes the plans as the resource's pending set (approval.Store), replacing its
// previous one, with the document they were taken for (secret values redacted, as the spec
// store keeps it).
func (s *Server) keepPlans(ctx context.Context, r ref, obj v1alpha1.Object, plans map[string]*engine.Plan,
	rep *diff.Report, reason approval.Reason, gen int64, opID string) (*approval.Record, error) {
	red, had := redacted(obj)
	doc, err := json.Marshal(documentOf(red))
	if err != nil {
		return nil, err
	}
	p := approval.NewRecord(rep.Target.Stack, plans, reason, rep, gen, time.Now())
	p.Document, p.Redacted, p.Operation = doc, had, opID
	if err := s.plans.Propose(ctx, p, plans); err != nil {
		return nil, err
	}
	s.log.Info("plan saved", "resource", r.href(), "plan", p.ID, "reason", reason, "changes", p.Changes, "dataLoss", len(p.DataLoss))
	return p, nil
}

// dropPlans forgets a resource's pending plan and the engine plans behind it (after an apply
// ran, or when it was found stale, or the resource is gone). Failures are logged: a leftover
// plan can no longer be applied (the pending record is what apply reads first).
func (s *Server) dropPlans(ctx context.Context, stack string) {
	if err := s.plans.Discard(context.WithoutCancel(ctx), stack); err != nil {
		s.log.Warn("pending plan not discarded", "stack", stack, "err", err)
	}
}

// planView is the HTTP view of a pending record.
func planView(r ref, p *approval.Record) *OperationPlan {
	return &OperationPlan{ID: p.ID, Stacks: p.Plans, Reason: string(p.Reason), Changes: p.Changes, DataLoss: p.DataLoss, Apply: r.href() + "/apply"}
}

// gatedWork is the body of a create or update under spec.approval; rec is the spec record
// just stored, st the own stack's status (nil: no stack).
func (s *Server) gatedWork(r ref, obj v1alpha1.Object, op *Operation, st *engine.StackStatus, rec *Record) work {
	return func(ctx context.Context, sink engine.Sink) (*runner.Outcome, error) {
		mode, err := s.run.Approval(ctx, obj) // a personal tenant's: its cluster's
		if err != nil {
			return nil, err
		}
		if !approval.NeedsPlan(mode, hasResources(st)) {
			return s.upWork(obj, op)(ctx, sink)
		}
		out, err := s.run.Preview(ctx, obj, runner.Op{Door: engine.ManagedByAPI, Sink: sink, Message: opMessage(op), SavePlans: true})
		if err != nil {
			return out, err
		}
		rep := diff.FromOutcome(out)
		plans, err := savedPlans(r, out, rep)
		if err != nil {
			return out, err
		}
		why := approval.Gate(mode, rep)
		if why == "" {
			// Nothing waits (no change in the cluster, or none the mode holds): apply this
			// very plan now, so exactly the previewed change runs.
			pv := &OperationPlan{ID: approval.SetID(plans), Stacks: planIDs(plans)}
			pv.Changes, _ = approval.Summarize(rep)
			op.setPlan(pv)
			return s.run.Up(ctx, obj, runner.Op{Door: engine.ManagedByAPI, Sink: sink, Message: opMessage(op), Plans: plans})
		}
		p, err := s.keepPlans(ctx, r, obj, plans, rep, why, rec.Generation, op.id)
		if err != nil {
			return out, err
		}
		return out, &awaitingApproval{plan: planView(r, p)}
	}
}

func planIDs(plans map[string]*engine.Plan) map[string]string {
	m := make(map[string]string, len(plans))
	for st, p := range plans {
		m[st] = p.ID
	}
	return m
}

// SavedPreview is the answer of POST …/preview?save=true: the diff, and the plan to apply.
type SavedPreview struct {
	*diff.Report
	// PlanID is the plan to apply (POST …/apply {"planId": PlanID}).
	PlanID string `json:"planId"`
	// Plans are the engine plan ids by stack.
	Plans map[string]string `json:"plans"`
	// Apply is the URL to apply it.
	Apply string `json:"apply"`
}

// saveParam reads ?save= (true, false or absent).
func saveParam(c echo.Context) (bool, error) {
	switch c.QueryParam("save") {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, invalid("invalid preview parameters", FieldProblem{Field: "save", Reason: "invalid", Detail: "save must be true or false"})
}

// savePreview is the ?save=true half of preview: the door rule of a PUT (the plan is only
// ever applied over HTTP), then a preview that saves its plans.
func (h resources) savePreview(c echo.Context, r ref, t kinds.Target, obj v1alpha1.Object, rec *Record) error {
	ctx := c.Request().Context()
	if err := h.checkDoor(ctx, r, t.Stack, rec); err != nil {
		return err
	}
	out, err := h.s.run.Preview(ctx, obj, runner.Op{Door: engine.ManagedByAPI, Message: "tfrs api: preview " + r.String() + " (save plan)", SavePlans: true})
	if err != nil {
		return err
	}
	rep := diff.FromOutcome(out)
	plans, err := savedPlans(r, out, rep)
	if err != nil {
		return err
	}
	var gen int64
	if rec != nil {
		gen = rec.Generation
	}
	p, err := h.s.keepPlans(ctx, r, obj, plans, rep, approval.ReasonRequested, gen, "")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, SavedPreview{Report: rep, PlanID: p.ID, Plans: p.Plans, Apply: r.href() + "/apply"})
}

// checkDoor is the door rule a mutation of the resource's stack obeys (see update).
func (h resources) checkDoor(ctx context.Context, r ref, stack string, rec *Record) error {
	st, err := h.s.status(ctx, stack)
	if err != nil || st == nil {
		return err
	}
	if err := runner.CheckDoor(stack, st.ManagedBy, engine.ManagedByAPI); err != nil {
		return err
	}
	if st.ManagedBy == "" && rec == nil && !emptyStack(st) {
		return &runner.ManagedElsewhereError{Stack: stack, ManagedBy: st.ManagedBy}
	}
	return nil
}

// emptyStack: a stack record nobody claimed and nothing ran on, what a plan preview of a
// missing stack leaves (engine.Request.SavePlan). It is no resource yet: a create may take it,
// and the engine settles its owner at the first up as for a new stack.
func emptyStack(st *engine.StackStatus) bool {
	return st != nil && st.ManagedBy == "" && st.Last == nil
}

// applyRequest is the body of POST …/apply.
type applyRequest struct {
	PlanID string `json:"planId"`
	// Document is the document the plan was taken for, needed only when it held secret
	// values (the API never keeps them); its spec must be the one the plan was taken for.
	Document json.RawMessage `json:"document,omitempty"`
}

func decodeApply(body []byte) (applyRequest, error) {
	var a applyRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return a, invalid("a request body is required", FieldProblem{Field: "planId", Reason: "required", Detail: `send {"planId": "<id>"}`})
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, invalid("the body is not an apply request", FieldProblem{Reason: "invalid", Detail: `send {"planId": "<id>"} (and "document" for a plan of a spec with secret values)`})
	}
	switch {
	case a.PlanID == "":
		return a, invalid("planId is required", FieldProblem{Field: "planId", Reason: "required", Detail: "the id of the plan to apply"})
	case !engine.ValidPlanID(a.PlanID):
		return a, invalid("planId is malformed", FieldProblem{Field: "planId", Reason: "invalid", Detail: "a plan id is 16 lowercase hex digits"})
	}
	return a, nil
}

// apply: POST …/{name}/apply {"planId": …}. 202 with the operation that applies exactly the
// resource's pending plan.
func (h resources) apply(c echo.Context) error {
	ctx := c.Request().Context()
	r, stack, _, err := h.stored(c)
	if err != nil {
		return err
	}
	req, err := decodeApply(bodyOf(c))
	if err != nil {
		return err
	}
	p, err := h.s.plans.Pending(ctx, stack)
	switch {
	case errors.Is(err, approval.ErrNoPending):
		return &PlanNotFoundError{What: r.String(), ID: req.PlanID}
	case err != nil:
		return err
	case p.ID != req.PlanID:
		return &PlanNotFoundError{What: r.String(), ID: req.PlanID, Pending: p.ID}
	}
	obj, t, err := h.planObject(c, r, p, req.Document)
	if err != nil {
		return err
	}
	if err := h.s.checkParent(ctx, t); err != nil {
		return err
	}
	return h.s.launch(c, OpApply, r, t, func(op *Operation) (work, error) {
		// Checked under the reservation: no PUT of this resource runs in between.
		rec, err := h.s.record(ctx, stack)
		if err != nil {
			return nil, err
		}
		if err := h.checkDoor(ctx, r, stack, rec); err != nil {
			return nil, err
		}
		if rec != nil {
			// A plan waits through a suspension and applies after it, never during it.
			stored, err := h.k.fromRecord(rec)
			if err != nil {
				return nil, err
			}
			if err := runner.CheckSuspended(stored); err != nil {
				return nil, err
			}
		}
		plans, err := h.s.loadPlans(ctx, r, p)
		if err != nil {
			return nil, err
		}
		if stale := staleReason(p, rec, obj, plans[stack]); stale != "" {
			h.s.dropPlans(ctx, stack)
			return nil, &PlanStaleError{What: r.String(), ID: p.ID, Reason: stale}
		}
		if rec == nil || !bytes.Equal(rec.Document, p.Document) {
			// A plan of a sent document: applying it makes it the spec, as a PUT would.
			next, err := newRecord(h.k, obj, t, rec, time.Now())
			if err != nil {
				return nil, err
			}
			if err := h.s.specs.Put(ctx, next); err != nil {
				return nil, err
			}
		}
		pv := planView(r, p)
		pv.Apply = ""
		op.setPlan(pv)
		return func(ctx context.Context, sink engine.Sink) (*runner.Outcome, error) {
			out, err := h.s.run.Up(ctx, obj, runner.Op{Door: engine.ManagedByAPI, Sink: sink, Message: opMessage(op), Plans: plans})
			h.s.dropPlans(ctx, stack) // a plan applies once, whatever the outcome
			return out, err
		}, nil
	})
}

// planObject is the object a pending plan applies: its document, or the one the request sent
// (required when the plan's held secret values), checked like a PUT's.
func (h resources) planObject(c echo.Context, r ref, p *approval.Record, sent json.RawMessage) (v1alpha1.Object, kinds.Target, error) {
	doc := p.Document
	if len(sent) > 0 {
		doc = sent
	} else if p.Redacted {
		return nil, kinds.Target{}, invalid("the plan's spec holds secret values the API does not keep: send the document again with the planId",
			FieldProblem{Field: "document", Reason: "required", Detail: "the document the plan was taken for, secret values included"})
	}
	t, obj, err := h.decodeDocument(c, r, doc)
	return obj, t, err
}

// staleReason says why a pending plan may not be applied to the resource as it is now, ""
// when it may: the stored spec changed since (a PUT, another plan applied), or the document
// is not the one the plan was taken for.
func staleReason(p *approval.Record, rec *Record, obj v1alpha1.Object, own *engine.Plan) string {
	var gen int64
	if rec != nil {
		gen = rec.Generation
	}
	if gen != p.Generation {
		return fmt.Sprintf("the spec changed since the plan was saved (generation %d, now %d); preview again for a new plan", p.Generation, gen)
	}
	digest, err := runner.SpecDigest(obj)
	if err != nil || own == nil || own.Meta[runner.PlanMetaSpec] != digest {
		return "the document is not the one the plan was taken for; preview again for a new plan"
	}
	return ""
}

// loadPlans reads the engine plans of a pending plan. One gone (discarded by another replica
// meanwhile) is a plan not found.
func (s *Server) loadPlans(ctx context.Context, r ref, p *approval.Record) (map[string]*engine.Plan, error) {
	plans, err := s.plans.Plans(ctx, p)
	if errors.Is(err, engine.ErrPlanNotFound) {
		return nil, &PlanNotFoundError{What: r.String(), ID: p.ID}
	}
	return plans, err
}
