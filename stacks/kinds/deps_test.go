package kinds

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoDriver keeps the programs free of the driver: the stock-CLI entry program and this
// package must not link the Automation API (or stacks/engine, which wraps it). A program the
// Pulumi CLI runs has no use for the code that runs the Pulumi CLI.
func TestNoDriver(t *testing.T) {
	// go test puts its own toolchain's bin first on PATH, so a missing go is a broken setup.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is not on PATH:", err)
	}
	forbidden := []string{
		"github.com/pulumi/pulumi/sdk/v3/go/auto",
		"github.com/tfrs-io/tfrs-operator/stacks/engine",
		"github.com/tfrs-io/tfrs-operator/stacks/runner",
	}
	for _, pkg := range []string{
		"github.com/tfrs-io/tfrs-operator/cmd/pulumi-program",
		"github.com/tfrs-io/tfrs-operator/stacks/kinds",
	} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[d] = true
		}
		if !deps[pkg] {
			t.Fatalf("go list -deps %s does not list the package itself: %q", pkg, out)
		}
		for _, f := range forbidden {
			if deps[f] {
				t.Errorf("%s depends on %s", pkg, f)
			}
		}
	}
}
