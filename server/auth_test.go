package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestParseTokens(t *testing.T) {
	toks, err := ParseTokens(strings.NewReader(`
# comment
aaaaaaaaaaaaaaaa1 admin alice
bbbbbbbbbbbbbbbb2 read-only
cccccccccccccccc3 readonly ci; dddddddddddddddd4 ADMIN ops
`))
	require.NoError(t, err)
	require.Len(t, toks, 4)
	require.Equal(t, Token{Name: "alice", Role: RoleAdmin, Value: "aaaaaaaaaaaaaaaa1"}, toks[0])
	require.Equal(t, RoleReadOnly, toks[1].Role)
	require.Equal(t, "token-2", toks[1].Name)
	require.Equal(t, "ci", toks[2].Name)
	require.Equal(t, "ops", toks[3].Name)
	require.Equal(t, RoleAdmin, toks[3].Role)

	for _, bad := range []string{
		"short admin",
		"aaaaaaaaaaaaaaaa1 root",
		"aaaaaaaaaaaaaaaa1",
		"aaaaaaaaaaaaaaaa1 admin a b",
		"aaaaaaaaaaaaaaaa1 admin x\naaaaaaaaaaaaaaaa1 read-only y",
	} {
		_, err := ParseTokens(strings.NewReader(bad))
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), "aaaaaaaaaaaaaaaa1", "errors never quote a token")
	}
}

// TestTokensNeverPrinted: a token's value stays out of %v, %+v, %#v and slog.
func TestTokensNeverPrinted(t *testing.T) {
	tok := Token{Name: "alice", Role: RoleAdmin, Value: "very-secret-token-value"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "token", tok)
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%+v", tok), fmt.Sprintf("%#v", tok), buf.String()} {
		require.NotContains(t, s, "very-secret-token-value")
		require.Contains(t, s, "alice")
	}
}

func TestAuthenticator(t *testing.T) {
	a := newStaticTokens([]Token{{Name: "a", Role: RoleAdmin, Value: "0123456789abcdefA"}, {Name: "r", Role: RoleReadOnly, Value: "0123456789abcdefR"}})
	p, ok := a.lookup("0123456789abcdefR")
	require.True(t, ok)
	require.Equal(t, Principal{Name: "r", Via: AuthStatic, role: RoleReadOnly}, p)
	for _, bad := range []string{"", "0123456789abcdef", "0123456789abcdefA ", "0123456789ABCDEFA"} {
		_, ok := a.lookup(bad)
		require.False(t, ok, bad)
	}
	_, ok = newStaticTokens(nil).lookup("anything-at-all-here")
	require.False(t, ok, "no tokens: nobody gets in")
}

// TestAccessLogs: one structured line per request with the route template, the status and
// the token's name; never the token, the query or the body.
func TestAccessLogs(t *testing.T) {
	h := newHarness(t)
	w := h.do(req{method: http.MethodGet, path: tenantsPath + "/acme?limit=secret-query", token: readerToken,
		header: map[string]string{"X-Request-Id": "client-id-42"}})
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "client-id-42", w.Header().Get("X-Request-Id"))
	h.do(req{method: http.MethodPost, path: tenantsPath, body: `{"spec":{"clusterRef":"dev","type":"enterprise","confz":"body-secret"}}`, token: adminToken,
		header: map[string]string{"X-Request-Id": "evil\nid"}})
	logs := h.logs.String()
	require.Contains(t, logs, `"route":"/v1/namespaces/:ns/tenants/:name"`)
	require.Contains(t, logs, `"requestId":"client-id-42"`)
	require.Contains(t, logs, `"principal":"viewer"`)
	require.NotContains(t, logs, "evil")
	for _, secret := range []string{readerToken, adminToken, "secret-query", "body-secret"} {
		require.NotContains(t, logs, secret)
	}
}

// TestMetrics: requests by route and status, operations by kind and result.
func TestMetrics(t *testing.T) {
	h := newHarness(t)
	w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code)
	h.waitOperation(decodeJSON[OperationView](t, w).ID)
	h.admin(http.MethodGet, tenantsPath+"/nope", nil)
	w = h.do(req{method: http.MethodGet, path: "/metrics", token: readerToken})
	require.Equal(t, http.StatusOK, w.Code)
	m := w.Body.String()
	for _, want := range []string{
		`tfrs_http_requests_total{code="202",method="POST",route="/v1/namespaces/:ns/tenants"} 1`,
		`tfrs_http_requests_total{code="404",method="GET",route="/v1/namespaces/:ns/tenants/:name"} 1`,
		`tfrs_operations_total{kind="create",result="succeeded"} 1`,
		`tfrs_operations_in_flight{kind="create"} 0`,
		`tfrs_operation_duration_seconds_count{kind="create",result="succeeded"} 1`,
		`tfrs_http_requests_in_flight 1`,
		`tfrs_http_request_duration_seconds_bucket`,
	} {
		require.Contains(t, m, want)
	}
}

// TestChunkedBodyTooLarge: a body without a length is cut at the limit too.
func TestChunkedBodyTooLarge(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxBodyBytes = 1024 })
	r := req{method: http.MethodPost, path: tenantsPath, token: adminToken}
	hr := newRawRequest(t, r, strings.NewReader(`{"spec":"`+strings.Repeat("x", 4096)+`"}`))
	hr.ContentLength = -1
	w := serve(h, hr)
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, w.Body.String())
	require.Empty(t, h.f.Calls())
}

// TestEveryInvalidFieldReported: unknown fields do not hide the spec's own problems.
func TestEveryInvalidFieldReported(t *testing.T) {
	h := newHarness(t)
	w := h.admin(http.MethodPost, tenantsPath, `{"metadata":{"name":"Bad"},"spec":{"clusterRef":"dev","type":"corporate","foo":1},"status":{}}`)
	require.Equal(t, http.StatusBadRequest, w.Code)
	p := problemOfResponse(t, w)
	for _, f := range []string{"spec.foo", "status", "metadata.name", "spec.type"} {
		require.True(t, hasField(p, f, ""), "missing %s in %+v", f, p.Errors)
	}
}

// instrumented is an engine that exports metrics, as the real one does.
type instrumented struct{ Engine }

func (instrumented) Collectors() []prometheus.Collector {
	return []prometheus.Collector{prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "tfrs_engine_cli_processes_total", Help: "test",
	}, func() float64 { return 7 })}
}

// TestEngineMetricsExported: an engine's own metrics (CLI processes) are on /metrics.
func TestEngineMetricsExported(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Engine = instrumented{c.Engine} })
	w := h.do(req{method: http.MethodGet, path: "/metrics", token: readerToken})
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), "tfrs_engine_cli_processes_total 7")
}
