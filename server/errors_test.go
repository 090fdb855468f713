package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// TestBadRequests sends requests that must each be refused with a 4xx naming the problem,
// before anything reads the engine or runs: the fake must see no call at all.
func TestBadRequests(t *testing.T) {
	const servers = tenantsPath + "/acme/servers"
	tenant := func(spec string) string {
		return `{"metadata":{"name":"acme2"},"spec":` + spec + `}`
	}
	server := func(spec string) string {
		return `{"metadata":{"name":"bot"},"spec":{"robotId":"bot","robotType":"chat","image":"img:1"` + spec + `}}`
	}
	huge := `{"metadata":{"name":"acme2"},"spec":{"clusterRef":"dev","type":"enterprise","x":"` + strings.Repeat("a", 2<<20) + `"}}`
	longTOML := server(`,"confzData":"` + strings.Repeat("a", 262145) + `"`)

	cases := []struct {
		name        string
		method      string
		path        string
		body        string
		contentType string
		status      int
		field       string // a field the problem must name ("-": none expected)
		reason      string
	}{
		// Malformed JSON and wrong shapes.
		{name: "truncated JSON", body: `{"metadata":`, status: 400, reason: "syntax"},
		{name: "lone brace", body: `{`, status: 400, reason: "syntax"},
		{name: "trailing garbage", body: `{"spec":{}} x`, status: 400, reason: "syntax"},
		{name: "single quotes", body: `{'spec':{}}`, status: 400, reason: "syntax"},
		{name: "empty body", body: " ", status: 400, reason: "required"},
		{name: "array body", body: `[]`, status: 400, reason: "type"},
		{name: "string body", body: `"acme"`, status: 400, reason: "type"},
		{name: "null body", body: `null`, status: 400, field: "spec", reason: "required"},
		// Wrong types.
		{name: "spec is a string", body: tenant(`"x"`), status: 400, field: "spec", reason: "type"},
		{name: "type is a number", body: tenant(`{"clusterRef":"dev","type":1}`), status: 400, field: "spec.type", reason: "type"},
		{name: "instances is a string", body: tenant(`{"clusterRef":"dev","type":"enterprise","postgresql":{"instances":"3"}}`), status: 400, field: "spec.postgresql.instances", reason: "type"},
		{name: "instances is a fraction", body: tenant(`{"clusterRef":"dev","type":"enterprise","postgresql":{"instances":1.5}}`), status: 400, field: "spec.postgresql.instances", reason: "type"},
		{name: "instances overflows int32", body: tenant(`{"clusterRef":"dev","type":"enterprise","postgresql":{"instances":1e20}}`), status: 400, field: "spec.postgresql.instances", reason: "type"},
		{name: "labels not a map", body: `{"metadata":{"name":"acme2","labels":["a"]},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.labels", reason: "type"},
		{name: "quantity malformed", body: tenant(`{"clusterRef":"dev","type":"enterprise","redis":{"size":"10 gigs"}}`), status: 400, field: "spec.redis.size", reason: "invalid"},
		{name: "quantity bad suffix", body: tenant(`{"clusterRef":"dev","type":"enterprise","postgresql":{"size":"10XB"}}`), status: 400, field: "spec.postgresql.size", reason: "invalid"},
		{name: "quantity empty", body: tenant(`{"clusterRef":"dev","type":"enterprise","postgresql":{"size":""}}`), status: 400, field: "spec.postgresql.size", reason: "invalid"},
		// Tenant isolation: a reserved namespace, chart values that change images, RBAC or
		// add objects; each refused at its own path before anything runs.
		{name: "reserved namespace kube-system", body: tenant(`{"clusterRef":"dev","type":"enterprise","namespace":"kube-system"}`), status: 400, field: "spec.namespace", reason: "forbidden"},
		{name: "reserved namespace of the cluster stack", body: tenant(`{"clusterRef":"dev","type":"enterprise","namespace":"istio-system"}`), status: 400, field: "spec.namespace", reason: "forbidden"},
		{name: "chart values grant cluster RBAC", body: tenant(`{"clusterRef":"dev","type":"enterprise","grafana":{"values":{"rbac":{"namespaced":false}}}}`), status: 400, field: "spec.grafana.values.rbac", reason: "forbidden"},
		{name: "chart values add objects", body: tenant(`{"clusterRef":"dev","type":"enterprise","grafana":{"values":{"extraObjects":[{"kind":"ClusterRoleBinding"}]}}}`), status: 400, field: "spec.grafana.values.extraObjects", reason: "forbidden"},
		{name: "chart values change an image", body: tenant(`{"clusterRef":"dev","type":"enterprise","jaeger":{"values":{"jaeger":{"image":{"repository":"evil.example.com/j"}}}}}`), status: 400, field: "spec.jaeger.values.jaeger.image", reason: "forbidden"},
		{name: "quantity in resources", body: tenant(`{"clusterRef":"dev","type":"enterprise","tfrobotFront":{"resources":{"requests":{"cpu":"lots"}}}}`), status: 400, field: "spec.tfrobotFront.resources.requests[cpu]", reason: "invalid"},
		// Unknown and duplicate fields.
		{name: "status is server-owned", body: `{"metadata":{"name":"acme2"},"spec":{"clusterRef":"dev","type":"enterprise"},"status":{}}`, status: 400, field: "status", reason: "unknown"},
		{name: "unknown spec field", body: tenant(`{"clusterRef":"dev","type":"enterprise","foo":1}`), status: 400, field: "spec.foo", reason: "unknown"},
		{name: "unknown nested field", body: tenant(`{"clusterRef":"dev","type":"enterprise","postgresql":{"bogus":true}}`), status: 400, field: "spec.postgresql.bogus", reason: "unknown"},
		{name: "field case differs", body: `{"metadata":{"name":"acme2"},"Spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "Spec", reason: "unknown"},
		{name: "unicode look-alike key", body: tenant(`{"clusterRef":"dev","ｔype":"enterprise"}`), status: 400, field: "spec.ｔype", reason: "unknown"},
		{name: "duplicate spec", body: `{"metadata":{"name":"acme2"},"spec":{"clusterRef":"dev","type":"enterprise"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "spec", reason: "duplicate"},
		{name: "metadata uid", body: `{"metadata":{"name":"acme2","uid":"x"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.uid", reason: "unknown"},
		{name: "metadata generateName", body: `{"metadata":{"generateName":"acme-"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.generateName", reason: "unknown"},
		// Missing fields and bad values.
		{name: "missing spec", body: `{"metadata":{"name":"acme2"}}`, status: 400, field: "spec", reason: "required"},
		{name: "missing name", body: `{"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.name", reason: "required"},
		{name: "missing clusterRef", body: tenant(`{"type":"enterprise"}`), status: 400, field: "spec.clusterRef", reason: "required"},
		{name: "missing type", body: tenant(`{"clusterRef":"dev"}`), status: 400, field: "spec.type", reason: "required"},
		{name: "unknown tenant type", body: tenant(`{"clusterRef":"dev","type":"corporate"}`), status: 400, field: "spec.type", reason: "notSupported"},
		{name: "personal without jobType", body: tenant(`{"clusterRef":"dev","type":"personal"}`), status: 400, field: "spec.jobType", reason: "required"},
		{name: "enterprise with jobType", body: tenant(`{"clusterRef":"dev","type":"enterprise","jobType":"chat"}`), status: 400, field: "spec.jobType", reason: "forbidden"},
		{name: "deletion policy", body: tenant(`{"clusterRef":"dev","type":"enterprise","deletionPolicy":"Keep"}`), status: 400, field: "spec.deletionPolicy", reason: "notSupported"},
		{name: "instances out of range", body: tenant(`{"clusterRef":"dev","type":"enterprise","postgresql":{"instances":99}}`), status: 400, field: "spec.postgresql.instances"},
		{name: "every invalid field at once", body: `{"metadata":{"name":"Bad_Name"},"spec":{"clusterRef":"Dev!","type":"corporate","deletionPolicy":"Keep"}}`, status: 400, field: "spec.deletionPolicy"},
		// Names: case, unicode, length, traversal.
		{name: "uppercase name", body: `{"metadata":{"name":"Acme"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.name"},
		{name: "unicode name", body: `{"metadata":{"name":"acmé"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.name"},
		{name: "emoji name", body: `{"metadata":{"name":"🚀"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.name"},
		{name: "name too long", body: `{"metadata":{"name":"` + strings.Repeat("a", 64) + `"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.name"},
		{name: "dot-dot name", body: `{"metadata":{"name":"../etc"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.name"},
		{name: "NUL in name", body: `{"metadata":{"name":"a\u0000b"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.name"},
		{name: "wrong apiVersion", body: `{"apiVersion":"v1","metadata":{"name":"acme2"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "apiVersion", reason: "notSupported"},
		{name: "wrong kind", body: `{"kind":"TFRServer","metadata":{"name":"acme2"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "kind", reason: "notSupported"},
		{name: "namespace differs from URL", body: `{"metadata":{"name":"acme2","namespace":"other"},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.namespace"},
		{name: "bad label key", body: `{"metadata":{"name":"acme2","labels":{"bad key!":"x"}},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.labels"},
		{name: "invalid UTF-8", body: "{\"metadata\":{\"name\":\"\xff\xfe\"},\"spec\":{}}", status: 400, reason: "invalid"},
		// Size and media type.
		{name: "huge body", body: huge, status: 413, field: "-"},
		{name: "text/plain", body: tenant(`{"clusterRef":"dev","type":"enterprise"}`), contentType: "text/plain", status: 415, field: "-"},
		{name: "no content type", body: tenant(`{"clusterRef":"dev","type":"enterprise"}`), contentType: "-", status: 415, field: "-"},
		{name: "form body", body: "metadata=x", contentType: "application/x-www-form-urlencoded", status: 415, field: "-"},
		{name: "yaml body", body: "metadata:\n  name: acme2\n", contentType: "application/yaml", status: 415, field: "-"},
		// Servers: TOML, routing names, secrets, tenant binding.
		{name: "bad TOML", path: servers, body: server(`,"confzData":"[redis\nx = "`), status: 400, field: "spec.confzData"},
		{name: "TOML duplicate key", path: servers, body: server(`,"confzData":"a = 1\na = 2"`), status: 400, field: "spec.confzData"},
		{name: "confzData too long", path: servers, body: longTOML, status: 400, field: "spec.confzData", reason: "tooLong"},
		{name: "robotId uppercase", path: servers, body: `{"metadata":{"name":"bot"},"spec":{"robotId":"Bot_1","robotType":"chat","image":"img:1"}}`, status: 400, field: "spec.robotId"},
		{name: "robotId unicode", path: servers, body: `{"metadata":{"name":"bot"},"spec":{"robotId":"böt","robotType":"chat","image":"img:1"}}`, status: 400, field: "spec.robotId"},
		{name: "robotType header injection", path: servers, body: `{"metadata":{"name":"bot"},"spec":{"robotId":"bot","robotType":"chat\r\nX-Evil: 1","image":"img:1"}}`, status: 400, field: "spec.robotType"},
		{name: "tenantRef differs from URL", path: servers, body: server(`,"tenantRef":"other"`), status: 400, field: "spec.tenantRef"},
		{name: "configData NUL", path: servers, body: server(`,"configData":{"KEY":"a\u0000b"}`), status: 400, field: "spec.configData[KEY]"},
		{name: "secretData NUL", path: servers, body: server(`,"secretData":{"KEY":"a\u0000b"}`), status: 400, field: "spec.secretData[KEY]"},
		{name: "secretData key", path: servers, body: server(`,"secretData":{"1BAD":"x"}`), status: 400, field: "spec.secretData"},
		{name: "secret placeholder sent back", path: servers, body: server(`,"secretData":{"KEY":"[secret]"}`), status: 400, field: "spec.secretData[KEY]"},
		{name: "missing image", path: servers, body: `{"metadata":{"name":"bot"},"spec":{"robotId":"bot","robotType":"chat"}}`, status: 400, field: "spec.image"},
		{name: "negative replicas", path: servers, body: server(`,"apiWorker":{"replicas":-1}`), status: 400, field: "spec.apiWorker.replicas"},
		// Clusters.
		{name: "namespaced cluster", path: "/v1/clusters", body: `{"metadata":{"name":"c","namespace":"x"},"spec":{"domain":"a.example.com","ingress":{"mode":"NodePort"}}}`, status: 400, field: "metadata.namespace", reason: "forbidden"},
		{name: "cluster without domain", path: "/v1/clusters", body: `{"metadata":{"name":"c"},"spec":{"ingress":{"mode":"NodePort"}}}`, status: 400, field: "spec.domain", reason: "required"},
		{name: "cluster bad ingress mode", path: "/v1/clusters", body: `{"metadata":{"name":"c"},"spec":{"domain":"a.example.com","ingress":{"mode":"Magic"}}}`, status: 400, field: "spec.ingress.mode"},
		// Path parameters: traversal and bad names in the URL.
		{name: "traversal in namespace", method: http.MethodGet, path: "/v1/namespaces/..%2f..%2fetc/tenants/acme", status: 400, field: "metadata.namespace"},
		{name: "traversal in name", method: http.MethodGet, path: tenantsPath + "/..%2fpasswd", status: 400, field: "metadata.name"},
		{name: "dot-dot name in URL", method: http.MethodDelete, path: "/v1/clusters/%2e%2e", status: 400, field: "metadata.name"},
		{name: "NUL in URL name", method: http.MethodGet, path: tenantsPath + "/a%00b", status: 400, field: "metadata.name"},
		{name: "double-encoded traversal", method: http.MethodGet, path: tenantsPath + "/%252e%252e%252fetc", status: 400, field: "metadata.name"},
		{name: "uppercase in URL", method: http.MethodPut, path: tenantsPath + "/ACME", body: tenant(`{"clusterRef":"dev","type":"enterprise"}`), status: 400, field: "metadata.name"},
		{name: "unicode tenant in URL", method: http.MethodGet, path: tenantsPath + "/%C3%A9/servers", status: 400, field: "spec.tenantRef"},
		{name: "PUT name differs from URL", method: http.MethodPut, path: tenantsPath + "/acme", body: tenant(`{"clusterRef":"dev","type":"enterprise"}`), status: 400, field: "metadata.name"},
		// Lists.
		{name: "limit zero", method: http.MethodGet, path: tenantsPath + "?limit=0", status: 400, field: "limit"},
		{name: "limit not a number", method: http.MethodGet, path: tenantsPath + "?limit=ten", status: 400, field: "limit"},
		{name: "limit too large", method: http.MethodGet, path: tenantsPath + "?limit=1000", status: 400, field: "limit"},
		{name: "forged continue", method: http.MethodGet, path: tenantsPath + "?continue=Li4vZXRj", status: 400, field: "continue"},
		// Previews and cancels take the same bodies.
		{name: "preview with bad body", method: http.MethodPost, path: tenantsPath + "/acme/preview", body: `{"spec":`, status: 400, reason: "syntax"},
		{name: "preview with text body", method: http.MethodPost, path: tenantsPath + "/acme/preview", body: "x", contentType: "text/plain", status: 415, field: "-"},
		{name: "unknown operation", method: http.MethodGet, path: "/v1/operations/../../etc", status: 404, field: "-"},
		{name: "malformed operation id", method: http.MethodPost, path: "/v1/operations/xyz/cancel", status: 404, field: "-"},
		{name: "method not allowed", method: http.MethodPatch, path: tenantsPath + "/acme", body: `{}`, status: 405, field: "-"},
	}
	require.GreaterOrEqual(t, len(cases), 40)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			method, path := tc.method, tc.path
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = tenantsPath
			}
			var body any
			if tc.body != "" {
				body = tc.body
			}
			w := h.do(req{method: method, path: path, body: body, token: adminToken, contentType: tc.contentType})
			require.Equal(t, tc.status, w.Code, w.Body.String())
			p := problemOfResponse(t, w)
			require.NotEmpty(t, p.RequestID)
			if tc.field != "-" && (tc.field != "" || tc.reason != "") {
				require.True(t, hasField(p, tc.field, tc.reason), "want field %q reason %q in %+v", tc.field, tc.reason, p.Errors)
			}
			require.Empty(t, h.f.Calls(), "a refused request must start nothing and read no stack")
		})
	}
}

func hasField(p Problem, field, reason string) bool {
	for _, f := range p.Errors {
		if (field == "" || f.Field == field || strings.HasPrefix(f.Field, field+"[")) && (reason == "" || f.Reason == reason) {
			return true
		}
	}
	return false
}

// TestStatusCodes covers every status the API answers besides 2xx and the bad requests.
func TestStatusCodes(t *testing.T) {
	t.Run("401 without a token", func(t *testing.T) {
		h := newHarness(t)
		w := h.do(req{method: http.MethodGet, path: tenantsPath})
		require.Equal(t, http.StatusUnauthorized, w.Code)
		require.Equal(t, `Bearer realm="tfrs"`, w.Header().Get("WWW-Authenticate"))
		problemOfResponse(t, w)
	})
	t.Run("401 with a wrong token", func(t *testing.T) {
		h := newHarness(t)
		require.Equal(t, http.StatusUnauthorized, h.do(req{method: http.MethodGet, path: tenantsPath, token: adminToken + "x"}).Code)
		require.Equal(t, http.StatusUnauthorized, h.do(req{method: http.MethodGet, path: tenantsPath,
			header: map[string]string{"Authorization": "Basic " + adminToken}}).Code)
	})
	t.Run("401 before the body is looked at", func(t *testing.T) {
		h := newHarness(t)
		w := h.do(req{method: http.MethodPost, path: tenantsPath, body: `{`, contentType: "text/plain"})
		require.Equal(t, http.StatusUnauthorized, w.Code)
	})
	t.Run("401 on unknown routes too", func(t *testing.T) {
		h := newHarness(t)
		require.Equal(t, http.StatusUnauthorized, h.do(req{method: http.MethodGet, path: "/v1/secret-route"}).Code)
		require.Equal(t, http.StatusNotFound, h.do(req{method: http.MethodGet, path: "/v1/secret-route", token: readerToken}).Code)
	})
	t.Run("probes without a token, metrics and openapi with one", func(t *testing.T) {
		h := newHarness(t)
		require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: "/healthz"}).Code)
		require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: "/readyz"}).Code)
		require.Equal(t, http.StatusUnauthorized, h.do(req{method: http.MethodGet, path: "/metrics"}).Code)
		require.Equal(t, http.StatusUnauthorized, h.do(req{method: http.MethodGet, path: "/openapi.json"}).Code)
		require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: "/metrics", token: readerToken}).Code)
		require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: "/openapi.json", token: readerToken}).Code)
	})
	t.Run("403 for a read-only token that writes", func(t *testing.T) {
		h := newHarness(t)
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			path := tenantsPath + "/acme"
			if m == http.MethodPost {
				path = tenantsPath
			}
			w := h.do(req{method: m, path: path, body: tenantBody("acme"), token: readerToken})
			require.Equal(t, http.StatusForbidden, w.Code, m)
			problemOfResponse(t, w)
		}
		// A preview writes nothing: a read-only token may run one (CI on pull requests).
		w := h.do(req{method: http.MethodPost, path: tenantsPath + "/acme/preview", body: tenantBody("acme"), token: readerToken})
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: tenantsPath + "/acme", token: readerToken}).Code)
		require.Equal(t, []string{"Preview tenant.tfrs-system.acme"}, filterMutations(h.f.Calls()), "only the preview ran")
	})
	t.Run("404 for a resource that does not exist", func(t *testing.T) {
		h := newHarness(t)
		for _, r := range []req{
			{method: http.MethodGet, path: tenantsPath + "/nope"},
			{method: http.MethodPut, path: tenantsPath + "/nope", body: tenantBody("nope")},
			{method: http.MethodDelete, path: tenantsPath + "/nope"},
			{method: http.MethodPost, path: tenantsPath + "/nope/preview"},
			{method: http.MethodGet, path: "/v1/operations/0123456789abcdef01234567"},
		} {
			r.token = adminToken
			w := h.do(r)
			require.Equal(t, http.StatusNotFound, w.Code, "%s %s: %s", r.method, r.path, w.Body.String())
			problemOfResponse(t, w)
		}
		require.Empty(t, filterMutations(h.f.Calls()))
	})
	t.Run("409 managed by the operator", func(t *testing.T) {
		h := newHarness(t)
		h.f.addStack("tenant.tfrs-system.crd", engine.ManagedByOperator, true, nil)
		for _, r := range []req{
			{method: http.MethodPut, path: tenantsPath + "/crd", body: tenantBody("crd")},
			{method: http.MethodDelete, path: tenantsPath + "/crd"},
		} {
			r.token = adminToken
			w := h.do(r)
			require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
			p := problemOfResponse(t, w)
			require.Equal(t, problemTypeBase+"managed-elsewhere", p.Type)
			require.Contains(t, p.Detail, "edit the custom resource")
			require.Equal(t, "operator", p.ManagedBy)
		}
		w := h.admin(http.MethodPost, tenantsPath, tenantBody("crd"))
		require.Equal(t, http.StatusConflict, w.Code)
		p := problemOfResponse(t, w)
		require.Equal(t, problemTypeBase+"already-exists", p.Type)
		require.Contains(t, p.Detail, "edit the custom resource")
		require.Empty(t, filterMutations(h.f.Calls()))
	})
	t.Run("409 already exists", func(t *testing.T) {
		h := newHarness(t)
		w := h.admin(http.MethodPost, tenantsPath, tenantBody("acme"))
		require.Equal(t, http.StatusConflict, w.Code)
		require.Equal(t, problemTypeBase+"already-exists", problemOfResponse(t, w).Type)
	})
	t.Run("409 dependents exist", func(t *testing.T) {
		h := newHarness(t)
		w := h.admin(http.MethodPost, "/v1/clusters", map[string]any{"metadata": map[string]any{"name": "prod"},
			"spec": map[string]any{"domain": "prod.example.com", "ingress": map[string]any{"mode": "NodePort"}}})
		require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
		h.waitOperation(decodeJSON[OperationView](t, w).ID)
		h.f.dependents = []string{"tenant.tfrs-system.acme"}
		w = h.admin(http.MethodDelete, "/v1/clusters/prod", nil)
		require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
		p := problemOfResponse(t, w)
		require.Equal(t, problemTypeBase+"dependents-exist", p.Type)
		require.Equal(t, []string{"tenant.tfrs-system.acme"}, p.Dependents)
		require.Zero(t, h.f.count("Destroy"))
	})
	t.Run("409 no spec for a stack made by the CLI", func(t *testing.T) {
		h := newHarness(t)
		w := h.admin(http.MethodDelete, tenantsPath+"/acme", nil)
		require.Equal(t, http.StatusConflict, w.Code)
		p := problemOfResponse(t, w)
		require.Equal(t, problemTypeBase+"no-spec", p.Type)
		require.Equal(t, "cli", p.ManagedBy)
	})
	t.Run("409 busy from another process", func(t *testing.T) {
		h := newHarness(t)
		h.f.previewErr = &engine.OpError{Op: engine.OpPreview, Stack: "tenant.tfrs-system.acme", Kind: engine.ErrConflict}
		w := h.admin(http.MethodPost, tenantsPath+"/acme/preview", tenantBody("acme"))
		require.Equal(t, http.StatusConflict, w.Code)
		require.Equal(t, problemTypeBase+"busy", problemOfResponse(t, w).Type)
	})
	t.Run("424 parent missing or not ready", func(t *testing.T) {
		h := newHarness(t)
		b := tenantBody("globex")
		b["spec"].(map[string]any)["clusterRef"] = "nowhere"
		w := h.admin(http.MethodPost, tenantsPath, b)
		require.Equal(t, http.StatusFailedDependency, w.Code, w.Body.String())
		p := problemOfResponse(t, w)
		require.Equal(t, problemTypeBase+"parent-not-ready", p.Type)
		require.Contains(t, p.Detail, `TFRCluster "nowhere"`)

		h.f.addStack("tenant.tfrs-system.broken", engine.ManagedByAPI, false, nil)
		w = h.admin(http.MethodPost, tenantsPath+"/broken/servers", serverBody("bot"))
		require.Equal(t, http.StatusFailedDependency, w.Code, w.Body.String())
		require.Empty(t, filterMutations(h.f.Calls()))
		// Nothing was held: the same create goes through once the parent exists.
		h.f.addStack("cluster.nowhere", engine.ManagedByCLI, true, nil)
		require.Equal(t, http.StatusAccepted, h.admin(http.MethodPost, tenantsPath, b).Code)
	})
	t.Run("422 preview failed in the engine", func(t *testing.T) {
		h := newHarness(t)
		h.f.previewErr = &engine.OpError{Op: engine.OpPreview, Stack: "tenant.tfrs-system.acme", Kind: engine.ErrFailed,
			Detail: "chart not found at the local path"}
		w := h.admin(http.MethodPost, tenantsPath+"/acme/preview", tenantBody("acme"))
		require.Equal(t, http.StatusUnprocessableEntity, w.Code)
		p := problemOfResponse(t, w)
		require.Equal(t, "chart not found at the local path", p.Detail)
	})
	t.Run("500 is opaque", func(t *testing.T) {
		h := newHarness(t)
		h.f.Hook = enginetest.FailOn(errors.New("dial /var/lib/tfrs/secret-internal-path: permission denied"), "", engine.OpStatus)
		w := h.admin(http.MethodGet, tenantsPath+"/acme", nil)
		require.Equal(t, http.StatusInternalServerError, w.Code)
		p := problemOfResponse(t, w)
		require.NotEmpty(t, p.ErrorID)
		require.NotContains(t, w.Body.String(), "secret-internal-path")
		require.NotContains(t, w.Body.String(), "permission denied")
		// The log has the cause under the same id.
		require.Contains(t, h.logs.String(), p.ErrorID)
		require.Contains(t, h.logs.String(), "secret-internal-path")
	})
	t.Run("500 from a panic", func(t *testing.T) {
		h := newHarness(t)
		h.s.e.GET("/v1/panic", func(echo.Context) error { panic("kaboom internal") })
		w := h.admin(http.MethodGet, "/v1/panic", nil)
		require.Equal(t, http.StatusInternalServerError, w.Code)
		require.NotContains(t, w.Body.String(), "kaboom")
		require.NotEmpty(t, problemOfResponse(t, w).ErrorID)
	})
	t.Run("504 preview timeout", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.PreviewTimeout = 20 * time.Millisecond })
		h.s.run = blockingPreview{h.f}
		w := h.admin(http.MethodPost, tenantsPath+"/acme/preview", tenantBody("acme"))
		require.Equal(t, http.StatusGatewayTimeout, w.Code, w.Body.String())
	})
}

// filterMutations keeps the calls that would change a stack.
func filterMutations(calls []string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, "Up ") || strings.HasPrefix(c, "Destroy ") || strings.HasPrefix(c, "Preview ") {
			out = append(out, c)
		}
	}
	return out
}

// blockingPreview previews until its context ends, as the engine does when it waits for a
// busy stack.
type blockingPreview struct{ *fake }

func (b blockingPreview) Preview(ctx context.Context, obj v1alpha1.Object, _ runner.Op) (*runner.Outcome, error) {
	<-ctx.Done()
	return nil, errors.Join(&engine.OpError{Op: engine.OpPreview, Kind: engine.ErrCanceled}, ctx.Err())
}
