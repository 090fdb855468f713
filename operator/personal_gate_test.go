package operator

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// A personal tenant's runs are gated by its cluster's spec.personal, whatever the tenant's
// own spec says; an enterprise tenant's by its own spec.
func TestTenantGate(t *testing.T) {
	scheme, err := Scheme()
	require.NoError(t, err)
	c := newCluster("main")
	c.Spec.Personal.Approval.Mode = v1alpha1.ApprovalManual
	off := false
	c.Spec.Personal.DriftDetection.Enabled = &off
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(c).Build()

	personal := newTenant("a", "alice", "main")
	personal.Spec.Type, personal.Spec.JobType = v1alpha1.TenantPersonal, "chat"
	personal.Spec.Approval.Mode = v1alpha1.ApprovalAuto // what an old tenant may still carry
	mode, drift, err := tenantGate(t.Context(), cl, personal)
	require.NoError(t, err)
	require.Equal(t, v1alpha1.ApprovalManual, mode, "the cluster's spec.personal.approval")
	require.Zero(t, drift.Period(), "the cluster's spec.personal.driftDetection")

	ent := newTenant("a", "acme", "main")
	mode, _, err = tenantGate(t.Context(), cl, ent)
	require.NoError(t, err)
	require.Equal(t, v1alpha1.ApprovalAuto, mode, "an enterprise tenant's own")

	orphan := personal.DeepCopy()
	orphan.Spec.ClusterRef = "gone"
	mode, drift, err = tenantGate(t.Context(), cl, orphan)
	require.NoError(t, err)
	require.Equal(t, v1alpha1.ApprovalOnDataLoss, mode, "no cluster: the defaults")
	require.Equal(t, v1alpha1.DefaultDriftInterval, drift.Period())
}
