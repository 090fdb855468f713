// Command image assembles the tfrs OCI image without a container daemon (`make image`): a
// static tfrs, the Pulumi CLI and the Kubernetes provider from the tools cache, CA
// certificates and a nonroot user, written as an OCI layout and a `docker load` tarball.
//
//	go run ./hack/image -tag ghcr.io/tfrs-io/tfrs:v0.9.0 -commit $(git rev-parse --short=12 HEAD) \
//	    -tools "$(bash hack/tools/build.sh --dir)" -out bin/image [-push REF]
//
// It is a build tool, so it is a main package under hack/ rather than a library: nothing in
// tfrs imports go-containerregistry, and the test next to it runs the very code `make image`
// runs. The same inputs give the same digest (fixed times and owners, -trimpath).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/blang/semver"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// options are the command line, checked.
type options struct {
	tag      name.Tag
	commit   string
	tools    string
	ca       string
	out      string
	created  time.Time
	push     *name.Tag // nil: no push
	tfrsPath string    // a prebuilt static tfrs instead of building one (tests)
}

// Output names under -out.
const (
	layoutDir  = "oci"      // OCI image layout
	tarballOut = "tfrs.tar" // docker load / kind load image-archive
)

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tag := fs.String("tag", "", "repository:version of the image, e.g. ghcr.io/tfrs-io/tfrs:v0.9.0 (the version is also tfrs's)")
	commit := fs.String("commit", "", "source revision: the org.opencontainers.image.revision label and `tfrs version`'s commit")
	toolsDir := fs.String("tools", "", "the tools cache bin dir with pulumi and pulumi-resource-kubernetes (bash hack/tools/build.sh --dir)")
	ca := fs.String("ca", caBundle, "PEM CA certificates to ship")
	out := fs.String("out", "bin/image", "output directory: "+layoutDir+"/ (OCI layout) and "+tarballOut+" (docker load)")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "the image's created time and every file's mtime, Unix seconds (default $SOURCE_DATE_EPOCH, else 0)")
	push := fs.String("push", "", "also push the image to this repository:version with the Docker credentials (~/.docker/config.json)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var o options
	var err error
	if o.tag, err = parseTag("-tag", *tag); err != nil {
		return o, err
	}
	if *push != "" {
		p, err := parseTag("-push", *push)
		if err != nil {
			return o, err
		}
		o.push = &p
	}
	if *commit != "" && !regexp.MustCompile(`^[0-9a-f]{7,40}$`).MatchString(*commit) {
		return o, fmt.Errorf("-commit: %q is not a git revision (7 to 40 hex digits)", *commit)
	}
	o.commit = *commit
	if *toolsDir == "" {
		return o, errors.New("-tools: required (bash hack/tools/build.sh --dir)")
	}
	o.tools, o.ca, o.out = *toolsDir, *ca, *out
	if *out == "" {
		return o, errors.New("-out: required")
	}
	o.created = time.Unix(0, 0).UTC()
	if *created != "" {
		sec, err := strconv.ParseInt(*created, 10, 64)
		if err != nil || sec < 0 {
			return o, fmt.Errorf("-created: %q is not Unix seconds", *created)
		}
		o.created = time.Unix(sec, 0).UTC()
	}
	return o, nil
}

// parseTag wants repository:version with a semantic version as the tag: manifests and the
// chart pin it, so `latest` (or no tag, which means latest) is refused.
func parseTag(flagName, ref string) (name.Tag, error) {
	if ref == "" {
		return name.Tag{}, fmt.Errorf("%s: required, e.g. ghcr.io/tfrs-io/tfrs:v0.9.0", flagName)
	}
	// Lenient first (no tag reads as latest, for the message), then strict: the registry
	// must be named, never Docker Hub by default.
	t, err := name.NewTag(ref)
	if err == nil {
		v := t.TagStr()
		if _, verr := semver.Parse(strings.TrimPrefix(v, "v")); verr != nil || !strings.HasPrefix(v, "v") {
			return name.Tag{}, fmt.Errorf("%s: tag %q is not a version such as v0.9.0 (an image is never tagged latest)", flagName, v)
		}
		t, err = name.NewTag(ref, name.StrictValidation)
	}
	if err != nil {
		return name.Tag{}, fmt.Errorf("%s: %w (want registry/repository:version, e.g. ghcr.io/tfrs-io/tfrs:v0.9.0)", flagName, err)
	}
	return t, nil
}

// run builds tfrs, assembles the image and writes (and pushes) it.
func run(ctx context.Context, o options, stdout io.Writer) error {
	start := time.Now()
	work := filepath.Join(o.out, "layers")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	bin := o.tfrsPath
	if bin == "" {
		bin = filepath.Join(o.out, "tfrs")
		if err := buildTFRS(ctx, bin, o.tag.TagStr(), o.commit); err != nil {
			return err
		}
	}
	img, err := assemble(spec{
		Tag: o.tag, Commit: o.commit, TFRS: bin, ToolsDir: o.tools, CABundle: o.ca,
		Created: o.created, WorkDir: work,
	})
	if err != nil {
		return err
	}
	if err := writeOutputs(o.out, o.tag, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s\n  layout  %s\n  tarball %s\n  took    %s\n", o.tag, digest,
		filepath.Join(o.out, layoutDir), filepath.Join(o.out, tarballOut), time.Since(start).Round(100*time.Millisecond))
	if o.push != nil {
		if err := remote.Write(*o.push, img, remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("push %s: %w", o.push, err)
		}
		fmt.Fprintf(stdout, "pushed %s@%s\n", o.push, digest)
	}
	return nil
}

// writeOutputs writes a fresh OCI layout (the tag as ref.name, the full reference for
// containerd's import) and a tarball that `docker load` tags.
func writeOutputs(out string, tag name.Tag, img v1.Image) error {
	dir := filepath.Join(out, layoutDir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.TagStr(),
		"io.containerd.image.name":          tag.String(),
	})); err != nil {
		return fmt.Errorf("write layout: %w", err)
	}
	if err := tarball.WriteToFile(filepath.Join(out, tarballOut), tag, img); err != nil {
		return fmt.Errorf("write tarball: %w", err)
	}
	return nil
}

// buildTFRS builds the static tfrs the image ships: the Makefile's `build` ldflags (version
// and commit), stripped, -trimpath so the same source gives the same bytes.
func buildTFRS(ctx context.Context, out, version, commit string) error {
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	ldflags := "-s -w -X main.tfrsVersion=" + version
	if commit != "" {
		ldflags += " -X main.tfrsCommit=" + commit
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/tfrs")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build tfrs: %w", err)
	}
	return nil
}

func moduleRoot(ctx context.Context) (string, error) {
	b, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(b))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the tfrs module; run from the checkout")
	}
	return filepath.Dir(mod), nil
}
