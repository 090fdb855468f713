package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// ResourceView is the JSON of one resource: the CR document the API was sent (secret values
// redacted) and a status read from its stack, whichever door made it.
type ResourceView struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   ResourceMeta    `json:"metadata"`
	Spec       json.RawMessage `json:"spec,omitempty"`
	Status     ResourceStatus  `json:"status"`
}

// ResourceMeta is a resource's metadata.
type ResourceMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Generation counts the changes accepted by this API (0: the API holds no spec).
	Generation        int64      `json:"generation,omitempty"`
	CreationTimestamp *time.Time `json:"creationTimestamp,omitempty"`
}

// ResourceStatus is read from the resource's stack and this server's operations.
type ResourceStatus struct {
	Stack       string `json:"stack"`
	SharedStack string `json:"sharedStack,omitempty"`
	// Exists: the stack is in the backend (false before the first up got far enough).
	Exists bool `json:"exists"`
	// Ready: the stack's most recent update succeeded (what children wait for).
	Ready     bool   `json:"ready"`
	ManagedBy string `json:"managedBy,omitempty"`
	// LastUpdate is the stack's most recent recorded operation, from any door.
	LastUpdate *engine.HistoryEntry `json:"lastUpdate,omitempty"`
	// Operation is this server's most recent operation on the resource.
	Operation *OperationSummary `json:"operation,omitempty"`
	// Outputs are the stack outputs, secret values RedactedValue (GET of one resource only).
	Outputs map[string]any `json:"outputs,omitempty"`
	// SpecRedacted: the spec had secret values, shown as RedactedValue.
	SpecRedacted bool `json:"specRedacted,omitempty"`
}

// OperationSummary links an operation.
type OperationSummary struct {
	ID    string         `json:"id"`
	Kind  OperationKind  `json:"kind"`
	State OperationState `json:"state"`
	Href  string         `json:"href"`
}

// ResourceList is one page of a collection.
type ResourceList struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   ListMeta       `json:"metadata"`
	Items      []ResourceView `json:"items"`
}

// ListMeta carries the continue token of the next page ("" on the last one).
type ListMeta struct {
	Continue string `json:"continue,omitempty"`
}

// Page sizes of list requests.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

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
				if p, perr := h.s.plans.GetPlan(ctx, stack); perr == nil {
					h.s.dropPlans(ctx, p) // a plan of a resource that is gone is never applied
				}
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

// get: GET on a resource: spec, status and outputs (secrets redacted).
func (h resources) get(c echo.Context) error {
	ctx := c.Request().Context()
	r, stack, rec, err := h.stored(c)
	if err != nil {
		return err
	}
	st, err := h.s.status(ctx, stack)
	if err != nil {
		return err
	}
	if !h.belongs(r, rec, st) {
		return &NotFoundError{What: r.String()}
	}
	v, err := h.s.view(ctx, r, stack, rec, st)
	if err != nil {
		return err
	}
	if st != nil {
		outs, err := h.s.eng.Outputs(ctx, stack)
		switch {
		case errors.Is(err, engine.ErrNotFound):
		case err != nil:
			return err
		case len(outs) > 0:
			v.Status.Outputs = redactOutputs(outs)
		}
	}
	return c.JSON(http.StatusOK, v)
}

// list: GET on a collection, a page at a time. Items come from the backend's stacks (every
// door's) and from specs stored here whose stacks do not exist yet, in name order; the
// continue token is the last name of the page. Outputs are left out (GET one resource).
func (h resources) list(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := h.ref(c, false)
	if err != nil {
		return err
	}
	limit, after, err := pageParams(c)
	if err != nil {
		return err
	}
	prefix := r.stackPrefix()
	recs, err := h.s.specs.List(ctx, prefix)
	if err != nil {
		return err
	}
	summaries, err := h.s.eng.List(ctx, prefix)
	if err != nil {
		return err
	}
	byName := map[string]*Record{}
	for i := range recs {
		byName[recs[i].Name] = &recs[i]
	}
	for _, s := range summaries {
		name := strings.TrimPrefix(s.Name, prefix)
		// Only stacks named exactly as this kind names them: a personal job type's shared
		// stack ("…_shared") and hash-shortened names are not resources of the collection.
		probe := r
		probe.name = name
		if st, err := probe.stack(); err != nil || st != s.Name || !reDNSLabel.MatchString(name) {
			continue
		}
		if _, ok := byName[name]; !ok {
			byName[name] = nil
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		if n > after {
			names = append(names, n)
		}
	}
	sort.Strings(names)

	items := []ResourceView{}
	next := ""
	for len(names) > 0 && len(items) < limit {
		batch := names[:min(limit-len(items), len(names))]
		names = names[len(batch):]
		views, err := h.views(ctx, r, batch, byName)
		if err != nil {
			return err
		}
		for i, v := range views {
			if v != nil {
				items = append(items, *v)
			}
			next = batch[i]
		}
	}
	out := ResourceList{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(h.k.kind) + "List", Items: items}
	if len(names) > 0 {
		out.Metadata.Continue = encodeContinue(next)
	}
	return c.JSON(http.StatusOK, out)
}

// views reads the status of a batch of names concurrently (each costs CLI processes; the
// engine bounds them globally as well). A nil view is a name that does not belong (a server
// of another tenant, a stack removed meanwhile).
func (h resources) views(ctx context.Context, r ref, names []string, recs map[string]*Record) ([]*ResourceView, error) {
	out := make([]*ResourceView, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, h.s.cfg.ListConcurrency)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			item := r
			item.name = name
			stack, err := item.stack()
			if err != nil {
				errs[i] = err
				return
			}
			st, err := h.s.status(ctx, stack)
			if err != nil {
				errs[i] = err
				return
			}
			if !h.belongs(item, recs[name], st) {
				return
			}
			out[i], errs[i] = h.s.view(ctx, item, stack, recs[name], st)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// preview: POST …/{name}/preview, synchronous. With a body it previews that document (checked
// like a PUT); without one, the stored spec, which shows drift between the spec and the
// cluster. 200 with the structured diff; nothing changes. With ?save=true the plan is saved
// for a later apply (approvals.go).
func (h resources) preview(c echo.Context) error {
	ctx := c.Request().Context()
	r, stack, rec, err := h.stored(c)
	if err != nil {
		return err
	}
	save, err := saveParam(c)
	if err != nil {
		return err
	}
	var obj v1alpha1.Object
	var t kinds.Target
	if bodyOf(c) != nil {
		if t, obj, err = h.decodeBody(c, r); err != nil {
			return err
		}
		if err := h.checkUpdate(obj, rec); err != nil {
			return err
		}
	} else {
		if rec == nil {
			st, err := h.s.status(ctx, stack)
			if err != nil {
				return err
			}
			if !h.belongs(r, nil, st) {
				return &NotFoundError{What: r.String()}
			}
			return invalid("this API holds no spec for "+r.String()+" (made by "+doorName(st.ManagedBy)+"): send the document to preview",
				FieldProblem{Reason: "required", Detail: "a body is required"})
		}
		if rec.Parent != "" && h.k.parent != nil && rec.Parent != r.tenant {
			return &NotFoundError{What: r.String()}
		}
		if rec.Redacted {
			return invalid("the stored spec has secret values the API does not keep: send the full document to preview it",
				FieldProblem{Reason: "required", Detail: "a body is required"})
		}
		stored, err := h.k.fromRecord(rec)
		if err != nil {
			return err
		}
		if t, obj, err = kinds.Prepare(stored); err != nil {
			return err
		}
		// The policy may have changed since the spec was stored.
		if err := h.s.checkSources(ctx, obj); err != nil {
			return err
		}
	}
	if save {
		return h.savePreview(c, r, t, obj, rec)
	}
	out, err := h.s.run.Preview(ctx, obj, runner.Op{Door: engine.ManagedByAPI, Message: "tfrs api: preview " + r.String()})
	if err != nil {
		return err
	}
	rep := diff.FromOutcome(out)
	if out.Own() == nil && rep.Skipped == "" && t.Shared != "" {
		rep.Skipped = "the job type's shared stack does not exist yet, so the tenant's own stack cannot be previewed before it is up"
	}
	return c.JSON(http.StatusOK, rep)
}

// pageParams reads ?limit= and ?continue=.
func pageParams(c echo.Context) (limit int, after string, err error) {
	limit = DefaultPageSize
	var fields []FieldProblem
	if v := c.QueryParam("limit"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > MaxPageSize {
			fields = append(fields, FieldProblem{Field: "limit", Reason: "invalid", Detail: fmt.Sprintf("limit must be an integer from 1 to %d", MaxPageSize)})
		} else {
			limit = n
		}
	}
	if v := c.QueryParam("continue"); v != "" {
		name, ok := decodeContinue(v)
		if !ok {
			fields = append(fields, FieldProblem{Field: "continue", Reason: "invalid", Detail: "not a continue token of this API"})
		}
		after = name
	}
	if len(fields) > 0 {
		return 0, "", invalid("invalid list parameters", fields...)
	}
	return limit, after, nil
}

const continuePrefix = "v1:"

// encodeContinue makes the opaque token of the next page: the last name returned.
func encodeContinue(name string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(continuePrefix + name))
}

func decodeContinue(tok string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", false
	}
	name, ok := strings.CutPrefix(string(b), continuePrefix)
	if !ok || !reDNSLabel.MatchString(name) {
		return "", false
	}
	return name, true
}

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

// view builds a resource's JSON (without outputs).
func (s *Server) view(ctx context.Context, r ref, stack string, rec *Record, st *engine.StackStatus) (*ResourceView, error) {
	v := &ResourceView{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: string(r.k.kind),
		Metadata: ResourceMeta{Name: r.name, Namespace: r.namespace},
		Status:   ResourceStatus{Stack: stack},
	}
	if rec != nil {
		var doc struct {
			Metadata objectMeta      `json:"metadata"`
			Spec     json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal(rec.Document, &doc); err != nil {
			return nil, fmt.Errorf("stored record of %s is unreadable: %w", stack, err)
		}
		created := rec.Created
		v.Metadata.Labels, v.Metadata.Annotations = doc.Metadata.Labels, doc.Metadata.Annotations
		v.Metadata.Generation, v.Metadata.CreationTimestamp = rec.Generation, &created
		v.Spec, v.Status.SpecRedacted = doc.Spec, rec.Redacted
		if obj, err := r.k.fromRecord(rec); err == nil {
			if t, err := kinds.TargetOf(obj); err == nil {
				v.Status.SharedStack = t.Shared
			}
		}
	}
	if st != nil {
		v.Status.Exists, v.Status.Ready = true, st.Ready
		v.Status.ManagedBy, v.Status.LastUpdate = string(st.ManagedBy), st.Last
		if sh := st.Tags[engine.TagShared]; sh != "" {
			v.Status.SharedStack = sh
		}
	}
	if op := s.ops.latestFor(ctx, stack); op != nil {
		ov := op.view()
		v.Status.Operation = &OperationSummary{ID: ov.ID, Kind: ov.Kind, State: ov.State, Href: ov.Links.Self}
	}
	return v, nil
}
