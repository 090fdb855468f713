package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Authorization: every authenticated request is checked as what it stands for on the custom
// resources, the way the Kubernetes API server would check kubectl doing the same:
//
//	GET/HEAD  collection               list   <resource>
//	POST      collection               create <resource>       (no name: RBAC's resourceNames never restrict a create)
//	GET/HEAD  …/{name}                 get    <resource> {name}
//	PUT       …/{name}                 update <resource> {name}
//	DELETE    …/{name}                 delete <resource> {name}
//	POST      …/{name}/preview         get    <resource> {name}  and  create <resource>/preview {name}
//	POST      …/{name}/preview?save=true    the same, and update <resource> {name} (it writes a plan)
//	POST      …/{name}/apply           update <resource> {name}  (applying a plan is the PUT it stands for)
//	GET       /v1/operations/{id}[/events]  get <the operation's resource> {name}
//	POST      /v1/operations/{id}/cancel    the operation's own verb (create, update or delete; update for an apply) on its resource
//	POST      /v1/fleet/preview        per object, in the handler: get and create <resource>/preview, the others left out
//	GET/POST  a fleet preview's operation   only the principal that started it (its report was filtered for them)
//	GET       /metrics                 get on the non-resource URL /metrics
//
// <resource> is tfrclusters (cluster-scoped), tfrtenants or tfrservers (in the URL's
// namespace), API group tfrs.io. /openapi.json needs authentication only. The check runs
// before the body is read: a create is authorized on the URL's namespace, and the body's
// metadata must then name that namespace (400 otherwise), as kubectl's would.

// Attributes are what one authorization check asks: a verb on a resource (with its namespace
// and name; an empty name for list and create) or on a non-resource path.
type Attributes struct {
	Verb        string `json:"verb"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	// Path is the non-resource URL (/metrics); Resource is empty then.
	Path string `json:"path,omitempty"`
}

// Verbs of the checks, as Kubernetes names them.
const (
	VerbGet    = "get"
	VerbList   = "list"
	VerbCreate = "create"
	VerbUpdate = "update"
	VerbDelete = "delete"
)

// SubresourcePreview is the subresource a preview is checked against (verb create): grant it
// with `resources: ["tfrtenants/preview"]`, `verbs: ["create"]`.
const SubresourcePreview = "preview"

// String is "create tfrtenants.tfrs.io in namespace team-b", "get tfrtenants.tfrs.io/preview
// acme …", "get /metrics".
func (a Attributes) String() string {
	if a.Resource == "" {
		return a.Verb + " " + a.Path
	}
	var b strings.Builder
	b.WriteString(a.Verb + " " + a.Resource)
	if a.Group != "" {
		b.WriteString("." + a.Group)
	}
	if a.Subresource != "" {
		b.WriteString("/" + a.Subresource)
	}
	if a.Name != "" {
		fmt.Fprintf(&b, " %q", a.Name)
	}
	if a.Namespace != "" {
		fmt.Fprintf(&b, " in namespace %q", a.Namespace)
	} else {
		b.WriteString(" (cluster-scoped)")
	}
	return b.String()
}

// Authorizer decides whether a principal may do what attrs describe: nil, a *ForbiddenError,
// or an error wrapping ErrAuthUnavailable when it cannot decide.
type Authorizer interface {
	Authorize(ctx context.Context, p Principal, attrs Attributes) error
}

// ForbiddenError is a denied check (403 naming the verb, resource, namespace and name).
type ForbiddenError struct {
	Principal string
	Attrs     Attributes
	// Reason, when set, is safe to show the caller (a static token's scope; never the
	// API server's RBAC reasoning).
	Reason string
}

func (e *ForbiddenError) Error() string {
	msg := fmt.Sprintf("%q may not %s", e.Principal, e.Attrs)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Is makes errors.Is(err, ErrForbidden) true.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// modeAuthorizer is the one place that decides: each principal is authorized by the mode
// that authenticated it.
type modeAuthorizer map[AuthMode]Authorizer

func (m modeAuthorizer) Authorize(ctx context.Context, p Principal, attrs Attributes) error {
	if a := m[p.Via]; a != nil {
		return a.Authorize(ctx, p, attrs)
	}
	return &ForbiddenError{Principal: p.Name, Attrs: attrs}
}

// resourceOf is the Kubernetes resource (plural) of a kind: tfrclusters, tfrtenants, tfrservers.
func resourceOf(k *kindInfo) string { return "tfr" + k.plural }

// kindByName is the kindInfo of a kind name.
func kindByName(kind v1alpha1.Kind) *kindInfo {
	for _, k := range resourceKinds {
		if k.kind == kind {
			return k
		}
	}
	return nil
}

// authzMiddleware authorizes the request (see the table above) before its body is read. A
// route with nothing to check (the OpenAPI document, an unknown route) passes to the router's
// answer.
func (s *Server) authzMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if unauthenticated[c.Path()] {
			return next(c)
		}
		checks, err := s.requestAttributes(c)
		if err != nil {
			return err
		}
		p := principal(c)
		for _, a := range checks {
			if err := s.authz.Authorize(c.Request().Context(), p, a); err != nil {
				return err
			}
		}
		return next(c)
	}
}

// requestAttributes are the checks a request needs.
func (s *Server) requestAttributes(c echo.Context) ([]Attributes, error) {
	method := c.Request().Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	route := c.Path()
	switch route {
	case "/metrics":
		return []Attributes{{Verb: VerbGet, Path: "/metrics"}}, nil
	case "/v1/operations/:id", "/v1/operations/:id/events", "/v1/operations/:id/cancel":
		h, err := s.ops.get(c.Request().Context(), c.Param("id"))
		if err != nil {
			return nil, err
		}
		op := h.view()
		if op.Kind == OpFleetPreview {
			if p := principalOf(c); h.owner() != p {
				return nil, &ForbiddenError{Principal: p, Attrs: Attributes{Verb: VerbGet, Path: operationPath(op.ID)},
					Reason: "a fleet preview is visible only to the principal that started it"}
			}
			return nil, nil
		}
		k := kindByName(op.Resource.Kind)
		if k == nil {
			return nil, fmt.Errorf("operation %s of unknown kind %q", op.ID, op.Resource.Kind)
		}
		verb := VerbGet
		if strings.HasSuffix(route, "/cancel") {
			verb = string(op.Kind) // create, update, delete: who may start it may stop it
			if op.Kind == OpApply {
				verb = VerbUpdate
			}
		}
		return []Attributes{resourceAttrs(k, verb, op.Resource.Namespace, op.Resource.Name)}, nil
	}
	for _, k := range resourceKinds {
		var verb string
		withName, preview, save := false, false, false
		switch {
		case route == k.route && method == http.MethodGet:
			verb = VerbList
		case route == k.route && method == http.MethodPost:
			verb = VerbCreate
		case route == k.route+"/:name" && method == http.MethodGet:
			verb, withName = VerbGet, true
		case route == k.route+"/:name" && method == http.MethodPut:
			verb, withName = VerbUpdate, true
		case route == k.route+"/:name" && method == http.MethodDelete:
			verb, withName = VerbDelete, true
		case route == k.route+"/:name/preview" && method == http.MethodPost:
			verb, withName, preview = VerbGet, true, true
			// Saving a plan writes it to the backend for an apply and, for a missing
			// stack, creates the empty stack record: a change, so it needs update like
			// the PUT it prepares. Any value but an explicit "false" or none is checked
			// as a save (the handler then refuses a malformed one).
			save = c.QueryParam("save") != "" && c.QueryParam("save") != "false"
		case route == k.route+"/:name/apply" && method == http.MethodPost:
			verb, withName = VerbUpdate, true
		default:
			continue
		}
		// The URL's names are checked before anything is asked about them: a review of a
		// name no resource can have would only fill the cache.
		r, err := resources{s: s, k: k}.ref(c, withName)
		if err != nil {
			return nil, err
		}
		if !preview {
			return []Attributes{resourceAttrs(k, verb, r.namespace, r.name)}, nil
		}
		checks := previewAttrs(k, r.namespace, r.name)
		if save {
			checks = append(checks, resourceAttrs(k, VerbUpdate, r.namespace, r.name))
		}
		return checks, nil
	}
	return nil, nil
}

// previewAttrs are the checks of a preview of one resource: get on it and create on its
// preview subresource (a single preview, and each object of a fleet preview).
func previewAttrs(k *kindInfo, namespace, name string) []Attributes {
	a := resourceAttrs(k, VerbGet, namespace, name)
	sub := a
	sub.Verb, sub.Subresource = VerbCreate, SubresourcePreview
	return []Attributes{a, sub}
}

func resourceAttrs(k *kindInfo, verb, namespace, name string) Attributes {
	return Attributes{Verb: verb, Group: v1alpha1.GroupVersion.Group, Resource: resourceOf(k), Namespace: namespace, Name: name}
}
