package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// A guarded destroy (--fail-on-data-loss) of a personal robot whose job type's
// deletionPolicy is Delete is refused before anything runs: its data would be removed. Under
// Retain it runs, the destroy alone.
func TestDestroyOfAPurgedRobotIsGuarded(t *testing.T) {
	const tenantStack, serverStack = "tenant.tfrs-system.alice", "server.tfrs-system.chat-r-1"
	path := filepath.Join(t.TempDir(), "server.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: tfrs.io/v1alpha1
kind: TFRServer
metadata: {name: chat-r-1, namespace: tfrs-system}
spec: {tenantRef: alice, robotId: r-1, robotType: chat, image: registry.example.com/tfrobot/server:1}
`), 0o600))
	for policy, refused := range map[v1alpha1.DeletionPolicy]bool{v1alpha1.DeletionDelete: true, v1alpha1.DeletionRetain: false} {
		f := newFakeEngine()
		useFakeEngine(t, f)
		f.Put(tenantStack, enginetest.Stack{Tags: enginetest.Tags(engine.ManagedByCLI, nil), Ready: true, Outputs: enginetest.TenantOutputs(program.Outputs{
			stacks.TenantOutputTenantType:     program.NewOutput(string(v1alpha1.TenantPersonal), false),
			stacks.TenantOutputDeletionPolicy: program.NewOutput(string(policy), false),
		})})
		f.Put(serverStack, enginetest.Stack{Tags: enginetest.Tags(engine.ManagedByCLI, map[string]string{engine.TagParent: tenantStack}), Ready: true})
		code, out := runCaptured(t, "destroy", "-f", path, "--yes", "--fail-on-data-loss")
		if refused {
			require.Equal(t, exitDataLoss, code, out)
			require.Empty(t, f.recorded(), "refused before anything ran")
			continue
		}
		require.Equal(t, 0, code, out)
		require.Equal(t, []string{"destroy " + serverStack}, f.recorded())
	}
}
