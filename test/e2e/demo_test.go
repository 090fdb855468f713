//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/cmd/tfrs/demo"
	"github.com/tfrs-io/tfrs-operator/cmd/tfrs/devenv"
	srvcomp "github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/operator"
)

// TestDemoStory is `make demo`, asserted: the same devenv and the same story, plus what the
// demo only prints. Then what a platform team relies on around it: a configData change rolls
// only that robot's workers, an HTTP change of a CR-managed object is refused, deleting in the
// wrong order waits, and deleting in the right order leaves only the retained data.
func TestDemoStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	bin := buildTFRS(t, root)

	env, err := devenv.Start(ctx, devenv.Options{Dir: t.TempDir(),
		Operator: operator.Options{ParentPoll: 2 * time.Second, BackoffBase: 2 * time.Second, BackoffMax: 20 * time.Second, JobPoll: 5 * time.Second,
			// Another test of this process may have run a dev environment's operator already.
			SkipNameValidation: true}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, env.Stop()) })

	var out bytes.Buffer
	story := &demo.Story{Env: env, Root: root, TFRS: bin, Out: &out, Wait: 8 * time.Minute}
	step := func(name string, fn func(context.Context) error) {
		t.Helper()
		start := time.Now()
		err := fn(ctx)
		t.Logf("%s: %s", name, time.Since(start).Round(time.Second))
		require.NoError(t, err, "%s:\n%s", name, out.String())
	}
	step("cluster by kubectl", story.ApplyCluster)
	step("enterprise tenant by HTTP", story.PostTenant)
	// Step 2 follows the operation with `tfrs watch`: per-component lines and the counts (plain,
	// since the output is not a terminal here), never the raw Server-Sent Events.
	require.NotContains(t, out.String(), "data: ", "no raw SSE lines in the demo")
	require.Contains(t, out.String(), "$ tfrs watch /v1/operations/")
	require.Regexp(t, `\[tenant\.tfrs-system\.acme\]   ok +PostgreSQL `, out.String())
	require.Regexp(t, `\[tenant\.tfrs-system\.acme\] done: create=\d+ \((\d+)/(\d+) resources\)`, out.String())
	require.Contains(t, out.String(), "(create TFRTenant tfrs-system/acme) succeeded")
	step("server by kubectl", story.ApplyServer)
	step("personal tenant and robots by CLI", story.UpPersonal)
	step("show", story.Show)

	// The HTTP tenant shows Ready with outputs and not one secret value.
	tenant := apiJSON(ctx, t, env, http.MethodGet, "/v1/namespaces/tfrs-system/tenants/acme", nil, http.StatusOK)
	require.Contains(t, tenant, `"ready":true`)
	require.Contains(t, tenant, "acme-pg-rw")
	require.NotContains(t, out.String(), readPassphraseLike(t, env))

	// The Confz is generated from the tenant's real connection info, merged with the user's.
	toml, err := story.Confz(ctx, demo.Namespace, demo.EnterpriseServer)
	require.NoError(t, err)
	require.Contains(t, toml, `host = 'acme-pg-rw'`)
	require.Contains(t, toml, "db = 2", "the example's confzData override wins")
	require.Contains(t, toml, "default_model", "user-only keys are kept")
	masked := demo.MaskTOML(toml)
	require.NotContains(t, masked, passwordIn(toml), "the demo prints the Confz masked")

	// The CLI sees the personal robots through the same state: a preview shows no changes.
	personal, err := story.Example("personal.yaml")
	require.NoError(t, err)
	previewJSON := runTFRS(ctx, t, bin, env, "preview", "-f", personal, "-o", "json", "--detailed-exitcode")
	require.NotEmpty(t, previewJSON)

	// A tenant made by a CR cannot be changed over HTTP, not even while the operator is
	// bringing it up: one 409 that says to edit the CR, and the operator's up goes on.
	beta := testenv.Lean(testenv.StandInTenant(demo.Namespace, "beta", demo.ClusterName))
	betaYAML, err := yaml.Marshal(beta)
	require.NoError(t, err)
	require.NoError(t, story.KubectlIn(ctx, string(betaYAML), "apply", "-f", "-"))
	betaJSON, err := json.Marshal(map[string]any{"metadata": map[string]any{"name": "beta", "namespace": demo.Namespace}, "spec": beta.Spec})
	require.NoError(t, err)
	// Until the operator's up has created the stack the API knows no tenant "beta" (404);
	// from then on every PUT is refused (never accepted), and once the stack carries its
	// managed-by tag the answer says to edit the CR.
	var accepted string
	require.Eventually(t, func() bool {
		code, body := apiDo(ctx, t, env, http.MethodPut, "/v1/namespaces/tfrs-system/tenants/beta", betaJSON)
		if code != http.StatusNotFound && code != http.StatusConflict {
			accepted = fmt.Sprintf("%d %s", code, body)
			return true
		}
		return code == http.StatusConflict && strings.Contains(body, "custom resource")
	}, 2*time.Minute, 200*time.Millisecond)
	require.Empty(t, accepted, "an HTTP change of a CR-managed tenant must be refused")
	kubectlRun(ctx, t, env, "wait", "--for=condition=Ready", "tfrtenant/beta", "-n", demo.Namespace, "--timeout=5m")
	kubectlRun(ctx, t, env, "delete", "tfrtenant", "beta", "-n", demo.Namespace, "--timeout=5m")

	// A CR-managed object cannot be changed over HTTP.
	server := kubectlJSON(ctx, t, env, "get", "tfrserver", "helper-bot", "-n", "tfrs-system")
	doc := map[string]any{"metadata": map[string]any{"name": "helper-bot", "namespace": "tfrs-system"}, "spec": server["spec"]}
	body, _ := json.Marshal(doc)
	refused := apiJSON(ctx, t, env, http.MethodPut, "/v1/namespaces/tfrs-system/tenants/acme/servers/helper-bot", body, http.StatusConflict)
	require.Contains(t, refused, "edit the custom resource")

	// configData change → only the robot's workers roll.
	before := deploymentGenerations(ctx, t, env, "acme")
	kubectlRun(ctx, t, env, "patch", "tfrserver", "helper-bot", "-n", "tfrs-system", "--type=merge", "-p", `{"spec":{"configData":{"TFS_PROFILE":"staging"}}}`)
	waitGeneration(ctx, t, env, "tfrserver", "helper-bot", "tfrs-system")
	after := deploymentGenerations(ctx, t, env, "acme")
	var rolled []string
	for name, g := range after {
		if g != before[name] {
			rolled = append(rolled, name)
		}
	}
	robot := srvcomp.Robot{ID: "helper-bot", Type: "chat", Namespace: "acme"}
	require.ElementsMatch(t, []string{robot.APIName(), robot.WorkerName()}, rolled, "only the robot's workers roll")

	// Deleting the cluster first waits for its dependents.
	kubectlRun(ctx, t, env, "delete", "tfrcluster", "dev", "--wait=false")
	require.Eventually(t, func() bool {
		c := kubectlJSON(ctx, t, env, "get", "tfrcluster", "dev")
		return conditionReason(c, "Ready") == "DependentsExist" || conditionReason(c, "Stalled") == "DependentsExist"
	}, 2*time.Minute, time.Second, "a cluster with tenants reports DependentsExist")

	// The right order: servers, tenants; then the cluster's deletion goes through.
	kubectlRun(ctx, t, env, "delete", "tfrserver", "helper-bot", "-n", "tfrs-system", "--timeout=5m")
	runTFRS(ctx, t, bin, env, "destroy", "-f", personal, "--yes")
	apiJSON(ctx, t, env, http.MethodDelete, "/v1/namespaces/tfrs-system/tenants/acme", nil, http.StatusAccepted)
	require.Eventually(t, func() bool {
		_, err := kubectlOut(ctx, env, "get", "tfrcluster", "dev")
		return err != nil && strings.Contains(err.Error(), "NotFound")
	}, 10*time.Minute, 2*time.Second, "the cluster goes once its tenants are gone")

	// Only retained data objects are left in the tenant namespace.
	cs, err := env.CP.Client()
	require.NoError(t, err)
	deps, err := cs.AppsV1().Deployments("acme").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, deps.Items, "workloads are destroyed")
	pvcs, err := cs.CoreV1().PersistentVolumeClaims("acme").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, pvcs.Items, "deletionPolicy Retain keeps the data volumes")
}

// buildTFRS returns the binary the tests run for the CLI door (and the failover test's
// replicas): the one hack/test.sh built for every e2e process (TFRS_E2E_TFRS_BIN), or else one
// built once per test process. Each build is a link of the whole tree (30-50 s of CPU), and
// three tests need the same binary. It is linked the way hack/test.sh links the test binaries
// (Go's own linker, no symbol table or DWARF): the CLI's behaviour is the same, the image's
// release build is hack/image's to check.
func buildTFRS(t *testing.T, root string) string {
	t.Helper()
	if bin := os.Getenv("TFRS_E2E_TFRS_BIN"); bin != "" {
		return bin
	}
	tfrsBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "tfrs-e2e-bin-")
		if err != nil {
			tfrsBuild.err = err
			return
		}
		tfrsBuild.dir = dir
		tfrsBuild.bin = filepath.Join(dir, "tfrs")
		cmd := exec.Command("go", "build", "-ldflags=-linkmode=internal -s -w", "-o", tfrsBuild.bin, "./cmd/tfrs")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			tfrsBuild.err = fmt.Errorf("go build ./cmd/tfrs: %w\n%s", err, out)
		}
	})
	require.NoError(t, tfrsBuild.err)
	return tfrsBuild.bin
}

// tfrsBuild is buildTFRS's one build; TestMain removes its directory.
var tfrsBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tfrsBuild.dir != "" {
		_ = os.RemoveAll(tfrsBuild.dir)
	}
	os.Exit(code)
}

func runTFRS(ctx context.Context, t *testing.T, bin string, env *devenv.Env, args ...string) string {
	t.Helper()
	full := append(args, "--kubeconfig", env.KubeconfigPath, "--state-dir", env.StateDir, "--passphrase-file", env.PassphraseFile)
	cmd := exec.CommandContext(ctx, bin, full...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "tfrs %s: %s\n%s", strings.Join(args, " "), stderr.String(), out)
	return string(out)
}

func apiJSON(ctx context.Context, t *testing.T, env *devenv.Env, method, path string, body []byte, want int) string {
	t.Helper()
	code, b := apiDo(ctx, t, env, method, path, body)
	require.Equal(t, want, code, "%s %s: %s", method, path, b)
	return b
}

func apiDo(ctx context.Context, t *testing.T, env *devenv.Env, method, path string, body []byte) (int, string) {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, env.APIURL+path, r)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+env.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func kubectlOut(ctx context.Context, env *devenv.Env, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", env.KubeconfigPath}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, stderr.String())
	}
	return string(out), nil
}

func kubectlRun(ctx context.Context, t *testing.T, env *devenv.Env, args ...string) {
	t.Helper()
	_, err := kubectlOut(ctx, env, args...)
	require.NoError(t, err, "kubectl %s", strings.Join(args, " "))
}

func kubectlJSON(ctx context.Context, t *testing.T, env *devenv.Env, args ...string) map[string]any {
	t.Helper()
	out, err := kubectlOut(ctx, env, append(args, "-o", "json")...)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	return m
}

func conditionReason(obj map[string]any, typ string) string {
	status, _ := obj["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			r, _ := m["reason"].(string)
			return r
		}
	}
	return ""
}

// waitGeneration waits until the operator has applied the object's current generation.
func waitGeneration(ctx context.Context, t *testing.T, env *devenv.Env, kind, name, ns string) {
	t.Helper()
	require.Eventually(t, func() bool {
		o := kubectlJSON(ctx, t, env, "get", kind, name, "-n", ns)
		meta, _ := o["metadata"].(map[string]any)
		status, _ := o["status"].(map[string]any)
		return meta["generation"] == status["observedGeneration"] && conditionReason(o, "Ready") == "Succeeded"
	}, 5*time.Minute, time.Second)
}

func deploymentGenerations(ctx context.Context, t *testing.T, env *devenv.Env, ns string) map[string]int64 {
	t.Helper()
	cs, err := env.CP.Client()
	require.NoError(t, err)
	list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]int64{}
	for _, d := range list.Items {
		out[d.Name] = d.Generation
	}
	return out
}

// readPassphraseLike returns the dev environment's passphrase: it must never be printed.
func readPassphraseLike(t *testing.T, env *devenv.Env) string {
	t.Helper()
	b, err := os.ReadFile(env.PassphraseFile)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// passwordIn returns the PostgreSQL password of a Confz document.
func passwordIn(toml string) string {
	in := false
	for _, l := range strings.Split(toml, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			in = l == "[postgresql]"
		}
		if in && strings.HasPrefix(l, "password") {
			return strings.Trim(strings.TrimSpace(l[strings.Index(l, "=")+1:]), `"'`)
		}
	}
	return "\x00no-password-found"
}
