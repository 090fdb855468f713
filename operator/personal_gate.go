package operator

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// ownGate is the approval mode and drift check an object's runs follow: its own spec's.
func ownGate(_ context.Context, _ client.Reader, obj v1alpha1.Object) (v1alpha1.ApprovalMode, v1alpha1.DriftDetectionSpec, error) {
	return obj.Approval(), obj.GetDriftDetection(), nil
}

// tenantGate is a TFRTenant's: an enterprise tenant's own, a personal tenant's from its
// cluster's spec.personal (v1alpha1.PersonalGate). A personal tenant's runs bring its job
// type's shared stack up, which no personal tenant may steer; validation keeps the tenant's
// own fields at their defaults. A cluster not there yet gives the defaults (the tenant waits
// for it anyway).
func tenantGate(ctx context.Context, c client.Reader, obj v1alpha1.Object) (v1alpha1.ApprovalMode, v1alpha1.DriftDetectionSpec, error) {
	x := obj.(*v1alpha1.TFRTenant)
	if x.Spec.Type != v1alpha1.TenantPersonal {
		return ownGate(ctx, c, obj)
	}
	cl, err := getParent(ctx, c, &v1alpha1.TFRCluster{}, client.ObjectKey{Name: x.Spec.ClusterRef})
	if err != nil {
		return "", v1alpha1.DriftDetectionSpec{}, err
	}
	var cluster *v1alpha1.TFRCluster
	if cl != nil {
		cluster = cl.(*v1alpha1.TFRCluster)
	}
	mode, drift := v1alpha1.PersonalGate(cluster)
	return mode, drift, nil
}
