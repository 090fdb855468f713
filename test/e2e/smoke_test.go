//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/smoke"
)

// TestSmokeThroughRealStack is the whole chain once: the real Pulumi CLI and Kubernetes
// provider create a Namespace and a Deployment on the local control plane, the Deployment
// becomes Ready, a second up changes nothing, destroy removes the namespace.
func TestSmokeThroughRealStack(t *testing.T) {
	cp := controlplane.StartT(t)
	kc, err := cp.Kubeconfig()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	eng, err := engine.New(ctx, engine.Options{StateDir: t.TempDir(), Passphrase: "smoke-test-passphrase"})
	require.NoError(t, err)
	defer eng.Close()

	cs, err := cp.Client()
	require.NoError(t, err)
	var sawDeployment bool
	sink := func(ev engine.Event) {
		if ev.Type == "kubernetes:apps/v1:Deployment" {
			sawDeployment = true
		}
	}
	rep, err := smoke.Run(ctx, eng, "smoke.e2e", kc, "smoke", sink)
	require.NoError(t, err)
	require.True(t, sawDeployment, "progress events must reach the sink")
	created := map[string]bool{}
	for _, st := range rep.Up.Steps {
		if st.Op == engine.StepCreate {
			created[st.Type] = true
		}
	}
	require.True(t, created["kubernetes:core/v1:Namespace"], "steps: %+v", rep.Up.Steps)
	require.True(t, created["kubernetes:apps/v1:Deployment"], "steps: %+v", rep.Up.Steps)
	require.Equal(t, float64(2), rep.ReadyReplicas)
	require.Zero(t, rep.Again.Changes.Changed())
	require.Positive(t, rep.Destroy.Changes[engine.StepDelete])

	_, err = cs.CoreV1().Namespaces().Get(ctx, "smoke", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "namespace must be gone after destroy, got %v", err)
	_, err = cs.AppsV1().Deployments("smoke").Get(ctx, "web", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))
}
