package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// hitRecorder is a local listener that counts every request: a source the policy refuses
// must never be opened or requested.
type hitRecorder struct {
	*httptest.Server
	hits atomic.Int64
}

func newHitRecorder(t *testing.T) *hitRecorder {
	r := &hitRecorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.hits.Add(1)
		_, _ = w.Write([]byte("entries: {}\n"))
	}))
	t.Cleanup(r.Close)
	return r
}

// stackSnapshot is the backend's stack list with every stack's state, encoded: a refused
// request must leave it byte-identical. It logs no call.
func stackSnapshot(t *testing.T, h *harness) []byte {
	t.Helper()
	list, err := h.f.List(context.Background(), "")
	require.NoError(t, err)
	type entry struct {
		Name  string
		Stack any
	}
	var all []entry
	for _, s := range list {
		st, _ := h.f.Stack(s.Name)
		all = append(all, entry{Name: s.Name, Stack: st})
	}
	b, err := json.Marshal(all)
	require.NoError(t, err)
	h.f.Reset()
	return b
}

// TestBadRequestsHygieneAndSources: requests refused for their sources (403, the source
// policy), their control characters and malformed quantities (400), and the order of the
// checks, each naming the exact field, starting nothing and leaving the backend's stacks
// byte-identical. The loopback sources point at a live listener that must see no request.
func TestBadRequestsHygieneAndSources(t *testing.T) {
	rec := newHitRecorder(t)
	const servers = tenantsPath + "/acme/servers"
	cluster := func(spec string) string {
		return `{"metadata":{"name":"c"},"spec":{"domain":"a.example.com","ingress":{"mode":"NodePort"}` + spec + `}}`
	}
	tenant := func(spec string) string {
		return `{"metadata":{"name":"acme2"},"spec":{"clusterRef":"dev","type":"enterprise"` + spec + `}}`
	}
	server := func(spec string) string {
		return `{"metadata":{"name":"bot"},"spec":{"robotId":"bot","robotType":"chat","image":"img:1"` + spec + `}}`
	}
	registry := func(cred string) string {
		return cluster(`,"imageRegistry":{"registry":"mirror.example.cn/tfrs","credentials":{"server":"mirror.example.cn","username":"u"` + cred + `}}`)
	}
	src := func(component, field, value string) string {
		return cluster(`,"` + component + `":{"` + field + `":"` + value + `"}`)
	}
	const forbidden = "forbidden"
	cases := []struct {
		name, method, path, body string
		status                   int
		field, reason            string
	}{
		// Source policy: local paths and file:// (no allowed root by default).
		{name: "localPath /etc", path: "/v1/clusters", body: src("certManager", "localPath", "/etc"), status: 403, field: "spec.certManager.localPath"},
		{name: "localPath relative", path: "/v1/clusters", body: src("istio", "localPath", "charts/istio"), status: 403, field: "spec.istio.localPath"},
		{name: "localPath traversal", path: "/v1/clusters", body: src("istioIngress", "localPath", "/srv/charts/../../etc"), status: 403, field: "spec.istioIngress.localPath"},
		{name: "localPath root", path: "/v1/clusters", body: src("minioOperator", "localPath", "/"), status: 403, field: "spec.minioOperator.localPath"},
		{name: "localPath service account token", path: "/v1/clusters", body: src("cnpgOperator", "localPath", "/var/run/secrets/kubernetes.io/serviceaccount/token"), status: 403, field: "spec.cnpgOperator.localPath"},
		{name: "file URL", path: "/v1/clusters", body: src("cnpgOperator", "manifestURL", "file:///etc/passwd"), status: 403, field: "spec.cnpgOperator.manifestURL"},
		{name: "file URL via localhost", path: "/v1/clusters", body: src("cnpgOperator", "manifestURL", "file://localhost/etc/shadow"), status: 403, field: "spec.cnpgOperator.manifestURL"},
		{name: "file URL of a remote host", path: "/v1/clusters", body: src("rabbitmqOperator", "manifestURL", "file://fileserver/share"), status: 403, field: "spec.rabbitmqOperator.manifestURL"},
		// Loopback, link-local and private addresses, and disallowed hosts.
		{name: "manifestURL loopback listener", path: "/v1/clusters", body: src("cnpgOperator", "manifestURL", rec.URL+"/cnpg.yaml"), status: 403, field: "spec.cnpgOperator.manifestURL"},
		{name: "manifestURL localhost", path: "/v1/clusters", body: src("cnpgOperator", "manifestURL", "http://localhost:"+rec.URL[strings.LastIndex(rec.URL, ":")+1:]+"/x"), status: 403, field: "spec.cnpgOperator.manifestURL"},
		{name: "manifestURL cloud metadata", path: "/v1/clusters", body: src("cnpgOperator", "manifestURL", "http://169.254.169.254/latest/meta-data/"), status: 403, field: "spec.cnpgOperator.manifestURL"},
		{name: "manifestURL IPv6 loopback", path: "/v1/clusters", body: src("cnpgOperator", "manifestURL", "http://[::1]/x"), status: 403, field: "spec.cnpgOperator.manifestURL"},
		{name: "manifestURL IPv6 link-local", path: "/v1/clusters", body: src("cnpgOperator", "manifestURL", "http://[fe80::1]/x"), status: 403, field: "spec.cnpgOperator.manifestURL"},
		{name: "manifestURL v4-mapped loopback", path: "/v1/clusters", body: src("cnpgOperator", "manifestURL", "http://[::ffff:127.0.0.1]/x"), status: 403, field: "spec.cnpgOperator.manifestURL"},
		{name: "manifestURL private", path: "/v1/clusters", body: src("rabbitmqOperator", "manifestURL", "https://10.0.0.5/rabbit"), status: 403, field: "spec.rabbitmqOperator.manifestURL"},
		{name: "manifestURL decimal IP", path: "/v1/clusters", body: src("cnpgOperator", "manifestURL", "http://2130706433/x"), status: 403, field: "spec.cnpgOperator.manifestURL"},
		{name: "manifestURL other host", path: "/v1/clusters", body: src("rabbitmqOperator", "manifestURL", "https://evil.example.com/base"), status: 403, field: "spec.rabbitmqOperator.manifestURL"},
		{name: "chartRepo other host", path: "/v1/clusters", body: src("certManager", "chartRepo", "https://evil.example.com/charts"), status: 403, field: "spec.certManager.chartRepo"},
		{name: "chartRepo oci other host", path: "/v1/clusters", body: src("istio", "chartRepo", "oci://evil.example.com/charts"), status: 403, field: "spec.istio.chartRepo"},
		{name: "chartRepo userinfo trick", path: "/v1/clusters", body: src("certManager", "chartRepo", "https://charts.jetstack.io@evil.example.com/"), status: 403, field: "spec.certManager.chartRepo"},
		{name: "chartRepo allowed host, other port", path: "/v1/clusters", body: src("certManager", "chartRepo", "https://charts.jetstack.io:8443/"), status: 403, field: "spec.certManager.chartRepo"},
		{name: "chartRepo private", path: "/v1/clusters", body: src("minioOperator", "chartRepo", "http://192.168.1.1/charts"), status: 403, field: "spec.minioOperator.chartRepo"},
		{name: "chartRepo metadata name", path: "/v1/clusters", body: src("minioOperator", "chartRepo", "http://metadata.google.internal/"), status: 403, field: "spec.minioOperator.chartRepo"},
		{name: "chartRepo unspecified", path: "/v1/clusters", body: src("istioIngress", "chartRepo", "https://0.0.0.0/"), status: 403, field: "spec.istioIngress.chartRepo"},
		{name: "tenant chartRepo loopback listener", body: tenant(`,"grafana":{"chartRepo":"` + rec.URL + `"}`), status: 403, field: "spec.grafana.chartRepo"},
		{name: "tenant chartRepo other host", body: tenant(`,"grafana":{"chartRepo":"https://evil.example.com/charts"}`), status: 403, field: "spec.grafana.chartRepo"},
		{name: "tenant chartRepo CGNAT", body: tenant(`,"jaeger":{"chartRepo":"oci://100.64.0.1/charts"}`), status: 403, field: "spec.jaeger.chartRepo"},
		{name: "tenant localPath", body: tenant(`,"jaeger":{"localPath":"/var/run/secrets"}`), status: 403, field: "spec.jaeger.localPath"},
		// Secrets from other namespaces.
		{name: "passwordSecretRef kube-system", path: "/v1/clusters", body: registry(`,"passwordSecretRef":{"name":"reg","namespace":"kube-system"}`), status: 403, field: "spec.imageRegistry.credentials.passwordSecretRef.namespace"},
		{name: "passwordSecretRef another team", path: "/v1/clusters", body: registry(`,"passwordSecretRef":{"name":"reg","namespace":"team-b"}`), status: 403, field: "spec.imageRegistry.credentials.passwordSecretRef.namespace"},
		// Every route that takes a spec applies the policy.
		{name: "PUT with a local path", method: http.MethodPut, path: "/v1/clusters/c", body: src("certManager", "localPath", "/etc"), status: 403, field: "spec.certManager.localPath"},
		{name: "preview with a local path", path: "/v1/clusters/c/preview", body: src("certManager", "localPath", "/etc"), status: 403, field: "spec.certManager.localPath"},
		{name: "preview with a loopback URL", path: tenantsPath + "/acme2/preview", body: tenant(`,"jaeger":{"chartRepo":"` + rec.URL + `"}`), status: 403, field: "spec.jaeger.chartRepo"},

		// Control characters: NUL everywhere, other controls except in multi-line values.
		{name: "NUL in image", path: servers, body: `{"metadata":{"name":"bot"},"spec":{"robotId":"bot","robotType":"chat","image":"img:1\u0000"}}`, status: 400, field: "spec.image", reason: forbidden},
		{name: "newline in image", path: servers, body: `{"metadata":{"name":"bot"},"spec":{"robotId":"bot","robotType":"chat","image":"img\n:1"}}`, status: 400, field: "spec.image", reason: forbidden},
		{name: "ESC in configData", path: servers, body: server(`,"configData":{"KEY":"a\u001b[31mred"}`), status: 400, field: "spec.configData[KEY]", reason: forbidden},
		{name: "BEL in configData", path: servers, body: server(`,"configData":{"KEY":"ding\u0007"}`), status: 400, field: "spec.configData[KEY]", reason: forbidden},
		{name: "DEL in secretData", path: servers, body: server(`,"secretData":{"KEY":"x\u007f"}`), status: 400, field: "spec.secretData[KEY]", reason: forbidden},
		{name: "NUL in confzData", path: servers, body: server(`,"confzData":"a = 1\u0000"`), status: 400, field: "spec.confzData"},
		{name: "C1 in confzData", path: servers, body: server(`,"confzData":"a = \"\u0085\""`), status: 400, field: "spec.confzData", reason: forbidden},
		{name: "NUL in annotation", body: `{"metadata":{"name":"acme2","annotations":{"note":"a\u0000b"}},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.annotations[note]", reason: forbidden},
		{name: "control in annotation key", body: `{"metadata":{"name":"acme2","annotations":{"a\u0001":"b"}},"spec":{"clusterRef":"dev","type":"enterprise"}}`, status: 400, field: "metadata.annotations"},
		{name: "ESC in postgresql imageName", body: tenant(`,"postgresql":{"imageName":"pg\u001b:16"}`), status: 400, field: "spec.postgresql.imageName", reason: forbidden},
		{name: "NUL in redis image", body: tenant(`,"redis":{"image":"redis\u0000"}`), status: 400, field: "spec.redis.image", reason: forbidden},
		{name: "C1 in prometheus image", body: tenant(`,"prometheus":{"image":"prom\u0085"}`), status: 400, field: "spec.prometheus.image", reason: forbidden},
		{name: "line separator in otel image", body: tenant(`,"otelCollector":{"image":"otel\u2028x"}`), status: 400, field: "spec.otelCollector.image", reason: forbidden},
		{name: "tab in vector image", body: tenant(`,"vector":{"image":"vector\t1"}`), status: 400, field: "spec.vector.image", reason: forbidden},
		{name: "NUL in cacheDir", body: tenant(`,"sharedCache":{"cacheDir":"/cache\u0000x"}`), status: 400, field: "spec.sharedCache.cacheDir", reason: forbidden},
		{name: "NUL in chart values", body: tenant(`,"grafana":{"values":{"ini":{"x":"a\u0000"}}}`), status: 400, field: "spec.grafana.values[ini][x]", reason: forbidden},
		{name: "NUL in registry username", path: "/v1/clusters", body: registry(`,"username":"bob\u0000","password":"pw"`), status: 400, field: "spec.imageRegistry.credentials.username", reason: forbidden},
		{name: "CRLF in registry server", path: "/v1/clusters", body: cluster(`,"imageRegistry":{"credentials":{"server":"reg\r\nX: y","username":"u","password":"pw"}}`), status: 400, field: "spec.imageRegistry.credentials.server", reason: forbidden},
		{name: "NUL in registry password", path: "/v1/clusters", body: registry(`,"password":"hunter2\u0000secret"`), status: 400, field: "spec.imageRegistry.credentials.password", reason: forbidden},
		{name: "NUL in ACME email", path: "/v1/clusters", body: cluster(`,"tls":{"issuer":"ACME","acme":{"email":"a@b\u0000","server":"https://acme.example.com"}}`), status: 400, field: "spec.tls.acme.email", reason: forbidden},
		{name: "NUL in service annotation", path: "/v1/clusters", body: `{"metadata":{"name":"c"},"spec":{"domain":"a.example.com","ingress":{"mode":"TKECLB","serviceAnnotations":{"k":"v\u0000"}}}}`, status: 400, field: "spec.ingress.serviceAnnotations[k]", reason: forbidden},

		// Quantities, each at its own path.
		{name: "minio size", body: tenant(`,"minio":{"size":"abc"}`), status: 400, field: "spec.minio.size", reason: "invalid"},
		{name: "rabbitmq size", body: tenant(`,"rabbitmq":{"size":"1.5.5Gi"}`), status: 400, field: "spec.rabbitmq.size", reason: "invalid"},
		{name: "timescaledb size", body: tenant(`,"timescaledb":{"size":"-"}`), status: 400, field: "spec.timescaledb.size", reason: "invalid"},
		{name: "sharedCache size with a space", body: tenant(`,"sharedCache":{"size":"10 Gi"}`), status: 400, field: "spec.sharedCache.size", reason: "invalid"},
		{name: "quantity as boolean", body: tenant(`,"redis":{"size":true}`), status: 400, field: "spec.redis.size"},
		{name: "zero size", body: tenant(`,"postgresql":{"size":"0"}`), status: 400, field: "spec.postgresql.size", reason: "invalid"},
		{name: "negative size", body: tenant(`,"minio":{"size":"-1Gi"}`), status: 400, field: "spec.minio.size", reason: "invalid"},
		{name: "limits quantity", body: tenant(`,"tfrsUtils":{"resources":{"limits":{"memory":"lots"}}}`), status: 400, field: "spec.tfrsUtils.resources.limits[memory]", reason: "invalid"},
		{name: "server worker quantity", path: servers, body: server(`,"apiWorker":{"resources":{"requests":{"cpu":"1 core"}}}`), status: 400, field: "spec.apiWorker.resources.requests[cpu]", reason: "invalid"},
		{name: "two quantities at once", body: tenant(`,"redis":{"size":"x"},"minio":{"size":"y"}`), status: 400, field: "spec.redis.size", reason: "invalid"},

		// Order: validation before the source policy and before the parent.
		{name: "invalid and a forbidden source: 400 first", path: "/v1/clusters", body: `{"metadata":{"name":"C!"},"spec":{"domain":"a.example.com","ingress":{"mode":"NodePort"},"certManager":{"localPath":"/etc"}}}`, status: 400, field: "metadata.name"},
		{name: "invalid under an unknown cluster: 400, not 424", body: `{"metadata":{"name":"acme2"},"spec":{"clusterRef":"nowhere","type":"enterprise","redis":{"image":"r\u0000"}}}`, status: 400, field: "spec.redis.image"},
		{name: "read-only token before decoding", path: tenantsPath, body: `{`, status: 403, field: "-"},
	}
	require.GreaterOrEqual(t, len(cases), 60)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			before := stackSnapshot(t, h)
			method, path := tc.method, tc.path
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = tenantsPath
			}
			token := adminToken
			if strings.HasPrefix(tc.name, "read-only") {
				token = readerToken
			}
			w := h.do(req{method: method, path: path, body: tc.body, token: token})
			require.Equal(t, tc.status, w.Code, w.Body.String())
			p := problemOfResponse(t, w)
			require.NotEmpty(t, p.RequestID)
			if tc.field != "-" {
				reason := tc.reason
				if tc.status == http.StatusForbidden {
					require.Equal(t, problemTypeBase+"source-forbidden", p.Type)
					reason = forbidden
				}
				require.True(t, hasField(p, tc.field, reason), "want field %q reason %q in %+v", tc.field, reason, p.Errors)
			}
			require.NotContains(t, w.Body.String(), "hunter2", "a refused secret is never echoed")
			require.Empty(t, h.f.Calls(), "a refused request must start nothing and read no stack")
			require.Equal(t, string(before), string(stackSnapshot(t, h)), "the backend's stacks are unchanged")
		})
	}
	require.Zero(t, rec.hits.Load(), "a refused source must never be requested")
}

// TestParentBeforeBusy: a server POSTed under an unknown tenant while another operation holds
// the same server stack is answered with the missing parent (424), not busy (409).
func TestParentBeforeBusy(t *testing.T) {
	h := newHarness(t)
	release := h.hold()
	defer release()
	w := h.admin(http.MethodPost, tenantsPath+"/acme/servers", serverBody("bot"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	// Same stack (server.tfrs-system.bot), unknown tenant.
	w = h.admin(http.MethodPost, tenantsPath+"/ghost/servers", serverBody("bot"))
	require.Equal(t, http.StatusFailedDependency, w.Code, w.Body.String())
	p := problemOfResponse(t, w)
	require.Equal(t, problemTypeBase+"parent-not-ready", p.Type)
	require.Contains(t, p.Detail, `TFRTenant "ghost"`)
	// Under the right tenant the same request is busy.
	w = h.admin(http.MethodPost, tenantsPath+"/acme/servers", serverBody("bot"))
	require.Equal(t, http.StatusConflict, w.Code)
	require.Equal(t, problemTypeBase+"busy", problemOfResponse(t, w).Type)
}

// TestMultiLineValuesAccepted: tabs and newlines where text is multi-line are fine.
func TestMultiLineValuesAccepted(t *testing.T) {
	h := newHarness(t)
	b := serverBody("bot")
	spec := b["spec"].(map[string]any)
	spec["configData"] = map[string]string{"PEM": "-----BEGIN X-----\r\n\tabc\n-----END X-----\n"}
	spec["confzData"] = "[redis]\n\tdb = 2\r\n"
	w := h.admin(http.MethodPost, tenantsPath+"/acme/servers", b)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
}
