//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/internal/manifest"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/server"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// TestHTTPKubernetesRBAC runs `tfrs serve --auth kubernetes` against the local control plane's
// real RBAC authorizer. The API reviews as its own ServiceAccount, which holds only
// config/rbac/api_auth_role.yaml. A platform ServiceAccount with a ClusterRole creates the
// cluster over HTTP (run to completion); the team of cmd/tfrs/devenv/team-rbac.yaml (the Role
// `tfrs dev` applies) creates, reads, previews and deletes a tenant in its namespace (create
// and delete run to completion) and gets 403 in another namespace and on clusters, even with
// a RoleBinding to the cluster-creating ClusterRole; a read-only Role gets 403 on changes and
// on previews, 200 on previews once the preview subresource is granted; tokens of a deleted
// ServiceAccount, tampered ones and ones for another audience are 401.
func TestHTTPKubernetesRBAC(t *testing.T) {
	e := newEnv(t, 15*time.Minute)
	ctx := e.ctx
	admin, err := e.cp.Client()
	require.NoError(t, err)
	rc := e.cp.RESTConfig
	const audience = "tfrs"

	// The API's own identity: a ServiceAccount bound to the api-auth ClusterRole, nothing else.
	apply(ctx, t, rc, readRepoFile(t, "config", "rbac", "api_auth_role.yaml"))
	createNamespace(ctx, t, admin, "tfrs-api")
	createSA(ctx, t, admin, "tfrs-api", "tfrs-api")
	bindCluster(ctx, t, admin, "tfrs-api-auth", "tfrs-api-auth", "tfrs-api", "tfrs-api")
	apiToken := token(ctx, t, admin, "tfrs-api", "tfrs-api")
	apiREST := &rest.Config{Host: rc.Host, BearerToken: apiToken, TLSClientConfig: rest.TLSClientConfig{CAData: rc.CAData}}
	kube, err := server.NewKubernetesAuthForConfig(apiREST, server.KubernetesOptions{Audiences: []string{audience}})
	require.NoError(t, err)

	run := runner.New(e.eng, runner.Options{Kubeconfig: e.cfg["kubernetes:kubeconfig"].Value})
	sources := server.DefaultSourcePolicy()
	sources.LocalRoots = []string{filepath.Join(testenv.RepoRoot(), "stacks", "testdata")}
	srv := server.New(server.Config{
		Runner: run, Engine: e.eng, Sources: sources, Kubernetes: kube,
		Logger: slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, l) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-served)
	})
	base := "http://" + l.Addr().String()
	client := func(tok string) *apiClient { return &apiClient{t: t, ctx: ctx, base: base, token: tok} }
	expect := func(c *apiClient, method, path string, body any, code int) []byte {
		t.Helper()
		resp, b := c.do(method, path, body)
		require.Equal(t, code, resp.StatusCode, "%s %s: %s", method, path, b)
		if code == http.StatusForbidden {
			var p server.Problem
			require.NoError(t, json.Unmarshal(b, &p))
			require.NotNil(t, p.Denied, string(b))
			require.NotContains(t, string(b), c.token)
		}
		return b
	}
	started := func(c *apiClient, method, path string, body any) string {
		t.Helper()
		resp, b := c.do(method, path, body)
		require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s %s: %s", method, path, b)
		return resp.Header.Get("Location")
	}

	// The platform team: a ClusterRole for clusters, bound cluster-wide.
	createNamespace(ctx, t, admin, "platform")
	createSA(ctx, t, admin, "platform", "ops")
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "tfrs-cluster-admin"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"tfrs.io"}, Resources: []string{"tfrclusters"}, Verbs: []string{"get", "list", "create", "update", "delete"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	bindCluster(ctx, t, admin, "ops-tfrs-cluster-admin", "tfrs-cluster-admin", "platform", "ops")
	ops := client(token(ctx, t, admin, "platform", "ops", audience))

	tc := testenv.StandInCluster("rbac")
	clusterBody := map[string]any{"apiVersion": "tfrs.io/v1alpha1", "kind": "TFRCluster", "metadata": map[string]any{"name": tc.Name}, "spec": tc.Spec}
	began := time.Now()
	op := ops.wait(started(ops, http.MethodPost, "/v1/clusters", clusterBody))
	require.Equal(t, server.StateSucceeded, op.State, "%+v", op.Error)
	t.Logf("cluster create by a ClusterRole: %s", time.Since(began).Round(time.Millisecond))
	expect(ops, http.MethodGet, "/v1/clusters/rbac", nil, http.StatusOK)
	expect(ops, http.MethodGet, "/v1/namespaces/team-a/tenants", nil, http.StatusForbidden)

	// The team: the Role `tfrs dev` applies, in its namespace.
	apply(ctx, t, rc, readRepoFile(t, "cmd", "tfrs", "devenv", "team-rbac.yaml"))
	team := client(token(ctx, t, admin, "team-a", "tenant-admin", audience))
	const tenants = "/v1/namespaces/team-a/tenants"
	tt := testenv.Lean(testenv.StandInTenant("team-a", "acme-a", tc.Name))
	tenantBody := map[string]any{"apiVersion": "tfrs.io/v1alpha1", "kind": "TFRTenant", "metadata": map[string]any{"name": tt.Name}, "spec": tt.Spec}

	// Authorization comes first: out of scope is 403 and nothing starts.
	expect(team, http.MethodPost, "/v1/namespaces/team-b/tenants", tenantBody, http.StatusForbidden)
	expect(team, http.MethodGet, "/v1/namespaces/team-b/tenants", nil, http.StatusForbidden)
	expect(team, http.MethodGet, "/v1/clusters", nil, http.StatusForbidden)
	expect(team, http.MethodPost, "/v1/clusters", clusterBody, http.StatusForbidden)
	// A RoleBinding (in the team's namespace) to the cluster ClusterRole gives no cluster-scoped power.
	_, err = admin.RbacV1().RoleBindings("team-a").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-admin-clusters"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tfrs-cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "tenant-admin", Namespace: "team-a"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	expect(team, http.MethodDelete, "/v1/clusters/rbac", nil, http.StatusForbidden)

	began = time.Now()
	opURL := started(team, http.MethodPost, tenants, tenantBody)
	op = team.wait(opURL)
	require.Equal(t, server.StateSucceeded, op.State, "%+v", op.Error)
	t.Logf("tenant create by a namespace Role: %s", time.Since(began).Round(time.Millisecond))
	expect(team, http.MethodGet, tenants, nil, http.StatusOK)
	expect(team, http.MethodGet, tenants+"/acme-a", nil, http.StatusOK)
	expect(team, http.MethodPost, tenants+"/acme-a/preview", nil, http.StatusOK)
	// The operation is the team's to read; the platform team may not read the tenant's.
	expect(ops, http.MethodGet, opURL, nil, http.StatusForbidden)

	// Read-only Roles: changes are 403; previews only with the preview subresource.
	reader := client(readOnlyIdentity(ctx, t, admin, "team-a", "reader", false, audience))
	previewer := client(readOnlyIdentity(ctx, t, admin, "team-a", "previewer", true, audience))
	for _, c := range []*apiClient{reader, previewer} {
		expect(c, http.MethodGet, tenants, nil, http.StatusOK)
		expect(c, http.MethodGet, tenants+"/acme-a", nil, http.StatusOK)
		expect(c, http.MethodGet, opURL, nil, http.StatusOK)
		expect(c, http.MethodPut, tenants+"/acme-a", tenantBody, http.StatusForbidden)
		expect(c, http.MethodDelete, tenants+"/acme-a", nil, http.StatusForbidden)
		expect(c, http.MethodPost, tenants, tenantBody, http.StatusForbidden)
		expect(c, http.MethodPost, opURL+"/cancel", nil, http.StatusForbidden)
	}
	var p server.Problem
	require.NoError(t, json.Unmarshal(expect(reader, http.MethodPost, tenants+"/acme-a/preview", nil, http.StatusForbidden), &p))
	require.Equal(t, &server.Attributes{Verb: "create", Group: "tfrs.io", Resource: "tfrtenants", Subresource: "preview", Namespace: "team-a", Name: "acme-a"}, p.Denied)
	expect(previewer, http.MethodPost, tenants+"/acme-a/preview", nil, http.StatusOK)

	// Tokens the API server does not accept, or not for this audience: 401.
	createSA(ctx, t, admin, "team-a", "gone")
	goneToken := token(ctx, t, admin, "team-a", "gone", audience)
	require.NoError(t, admin.CoreV1().ServiceAccounts("team-a").Delete(ctx, "gone", metav1.DeleteOptions{}))
	for name, tok := range map[string]string{
		"deleted ServiceAccount": goneToken,
		"tampered":               team.token[:len(team.token)-4] + "AAAA",
		"API server audience":    token(ctx, t, admin, "team-a", "tenant-admin"),
		"not a JWT":              "not-a-kubernetes-token-at-all",
	} {
		resp, b := client(tok).do(http.MethodGet, tenants, nil)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s", name, b)
	}

	began = time.Now()
	op = team.wait(started(team, http.MethodDelete, tenants+"/acme-a", nil))
	require.Equal(t, server.StateSucceeded, op.State, "%+v", op.Error)
	t.Logf("tenant delete by a namespace Role: %s", time.Since(began).Round(time.Millisecond))
	expect(team, http.MethodGet, tenants+"/acme-a", nil, http.StatusNotFound)
}

// readOnlyIdentity is a ServiceAccount of ns with a Role that reads tenants (and, with
// preview, may preview them), and returns a token of it.
func readOnlyIdentity(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns, name string, preview bool, audiences ...string) string {
	t.Helper()
	rules := []rbacv1.PolicyRule{{APIGroups: []string{"tfrs.io"}, Resources: []string{"tfrtenants", "tfrservers"}, Verbs: []string{"get", "list"}}}
	if preview {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"tfrs.io"}, Resources: []string{"tfrtenants/preview", "tfrservers/preview"}, Verbs: []string{"create"}})
	}
	_, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	createSA(ctx, t, admin, ns, name)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return token(ctx, t, admin, ns, name, audiences...)
}

func readRepoFile(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{testenv.RepoRoot()}, parts...)...))
	require.NoError(t, err)
	return b
}

// apply creates every object of a multi-document YAML.
func apply(ctx context.Context, t *testing.T, rc *rest.Config, docs []byte) {
	t.Helper()
	c, err := client.New(rc, client.Options{})
	require.NoError(t, err)
	require.NoError(t, manifest.EachDocument(bytes.NewReader(docs), func(_ int, doc []byte) error {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return err
		}
		return c.Create(ctx, &u)
	}))
}

func createNamespace(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func createSA(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns, name string) {
	t.Helper()
	_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func bindCluster(ctx context.Context, t *testing.T, admin kubernetes.Interface, binding, role, ns, sa string) {
	t.Helper()
	_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: binding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// token is a bound ServiceAccount token from the TokenRequest API (what `kubectl create
// token` asks for), for the audiences given or the API server's own.
func token(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns, sa string, audiences ...string) string {
	t.Helper()
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences: audiences, ExpirationSeconds: ptr.To[int64](3600),
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}
