package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// ProblemContentType is the media type of every error response (RFC 7807).
const ProblemContentType = "application/problem+json"

// problemTypeBase prefixes the problem type URIs. They identify the kind of problem; they are
// not meant to be fetched.
const problemTypeBase = "https://tfrs.io/problems/"

// Problem is an RFC 7807 problem document. Every error the API answers with is one, and so is
// a failed operation's error. Detail never carries an internal error message: internal
// failures get an opaque ErrorID that the server logs together with the real cause.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// RequestID echoes the X-Request-Id of the request that failed.
	RequestID string `json:"requestId,omitempty"`
	// ErrorID identifies an internal error in the server's log (500 only).
	ErrorID string `json:"errorId,omitempty"`
	// Errors names every invalid field of a 400.
	Errors []FieldProblem `json:"errors,omitempty"`
	// Operation is the URL of the operation that holds the stack (409 busy).
	Operation string `json:"operation,omitempty"`
	// ManagedBy is the door that manages the stack (409 managed elsewhere, 409 exists).
	ManagedBy string `json:"managedBy,omitempty"`
	// Dependents are the stacks that still depend on the one to delete (409).
	Dependents []string `json:"dependents,omitempty"`
	// FailedResources are the URNs whose step failed (operation failures).
	FailedResources []string `json:"failedResources,omitempty"`
	// Denied is the authorization check that failed (403 forbidden): verb, group, resource,
	// subresource, namespace, name, or a non-resource path.
	Denied *Attributes `json:"denied,omitempty"`
}

// FieldProblem is one invalid field of a request.
type FieldProblem struct {
	// Field is the JSON path of the field ("spec.robotId", "metadata.name"); "" for the body.
	Field string `json:"field"`
	// Reason is a short machine-readable word: required, invalid, unknown, duplicate, type,
	// tooLong, tooMany, notSupported, forbidden (a source policy refusal too), immutable.
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Sentinel errors of the API. Handlers return them (wrapped in the typed errors below); the
// error handler maps them to status codes with errors.Is, so a handler never picks a status.
var (
	ErrInvalidRequest   = errors.New("invalid request")
	ErrUnsupportedMedia = errors.New("unsupported media type")
	ErrUnauthorized     = errors.New("unauthorized")
	ErrForbidden        = errors.New("forbidden")
	ErrNotFound         = errors.New("not found")
	ErrAlreadyExists    = errors.New("already exists")
	ErrBusy             = errors.New("stack busy")
	ErrNoSpec           = errors.New("no stored spec")
	ErrShuttingDown     = errors.New("shutting down")
)

// InvalidError is a request that breaks the rules; Fields names every problem.
type InvalidError struct {
	Detail string
	Fields []FieldProblem
}

func (e *InvalidError) Error() string {
	parts := make([]string, 0, len(e.Fields))
	for _, f := range e.Fields {
		parts = append(parts, f.Field+": "+f.Reason)
	}
	return fmt.Sprintf("invalid request: %s %s", e.Detail, strings.Join(parts, ", "))
}

// Is makes errors.Is(err, ErrInvalidRequest) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalidRequest }

func invalid(detail string, fields ...FieldProblem) *InvalidError {
	return &InvalidError{Detail: detail, Fields: fields}
}

// fieldProblems converts validation errors (the same ones the CRD reports) without their
// values: a value may be a secret (a registry password that is too long, say).
func fieldProblems(errs field.ErrorList) []FieldProblem {
	out := make([]FieldProblem, 0, len(errs))
	for _, fe := range errs {
		detail := fe.Detail
		if detail == "" {
			detail = fe.Type.String()
		}
		out = append(out, FieldProblem{Field: fe.Field, Reason: reasonOf(fe.Type), Detail: detail})
	}
	return out
}

func reasonOf(t field.ErrorType) string {
	switch t {
	case field.ErrorTypeRequired:
		return "required"
	case field.ErrorTypeForbidden:
		return "forbidden"
	case field.ErrorTypeTooLong:
		return "tooLong"
	case field.ErrorTypeTooShort:
		return "tooShort"
	case field.ErrorTypeTooMany:
		return "tooMany"
	case field.ErrorTypeTooFew:
		return "tooFew"
	case field.ErrorTypeNotSupported:
		return "notSupported"
	case field.ErrorTypeDuplicate:
		return "duplicate"
	case field.ErrorTypeNotFound:
		return "notFound"
	case field.ErrorTypeTypeInvalid:
		return "type"
	default:
		return "invalid"
	}
}

// NotFoundError names what was not found.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What + " not found" }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// ExistsError refuses a create of something that exists.
type ExistsError struct {
	What      string
	ManagedBy engine.ManagedBy
}

func (e *ExistsError) Error() string { return e.What + " already exists" }

// Is makes errors.Is(err, ErrAlreadyExists) true.
func (e *ExistsError) Is(target error) bool { return target == ErrAlreadyExists }

// BusyError refuses an operation on a stack that an operation holds (of this replica, or of
// another one sharing the backend).
type BusyError struct {
	Stack     string
	Operation string // id of the holder
	// Detail, when set, says what is busy instead of the stack (a caller's fleet preview).
	Detail string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("stack %s is busy with operation %s", e.Stack, e.Operation)
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// NoSpecError: the stack exists but was made by another door, so the API holds no spec to
// act on (a delete needs the spec to find every stack of the object).
type NoSpecError struct {
	What      string
	ManagedBy engine.ManagedBy
}

func (e *NoSpecError) Error() string { return "no stored spec for " + e.What }

// Is makes errors.Is(err, ErrNoSpec) true.
func (e *NoSpecError) Is(target error) bool { return target == ErrNoSpec }

// problemOf maps an error to its problem document. internal reports an error the client must
// not see the cause of (the caller logs it under the problem's ErrorID).
func problemOf(err error) (p Problem, internal bool) {
	var (
		he  *echo.HTTPError
		mbe *http.MaxBytesError
		ie  *InvalidError
		rie *kinds.InvalidError
		ex  *ExistsError
		be  *BusyError
		me  *runner.ManagedElsewhereError
		sc  *runner.StackClaimedError
		de  *runner.DependentsError
		pe  *kinds.ParentError
		ns  *NoSpecError
		nf  *NotFoundError
		oe  *engine.OpError
		se  *SourceError
		rl  *RateLimitError
		fe  *ForbiddenError
		pnf *PlanNotFoundError
		pst *PlanStaleError
		pin *PlanIncompleteError
		pmm *runner.PlanMismatchError
		sus *runner.SuspendedError
	)
	switch {
	case errors.As(err, &he):
		return httpErrorProblem(he), he.Code >= 500
	case errors.As(err, &mbe):
		return newProblem(http.StatusRequestEntityTooLarge, "body-too-large", "Request body too large",
			fmt.Sprintf("the request body exceeds %d bytes", mbe.Limit)), false
	case errors.As(err, &ie):
		p := newProblem(http.StatusBadRequest, "invalid-request", "Invalid request", ie.Detail)
		p.Errors = ie.Fields
		if p.Detail == "" {
			p.Detail = fmt.Sprintf("%d invalid field(s)", len(ie.Fields))
		}
		return p, false
	case errors.As(err, &rie):
		p := newProblem(http.StatusBadRequest, "invalid-request", "Invalid request",
			fmt.Sprintf("%d invalid field(s)", len(rie.Errors)))
		p.Errors = fieldProblems(rie.Errors)
		return p, false
	case errors.Is(err, engine.ErrInvalidName):
		return newProblem(http.StatusBadRequest, "invalid-request", "Invalid request",
			"the names do not form a valid stack name"), false
	case errors.Is(err, ErrUnsupportedMedia):
		return newProblem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type",
			"send the body as application/json"), false
	case errors.As(err, &se):
		p := newProblem(http.StatusForbidden, "source-forbidden", "Source forbidden",
			fmt.Sprintf("%d source(s) are not allowed by this server's source policy", len(se.Fields)))
		p.Errors = se.Fields
		return p, false
	case errors.As(err, &rl):
		if errors.Is(err, ErrTooManyStreams) {
			return newProblem(http.StatusTooManyRequests, "too-many-streams", "Too many event streams",
				"this token holds as many event streams as it may; close one or retry later"), false
		}
		return newProblem(http.StatusTooManyRequests, "rate-limited", "Too many requests",
			"this token is over its request rate; retry after the Retry-After seconds"), false
	case errors.Is(err, ErrUnauthorized):
		return newProblem(http.StatusUnauthorized, "unauthorized", "Unauthorized",
			"a valid bearer token is required"), false
	case errors.As(err, &fe):
		p := newProblem(http.StatusForbidden, "forbidden", "Forbidden", forbiddenDetail(fe))
		a := fe.Attrs
		p.Denied = &a
		return p, false
	case errors.Is(err, ErrAuthUnavailable):
		return newProblem(http.StatusServiceUnavailable, "auth-unavailable", "Authentication unavailable",
			"the Kubernetes API server could not review the token or the request; retry later"), false
	case errors.Is(err, ErrForbidden):
		return newProblem(http.StatusForbidden, "forbidden", "Forbidden",
			"this token's role may only read; changes need an admin token"), false
	case errors.As(err, &pnf):
		detail := fmt.Sprintf("%s has no pending plan %s", pnf.What, pnf.ID)
		if pnf.Pending != "" {
			detail += " (its pending plan is another one: a newer save replaced it)"
		}
		p := newProblem(http.StatusNotFound, "plan-not-found", "Plan not found", detail+"; preview with ?save=true for a plan")
		p.Errors = []FieldProblem{{Field: "planId", Reason: "not-found", Detail: "no pending plan of the resource has this id"}}
		return p, false
	case errors.As(err, &pst):
		p := newProblem(http.StatusConflict, "plan-mismatch", "Plan no longer matches", pst.Error()+"; the plan was discarded")
		p.Errors = []FieldProblem{{Field: "planId", Reason: "stale", Detail: pst.Reason}}
		return p, false
	case errors.As(err, &pmm):
		return newProblem(http.StatusConflict, "plan-mismatch", "Plan no longer matches",
			pmm.Error()+"; nothing ran and the plan was discarded"), false
	case errors.Is(err, engine.ErrPlanMismatch):
		// Pulumi refused a step the plan does not hold: the parent's outputs or the cluster
		// changed since the preview. Steps before it may have run, all of them planned ones.
		return newProblem(http.StatusConflict, "plan-mismatch", "Plan no longer matches",
			"Pulumi refused a step the saved plan does not hold (the cluster or a parent's outputs changed since the preview); the plan was discarded: preview again for a new plan"), false
	case errors.As(err, &pin):
		return newProblem(http.StatusConflict, "plan-incomplete", "No complete plan", pin.Error()), false
	case errors.As(err, &nf):
		return newProblem(http.StatusNotFound, "not-found", "Not found", nf.What+" not found"), false
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, ErrNotFound):
		return newProblem(http.StatusNotFound, "not-found", "Not found", "the resource does not exist"), false
	case errors.As(err, &sc):
		p := newProblem(http.StatusConflict, "stack-claimed", "Stack belongs to another object", sc.Error())
		p.Errors = []FieldProblem{{Field: "metadata.name", Reason: "duplicate", Detail: "its stack belongs to " + sc.Owner}}
		return p, false
	case errors.As(err, &me):
		p := newProblem(http.StatusConflict, "managed-elsewhere", "Managed elsewhere", managedElsewhereDetail(me.ManagedBy))
		p.ManagedBy = string(me.ManagedBy)
		return p, false
	case errors.As(err, &be):
		p := newProblem(http.StatusConflict, "busy", "Stack busy",
			"another operation is running on this stack; wait for it to end")
		if be.Detail != "" {
			p.Title, p.Detail = "Busy", be.Detail
		}
		p.Operation = operationPath(be.Operation)
		return p, false
	case errors.Is(err, engine.ErrConflict):
		return newProblem(http.StatusConflict, "busy", "Stack busy",
			"another operation holds the stack (here or in another process); retry later"), false
	case errors.As(err, &ex):
		p := newProblem(http.StatusConflict, "already-exists", "Already exists", ex.What+" already exists; change it with PUT")
		if ex.ManagedBy == engine.ManagedByOperator {
			p.Detail = ex.What + " already exists and is managed by the operator: edit the custom resource instead"
		}
		p.ManagedBy = string(ex.ManagedBy)
		return p, false
	case errors.As(err, &ns):
		p := newProblem(http.StatusConflict, "no-spec", "No stored spec",
			fmt.Sprintf("%s was created by %s, not through this API, which therefore holds no spec for it; manage it through %s", ns.What, doorName(ns.ManagedBy), doorName(ns.ManagedBy)))
		p.ManagedBy = string(ns.ManagedBy)
		return p, false
	case errors.As(err, &sus):
		p := newProblem(http.StatusConflict, "suspended", "Suspended",
			sus.Error()+"; PUT the spec without it first")
		p.Errors = []FieldProblem{{Field: "spec.suspend", Reason: "suspended", Detail: "no operation runs while it is true"}}
		return p, false
	case errors.As(err, &de):
		p := newProblem(http.StatusConflict, "dependents-exist", "Dependents exist",
			fmt.Sprintf("%d stack(s) still depend on this one; delete them first", len(de.Dependents)))
		p.Dependents = de.Dependents
		return p, false
	case errors.Is(err, engine.ErrPendingNeedsDecision):
		return newProblem(http.StatusConflict, "needs-decision", "Interrupted operation needs a decision",
			"an interrupted run left a pending create of a data-bearing resource; resolve it with `tfrs up --adopt/--forget`"), false
	case errors.As(err, &pe):
		detail := "the parent is missing or not ready"
		if pe.Kind != "" {
			detail = fmt.Sprintf("%s %q is missing or not ready", pe.Kind, pe.Name)
		}
		return newProblem(http.StatusFailedDependency, "parent-not-ready", "Parent not ready", detail), false
	case errors.Is(err, kinds.ErrParentNotReady):
		return newProblem(http.StatusFailedDependency, "parent-not-ready", "Parent not ready", "the parent is missing or not ready"), false
	case errors.Is(err, ErrOperationEnded):
		return newProblem(http.StatusConflict, "operation-ended", "Operation ended", "the operation already ended; there is nothing to cancel"), false
	case errors.Is(err, ErrNotReady):
		return newProblem(http.StatusServiceUnavailable, "not-ready", "Not ready", "the server cannot take work yet"), false
	case errors.Is(err, ErrShuttingDown), errors.Is(err, engine.ErrClosed):
		return newProblem(http.StatusServiceUnavailable, "shutting-down", "Shutting down",
			"the server is shutting down and starts no new operation; retry on another instance"), false
	case errors.As(err, &oe) && errors.Is(err, engine.ErrDeadline):
		// The engine's per-kind deadline (not the request's): Detail names the kind and the
		// deadline, and is safe to show like any OpError's.
		return newProblem(http.StatusGatewayTimeout, "deadline-exceeded", "Operation deadline exceeded", clip(oe.Detail, 2000)), false
	case errors.Is(err, context.DeadlineExceeded):
		return newProblem(http.StatusGatewayTimeout, "timeout", "Timeout", "the request took too long"), false
	case errors.Is(err, engine.ErrCanceled):
		return newProblem(http.StatusConflict, "canceled", "Canceled", "the operation was canceled"), false
	case errors.As(err, &oe) && errors.Is(err, engine.ErrFailed):
		// The engine made Detail safe to show (diagnostics, redacted of known secrets), and
		// the same diagnostics already stream to the client as events.
		return newProblem(http.StatusUnprocessableEntity, "stack-operation-failed", "Stack operation failed",
			clip(oe.Detail, 2000)), false
	}
	return newProblem(http.StatusInternalServerError, "internal", "Internal server error",
		"the server failed; quote the errorId when reporting it"), true
}

func newProblem(status int, slug, title, detail string) Problem {
	return Problem{Type: problemTypeBase + slug, Title: title, Status: status, Detail: detail}
}

// httpErrorProblem covers echo's own errors (route not found, method not allowed, body limit)
// with fixed texts: echo's messages are fine, but fixed texts keep the contract in one place.
func httpErrorProblem(he *echo.HTTPError) Problem {
	switch he.Code {
	case http.StatusNotFound:
		return newProblem(he.Code, "not-found", "Not found", "no such route")
	case http.StatusMethodNotAllowed:
		return newProblem(he.Code, "method-not-allowed", "Method not allowed", "the route does not accept this method")
	case http.StatusRequestEntityTooLarge:
		return newProblem(he.Code, "body-too-large", "Request body too large", "the request body exceeds the server's limit")
	case http.StatusUnsupportedMediaType:
		return newProblem(he.Code, "unsupported-media-type", "Unsupported media type", "send the body as application/json")
	case http.StatusUnauthorized:
		return newProblem(he.Code, "unauthorized", "Unauthorized", "a valid bearer token is required")
	case http.StatusForbidden:
		return newProblem(he.Code, "forbidden", "Forbidden", "not allowed")
	}
	if he.Code >= 400 && he.Code < 500 {
		return newProblem(he.Code, "bad-request", http.StatusText(he.Code), "")
	}
	return newProblem(http.StatusInternalServerError, "internal", "Internal server error",
		"the server failed; quote the errorId when reporting it")
}

// forbiddenDetail says who may not do what, as the Kubernetes API server says it.
func forbiddenDetail(fe *ForbiddenError) string {
	a := fe.Attrs
	var d string
	switch {
	case a.Resource == "":
		d = fmt.Sprintf("%q cannot %s path %q", fe.Principal, a.Verb, a.Path)
	default:
		res := a.Resource
		if a.Subresource != "" {
			res += "/" + a.Subresource
		}
		d = fmt.Sprintf("%q cannot %s resource %q in API group %q", fe.Principal, a.Verb, res, a.Group)
		if a.Name != "" {
			d += fmt.Sprintf(" named %q", a.Name)
		}
		if a.Namespace != "" {
			d += fmt.Sprintf(" in the namespace %q", a.Namespace)
		} else {
			d += " at the cluster scope"
		}
	}
	if fe.Reason != "" {
		d += " (" + fe.Reason + ")"
	}
	return d
}

func managedElsewhereDetail(by engine.ManagedBy) string {
	if by == engine.ManagedByOperator {
		return "the stack is managed by the operator: edit the custom resource instead"
	}
	return fmt.Sprintf("the stack is managed by %s; change it there", doorName(by))
}

func doorName(by engine.ManagedBy) string {
	switch by {
	case engine.ManagedByOperator:
		return "the operator (a custom resource)"
	case engine.ManagedByCLI:
		return "the tfrs CLI"
	case "":
		return "another tool"
	}
	return string(by)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func newErrorID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// handleError is the one HTTP error handler. Handlers and middleware only return errors; this
// turns them into problem documents, logs internal ones under an opaque id, and answers
// nothing to a client that is already gone.
func (s *Server) handleError(err error, c echo.Context) {
	req := c.Request()
	rid := requestIDOf(c)
	if c.Response().Committed {
		// Mid-stream (SSE): the status is out; the client sees the stream end.
		s.log.Debug("error after response started", "requestId", rid, "err", err)
		return
	}
	if req.Context().Err() != nil && errors.Is(err, context.Canceled) {
		// The client went away; there is nobody to answer. 499 marks it in logs and metrics.
		c.Response().Status = statusClientClosed
		return
	}
	p, internal := problemOf(err)
	p.Instance = req.URL.Path
	p.RequestID = rid
	if internal {
		p.ErrorID = newErrorID()
		s.log.Error("internal error", "errorId", p.ErrorID, "requestId", rid, "method", req.Method,
			"route", c.Path(), "err", err)
	}
	if p.Status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tfrs"`)
	}
	if p.Status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", "30")
	}
	var rl *RateLimitError
	if errors.As(err, &rl) {
		c.Response().Header().Set("Retry-After", rl.retryAfterSeconds())
	}
	if p.Status == http.StatusMethodNotAllowed {
		if allow, ok := c.Get(echo.ContextKeyHeaderAllow).(string); ok && allow != "" {
			c.Response().Header().Set(echo.HeaderAllow, allow)
		}
	}
	body, mErr := json.Marshal(p)
	if mErr != nil {
		s.log.Error("encode problem", "requestId", rid, "err", mErr)
		body = []byte(`{"type":"` + problemTypeBase + `internal","title":"Internal server error","status":500}`)
		p.Status = http.StatusInternalServerError
	}
	if req.Method == http.MethodHead {
		err = c.NoContent(p.Status)
	} else {
		err = c.Blob(p.Status, ProblemContentType, body)
	}
	if err != nil {
		s.log.Debug("write problem", "requestId", rid, "err", err)
	}
}

// statusClientClosed is nginx's convention for "client closed the request".
const statusClientClosed = 499

// LogValue logs a Problem by status and type only.
func (p Problem) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("status", p.Status), slog.String("type", p.Type))
}
