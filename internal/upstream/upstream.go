// Package upstream finds the real upstream CRDs that tests validate against: the unmodified
// CustomResourceDefinitions of cert-manager, Istio, CloudNativePG, the MinIO operator and the
// RabbitMQ operators, kept beside the checkout in ../shared/upstream/crds/<project>/<version>/
// (or wherever TFRS_UPSTREAM points). They are test data the project reads and never copies:
// a user's own clone may not have them, so a test that needs them skips, naming what to
// provide, except under CI=true, where their absence is a failure.
package upstream

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/internal/checkout"
	"github.com/tfrs-io/tfrs-operator/internal/manifest"
)

// EnvVar overrides where the upstream folder is.
const EnvVar = "TFRS_UPSTREAM"

// Root is the upstream folder: $TFRS_UPSTREAM, else ../shared/upstream beside the checkout.
func Root() string {
	if r := os.Getenv(EnvVar); r != "" {
		return r
	}
	return filepath.Join(filepath.Dir(checkout.Root()), "shared", "upstream")
}

// Dir is the folder of one project's CRDs at one version.
func Dir(project, version string) string {
	return filepath.Join(Root(), "crds", project, version)
}

// ErrMissing is returned when a project's CRDs at a version are not there.
var ErrMissing = errors.New("upstream CRDs missing")

// Load reads every CustomResourceDefinition of one project at one version, sorted by name.
func Load(project, version string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir := Dir(project, version)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no %s %s CRDs in %s", ErrMissing, project, version, dir)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		defs, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, defs...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Ref names one project's CRDs at one version.
type Ref struct{ Project, Version string }

// LoadAll reads the CRDs of every ref, in order.
func LoadAll(refs []Ref) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, r := range refs {
		defs, err := Load(r.Project, r.Version)
		if err != nil {
			return nil, err
		}
		out = append(out, defs...)
	}
	return out, nil
}

// Present reports whether the upstream folder is there at all.
func Present() bool {
	_, err := os.Stat(filepath.Join(Root(), "crds"))
	return err == nil
}

// ReadFile reads the CustomResourceDefinitions of one multi-document YAML file.
func ReadFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*apiextensionsv1.CustomResourceDefinition
	err = manifest.EachDocument(f, func(i int, doc []byte) error {
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, c); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if c.Kind != "CustomResourceDefinition" {
			return fmt.Errorf("document %d: a %s, not a CustomResourceDefinition", i, c.Kind)
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// Require returns when the upstream folder exists. Otherwise it skips the test, saying
// what to provide, or fails it under CI=true (CI always has ../shared beside the checkout).
func Require(t testing.TB) {
	t.Helper()
	if Present() {
		return
	}
	msg := fmt.Sprintf("the real upstream CRDs are not at %s/crds: put the shared upstream folder beside the checkout (../shared/upstream) or set %s", Root(), EnvVar)
	if strings.EqualFold(os.Getenv("CI"), "true") {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
