// Package layering holds the import rule of the repository as a test.
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/tfrs-io/tfrs-operator/"

// layer is the rank of a package of this module in the one-way layering
// api → components → stacks → doors → cmd; -1 for packages outside it (internal helpers,
// tests, config, charts, examples, hack), which are checked by their own rule.
func layer(pkg string) int {
	top, _, _ := strings.Cut(strings.TrimPrefix(pkg, module), "/")
	switch top {
	case "api":
		return 0
	case "components":
		return 1
	case "stacks":
		return 2
	case "operator", "server":
		return 3
	case "cmd":
		return 4
	}
	return -1
}

// door is the door a package belongs to ("" for none).
func door(pkg string) string {
	top, _, _ := strings.Cut(strings.TrimPrefix(pkg, module), "/")
	if top == "operator" || top == "server" {
		return top
	}
	return ""
}

// TestLayering: every non-test package of the module depends (transitively) only on its own
// layer and the ones below; a door depends on no other door; an internal/ helper depends on
// no door and no binary. The rule is read from `go list -deps`, so a helper package that
// bridged two layers is caught at the package that uses it.
func TestLayering(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is not on PATH:", err)
	}
	out, err := exec.Command(goTool, "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked, edges := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		internal := strings.HasPrefix(pkg, module+"internal/")
		l := layer(pkg)
		if l < 0 && !internal {
			continue
		}
		checked++
		for _, d := range deps {
			if !strings.HasPrefix(d, module) {
				continue
			}
			edges++
			dl := layer(d)
			switch {
			case internal && dl >= 3:
				t.Errorf("%s (an internal helper) depends on %s, a door or binary", pkg, d)
			case l >= 0 && dl > l:
				t.Errorf("%s depends on %s, a higher layer (api → components → stacks → doors → cmd)", pkg, d)
			case l >= 0 && dl < 0 && !strings.HasPrefix(d, module+"internal/") && !strings.HasPrefix(d, module+"config/"):
				t.Errorf("%s depends on %s, outside the layers", pkg, d)
			case door(pkg) != "" && door(d) != "" && door(d) != door(pkg):
				t.Errorf("door %s depends on door %s", pkg, d)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d packages checked: is the module list right?", checked)
	}
	t.Logf("%d packages, %d module dependencies checked", checked, edges)
}
