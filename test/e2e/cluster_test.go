//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// standInCluster is a TFRCluster whose every source points at the project's own offline
// stand-ins (stacks/testdata/cluster), as the README describes.
func standInCluster(t *testing.T) *v1alpha1.TFRCluster {
	tc := testenv.StandInCluster("e2e")
	require.Empty(t, tc.Validate())
	return tc
}

// TestClusterStackLifecycle runs the real cluster program through the engine on the local
// control plane: up installs every component from the stand-ins, a preview then reports no
// changes, destroy leaves none of the stack's namespaces or CRDs behind, and the registry
// password never appears in the state in plain text.
func TestClusterStackLifecycle(t *testing.T) {
	e := newEnv(t, 10*time.Minute)
	ctx, cp, eng, stateDir := e.ctx, e.cp, e.eng, e.stateDir

	tc := standInCluster(t)
	stack, err := stackname.Cluster(tc.Name)
	require.NoError(t, err)
	req := engine.Request{
		Stack:     stack,
		Program:   stacks.Cluster(stacks.ClusterInput{Cluster: tc}),
		ManagedBy: engine.ManagedByCLI,
		Config:    e.cfg,
	}
	up, err := eng.Up(ctx, req)
	require.NoError(t, err)
	t.Logf("up: %v in %s", map[engine.StepOp]int(up.Changes), up.Duration)
	require.Equal(t, true, up.Outputs[stacks.ClusterOutputRabbitMQOperatorReady].Value)
	require.Equal(t, "tfrobot-pull-secret", up.Outputs[stacks.ClusterOutputPullSecretName].Value)
	require.True(t, up.Outputs[stacks.ClusterOutputDockerConfigJSON].Secret, "dockerconfigjson must be a secret output")

	cs, err := cp.Client()
	require.NoError(t, err)
	nsList, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var created []string
	for _, ns := range nsList.Items {
		switch ns.Name {
		case "default", "kube-system", "kube-public", "kube-node-lease":
		default:
			created = append(created, ns.Name)
		}
	}
	require.NotEmpty(t, created)
	t.Logf("namespaces created by the stack: %v", created)

	pv, err := eng.Preview(ctx, req)
	require.NoError(t, err)
	require.Zero(t, pv.Changes.Changed(), "a preview right after up must report no changes: %+v", pv.Steps)

	_, err = eng.Destroy(ctx, req)
	require.NoError(t, err)
	for _, ns := range created {
		require.Eventually(t, func() bool {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return err != nil
		}, 2*time.Minute, 250*time.Millisecond, "namespace %s left behind", ns)
	}
	out, err := kubectl(t, cp, "", "get", "crd", "-o", "name")
	require.NoError(t, err, out)
	// The real upstream CRDs were installed before the stack (the stand-in charts ship none):
	// destroy removes what the stack created and nothing else.
	for _, name := range []string{"clusterissuers.cert-manager.io", "gateways.networking.istio.io", "clusters.postgresql.cnpg.io", "tenants.minio.min.io", "rabbitmqclusters.rabbitmq.com"} {
		require.Contains(t, out, "customresourcedefinition.apiextensions.k8s.io/"+name+"\n", "destroy removed a CRD the stack did not install")
	}

	requireNotInDir(t, stateDir, "registry-pass-e2e")
}
