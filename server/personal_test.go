package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A personal tenant that sets shared middleware is refused with 400 at the field it set,
// before anything runs; the cluster's spec.personal is checked at its own paths.
func TestPersonalTenantMiddlewareRefused(t *testing.T) {
	cases := []struct{ name, path, body, field string }{
		{"redis", tenantsPath, `{"metadata":{"name":"alice"},"spec":{"clusterRef":"dev","type":"personal","jobType":"chat","redis":{"size":"5Gi"}}}`, "spec.redis"},
		{"grafana values", tenantsPath, `{"metadata":{"name":"alice"},"spec":{"clusterRef":"dev","type":"personal","jobType":"chat","grafana":{"values":{"replicas":2}}}}`, "spec.grafana"},
		{"credentials", tenantsPath, `{"metadata":{"name":"alice"},"spec":{"clusterRef":"dev","type":"personal","jobType":"chat","credentials":{"postgresql":{"existingSecret":"mine"}}}}`, "spec.credentials"},
		{"robot type with a dash", tenantsPath + "/acme/servers", `{"metadata":{"name":"bot"},"spec":{"robotId":"1","robotType":"chat-bot","image":"img:1"}}`, "spec.robotType"},
		{"cluster job type middleware", "/v1/clusters", `{"metadata":{"name":"c"},"spec":{"domain":"a.example.com","personal":{"jobTypes":{"chat":{"minio":{"servers":99}}}}}}`, "spec.personal.jobTypes.chat.minio.servers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			w := h.do(req{method: http.MethodPost, path: tc.path, body: tc.body, token: adminToken})
			require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
			p := problemOfResponse(t, w)
			require.True(t, hasField(p, tc.field, ""), "want field %q in %+v", tc.field, p.Errors)
			if strings.HasPrefix(tc.field, "spec.") && tc.path == tenantsPath {
				require.Contains(t, w.Body.String(), "spec.personal")
			}
			require.Empty(t, h.f.Calls(), "a refused request must start nothing and read no stack")
		})
	}
	// The same middleware on an enterprise tenant is its own to set.
	h := newHarness(t)
	w := h.do(req{method: http.MethodPost, path: tenantsPath, token: adminToken,
		body: `{"metadata":{"name":"acme3"},"spec":{"clusterRef":"dev","type":"enterprise","redis":{"size":"5Gi"}}}`})
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
}
