// Package demo is the story `make demo` tells and the end-to-end suite asserts: a TFRCluster
// by `kubectl apply` (sources pointed at the offline stand-ins), an enterprise tenant by HTTP
// POST (its progress followed with `tfrs watch`, which renders the operation's Server-Sent Events), a TFRServer by `kubectl apply`, and a
// personal tenant with two robots by `tfrs up -f`. Each step is a method, so the test can
// assert between steps what the demo only prints.
package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/cmd/tfrs/devenv"
	components "github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// Names the examples use.
const (
	ClusterName      = "dev"
	Namespace        = "tfrs-system"
	EnterpriseTenant = "acme"
	EnterpriseServer = "helper-bot"
	PersonalTenant   = "chat"
)

// Story runs the demo against a dev environment.
type Story struct {
	Env *devenv.Env
	// Root is the repository root (examples/ and stacks/testdata/).
	Root string
	// TFRS is the tfrs binary run for the CLI door.
	TFRS string
	// Out receives the narration and every command's output.
	Out io.Writer
	// Wait bounds each wait for Ready (default 10 minutes).
	Wait time.Duration
}

func (s *Story) wait() time.Duration {
	if s.Wait <= 0 {
		return 10 * time.Minute
	}
	return s.Wait
}

// Run tells the whole story.
func (s *Story) Run(ctx context.Context) error {
	steps := []struct {
		title string
		fn    func(context.Context) error
	}{
		{"1/7  TFRCluster by kubectl apply (offline stand-in sources)", s.ApplyCluster},
		{"2/7  enterprise TFRTenant by HTTP POST, its progress followed by tfrs watch", s.PostTenant},
		{"3/7  TFRServer by kubectl apply", s.ApplyServer},
		{"4/7  personal TFRTenant with two robots by tfrs up -f", s.UpPersonal},
		{"5/7  everything is Ready", s.Show},
		{"6/7  the generated Confz of " + EnterpriseServer + " (secrets masked)", s.ShowConfz},
		{"7/7  tfrs preview after an edit", s.PreviewEdit},
	}
	for _, st := range steps {
		s.say("\n==> %s\n", st.title)
		if err := st.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", st.title, err)
		}
	}
	s.Where()
	return nil
}

func (s *Story) say(format string, args ...any) { fmt.Fprintf(s.Out, format, args...) }

// ApplyCluster creates the namespace of the demo's CRs and the registry password Secret the
// example refers to, then applies the stand-in TFRCluster and waits for Ready.
func (s *Story) ApplyCluster(ctx context.Context) error {
	pass := make([]byte, 12)
	if _, err := rand.Read(pass); err != nil {
		return err
	}
	// The namespace the tenant and server CRs live in (tenants deploy into their own).
	ns := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, Namespace)
	if err := s.kubectlIn(ctx, ns, "apply", "-f", "-"); err != nil {
		return err
	}
	secret := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tfrobot-registry","namespace":"default"},"stringData":{"password":%q}}`, hex.EncodeToString(pass))
	if err := s.kubectlIn(ctx, secret, "apply", "-f", "-"); err != nil {
		return err
	}
	f, err := s.Example("cluster.yaml")
	if err != nil {
		return err
	}
	if err := s.kubectl(ctx, "apply", "-f", f); err != nil {
		return err
	}
	return s.kubectl(ctx, "wait", "--for=condition=Ready", "tfrcluster/"+ClusterName, "--timeout="+s.wait().String())
}

// Example writes examples/dev/<name> with ${TFRS_STANDINS} replaced by the absolute path of
// stacks/testdata (the offline stand-ins) into the environment's directory and returns its
// path: the files the demo hands to kubectl, curl and tfrs.
func (s *Story) Example(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(s.Root, "examples", "dev", name))
	if err != nil {
		return "", err
	}
	doc := strings.ReplaceAll(string(b), "${TFRS_STANDINS}", filepath.Join(s.Root, "stacks", "testdata"))
	dir := filepath.Join(s.Env.Dir, "examples")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	return out, os.WriteFile(out, []byte(doc), 0o600)
}

// PostTenant POSTs examples/dev/tenant-enterprise.yaml (as JSON) to the HTTP API, follows
// the operation to its end with `tfrs watch` and checks the operation succeeded.
func (s *Story) PostTenant(ctx context.Context) error {
	f, err := s.Example("tenant-enterprise.yaml")
	if err != nil {
		return err
	}
	y, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	body, err := yaml.YAMLToJSON(y)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("%s/v1/namespaces/%s/tenants", s.Env.APIURL, Namespace)
	s.say("$ curl -X POST -H 'Authorization: Bearer …' -H 'Content-Type: application/json' --data @tenant-enterprise.json %s\n", url)
	resp, err := s.api(ctx, http.MethodPost, url, body)
	if err != nil {
		return err
	}
	loc := resp.Header.Get("Location")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.say("%s  Location: %s\n%s\n", resp.Status, loc, bytes.TrimSpace(b))
	if resp.StatusCode != http.StatusAccepted || loc == "" {
		return fmt.Errorf("POST tenant: %s", resp.Status)
	}
	if err := s.watch(ctx, loc); err != nil {
		return err
	}
	return s.operationSucceeded(ctx, s.Env.APIURL+loc)
}

// watch runs `tfrs watch` on an operation: the CLI renders its Server-Sent Events as a
// progress bar with a line per component on a terminal, as plain lines elsewhere (a log, the
// end-to-end test's buffer), and exits non-zero when the operation failed.
func (s *Story) watch(ctx context.Context, loc string) error {
	s.say("$ tfrs watch %s\n", loc)
	cmd := exec.CommandContext(ctx, s.TFRS, "watch", loc, "--api-url", s.Env.APIURL)
	cmd.Env = append(os.Environ(), "TFRS_API_TOKEN="+s.Env.Token)
	cmd.Stdout, cmd.Stderr = s.Out, s.Out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("tfrs watch %s: %w", loc, err)
	}
	return nil
}

func (s *Story) operationSucceeded(ctx context.Context, url string) error {
	resp, err := s.api(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var op struct {
		State string          `json:"state"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&op); err != nil {
		return err
	}
	if op.State != "succeeded" {
		return fmt.Errorf("operation %s: %s %s", url, op.State, op.Error)
	}
	return nil
}

// ApplyServer applies examples/server.yaml (its tenant was made over HTTP: the operator reads
// the parent's readiness from its stack) and waits for Ready.
func (s *Story) ApplyServer(ctx context.Context) error {
	if err := s.kubectl(ctx, "apply", "-f", filepath.Join(s.Root, "examples", "server.yaml")); err != nil {
		return err
	}
	return s.kubectl(ctx, "wait", "--for=condition=Ready", "-n", Namespace, "tfrserver/"+EnterpriseServer, "--timeout="+s.wait().String())
}

// UpPersonal runs `tfrs up -f examples/dev/personal.yaml` against the same state.
func (s *Story) UpPersonal(ctx context.Context) error {
	f, err := s.Example("personal.yaml")
	if err != nil {
		return err
	}
	return s.tfrs(ctx, "up", "-f", f)
}

// Show prints the CRs with their printer columns, the HTTP tenant, and the tenant's graph.
func (s *Story) Show(ctx context.Context) error {
	if err := s.kubectl(ctx, "get", "tfrclusters,tfrtenants,tfrservers", "-A"); err != nil {
		return err
	}
	url := fmt.Sprintf("%s/v1/namespaces/%s/tenants/%s", s.Env.APIURL, Namespace, EnterpriseTenant)
	s.say("$ curl -H 'Authorization: Bearer …' %s\n", url)
	resp, err := s.api(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.say("%s\n%s\n", resp.Status, short(string(b), 1200))
	return s.tfrs(ctx, "graph", "-f", filepath.Join(s.Root, "examples", "tenant-enterprise.yaml"), "-o", "mermaid")
}

// secretKey matches TOML keys whose values are credentials.
var secretKey = regexp.MustCompile(`(?i)^\s*[a-z_]*(password|secret|key|token|url)[a-z_]*\s*=`)

// ShowConfz prints the enterprise server's generated Confz with every credential masked.
func (s *Story) ShowConfz(ctx context.Context) error {
	toml, err := s.Confz(ctx, Namespace, EnterpriseServer)
	if err != nil {
		return err
	}
	s.say("%s\n", MaskTOML(toml))
	return nil
}

// Confz reads a robot's Confz TOML: the TFRServer's status names the Secret and the
// namespace (non-secret stack outputs), the Secret holds the TOML under server.ConfzKey.
func (s *Story) Confz(ctx context.Context, namespace, server string) (string, error) {
	out, err := s.output(ctx, "get", "tfrserver", server, "-n", namespace, "-o", "jsonpath={.status.outputs}")
	if err != nil {
		return "", err
	}
	var outputs map[string]string
	if err := json.Unmarshal([]byte(out), &outputs); err != nil {
		return "", fmt.Errorf("status.outputs of TFRServer %s/%s: %w", namespace, server, err)
	}
	ns, name := outputs[stacks.ServerOutputNamespace], outputs[stacks.ServerOutputConfzSecret]
	if ns == "" || name == "" {
		return "", fmt.Errorf("TFRServer %s/%s has no confz secret in its status outputs", namespace, server)
	}
	data, err := s.output(ctx, "get", "secret", name, "-n", ns, "-o", "jsonpath={.data."+strings.ReplaceAll(components.ConfzKey, ".", `\.`)+"}")
	if err != nil {
		return "", err
	}
	toml, err := base64.StdEncoding.DecodeString(strings.TrimSpace(data))
	if err != nil {
		return "", fmt.Errorf("confz secret %s/%s: %w", ns, name, err)
	}
	return string(toml), nil
}

// MaskTOML hides the values of credential keys.
func MaskTOML(toml string) string {
	lines := strings.Split(toml, "\n")
	for i, l := range lines {
		if secretKey.MatchString(l) {
			lines[i] = l[:strings.Index(l, "=")+1] + ` "****"`
		}
	}
	return strings.Join(lines, "\n")
}

// PreviewEdit changes one robot's configData in a copy of the personal file and previews it.
func (s *Story) PreviewEdit(ctx context.Context) error {
	orig, err := s.Example("personal.yaml")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(orig)
	if err != nil {
		return err
	}
	edited := strings.Replace(string(b), "TFS_PROFILE: personal", "TFS_PROFILE: personal-edited", 1)
	f := filepath.Join(s.Env.Dir, "personal-edited.yaml")
	if err := os.WriteFile(f, []byte(edited), 0o600); err != nil {
		return err
	}
	s.say("(robot-alice's TFS_PROFILE changed in %s)\n", f)
	return s.tfrs(ctx, "preview", "-f", f)
}

// Where says how to open each piece.
func (s *Story) Where() {
	s.say(`
==> try it yourself
  source %s          # KUBECONFIG, TFRS_STATE_DIR, TFRS_PASSPHRASE_FILE, TFRS_API_URL, TFRS_API_TOKEN
  kubectl get tfrc,tfrt,tfrsv -A
  curl -H "Authorization: Bearer $TFRS_API_TOKEN" $TFRS_API_URL/v1/namespaces/%s/tenants
  %s preview -f %s -o markdown
  kubectl get pods -n %s          # the enterprise tenant's middleware and robot
  kubectl get pods -n personal-chat  # the personal job type's shared middleware and robots
`, s.Env.EnvFile, Namespace, s.TFRS, filepath.Join(s.Env.Dir, "examples", "personal.yaml"), EnterpriseTenant)
}

func (s *Story) api(ctx context.Context, method, url string, body []byte) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.Env.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return http.DefaultClient.Do(req)
}

func (s *Story) kubectl(ctx context.Context, args ...string) error {
	return s.kubectlIn(ctx, "", args...)
}

// KubectlIn runs kubectl against the environment with stdin, printing the command and its
// output like every step of the story.
func (s *Story) KubectlIn(ctx context.Context, stdin string, args ...string) error {
	return s.kubectlIn(ctx, stdin, args...)
}

func (s *Story) kubectlIn(ctx context.Context, stdin string, args ...string) error {
	s.say("$ kubectl %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", s.Env.KubeconfigPath}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	cmd.Stdout, cmd.Stderr = s.Out, s.Out
	return cmd.Run()
}

func (s *Story) output(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", s.Env.KubeconfigPath}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// tfrs runs the CLI door against the environment's state and cluster.
func (s *Story) tfrs(ctx context.Context, args ...string) error {
	s.say("$ tfrs %s\n", strings.Join(args, " "))
	full := append(args, "--kubeconfig", s.Env.KubeconfigPath, "--state-dir", s.Env.StateDir, "--passphrase-file", s.Env.PassphraseFile)
	if args[0] == "graph" {
		full = args
	}
	cmd := exec.CommandContext(ctx, s.TFRS, full...)
	cmd.Stdout, cmd.Stderr = s.Out, s.Out
	return cmd.Run()
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
