package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// TestParseTokenScopes: scope fields after the role, in any order around the name; every
// malformed scope is refused without quoting the token.
func TestParseTokenScopes(t *testing.T) {
	toks, err := ParseTokens(strings.NewReader(`
aaaaaaaaaaaaaaaa1 admin team-a namespaces=team-a,team-b kinds=TFRTenant,tfrserver verbs=get,list,create,preview
bbbbbbbbbbbbbbbb2 read-only kinds=TFRCluster ci
cccccccccccccccc3 admin
`))
	require.NoError(t, err)
	require.Len(t, toks, 3)
	require.Equal(t, Token{Name: "team-a", Role: RoleAdmin, Value: "aaaaaaaaaaaaaaaa1", Scope: Scope{
		Namespaces: []string{"team-a", "team-b"}, Kinds: []v1alpha1.Kind{v1alpha1.KindTFRTenant, v1alpha1.KindTFRServer},
		Verbs: []string{"get", "list", "create", "preview"},
	}}, toks[0])
	require.Equal(t, "ci", toks[1].Name)
	require.Equal(t, []v1alpha1.Kind{v1alpha1.KindTFRCluster}, toks[1].Scope.Kinds)
	require.Equal(t, Scope{}, toks[2].Scope, "no scope: the role's whole power, as before")
	require.Equal(t, "team-a (admin, namespaces=team-a,team-b kinds=TFRTenant,TFRServer verbs=get,list,create,preview)", toks[0].String())

	for bad, want := range map[string]string{
		"aaaaaaaaaaaaaaaa1 admin namespaces=":                  "no values",
		"aaaaaaaaaaaaaaaa1 admin namespaces=Team_A":            "not a namespace name",
		"aaaaaaaaaaaaaaaa1 admin namespaces=a namespaces=b":    "given twice",
		"aaaaaaaaaaaaaaaa1 admin kinds=Pod":                    "not TFRCluster",
		"aaaaaaaaaaaaaaaa1 admin verbs=get,patch":              "not one of",
		"aaaaaaaaaaaaaaaa1 admin role=admin":                   "unknown scope",
		"aaaaaaaaaaaaaaaa1 admin alice bob":                    "more than one NAME",
		"aaaaaaaaaaaaaaaa1 admin alice verbs=get bob":          "more than one NAME",
		"aaaaaaaaaaaaaaaa1 admin namespaces=*":                 "not a namespace name",
		"aaaaaaaaaaaaaaaa1 admin kinds=TFRTenant kinds=tenant": "given twice",
	} {
		_, err := ParseTokens(strings.NewReader(bad))
		require.ErrorContains(t, err, want, bad)
		require.NotContains(t, err.Error(), "aaaaaaaaaaaaaaaa1", "errors never quote a token")
	}
}

// TestStaticScopes: a scoped token gets 403 outside its scope (naming the check), and what
// the scope allows still works; the role stays the ceiling.
func TestStaticScopes(t *testing.T) {
	const (
		teamA    = "team-a-token-0123456789"
		readOnly = "team-ro-token-0123456789"
		clusters = "clusters-token-0123456789"
		previews = "preview-token-0123456789"
	)
	scope := func(fields ...string) Scope {
		var s Scope
		for _, f := range fields {
			require.NoError(t, s.ParseField(f))
		}
		return s
	}
	h := newHarness(t, func(c *Config) {
		c.Tokens = append(c.Tokens,
			Token{Name: "team-a", Role: RoleAdmin, Value: teamA, Scope: scope("namespaces=tfrs-system", "kinds=TFRTenant,TFRServer")},
			Token{Name: "team-ro", Role: RoleReadOnly, Value: readOnly, Scope: scope("namespaces=tfrs-system", "verbs=get,list,preview")},
			Token{Name: "clusters", Role: RoleAdmin, Value: clusters, Scope: scope("kinds=TFRCluster", "verbs=get,list")},
			Token{Name: "preview", Role: RoleAdmin, Value: previews, Scope: scope("verbs=get,preview")},
		)
	})
	other := "/v1/namespaces/other/tenants"
	for _, tc := range []struct {
		token, method, path string
		body                any
		code                int
		denied              string // the denied check's verb and resource, for 403
	}{
		{teamA, http.MethodGet, tenantsPath, nil, 200, ""},
		{teamA, http.MethodGet, tenantsPath + "/acme", nil, 200, ""},
		{teamA, http.MethodPost, tenantsPath, tenantBody("globex"), 202, ""},
		{teamA, http.MethodPost, tenantsPath + "/acme/preview", tenantBody("acme"), 200, ""},
		{teamA, http.MethodPost, tenantsPath + "/acme/servers", serverBody("s1"), 202, ""},
		{teamA, http.MethodGet, other, nil, 403, "list tfrtenants"},
		{teamA, http.MethodPost, other, tenantBody("globex"), 403, "create tfrtenants"},
		{teamA, http.MethodDelete, other + "/acme", nil, 403, "delete tfrtenants"},
		{teamA, http.MethodGet, "/v1/clusters", nil, 403, "list tfrclusters"},
		{teamA, http.MethodGet, "/v1/clusters/dev", nil, 403, "get tfrclusters"},
		{readOnly, http.MethodGet, tenantsPath, nil, 200, ""},
		{readOnly, http.MethodPut, tenantsPath + "/acme", tenantBody("acme"), 403, "update tfrtenants"},
		{readOnly, http.MethodPost, tenantsPath + "/acme/preview", tenantBody("acme"), 200, ""}, // a preview writes nothing
		{readOnly, http.MethodPost, other + "/acme/preview", tenantBody("acme"), 403, "get tfrtenants"},
		{readOnly, http.MethodGet, other + "/acme", nil, 403, "get tfrtenants"},
		{clusters, http.MethodGet, "/v1/clusters/dev", nil, 200, ""},
		{clusters, http.MethodGet, tenantsPath, nil, 403, "list tfrtenants"},
		{clusters, http.MethodDelete, "/v1/clusters/dev", nil, 403, "delete tfrclusters"},
		{clusters, http.MethodGet, "/metrics", nil, 200, ""},
		{previews, http.MethodPost, tenantsPath + "/acme/preview", tenantBody("acme"), 200, ""},
		{previews, http.MethodPost, "/v1/clusters/dev/preview", nil, 400, ""}, // allowed; no stored spec, no body
		{previews, http.MethodGet, "/v1/clusters", nil, 403, "list tfrclusters"},
		{previews, http.MethodPost, tenantsPath, tenantBody("x"), 403, "create tfrtenants"},
	} {
		w := h.do(req{method: tc.method, path: tc.path, body: tc.body, token: tc.token})
		require.Equal(t, tc.code, w.Code, "%s %s with %s: %s", tc.method, tc.path, tc.token, w.Body.String())
		if tc.code != 403 {
			continue
		}
		p := problemOfResponse(t, w)
		require.NotNil(t, p.Denied, w.Body.String())
		require.Equal(t, tc.denied, p.Denied.Verb+" "+p.Denied.Resource, w.Body.String())
		require.Equal(t, "tfrs.io", p.Denied.Group)
		require.NotContains(t, w.Body.String(), tc.token)
	}
	// The scope applies to operations too: team-a's operation is visible to team-a, not to
	// the clusters token; a cancel needs the operation's verb.
	w := h.do(req{method: http.MethodPost, path: tenantsPath, body: tenantBody("initech"), token: teamA})
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	op := decodeJSON[OperationView](t, w)
	require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: operationPath(op.ID), token: teamA}).Code)
	w = h.do(req{method: http.MethodGet, path: operationPath(op.ID) + "/events", token: clusters})
	require.Equal(t, http.StatusForbidden, w.Code, w.Body.String())
	require.Equal(t, &Attributes{Verb: "get", Group: "tfrs.io", Resource: "tfrtenants", Namespace: "tfrs-system", Name: "initech"}, problemOfResponse(t, w).Denied)
	w = h.do(req{method: http.MethodPost, path: operationPath(op.ID) + "/cancel", token: readOnly})
	require.Equal(t, http.StatusForbidden, w.Code, w.Body.String())
	require.Equal(t, "create", problemOfResponse(t, w).Denied.Verb)
}

// TestEveryRouteIsAuthorized: each route is either public (the probes, the OpenAPI
// document) or yields the checks of the table in authz.go; a new route without a mapping
// fails here.
func TestEveryRouteIsAuthorized(t *testing.T) {
	h := newHarness(t)
	w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	opID := decodeJSON[OperationView](t, w).ID
	public := map[string]bool{"/healthz": true, "/readyz": true, "/openapi.json": true}
	fill := strings.NewReplacer(":ns", "team-a", ":tenant", "acme", ":name", "n1", ":id", opID)
	want := map[string]string{
		"GET /v1/clusters":                                              "list tfrclusters (cluster-scoped)",
		"POST /v1/clusters":                                             "create tfrclusters (cluster-scoped)",
		"GET /v1/clusters/:name":                                        "get tfrclusters \"n1\" (cluster-scoped)",
		"PUT /v1/clusters/:name":                                        "update tfrclusters \"n1\" (cluster-scoped)",
		"DELETE /v1/clusters/:name":                                     "delete tfrclusters \"n1\" (cluster-scoped)",
		"POST /v1/clusters/:name/preview":                               "get tfrclusters \"n1\" (cluster-scoped); create tfrclusters/preview \"n1\" (cluster-scoped)",
		"POST /v1/clusters/:name/apply":                                 "update tfrclusters \"n1\" (cluster-scoped)",
		"GET /v1/namespaces/:ns/tenants":                                "list tfrtenants in namespace \"team-a\"",
		"POST /v1/namespaces/:ns/tenants":                               "create tfrtenants in namespace \"team-a\"",
		"GET /v1/namespaces/:ns/tenants/:name":                          "get tfrtenants \"n1\" in namespace \"team-a\"",
		"PUT /v1/namespaces/:ns/tenants/:name":                          "update tfrtenants \"n1\" in namespace \"team-a\"",
		"DELETE /v1/namespaces/:ns/tenants/:name":                       "delete tfrtenants \"n1\" in namespace \"team-a\"",
		"POST /v1/namespaces/:ns/tenants/:name/preview":                 "get tfrtenants \"n1\" in namespace \"team-a\"; create tfrtenants/preview \"n1\" in namespace \"team-a\"",
		"POST /v1/namespaces/:ns/tenants/:name/apply":                   "update tfrtenants \"n1\" in namespace \"team-a\"",
		"GET /v1/namespaces/:ns/tenants/:tenant/servers":                "list tfrservers in namespace \"team-a\"",
		"POST /v1/namespaces/:ns/tenants/:tenant/servers":               "create tfrservers in namespace \"team-a\"",
		"GET /v1/namespaces/:ns/tenants/:tenant/servers/:name":          "get tfrservers \"n1\" in namespace \"team-a\"",
		"PUT /v1/namespaces/:ns/tenants/:tenant/servers/:name":          "update tfrservers \"n1\" in namespace \"team-a\"",
		"DELETE /v1/namespaces/:ns/tenants/:tenant/servers/:name":       "delete tfrservers \"n1\" in namespace \"team-a\"",
		"POST /v1/namespaces/:ns/tenants/:tenant/servers/:name/preview": "get tfrservers \"n1\" in namespace \"team-a\"; create tfrservers/preview \"n1\" in namespace \"team-a\"",
		"POST /v1/namespaces/:ns/tenants/:tenant/servers/:name/apply":   "update tfrservers \"n1\" in namespace \"team-a\"",
		"GET /metrics":                   "get /metrics",
		"GET /v1/operations/:id":         "get tfrtenants \"globex\" in namespace \"tfrs-system\"",
		"GET /v1/operations/:id/events":  "get tfrtenants \"globex\" in namespace \"tfrs-system\"",
		"POST /v1/operations/:id/cancel": "create tfrtenants \"globex\" in namespace \"tfrs-system\"",
		// Authorized per object in the handler (get and create preview on each; the others
		// are left out): TestFleetPreviewSeesOnlyWhatTheCallerMayPreview.
		"POST /v1/fleet/preview": "",
	}
	seen := 0
	for _, r := range h.s.e.Routes() {
		if public[r.Path] {
			continue
		}
		key := r.Method + " " + r.Path
		c := h.s.e.NewContext(newRawRequest(t, req{method: r.Method, path: fill.Replace(r.Path)}, nil), nil)
		h.s.e.Router().Find(r.Method, fill.Replace(r.Path), c)
		checks, err := h.s.requestAttributes(c)
		require.NoError(t, err, key)
		var got []string
		for _, a := range checks {
			got = append(got, strings.Replace(a.String(), ".tfrs.io", "", 1))
		}
		require.Equal(t, want[key], strings.Join(got, "; "), key)
		seen++
	}
	require.Equal(t, len(want), seen)
}

// TestResourceNamesAreTheCRDs: the resources checked are the CRDs' plurals in tfrs.io.
func TestResourceNamesAreTheCRDs(t *testing.T) {
	for _, k := range resourceKinds {
		_, err := os.Stat(filepath.Join("..", "config", "crd", "bases", v1alpha1.GroupVersion.Group+"_"+resourceOf(k)+".yaml"))
		require.NoError(t, err, k.kind)
	}
}

// fakeKube answers TokenReviews from a token table and SubjectAccessReviews from a rule
// list, counting the calls and keeping the last review of each kind.
type fakeKube struct {
	mu        sync.Mutex
	users     map[string]authenticationv1.UserInfo // token → user
	audiences []string                             // what the tokens were issued for (nil: the API server's)
	allow     func(authorizationv1.SubjectAccessReviewSpec) bool
	fail      error
	tokenRevs int
	sars      []authorizationv1.SubjectAccessReviewSpec
}

type fakeTokenReviews struct{ *fakeKube }
type fakeAccessReviews struct{ *fakeKube }

func (f fakeTokenReviews) Create(_ context.Context, r *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenRevs++
	if f.fail != nil {
		return nil, f.fail
	}
	out := r.DeepCopy()
	u, ok := f.users[r.Spec.Token]
	if ok && len(r.Spec.Audiences) > 0 {
		var both []string
		for _, a := range r.Spec.Audiences {
			if slices.Contains(f.audiences, a) {
				both = append(both, a)
			}
		}
		ok = len(both) > 0
		out.Status.Audiences = both
	}
	out.Status.Authenticated = ok
	if ok {
		out.Status.User = u
	}
	return out, nil
}

func (f fakeAccessReviews) Create(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	f.sars = append(f.sars, r.Spec)
	out := r.DeepCopy()
	out.Status.Allowed = f.allow(r.Spec)
	out.Status.Reason = "RBAC: secret reasoning"
	return out, nil
}

func (f *fakeKube) calls() (tokenReviews, accessReviews int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenRevs, len(f.sars)
}

func (f *fakeKube) setFail(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

const saToken = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ0ZWFtLWEifQ.c2ln"

func newFakeKube() *fakeKube {
	return &fakeKube{
		users: map[string]authenticationv1.UserInfo{saToken: {
			Username: "system:serviceaccount:tfrs-system:team", UID: "uid-1",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:tfrs-system"},
			Extra:  map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"p"}},
		}},
		// Like a Role in tfrs-system: tenants read and write, previews, nothing else.
		allow: func(s authorizationv1.SubjectAccessReviewSpec) bool {
			ra := s.ResourceAttributes
			return ra != nil && ra.Namespace == "tfrs-system" && ra.Group == "tfrs.io" && ra.Resource == "tfrtenants"
		},
	}
}

// TestKubernetesAuthCacheTTL: reviews are cached for the TTL by a digest of the token (and of
// user plus attributes), answers expire, errors are never cached, the caches stay bounded.
func TestKubernetesAuthCacheTTL(t *testing.T) {
	fk := newFakeKube()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	k := newKubernetesAuth(fakeTokenReviews{fk}, fakeAccessReviews{fk}, KubernetesOptions{CacheTTL: 10 * time.Second, CacheSize: 3}, clock.Now)
	ctx := context.Background()

	p, err := k.Authenticate(ctx, saToken)
	require.NoError(t, err)
	require.Equal(t, "system:serviceaccount:tfrs-system:team", p.Name)
	_, err = k.Authenticate(ctx, saToken)
	require.NoError(t, err)
	n, _ := fk.calls()
	require.Equal(t, 1, n, "the second request within the TTL is answered from the cache")
	for key := range k.idents.entries {
		require.NotContains(t, string(key[:]), saToken, "the cache is keyed by a digest")
	}

	_, err = k.Authenticate(ctx, "unknown.token.value")
	require.ErrorIs(t, err, ErrUnauthorized)
	_, err = k.Authenticate(ctx, "unknown.token.value")
	require.ErrorIs(t, err, ErrUnauthorized)
	n, _ = fk.calls()
	require.Equal(t, 2, n, "a refused token is cached too")
	_, err = k.Authenticate(ctx, "not a token68 value!")
	require.ErrorIs(t, err, ErrUnauthorized)
	n, _ = fk.calls()
	require.Equal(t, 2, n, "a malformed token is never sent for review")

	clock.advance(9 * time.Second)
	_, err = k.Authenticate(ctx, saToken)
	require.NoError(t, err)
	n, _ = fk.calls()
	require.Equal(t, 2, n, "still within the TTL")
	clock.advance(2 * time.Second)
	_, err = k.Authenticate(ctx, saToken)
	require.NoError(t, err)
	n, _ = fk.calls()
	require.Equal(t, 3, n, "past the TTL the token is reviewed again")

	// Access reviews: allowed and denied both cached for the TTL, per user and attributes.
	get := Attributes{Verb: "get", Group: "tfrs.io", Resource: "tfrtenants", Namespace: "tfrs-system", Name: "acme"}
	other := get
	other.Namespace = "other"
	require.NoError(t, k.Authorize(ctx, p, get))
	require.NoError(t, k.Authorize(ctx, p, get))
	var fe *ForbiddenError
	require.ErrorAs(t, k.Authorize(ctx, p, other), &fe)
	require.ErrorAs(t, k.Authorize(ctx, p, other), &fe)
	require.Empty(t, fe.Reason, "the API server's RBAC reasoning is not shown")
	_, m := fk.calls()
	require.Equal(t, 2, m)
	q := p
	q.Groups = []string{"system:masters"}
	require.NoError(t, k.Authorize(ctx, q, get))
	_, m = fk.calls()
	require.Equal(t, 3, m, "another user (other groups) is another question")
	clock.advance(11 * time.Second)
	require.NoError(t, k.Authorize(ctx, p, get))
	_, m = fk.calls()
	require.Equal(t, 4, m, "past the TTL the access is reviewed again")

	// Errors are 503 material and never cached.
	fk.setFail(errors.New("connection refused"))
	clock.advance(11 * time.Second)
	_, err = k.Authenticate(ctx, saToken)
	require.ErrorIs(t, err, ErrAuthUnavailable)
	require.ErrorIs(t, k.Authorize(ctx, p, get), ErrAuthUnavailable)
	fk.setFail(nil)
	_, err = k.Authenticate(ctx, saToken)
	require.NoError(t, err, "the failure was not cached")

	// Bounded: many distinct tokens and questions keep at most CacheSize entries.
	for i := range 50 {
		_, _ = k.Authenticate(ctx, "tok."+strings.Repeat("x", i))
		a := get
		a.Name = "n" + strings.Repeat("x", i)
		_ = k.Authorize(ctx, p, a)
	}
	require.LessOrEqual(t, k.idents.len(), 3)
	require.LessOrEqual(t, k.answers.len(), 3)
}

// TestKubernetesAuthOverHTTP: with Kubernetes auth, a review's user (name, uid, groups,
// extra) is what every SubjectAccessReview asks about; unknown tokens are 401, denials 403
// naming the check (never the token, never the RBAC reason), review failures 503, previews
// two checks, and static tokens still work and never reach TokenReview.
func TestKubernetesAuthOverHTTP(t *testing.T) {
	fk := newFakeKube()
	h := newHarness(t, func(c *Config) {
		c.Kubernetes = NewKubernetesAuth(fakeTokenReviews{fk}, fakeAccessReviews{fk}, KubernetesOptions{CacheTTL: -1})
	})
	sa := func(method, path string, body any) *httptest.ResponseRecorder {
		return h.do(req{method: method, path: path, body: body, token: saToken})
	}
	w := sa(http.MethodGet, tenantsPath+"/acme", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	fk.mu.Lock()
	last := fk.sars[len(fk.sars)-1]
	fk.mu.Unlock()
	require.Equal(t, "system:serviceaccount:tfrs-system:team", last.User)
	require.Equal(t, "uid-1", last.UID)
	require.Equal(t, []string{"system:serviceaccounts", "system:serviceaccounts:tfrs-system"}, last.Groups)
	require.Equal(t, authorizationv1.ExtraValue{"p"}, last.Extra["authentication.kubernetes.io/pod-name"])
	require.Equal(t, &authorizationv1.ResourceAttributes{Namespace: "tfrs-system", Verb: "get", Group: "tfrs.io", Version: "v1alpha1", Resource: "tfrtenants", Name: "acme"}, last.ResourceAttributes)

	// The operation records the Kubernetes user as its principal.
	w = sa(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	h.waitOperation(decodeJSON[OperationView](t, w).ID)
	require.Contains(t, h.logs.String(), `"principal":"system:serviceaccount:tfrs-system:team"`)

	// A preview asks two questions: get, then create on the preview subresource.
	_, before := fk.calls()
	w = sa(http.MethodPost, tenantsPath+"/globex/preview", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	_, after := fk.calls()
	require.Equal(t, 2, after-before)
	fk.mu.Lock()
	require.Equal(t, "get", fk.sars[after-2].ResourceAttributes.Verb)
	require.Equal(t, "create", fk.sars[after-1].ResourceAttributes.Verb)
	require.Equal(t, "preview", fk.sars[after-1].ResourceAttributes.Subresource)
	fk.mu.Unlock()

	// Denied: 403 naming the check, before the body is even read (a malformed one here).
	w = sa(http.MethodPost, "/v1/namespaces/other/tenants", "{not json")
	require.Equal(t, http.StatusForbidden, w.Code, w.Body.String())
	p := problemOfResponse(t, w)
	require.Equal(t, &Attributes{Verb: "create", Group: "tfrs.io", Resource: "tfrtenants", Namespace: "other"}, p.Denied)
	require.Equal(t, `"system:serviceaccount:tfrs-system:team" cannot create resource "tfrtenants" in API group "tfrs.io" in the namespace "other"`, p.Detail)
	require.NotContains(t, w.Body.String(), saToken)
	require.NotContains(t, w.Body.String(), "secret reasoning")
	w = sa(http.MethodGet, "/v1/clusters", nil)
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Contains(t, problemOfResponse(t, w).Detail, "at the cluster scope")
	w = sa(http.MethodGet, "/metrics", nil)
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Equal(t, &Attributes{Verb: "get", Path: "/metrics"}, problemOfResponse(t, w).Denied)
	require.Equal(t, http.StatusOK, sa(http.MethodGet, "/openapi.json", nil).Code, "the contract needs authentication only")

	// Unknown token: 401 with the challenge; a malformed one is not even reviewed.
	n, _ := fk.calls()
	w = h.do(req{method: http.MethodGet, path: tenantsPath, token: "eyJ.unknown.token"})
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.Equal(t, `Bearer realm="tfrs"`, w.Header().Get("WWW-Authenticate"))
	require.Equal(t, http.StatusUnauthorized, h.do(req{method: http.MethodGet, path: tenantsPath, token: "bad\token"}).Code)
	m, _ := fk.calls()
	require.Equal(t, n+1, m)

	// Static tokens are tried first and never sent for review.
	require.Equal(t, http.StatusOK, h.admin(http.MethodGet, "/v1/clusters", nil).Code)
	k, _ := fk.calls()
	require.Equal(t, m, k)

	// The API server failing: 503, for authentication and authorization alike.
	fk.setFail(errors.New("connection refused"))
	w = sa(http.MethodGet, tenantsPath, nil)
	require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
	require.Equal(t, problemTypeBase+"auth-unavailable", problemOfResponse(t, w).Type)
	require.NotContains(t, w.Body.String(), "connection refused")
	fk.setFail(nil)
	require.Equal(t, http.StatusOK, sa(http.MethodGet, tenantsPath, nil).Code)
	require.NotContains(t, h.logs.String(), saToken, "tokens never reach the log")
}

// TestOpenAPIDocumentsAuthAnswers: every route behind authentication documents 401, 429 and
// 503 (a review may fail), and every one authorized by its route 403 with the denied check.
func TestOpenAPIDocumentsAuthAnswers(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapiJSON, &doc))
	type operation struct {
		Responses map[string]json.RawMessage `json:"responses"`
	}
	for path, ops := range doc.Paths {
		if unauthenticated[path] {
			continue
		}
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			var op operation
			require.NoError(t, json.Unmarshal(raw, &op))
			want := []string{"401", "429", "503"}
			// The fleet preview is authorized per object and leaves out what it may not
			// see: it never answers 403.
			if path != "/openapi.json" && path != FleetPreviewPath {
				want = append(want, "403")
			}
			for _, code := range want {
				require.Contains(t, op.Responses, code, "%s %s", method, path)
			}
		}
	}
	require.Contains(t, string(openapiJSON), `"denied": {`)
}
