//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks/fleet"
)

// TestFleetPreviewOfASecondBuild is the upgrade question with two real builds of tfrs: the
// current one (A), and a second one with one tenant-level default changed (B: the Redis
// volume's default size, cmd/tfrs/second_build.go). A dozen tenants come up with A through
// the CLI; half of them set their Redis size themselves, and one is suspended. B's fleet
// preview names exactly the tenants that take the default and only their Redis, reports the
// suspended one as such, and finds every other stack unchanged; A's own fleet preview proves
// every stack unchanged without running Pulumi.
func TestFleetPreviewOfASecondBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	binA := buildTFRS(t, root)
	binB := filepath.Join(t.TempDir(), "tfrs-b")
	// Built as hack/test.sh builds A, but for the tag: in a clean checkout only the tag tells
	// the two builds apart, and it must be enough.
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "tfrs_second_build", "-ldflags=-linkmode=internal -s -w", "-o", binB, "./cmd/tfrs")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build -tags tfrs_second_build: %s", out)

	cp := testenv.ControlPlane(t)
	state, dir := t.TempDir(), t.TempDir()
	pass := filepath.Join(t.TempDir(), "passphrase")
	require.NoError(t, os.WriteFile(pass, []byte("fleet-builds-"+t.Name()), 0o600))
	write := func(name string, obj any) {
		b, err := yaml.Marshal(obj)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".yaml"), b, 0o600))
	}
	write("cluster", testenv.StandInCluster("fleet"))
	takesDefault := map[string]bool{}
	const suspended = "t11"
	for i := range 12 {
		name := fmt.Sprintf("t%02d", i)
		tt := testenv.Lean(testenv.StandInTenant("team", name, "fleet"))
		if i%2 == 0 {
			tt.Spec.Redis.Size = nil // the build's default
			if name != suspended {
				takesDefault["tenant.team."+name] = true
			}
		}
		if name == suspended {
			tt.Spec.Suspend = true
		}
		write(name, tt)
	}
	// tfrs runs bin on the control plane and the shared state: exit code, stdout, stderr.
	tfrs := func(bin string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", cp.KubeconfigPath, "--state-dir", state, "--passphrase-file", pass)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stdout.String(), stderr.String()
		}
		require.NoError(t, err)
		return 0, stdout.String(), stderr.String()
	}
	report := func(bin string, wantCode int) *fleet.Report {
		t.Helper()
		code, out, errOut := tfrs(bin, "fleet", "preview", "-f", dir, "-o", "json", "--detailed-exitcode")
		require.Equal(t, wantCode, code, "%s\n%s", out, errOut)
		rep := &fleet.Report{}
		require.NoError(t, json.Unmarshal([]byte(out), rep), out)
		return rep
	}

	start := time.Now()
	code, o, e := tfrs(binA, "up", "-f", dir)
	require.Equal(t, 0, code, o+e)
	t.Logf("build A: up of the cluster and 11 tenants: %s", time.Since(start).Round(time.Second))

	// A proves its own fleet unchanged.
	start = time.Now()
	rep := report(binA, 0)
	t.Logf("build A: fleet preview: %s", time.Since(start).Round(100*time.Millisecond))
	require.Equal(t, 12, rep.Proven, "every stack but the suspended one is proven: %+v", rep.Counts)
	require.Equal(t, map[fleet.Status]int{fleet.StatusUnchanged: 12, fleet.StatusSuspended: 1}, rep.Counts)

	// B: exactly the tenants that take the default change, and only in their Redis.
	start = time.Now()
	rep = report(binB, 2)
	t.Logf("build B: fleet preview: %s", time.Since(start).Round(100*time.Millisecond))
	changed := map[string]bool{}
	for _, e := range rep.Entries {
		switch {
		case e.Target.Name == suspended:
			require.Equal(t, fleet.StatusSuspended, e.Status)
		case e.Status.Changed():
			changed[e.Target.Stack] = true
		default:
			require.Equal(t, fleet.StatusUnchanged, e.Status, "%s: %s", e.Target, e.Error)
			require.False(t, e.Proven, "%s: another build's programs are never proven by A's record", e.Target)
		}
	}
	require.Equal(t, takesDefault, changed)
	require.NotEmpty(t, rep.Groups)
	for _, g := range rep.Groups {
		require.Equal(t, "redis", g.Component, "only Redis changes: %+v", g)
		require.Len(t, g.Stacks, len(takesDefault))
	}
}
