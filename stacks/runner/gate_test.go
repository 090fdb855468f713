package runner

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// clusterParents answers every cluster stack with c (err when set).
type clusterParents struct {
	c   stacks.TenantCluster
	err error
}

func (p clusterParents) Cluster(context.Context, string) (stacks.TenantCluster, error) {
	return p.c, p.err
}
func (p clusterParents) Tenant(context.Context, string) (stacks.TenantOutputs, error) {
	return stacks.TenantOutputs{}, errors.New("no tenant")
}

// A personal tenant's runs follow its cluster's spec.personal.approval; everyone else's
// their own spec's.
func TestApprovalOfPersonalTenantIsTheClusters(t *testing.T) {
	personal := &v1alpha1.TFRTenant{Spec: v1alpha1.TFRTenantSpec{ClusterRef: "dev", Type: v1alpha1.TenantPersonal, JobType: "chat"}}
	enterprise := &v1alpha1.TFRTenant{Spec: v1alpha1.TFRTenantSpec{ClusterRef: "dev", Type: v1alpha1.TenantEnterprise,
		Approval: v1alpha1.ApprovalSpec{Mode: v1alpha1.ApprovalAuto}}}
	for _, tc := range []struct {
		name    string
		parents clusterParents
		obj     v1alpha1.Object
		want    v1alpha1.ApprovalMode
	}{
		{"personal, cluster Manual", clusterParents{c: stacks.TenantCluster{Personal: `{"approval":{"mode":"Manual"}}`}}, personal, v1alpha1.ApprovalManual},
		{"personal, cluster Auto", clusterParents{c: stacks.TenantCluster{Personal: `{"approval":{"mode":"Auto"}}`}}, personal, v1alpha1.ApprovalAuto},
		{"personal, cluster from before the output", clusterParents{}, personal, v1alpha1.ApprovalOnDataLoss},
		{"personal, no cluster stack yet", clusterParents{err: errors.New("no stack")}, personal, v1alpha1.ApprovalOnDataLoss},
		{"enterprise keeps its own", clusterParents{c: stacks.TenantCluster{Personal: `{"approval":{"mode":"Manual"}}`}}, enterprise, v1alpha1.ApprovalAuto},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(newFake(), Options{Namespaces: absentNamespaces{}, Parents: tc.parents})
			got, err := r.Approval(context.Background(), tc.obj)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
