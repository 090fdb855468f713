//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/cmd/tfrs/devenv"
	"github.com/tfrs-io/tfrs-operator/operator"
)

// TestDevKubernetesAuth: `tfrs dev`'s API takes both its admin token and Kubernetes tokens;
// the command env.sh prints (kubectl create token …) yields a token that lists the team's
// tenants and is refused elsewhere.
func TestDevKubernetesAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := devenv.Start(ctx, devenv.Options{Dir: t.TempDir(),
		Operator: operator.Options{SkipNameValidation: true}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, env.Stop()) })

	sh, err := os.ReadFile(env.EnvFile)
	require.NoError(t, err)
	require.Contains(t, string(sh), env.TeamTokenCommand())
	args := strings.Fields(env.TeamTokenCommand())
	require.Equal(t, "kubectl", args[0])
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", env.KubeconfigPath}, args[1:]...)...)
	out, err := cmd.Output()
	require.NoError(t, err)
	team := &apiClient{t: t, ctx: ctx, base: env.APIURL, token: strings.TrimSpace(string(out))}
	admin := &apiClient{t: t, ctx: ctx, base: env.APIURL, token: env.Token}

	for _, tc := range []struct {
		c    *apiClient
		path string
		code int
	}{
		{team, "/v1/namespaces/" + env.TeamNamespace + "/tenants", http.StatusOK},
		{team, "/v1/namespaces/tfrs-system/tenants", http.StatusForbidden},
		{team, "/v1/clusters", http.StatusForbidden},
		{admin, "/v1/clusters", http.StatusOK},
		{&apiClient{t: t, ctx: ctx, base: env.APIURL, token: "eyJhbGciOi.not.valid"}, "/v1/clusters", http.StatusUnauthorized},
	} {
		resp, body := tc.c.do(http.MethodGet, tc.path, nil)
		require.Equal(t, tc.code, resp.StatusCode, "%s: %s", tc.path, body)
	}
}
