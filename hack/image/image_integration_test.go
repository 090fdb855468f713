//go:build integration

package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

// needInputs returns the tools bin dir; without the tools or the CA bundle it skips, except
// under CI=true, where a missing input is a failure.
func needInputs(t *testing.T) string {
	t.Helper()
	dir := tools.Dir()
	var missing []string
	for _, p := range append(toolPaths(dir), caBundle) {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		msg := "the image needs the Pulumi CLI and the provider (`make tools`) and the CA bundle; missing: " + strings.Join(missing, ", ")
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// TestImage builds the image as `make image` does (run), reads it back from both outputs,
// checks its config and files, and runs the image's own `tfrs version` from its unpacked
// filesystem.
func TestImage(t *testing.T) {
	toolsDir := needInputs(t)
	ctx := t.Context()
	out, stdout := sharedImage(t, toolsDir)

	// The OCI layout: one image, annotated with the version tag, never latest.
	p, err := layout.FromPath(filepath.Join(out, layoutDir))
	require.NoError(t, err)
	idx, err := p.ImageIndex()
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	desc := im.Manifests[0]
	assert.Equal(t, "v0.9.0", desc.Annotations["org.opencontainers.image.ref.name"])
	assert.Equal(t, testTag, desc.Annotations["io.containerd.image.name"])
	img, err := idx.Image(desc.Digest)
	require.NoError(t, err)
	assert.Contains(t, stdout, testTag+"@"+desc.Digest.String(), "the digest printed is the layout's")

	// The tarball `docker load` reads: tagged with the version, the same config and layers.
	tag, err := name.NewTag(testTag)
	require.NoError(t, err)
	tb, err := tarball.ImageFromPath(filepath.Join(out, tarballOut), &tag)
	require.NoError(t, err)
	tm, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(filepath.Join(out, tarballOut)) })
	require.NoError(t, err)
	require.Len(t, tm, 1)
	assert.Equal(t, []string{testTag}, tm[0].RepoTags)
	assertSameContent(t, img, tb)

	// The config: nonroot, the entrypoint, the environment the engine needs, the labels.
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Equal(t, []string{"/usr/local/bin/tfrs"}, cf.Config.Entrypoint)
	assert.Equal(t, []string{"operator"}, cf.Config.Cmd)
	for _, e := range []string{"TFRS_TOOLS_BIN=/usr/local/bin", "PULUMI_SKIP_UPDATE_CHECK=true", "HOME=/home/nonroot", "PATH=/usr/local/bin"} {
		assert.Contains(t, cf.Config.Env, e)
	}
	assert.Equal(t, map[string]string{
		"org.opencontainers.image.title":    "tfrs",
		"org.opencontainers.image.version":  "v0.9.0",
		"org.opencontainers.image.revision": testCommit,
		"org.opencontainers.image.source":   sourceRepo,
		"org.opencontainers.image.created":  "2026-01-01T00:00:00Z",
	}, cf.Config.Labels)
	assert.Equal(t, int64(testEpoch), cf.Created.Unix())
	assert.Equal(t, "linux", cf.OS)

	// The files, flattened as a runtime sees them.
	root := t.TempDir()
	hdrs := unpack(t, img, root)
	for _, b := range []string{"tfrs", "pulumi", "pulumi-resource-kubernetes"} {
		h := hdrs["usr/local/bin/"+b]
		require.NotNil(t, h, b)
		assert.Equal(t, byte(tar.TypeReg), h.Typeflag, b)
		assert.Equal(t, int64(0o755), h.Mode, "%s: 0755, so nonroot runs it and cannot write it", b)
		assert.Equal(t, [2]int{0, 0}, [2]int{h.Uid, h.Gid}, "%s is root-owned", b)
	}
	for _, b := range toolNames {
		src, err := os.Stat(filepath.Join(toolsDir, b))
		require.NoError(t, err)
		assert.Equal(t, src.Size(), hdrs["usr/local/bin/"+b].Size, "%s is the tools cache's", b)
	}
	for path, h := range hdrs {
		assert.Equal(t, int64(testEpoch), h.ModTime.Unix(), "%s mtime", path)
		if path == "tmp" || path == "home/nonroot" {
			continue
		}
		assert.Zero(t, h.Mode&0o022, "%s is writable by others than root", path)
		assert.Equal(t, 0, h.Uid, "%s owner", path)
	}
	assert.Equal(t, int64(0o1777), hdrs["tmp"].Mode, "/tmp is sticky and world-writable")
	assert.Equal(t, [3]int64{0o700, nonrootUID, nonrootUID},
		[3]int64{hdrs["home/nonroot"].Mode, int64(hdrs["home/nonroot"].Uid), int64(hdrs["home/nonroot"].Gid)})
	pem, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
	require.NoError(t, err)
	assert.True(t, x509.NewCertPool().AppendCertsFromPEM(pem), "the CA bundle holds certificates")
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	require.NoError(t, err)
	assert.Contains(t, string(passwd), "nonroot:x:65532:65532:nonroot:/home/nonroot:")

	// tfrs version from the image's own files: the engine finds the tools through
	// TFRS_TOOLS_BIN, here the unpacked /usr/local/bin.
	bin := filepath.Join(root, "usr/local/bin")
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "tfrs"), "version", "-o", "json")
	cmd.Env = []string{"TFRS_TOOLS_BIN=" + bin, "PATH=" + bin, "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(), "PULUMI_SKIP_UPDATE_CHECK=true"}
	assertVersions(t, cmd, bin)

	// And as the container runs it, when the test may chroot: the image's environment only,
	// uid/gid 65532, / being the unpacked image plus the device nodes every OCI runtime
	// provides (no /proc, nothing else of the host).
	if os.Geteuid() != 0 {
		t.Log("not root: the chroot run as uid 65532 is left out")
		return
	}
	chown(t, root, hdrs)
	if err := runtimeDevices(root); err != nil {
		t.Logf("no device nodes (%v): the chroot run as uid 65532 is left out", err)
		return
	}
	cmd = exec.CommandContext(ctx, "/usr/local/bin/tfrs", "version", "-o", "json")
	cmd.Path = "/usr/local/bin/tfrs" // resolved inside the chroot, not on the host
	cmd.Dir = "/"
	cmd.Env = cf.Config.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: nonrootUID, Gid: nonrootUID}}
	assertVersions(t, cmd, "/usr/local/bin")

}

// assertVersions runs `tfrs version -o json` and checks the three versions: tfrs's from the
// ldflags, and the Pulumi CLI's and the provider's as their own binaries report them.
func assertVersions(t *testing.T, cmd *exec.Cmd, bin string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "tfrs version: %s%s", out, stderr.String())
	var v versionsJSON
	require.NoError(t, json.Unmarshal(out, &v), string(out))
	want := toolVersions(t)
	assert.Equal(t, "v0.9.0", v.TFRS.Version)
	assert.Equal(t, testCommit, v.TFRS.Commit)
	assert.Equal(t, strings.TrimPrefix(want["PULUMI_VERSION"], "v"), strings.TrimPrefix(v.Pulumi.Version, "v"), string(out))
	assert.Equal(t, filepath.Join(bin, "pulumi"), v.Pulumi.Path)
	assert.Equal(t, want["PULUMI_K8S_PROVIDER_VERSION"], v.Kubernetes.Version, string(out))
	assert.Equal(t, filepath.Join(bin, "pulumi-resource-kubernetes"), v.Kubernetes.Path)
}

// versionsJSON is what `tfrs version -o json` prints (cmd/tfrs/version.go).
type versionsJSON struct {
	TFRS struct {
		Version, Commit string
	} `json:"tfrs"`
	Pulumi     struct{ Version, Path string } `json:"pulumi"`
	Kubernetes struct{ Version, Path string } `json:"kubernetesProvider"`
}

// toolVersions reads hack/tools/versions.env, the versions the tools cache was built at.
func toolVersions(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("../tools/versions.env")
	require.NoError(t, err)
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	require.NoError(t, sc.Err())
	return m
}

// assertSameContent compares what a runtime uses: the config and the layers' contents.
func assertSameContent(t *testing.T, a, b v1.Image) {
	t.Helper()
	ca, err := a.ConfigName()
	require.NoError(t, err)
	cb, err := b.ConfigName()
	require.NoError(t, err)
	assert.Equal(t, ca, cb, "config digest")
	la, err := a.Layers()
	require.NoError(t, err)
	lb, err := b.Layers()
	require.NoError(t, err)
	require.Equal(t, len(la), len(lb))
	for i := range la {
		da, err := la[i].Digest()
		require.NoError(t, err)
		db, err := lb[i].Digest()
		require.NoError(t, err)
		assert.Equal(t, da, db, "layer %d", i)
	}
}

// unpack writes the flattened filesystem (mutate.Extract) under root and returns the headers
// by path.
func unpack(t *testing.T, img v1.Image, root string) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	hdrs := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		hdrs[h.Name] = h
		dst := filepath.Join(root, filepath.FromSlash(h.Name))
		require.True(t, strings.HasPrefix(dst, root+string(filepath.Separator)), h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(dst, 0o755))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			require.NoError(t, err)
			_, err = io.Copy(f, tr)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		default:
			t.Fatalf("%s: unexpected type %c", h.Name, h.Typeflag)
		}
	}
	// Modes last, so a directory's own mode does not stop its files being written.
	for path, h := range hdrs {
		require.NoError(t, os.Chmod(filepath.Join(root, path), h.FileInfo().Mode()&(fs.ModePerm|fs.ModeSticky)))
	}
	require.NoError(t, os.Chmod(root, 0o755))
	return hdrs
}

// runtimeDevices creates the device nodes the OCI runtime spec makes every container have
// that tfrs and the tools use (os/exec opens /dev/null for a child's stdin); the numbers
// are the fixed Linux ones (old encoding, major<<8|minor, exact below 256).
func runtimeDevices(root string) error {
	dev := filepath.Join(root, "dev")
	if err := os.Mkdir(dev, 0o755); err != nil {
		return err
	}
	for _, d := range []struct {
		name         string
		major, minor uint32
	}{{"null", 1, 3}, {"zero", 1, 5}, {"random", 1, 8}, {"urandom", 1, 9}} {
		p := filepath.Join(dev, d.name)
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(d.major<<8|d.minor)); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o666); err != nil {
			return err
		}
	}
	return nil
}

// chown gives the unpacked files the image's owners (needs root).
func chown(t *testing.T, root string, hdrs map[string]*tar.Header) {
	t.Helper()
	for path, h := range hdrs {
		require.NoError(t, os.Lchown(filepath.Join(root, path), h.Uid, h.Gid))
	}
}

// TestImageReproducible: the same inputs give the same digest, tfrs's own build included.
// tfrs is built once per test run (sharedTFRS): a second build from the same checkout would
// only re-link the packages the first one cached, and could not see what makes two machines'
// or checkouts' builds differ. So the one build is checked for that instead: its bytes name no
// directory of the build machine, and its build settings are the static, -trimpath ones.
func TestImageReproducible(t *testing.T) {
	toolsDir := needInputs(t)
	tfrs := sharedTFRS(t)
	assertNoMachinePaths(t, tfrs)

	first, _ := sharedImage(t, toolsDir)
	o, err := parseFlags([]string{"-tag", testTag, "-commit", testCommit, "-tools", toolsDir,
		"-created", "1767225600", "-out", t.TempDir()}, io.Discard)
	require.NoError(t, err)
	o.tfrsPath = tfrs
	start := time.Now()
	require.NoError(t, run(t.Context(), o, io.Discard))
	t.Logf("assembled and written again in %s", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, layoutDigest(t, first), layoutDigest(t, o.out))
}

// layoutDigest is the digest of the one image in the OCI layout under out.
func layoutDigest(t *testing.T, out string) v1.Hash {
	t.Helper()
	p, err := layout.FromPath(filepath.Join(out, layoutDir))
	require.NoError(t, err)
	idx, err := p.ImageIndex()
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	return im.Manifests[0].Digest
}

// assertNoMachinePaths: the binary holds none of the directories a build depends on where it
// runs (the checkout, GOROOT, the module and build caches), and its build settings are the
// ones buildTFRS asks for. Together with fixed ldflags (the version and commit only), the
// same source then gives the same bytes on any machine.
func assertNoMachinePaths(t *testing.T, bin string) {
	t.Helper()
	info, err := buildinfo.ReadFile(bin)
	require.NoError(t, err)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	assert.Equal(t, "true", settings["-trimpath"], "build settings: %v", settings)
	assert.Equal(t, "0", settings["CGO_ENABLED"], "build settings: %v", settings)

	root, err := moduleRoot(t.Context())
	require.NoError(t, err)
	dirs := []string{root}
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOROOT", "GOMODCACHE", "GOCACHE").Output()
	require.NoError(t, err)
	dirs = append(dirs, strings.Fields(string(out))...)
	b, err := os.ReadFile(bin)
	require.NoError(t, err)
	for _, d := range dirs {
		require.True(t, filepath.IsAbs(d), d)
		assert.False(t, bytes.Contains(b, []byte(d)), "tfrs names the build machine's %s", d)
	}
}

var (
	imageOnce sync.Once
	imageOut  string
	imageLog  string
	imageErr  error
)

// sharedImage assembles the image once per test binary, as `make image` does (run), from the
// shared tfrs; it returns the output directory and what run printed.
func sharedImage(t *testing.T, toolsDir string) (string, string) {
	t.Helper()
	tfrs := sharedTFRS(t)
	imageOnce.Do(func() {
		if imageOut, imageErr = os.MkdirTemp("", "tfrs-image-test-out-"); imageErr != nil {
			return
		}
		var o options
		if o, imageErr = parseFlags([]string{"-tag", testTag, "-commit", testCommit, "-tools", toolsDir,
			"-created", "1767225600", "-out", imageOut}, io.Discard); imageErr != nil {
			return
		}
		o.tfrsPath = tfrs
		start := time.Now()
		var stdout bytes.Buffer
		imageErr = run(context.Background(), o, &stdout)
		imageLog = stdout.String()
		t.Logf("make image path (3 layers, layout + tarball; tfrs prebuilt): %s\n%s", time.Since(start).Round(time.Millisecond), imageLog)
	})
	require.NoError(t, imageErr)
	return imageOut, imageLog
}

var (
	tfrsOnce sync.Once
	tfrsDir  string
	tfrsErr  error
)

// sharedTFRS builds the image's tfrs once per test binary, the way run does (buildTFRS).
func sharedTFRS(t *testing.T) string {
	t.Helper()
	tfrsOnce.Do(func() {
		if tfrsDir, tfrsErr = os.MkdirTemp("", "tfrs-image-test-"); tfrsErr != nil {
			return
		}
		start := time.Now()
		tfrsErr = buildTFRS(context.Background(), filepath.Join(tfrsDir, "tfrs"), "v0.9.0", testCommit)
		t.Logf("tfrs built (static, -trimpath) in %s", time.Since(start).Round(time.Millisecond))
	})
	require.NoError(t, tfrsErr)
	return filepath.Join(tfrsDir, "tfrs")
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{tfrsDir, imageOut} {
		if d != "" {
			_ = os.RemoveAll(d)
		}
	}
	os.Exit(code)
}
