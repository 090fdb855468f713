package confine

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

const fakePassphrase = "fake-passphrase-6b1f0c2e"

// world is a temp root (the checkout) and, beside it, a directory the inputs must never
// reach, holding a file with a fake passphrase.
type world struct {
	root, outside, secret string
}

func newWorld(t *testing.T) world {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	w := world{root: filepath.Join(base, "checkout"), outside: filepath.Join(base, "outside")}
	require.NoError(t, os.MkdirAll(w.root, 0o755))
	require.NoError(t, os.MkdirAll(w.outside, 0o755))
	w.secret = filepath.Join(w.outside, "passphrase")
	write(t, w.secret, "TFRS_PASSPHRASE="+fakePassphrase+"\n")
	return w
}

func write(t *testing.T, p, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

func link(t *testing.T, target, p string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.Symlink(target, p))
}

// chart writes a benign chart at dir.
func chart(t *testing.T, dir string) {
	t.Helper()
	write(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: demo\nversion: 0.1.0\n")
	write(t, filepath.Join(dir, "values.yaml"), "replicas: 1\n")
	write(t, filepath.Join(dir, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: demo}\ndata:\n  f: {{ .Files.Get \"files/x\" | quote }}\n")
	write(t, filepath.Join(dir, "files", "x"), "x")
}

func untrusted(t *testing.T, w world) *Confiner {
	t.Helper()
	c, err := New(Untrusted, w.root, filepath.Join(t.TempDir(), "copies"))
	require.NoError(t, err)
	return c
}

func requireRefused(t *testing.T, err error, names ...string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrRefused), "a refusal, not another failure: %v", err)
	for _, n := range names {
		require.Contains(t, err.Error(), n, "the refusal names the path")
	}
	require.NotContains(t, err.Error(), fakePassphrase)
}

// linkTargets are where a planted symlink points, generated over the kinds of escape.
func linkTargets(w world, chartDir string) map[string]string {
	return map[string]string{
		"file outside":          w.secret,
		"dir outside":           w.outside,
		"relative file outside": mustRel(chartDir, w.secret),
		"proc environ":          "/proc/self/environ",
		"root":                  "/",
		"file inside":           filepath.Join(chartDir, "values.yaml"),
		"dangling":              filepath.Join(w.outside, "nothing"),
	}
}

func mustRel(from, to string) string {
	r, err := filepath.Rel(from, to)
	if err != nil {
		panic(err)
	}
	return r
}

// linkPlaces are where in a chart the symlink is planted.
var linkPlaces = []string{"files/secret", "templates/secret.yaml", "deep/er/secret", "charts/sub", "Chart.lock.d/x"}

// TestChartSymlinksRefused plants a symlink at every place × every target and asserts the
// untrusted copy refuses the chart naming the link, and that nothing was copied.
func TestChartSymlinksRefused(t *testing.T) {
	cases, refused := 0, 0
	for _, place := range linkPlaces {
		for name, target := range linkTargets(world{}, "") {
			_ = target
			t.Run(place+"/"+name, func(t *testing.T) {
				w := newWorld(t)
				dir := filepath.Join(w.root, "charts", "demo")
				chart(t, dir)
				link(t, linkTargets(w, filepath.Dir(filepath.Join(dir, place)))[name], filepath.Join(dir, place))
				c := untrusted(t, w)
				cases++
				out, err := c.CheckedCopy(dir)
				requireRefused(t, err, filepath.Join("charts", "demo", place))
				require.Empty(t, out)
				entries, _ := os.ReadDir(c.Dir)
				for _, e := range entries {
					require.True(t, strings.HasPrefix(e.Name(), ".copy-"), "nothing was copied: %s", e.Name())
				}
				refused++
			})
		}
	}
	t.Logf("chart symlinks: %d generated cases, %d refused", cases, refused)
}

// TestChainAndPathEscapesRefused: a chain of links, a link among the path's own components,
// "..", absolute paths outside the root and special files.
func TestChainAndPathEscapesRefused(t *testing.T) {
	type tc struct {
		name  string
		build func(t *testing.T, w world) (path, names string)
	}
	cases := []tc{
		{"chain inside to outside", func(t *testing.T, w world) (string, string) {
			dir := filepath.Join(w.root, "c")
			chart(t, dir)
			link(t, w.secret, filepath.Join(dir, "files", "b"))
			link(t, "b", filepath.Join(dir, "files", "a"))
			return dir, filepath.Join("c", "files", "a")
		}},
		{"chart dir is a link", func(t *testing.T, w world) (string, string) {
			chart(t, filepath.Join(w.outside, "real"))
			link(t, filepath.Join(w.outside, "real"), filepath.Join(w.root, "c"))
			return filepath.Join(w.root, "c"), "c"
		}},
		{"parent component is a link", func(t *testing.T, w world) (string, string) {
			chart(t, filepath.Join(w.outside, "real", "c"))
			link(t, filepath.Join(w.outside, "real"), filepath.Join(w.root, "deploy"))
			return filepath.Join(w.root, "deploy", "c"), "deploy"
		}},
		{"dot-dot out of the root", func(t *testing.T, w world) (string, string) {
			chart(t, filepath.Join(w.outside, "c"))
			return filepath.Join(w.root, "..", "outside", "c"), "outside the input root"
		}},
		{"absolute path outside", func(t *testing.T, w world) (string, string) {
			chart(t, filepath.Join(w.outside, "c"))
			return filepath.Join(w.outside, "c"), filepath.Join(w.outside, "c")
		}},
		{"fifo in the chart", func(t *testing.T, w world) (string, string) {
			dir := filepath.Join(w.root, "c")
			chart(t, dir)
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "files", "pipe"), 0o644))
			return dir, filepath.Join("c", "files", "pipe")
		}},
		{"lock file at the top", func(t *testing.T, w world) (string, string) {
			dir := filepath.Join(w.root, "c")
			chart(t, dir)
			write(t, filepath.Join(dir, "Chart.lock"), "dependencies: [{name: x, repository: 'https://evil.example', version: 1.0.0}]\n")
			return dir, "Chart.lock"
		}},
		{"requirements.lock of a multi-chart dir", func(t *testing.T, w world) (string, string) {
			dir := filepath.Join(w.root, "istio")
			chart(t, filepath.Join(dir, "istiod"))
			write(t, filepath.Join(dir, "istiod", "requirements.lock"), "dependencies: []\n")
			return dir, "istiod/requirements.lock"
		}},
		{"remote schema ref", func(t *testing.T, w world) (string, string) {
			dir := filepath.Join(w.root, "c")
			chart(t, dir)
			write(t, filepath.Join(dir, "values.schema.json"), `{"properties":{"a":{"$ref":"https://evil.example/s.json"}}}`)
			return dir, "values.schema.json"
		}},
		{"file schema ref", func(t *testing.T, w world) (string, string) {
			dir := filepath.Join(w.root, "c")
			chart(t, dir)
			write(t, filepath.Join(dir, "values.schema.json"), `{"allOf":[{"$ref":"file:///proc/self/environ"}]}`)
			return dir, "values.schema.json"
		}},
		{"archive with a lock file", func(t *testing.T, w world) (string, string) {
			p := filepath.Join(w.root, "demo-0.1.0.tgz")
			writeArchive(t, p, map[string]string{"demo/Chart.yaml": "name: demo", "demo/Chart.lock": "x"}, nil)
			return p, "demo/Chart.lock"
		}},
		{"archive with a link entry", func(t *testing.T, w world) (string, string) {
			p := filepath.Join(w.root, "demo-0.1.0.tgz")
			writeArchive(t, p, map[string]string{"demo/Chart.yaml": "name: demo"}, map[string]string{"demo/files/env": "/proc/self/environ"})
			return p, "demo/files/env"
		}},
		{"archive climbing out", func(t *testing.T, w world) (string, string) {
			p := filepath.Join(w.root, "demo-0.1.0.tgz")
			writeArchive(t, p, map[string]string{"demo/Chart.yaml": "name: demo", "../../x": "x"}, nil)
			return p, "../../x"
		}},
		{"subchart archive with a remote schema", func(t *testing.T, w world) (string, string) {
			dir := filepath.Join(w.root, "c")
			chart(t, dir)
			writeArchive(t, filepath.Join(dir, "charts", "sub-1.tgz"), map[string]string{"sub/Chart.yaml": "name: sub", "sub/values.schema.json": `{"$ref":"http://169.254.169.254/"}`}, nil)
			return dir, "sub/values.schema.json"
		}},
	}
	refused := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			p, names := c.build(t, w)
			_, err := untrusted(t, w).CheckedCopy(p)
			requireRefused(t, err, names)
			refused++
		})
	}
	t.Logf("path escapes: %d cases, %d refused", len(cases), refused)
}

func writeArchive(t *testing.T, p string, files, links map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, data := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(data))
		require.NoError(t, err)
	}
	for name, target := range links {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Linkname: target, Typeflag: tar.TypeSymlink}))
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	write(t, p, buf.String())
}

// TestBenignChartCopied: a chart with vendored subcharts (their lock files are inert) is
// copied to a content-addressed path; the same content gives the same path, another content
// another one.
func TestBenignChartCopied(t *testing.T) {
	w := newWorld(t)
	dir := filepath.Join(w.root, "charts", "demo")
	chart(t, dir)
	chart(t, filepath.Join(dir, "charts", "sub"))
	write(t, filepath.Join(dir, "charts", "sub", "Chart.lock"), "dependencies: []\n")
	write(t, filepath.Join(dir, "values.schema.json"), `{"definitions":{"a":{}},"properties":{"x":{"$ref":"#/definitions/a"}}}`)
	writeArchive(t, filepath.Join(dir, "charts", "other-1.tgz"), map[string]string{"other/Chart.yaml": "name: other", "other/Chart.lock": "x"}, nil)
	c := untrusted(t, w)
	out, err := c.CheckedCopy(dir)
	require.NoError(t, err)
	require.Equal(t, "demo", filepath.Base(out))
	b, err := os.ReadFile(filepath.Join(out, "files", "x"))
	require.NoError(t, err)
	require.Equal(t, "x", string(b))
	again, err := c.CheckedCopy(dir)
	require.NoError(t, err)
	require.Equal(t, out, again, "same content, same path")
	write(t, filepath.Join(dir, "files", "x"), "y")
	changed, err := c.CheckedCopy(dir)
	require.NoError(t, err)
	require.NotEqual(t, out, changed, "another content, another path")

	// A manifest file copies as a file; relative paths are taken from the working directory.
	write(t, filepath.Join(w.root, "m.yaml"), "kind: x\n")
	t.Chdir(w.root)
	m, err := c.CheckedCopy("m.yaml")
	require.NoError(t, err)
	require.Equal(t, "m.yaml", filepath.Base(m))
}

// TestTrustedFollowsLinks: the trusted mode reads through links, as Helm would, into the
// snapshot (a loop is refused).
func TestTrustedFollowsLinks(t *testing.T) {
	w := newWorld(t)
	dir := filepath.Join(w.root, "c")
	chart(t, dir)
	link(t, filepath.Join(w.outside), filepath.Join(dir, "files", "out"))
	c, err := New(Trusted, w.root, filepath.Join(t.TempDir(), "copies"))
	require.NoError(t, err)
	out, err := c.CheckedCopy(dir)
	require.NoError(t, err)
	fi, err := os.Lstat(filepath.Join(out, "files", "out", "passphrase"))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular(), "the copy holds no link")

	link(t, dir, filepath.Join(dir, "files", "loop"))
	_, err = c.CheckedCopy(dir)
	requireRefused(t, err, "loop")
}

// TestReadFileRefusesLinks: -f FILE in untrusted mode.
func TestReadFileRefusesLinks(t *testing.T) {
	w := newWorld(t)
	link(t, w.secret, filepath.Join(w.root, "deploy", "x.yaml"))
	c := untrusted(t, w)
	_, err := c.ReadFile(filepath.Join(w.root, "deploy", "x.yaml"))
	requireRefused(t, err, filepath.Join("deploy", "x.yaml"))
	_, err = c.ReadFile(w.secret)
	requireRefused(t, err, "outside the input root")
	write(t, filepath.Join(w.root, "ok.yaml"), "a: b\n")
	b, err := c.ReadFile(filepath.Join(w.root, "ok.yaml"))
	require.NoError(t, err)
	require.Equal(t, "a: b\n", string(b))
}

func ExampleError() {
	fmt.Println(&Error{Path: "charts/demo/files/env", Rule: "is a symlink"})
	// Output: charts/demo/files/env: is a symlink
}
