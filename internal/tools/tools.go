// Package tools finds the external binaries the project runs (the Pulumi CLI and Kubernetes
// provider, the local control plane, the S3 server). They are built from the Go module proxy by
// `make tools` (hack/tools/build.sh) into a cache directory outside the repository; nothing is
// ever downloaded at run time.
package tools

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tfrs-io/tfrs-operator/internal/checkout"
)

// EnvBinDir names the environment variable that points at the tools bin directory. The
// Makefile exports it; when unset, the directory is asked of hack/tools/build.sh in the
// enclosing checkout, then PATH is searched.
const EnvBinDir = "TFRS_TOOLS_BIN"

// ErrMissing is returned when a binary is in neither the tools cache nor PATH.
var ErrMissing = errors.New("tool not found")

var (
	dirOnce sync.Once
	dirVal  string
)

// Dir returns the tools bin directory, or "" when none is known.
func Dir() string {
	dirOnce.Do(func() {
		if d := os.Getenv(EnvBinDir); d != "" {
			dirVal = d
			return
		}
		script := findScript()
		if script == "" {
			return
		}
		out, err := exec.Command("bash", script, "--dir").Output()
		if err == nil {
			dirVal = strings.TrimSpace(string(out))
		}
	})
	return dirVal
}

// findScript is the checkout's hack/tools/build.sh, so a `go test` run from any package
// directory finds the same cache as `make tools`.
func findScript() string {
	root := checkout.Root()
	if root == "" {
		return ""
	}
	p := filepath.Join(root, "hack", "tools", "build.sh")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// Bin returns the path of the named binary: the tools cache first, then PATH. The error names
// the fix, because the usual cause is a fresh machine that has not run `make tools` yet.
func Bin(name string) (string, error) {
	if d := Dir(); d != "" {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: %s is not in the tools cache (%s) or on PATH; run `make tools` to build it from the Go module proxy", ErrMissing, name, Dir())
}

// PathWithTools returns PATH with the tools bin directory first, for child processes (the
// Pulumi CLI looks plugins up on PATH).
func PathWithTools() string {
	d := Dir()
	if d == "" {
		return os.Getenv("PATH")
	}
	return d + string(os.PathListSeparator) + os.Getenv("PATH")
}
