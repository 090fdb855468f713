package main

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

const fakePassphrase = "pr-preview-passphrase-3f9c1d"

// hostileCheckout lays out a pull request's checkout: a tenant whose Grafana chart is local
// and holds files/env, a symlink to a file beside the checkout with the passphrase (the
// trial's attack), read by the chart's template with .Files.Get. It returns the checkout, the
// CR file and the secret file.
func hostileCheckout(t *testing.T) (root, crs, secret string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root = filepath.Join(base, "checkout")
	secret = filepath.Join(base, "runner", "passphrase")
	require.NoError(t, os.MkdirAll(filepath.Dir(secret), 0o700))
	require.NoError(t, os.WriteFile(secret, []byte(fakePassphrase+"\n"), 0o600))
	testdata, err := filepath.Abs(filepath.Join("..", "..", "stacks", "testdata", "tenant", "charts"))
	require.NoError(t, err)
	chart := filepath.Join(root, "charts", "grafana")
	require.NoError(t, os.CopyFS(chart, os.DirFS(filepath.Join(testdata, "grafana"))))
	require.NoError(t, os.WriteFile(filepath.Join(chart, "templates", "leak.yaml"), []byte(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Files.Get \"files/env\" | trim | quote }}\n"+
			"data:\n  env: {{ .Files.Get \"files/env\" | b64enc | quote }}\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(chart, "files"), 0o755))
	require.NoError(t, os.Symlink(secret, filepath.Join(chart, "files", "env")))
	require.NoError(t, os.CopyFS(filepath.Join(root, "charts", "jaeger"), os.DirFS(filepath.Join(testdata, "jaeger"))))
	crs = filepath.Join(root, "deploy", "tenant.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(crs), 0o755))
	require.NoError(t, os.WriteFile(crs, []byte(`apiVersion: tfrs.io/v1alpha1
kind: TFRTenant
metadata: {name: acme, namespace: tfrs-system}
spec:
  clusterRef: e2e
  type: enterprise
  namespace: acme
  jaeger: {localPath: charts/jaeger}
  grafana: {localPath: charts/grafana}
`), 0o644))
	return root, crs, secret
}

// requireNoSecret: the passphrase, in any of the forms a template could write it, is nowhere.
func requireNoSecret(t *testing.T, outs ...string) {
	t.Helper()
	for _, out := range outs {
		for _, form := range []string{fakePassphrase, base64.StdEncoding.EncodeToString([]byte(fakePassphrase + "\n")), base64.StdEncoding.EncodeToString([]byte(fakePassphrase))} {
			require.NotContains(t, out, form)
		}
	}
}

// TestUntrustedPreviewRefusesLinkedChart runs the real CLI preview in untrusted mode on the
// hostile checkout: it refuses before any engine starts, naming the link, and the passphrase
// is nowhere in stdout (the report) or stderr. No tools are needed: the refusal comes first.
func TestUntrustedPreviewRefusesLinkedChart(t *testing.T) {
	root, crs, secret := hostileCheckout(t)
	t.Setenv("TFRS_PASSPHRASE_FILE", secret)
	t.Chdir(root)
	state := t.TempDir()
	for _, format := range []string{"markdown", "json", "text"} {
		var code int
		var out string
		errOut := capture(t, &os.Stderr, func() {
			code, out = runCaptured(t, "preview", "--untrusted", "-f", "deploy/tenant.yaml", "-o", format, "--state-dir", state)
		})
		require.Equal(t, exitFailure, code, "stdout: %s\nstderr: %s", out, errOut)
		require.Contains(t, errOut, "spec.grafana.localPath")
		require.Contains(t, errOut, filepath.Join("charts", "grafana", "files", "env")+": is a symlink")
		requireNoSecret(t, out, errOut)
	}
	_ = crs

	// The same file outside the input root is refused too, and so is an absolute localPath.
	code, out := runCaptured(t, "preview", "--untrusted", "--input-root", filepath.Join(root, "deploy"), "-f", crs, "--state-dir", state)
	require.Equal(t, exitFailure, code, out)
}

// TestUntrustedInputsRefused: -f and -k under the untrusted rules, through the CLI.
func TestUntrustedInputsRefused(t *testing.T) {
	root, _, secret := hostileCheckout(t)
	t.Chdir(root)
	state := t.TempDir()
	require.NoError(t, os.Symlink(secret, filepath.Join(root, "deploy", "linked.yaml")))
	write := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(s), 0o644))
	}
	write("k/remote/kustomization.yaml", "resources: [https://evil.example/x.yaml]\n")
	write("k/env/kustomization.yaml", "configMapGenerator: [{name: x, envs: [../../../runner/passphrase]}]\n")
	write("k/helm/kustomization.yaml", "helmCharts: [{name: x, repo: 'https://evil.example'}]\n")
	cases := map[string]struct {
		args []string
		want string
	}{
		"-f link":          {[]string{"-f", "deploy/linked.yaml"}, "deploy/linked.yaml: is a symlink"},
		"-f dir with link": {[]string{"-f", "deploy"}, "linked.yaml: is a symlink"},
		"-f outside":       {[]string{"-f", secret}, "outside the input root"},
		"-k remote":        {[]string{"-k", "k/remote"}, "is remote"},
		"-k env outside":   {[]string{"-k", "k/env"}, "outside the input root"},
		"-k helmCharts":    {[]string{"-k", "k/helm"}, "helmCharts"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var code int
			errOut := capture(t, &os.Stderr, func() {
				code, _ = runCaptured(t, append([]string{"preview", "--untrusted", "--state-dir", state}, c.args...)...)
			})
			require.Equal(t, exitFailure, code, errOut)
			require.Contains(t, errOut, c.want)
			requireNoSecret(t, errOut)
		})
	}
	// The trusted default still refuses a remote kustomize base outside the source policy.
	var code int
	errOut := capture(t, &os.Stderr, func() {
		code, _ = runCaptured(t, "preview", "--state-dir", state, "-k", "k/remote")
	})
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "evil.example")
	require.Contains(t, errOut, "not an allowed source host")
}

// TestSetFieldReachesEverySource: every source field of every kind can be rewritten by its
// path (confineSources relies on it), generated from Sources() rather than listed.
func TestSetFieldReachesEverySource(t *testing.T) {
	cluster := &v1alpha1.TFRCluster{}
	for _, cs := range []*v1alpha1.ComponentSource{&cluster.Spec.CertManager, &cluster.Spec.Istio, &cluster.Spec.IstioIngress,
		&cluster.Spec.CNPGOperator, &cluster.Spec.MinIOOperator, &cluster.Spec.RabbitMQOperator} {
		cs.LocalPath, cs.ManifestURL, cs.ChartRepo = "/a", "file:///b", "https://c"
	}
	tenant := &v1alpha1.TFRTenant{}
	tenant.Spec.Jaeger.LocalPath, tenant.Spec.Grafana.LocalPath = "/a", "/a"
	n := 0
	for _, obj := range []v1alpha1.Object{cluster, tenant} {
		for _, s := range obj.Sources() {
			if s.Kind == v1alpha1.SourceSecretRef {
				continue
			}
			require.NoError(t, kinds.SetSourceField(obj, s.Path, "/new/"+s.Path.String()))
			n++
		}
		for _, s := range obj.Sources() {
			if s.Kind != v1alpha1.SourceSecretRef {
				require.Equal(t, "/new/"+s.Path.String(), s.Value)
			}
		}
	}
	require.GreaterOrEqual(t, n, 5)
}

// TestProviderEnvIsAnAllowlist: the provider keeps the process basics and drops every
// secret, whatever its name.
func TestProviderEnvIsAnAllowlist(t *testing.T) {
	env := providerEnv([]string{
		"PATH=/bin", "HOME=/root", "LC_ALL=C", "PULUMI_K8S_CLIENT_TIMEOUT=5", "HELM_KUBEAPISERVER=http://127.0.0.1:1",
		"PULUMI_CONFIG_PASSPHRASE=x", "TFRS_PASSPHRASE=x", "AWS_SECRET_ACCESS_KEY=x", "AWS_ACCESS_KEY_ID=x",
		"PULUMI_BACKEND_URL=postgres://u:p@h", "PULUMI_ACCESS_TOKEN=x", "GITHUB_TOKEN=x", "HTTPS_PROXY=http://u:p@proxy",
		"HELM_KUBECAFILE=/x", "SOMETHING_NEW=x", "PULUMI_CONFIG_PASSPHRASE_FILE=/p",
	})
	require.Equal(t, []string{"PATH=/bin", "HOME=/root", "LC_ALL=C", "PULUMI_K8S_CLIENT_TIMEOUT=5", "HELM_KUBEAPISERVER=http://127.0.0.1:1"}, env)
}

// TestProviderShimExecsWithoutSecrets starts this test binary under the provider's name, as
// the Pulumi CLI starts the shim, with a passphrase in its environment and /usr/bin/env as
// the "real provider": what env prints is what the provider would see.
func TestProviderShimExecsWithoutSecrets(t *testing.T) {
	envBin, err := exec.LookPath("env")
	require.NoError(t, err)
	self, err := os.Executable()
	require.NoError(t, err)
	shim := filepath.Join(t.TempDir(), providerName)
	require.NoError(t, os.Symlink(self, shim))
	cmd := exec.Command(shim)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PULUMI_CONFIG_PASSPHRASE=" + fakePassphrase, "AWS_SECRET_ACCESS_KEY=" + fakePassphrase,
		shimExecEnv + "=" + envBin, "HELM_KUBEAPISERVER=http://127.0.0.1:9"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "HELM_KUBEAPISERVER=http://127.0.0.1:9")
	require.Contains(t, string(out), "PATH=/usr/bin:/bin")
	requireNoSecret(t, string(out))
	require.NotContains(t, string(out), shimExecEnv)
}

// TestScrubberReport: the report keeps its fields and loses every known secret, in every
// encoding a template offers.
func TestScrubberReport(t *testing.T) {
	t.Setenv("TFRS_PASSPHRASE", fakePassphrase)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-value-1234")
	s := knownSecrets("", "", "")
	forms := []string{fakePassphrase, strings.ToUpper(fakePassphrase), base64.StdEncoding.EncodeToString([]byte(fakePassphrase)), "aws-secret-value-1234"}
	for _, f := range forms {
		r := &diff.Report{
			Operation: engine.OpPreview, Error: "template: x: " + f,
			Changes: []diff.Change{{URN: "urn:pulumi:s::p::t::" + f, Name: f, Paths: []string{"data." + f}, Op: engine.StepCreate}},
		}
		got := s.report(r)
		require.NotContains(t, got.Error, f)
		require.NotContains(t, got.Changes[0].URN, f)
		require.NotContains(t, got.Changes[0].Name, f)
		require.NotContains(t, got.Changes[0].Paths[0], f)
		require.Equal(t, engine.StepCreate, got.Changes[0].Op)
	}
	require.Equal(t, "plain text", s.scrub("plain text"))
}
