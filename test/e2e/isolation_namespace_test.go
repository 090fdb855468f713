//go:build e2e

package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	k8smetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// TestIsolationNamespaceOwnership runs the namespace-ownership attacks against the real
// engine and the local control plane (after the stand-in cluster stack), each checked with
// the API server, never the program's view: a reserved namespace (kube-system) and another
// team's unmarked namespace are refused at spec.namespace and left untouched; a namespace
// another tenant holds is refused; a namespace this stack created before the owner marker
// existed is adopted (the marker written) on the next up.
func TestIsolationNamespaceOwnership(t *testing.T) {
	e := newEnv(t, 20*time.Minute)
	ctx := e.ctx
	// A stack from before the marker and before the ownership policy: the same Namespace
	// resource (same URN as the tenant program's), created by the stack, without the
	// annotation. It exists before the cluster stack installs the policy, as on a cluster
	// upgraded from a TFRS without marks (UpgradePathAdoptsMarker below).
	legacy := testenv.Lean(testenv.StandInTenant("team", "legacy", "e2e"))
	legacyStack, _, err := legacy.OwnStacks()
	require.NoError(t, err)
	_, err = e.eng.Up(ctx, engine.Request{Stack: legacyStack, ManagedBy: engine.ManagedByCLI, Config: e.cfg, Program: func(pc *pulumi.Context) error {
		c := &struct{ pulumi.ResourceState }{}
		if err := pc.RegisterComponentResource(tenant.NamespaceType, stacks.TenantNamespace, c); err != nil {
			return err
		}
		_, err := k8scorev1.NewNamespace(pc, stacks.TenantNamespace+"-namespace", &k8scorev1.NamespaceArgs{
			// A label, as every tenant namespace had: the API server keeps no managedFields
			// entry for a manager that owns no field, and the ownership policy recognises
			// a legacy object by the provider's entry.
			Metadata: &k8smetav1.ObjectMetaArgs{Name: pulumi.String("legacy"),
				Labels: pulumi.StringMap{"istio-injection": pulumi.String("enabled")}}}, pulumi.Parent(c))
		return err
	}})
	require.NoError(t, err)
	time.Sleep(1100 * time.Millisecond) // creation timestamps have a second's resolution
	tc, _ := upStandInCluster(ctx, t, e.eng, e.cfg)
	legacy.Spec.ClusterRef = tc.Name
	kc, err := e.cp.Client()
	require.NoError(t, err)
	run := runner.New(e.eng, runner.Options{Kubeconfig: e.cfg["kubernetes:kubeconfig"].Value})
	op := runner.Op{Door: engine.ManagedByCLI}
	refused := func(t *testing.T, err error, want string) {
		t.Helper()
		var inv *kinds.InvalidError
		require.True(t, errors.As(err, &inv), "want an InvalidError, got %v", err)
		require.Contains(t, err.Error(), "spec.namespace")
		require.Contains(t, err.Error(), want)
	}

	t.Run("ReservedKubeSystem", func(t *testing.T) {
		before := nsMeta(ctx, t, kc, "kube-system")
		x := testenv.Lean(testenv.StandInTenant("team", "sneaky", tc.Name))
		x.Spec.Namespace = "kube-system"
		_, err := run.Up(ctx, x, op)
		refused(t, err, "reserved")
		require.Equal(t, before, nsMeta(ctx, t, kc, "kube-system"), "kube-system changed")
	})

	t.Run("UnmarkedNamespaceOfAnotherTeam", func(t *testing.T) {
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: "payments", Labels: map[string]string{"team": "payments"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		before := nsMeta(ctx, t, kc, "payments")
		x := testenv.Lean(testenv.StandInTenant("team", "payments", tc.Name))
		_, err = run.Up(ctx, x, op)
		refused(t, err, "namespace payments exists and was not created by TFRS")
		require.Equal(t, before, nsMeta(ctx, t, kc, "payments"), "payments changed")
		pods, err := kc.CoreV1().Pods("payments").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, pods.Items)
	})

	// One lean tenant owns "owned"; the other cases work on it.
	owner := testenv.Lean(testenv.StandInTenant("team", "owned", tc.Name))
	_, err = run.Up(ctx, owner, op)
	require.NoError(t, err)
	ownerStack, _, err := owner.OwnStacks()
	require.NoError(t, err)
	require.Equal(t, ownerStack, nsMeta(ctx, t, kc, "owned").Annotations[stacks.AnnotationOwner])

	t.Run("NamespaceHeldByAnotherTenant", func(t *testing.T) {
		before := nsMeta(ctx, t, kc, "owned")
		x := testenv.Lean(testenv.StandInTenant("other", "thief", tc.Name))
		x.Spec.Namespace = "owned"
		_, err := run.Up(ctx, x, op)
		refused(t, err, "namespace owned belongs to tenant stack "+ownerStack)
		require.Equal(t, before, nsMeta(ctx, t, kc, "owned"), "owned changed")
	})

	t.Run("UpgradePathAdoptsMarker", func(t *testing.T) {
		require.Empty(t, nsMeta(ctx, t, kc, "legacy").Annotations[stacks.AnnotationOwner])
		before, err := kc.CoreV1().Namespaces().Get(ctx, "legacy", metav1.GetOptions{})
		require.NoError(t, err)
		_, err = run.Up(ctx, legacy, op)
		require.NoError(t, err)
		require.Equal(t, legacyStack, nsMeta(ctx, t, kc, "legacy").Annotations[stacks.AnnotationOwner])
		// The Namespace moved from the default provider to the provisioner (the default one
		// now impersonates the applier): updated in place, never replaced.
		after, err := kc.CoreV1().Namespaces().Get(ctx, "legacy", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, before.UID, after.UID, "the namespace was replaced")
	})
}

// nsMeta is a namespace's labels and annotations as the API server has them.
func nsMeta(ctx context.Context, t *testing.T, kc kubernetes.Interface, name string) metav1.ObjectMeta {
	t.Helper()
	ns, err := kc.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return metav1.ObjectMeta{Labels: ns.Labels, Annotations: ns.Annotations}
}
