//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/cmd/tfrs/devenv"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/operator"
)

// TestDevOperatorSourcePolicy: `tfrs dev`'s operator holds custom resources to the same
// source policy as its API. A tenant applied with kubectl whose chart is a copy of the
// stand-in chart outside the allowed roots (so no validation rule can tell it from an
// allowed one) is refused as an invalid spec naming the field and the policy's reason; the
// same tenant with the stand-in chart is not refused for its source.
func TestDevOperatorSourcePolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env, err := devenv.Start(ctx, devenv.Options{Dir: t.TempDir(),
		Operator: operator.Options{ParentPoll: 2 * time.Second, SkipNameValidation: true}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, env.Stop()) })

	stand := filepath.Join(testenv.StandIns("tenant"), "charts", "grafana")
	outside := filepath.Join(t.TempDir(), "grafana")
	require.NoError(t, os.CopyFS(outside, os.DirFS(stand)))

	x := testenv.Lean(testenv.StandInTenant(devenv.TeamNamespace, "leaky", "dev"))
	x.Spec.Grafana.Enabled = nil
	x.Spec.Grafana.LocalPath = outside
	msg := refusedAsCR(ctx, t, env, x)
	require.Contains(t, msg, "spec.grafana.localPath")
	require.Contains(t, msg, "not under an allowed root")
}
