//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// env is one end-to-end test's world: a local control plane, an engine on a fresh file://
// state dir, and the stack config that points programs at the control plane.
type env struct {
	ctx      context.Context
	cp       *controlplane.ControlPlane
	eng      *engine.Engine
	cfg      map[string]engine.ConfigValue
	stateDir string
}

func newEnv(t *testing.T, timeout time.Duration) *env {
	t.Helper()
	cp := testenv.ControlPlane(t)
	kc, err := cp.Kubeconfig()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	stateDir := t.TempDir()
	eng, err := engine.New(ctx, engine.Options{StateDir: stateDir, Passphrase: "e2e-passphrase-" + t.Name()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	return &env{ctx: ctx, cp: cp, eng: eng, stateDir: stateDir,
		cfg: map[string]engine.ConfigValue{"kubernetes:kubeconfig": {Value: kc, Secret: true}}}
}

// requireNotInDir fails when any file under dir contains secret in plain text (state files,
// logs, workspaces).
func requireNotInDir(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // sockets, files removed meanwhile
		}
		require.False(t, strings.Contains(string(b), secret), "%s contains a secret in plain text", path)
		return nil
	})
	require.NoError(t, err)
}
