package runner

import (
	"context"
	"fmt"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Approval is the approval mode obj's runs follow at the HTTP and CLI doors: its own spec's,
// except a personal tenant's. A personal tenant's runs bring its job type's shared stack up,
// which no personal tenant may steer (validation keeps the tenant's own mode at its
// default): they follow the cluster's spec.personal.approval, as its cluster stack exported
// it. The operator reads the TFRCluster itself (operator/personal_gate.go); both end in
// v1alpha1.PersonalSpec.Gate. A cluster stack that cannot be read gives the default mode:
// the run itself then fails on its missing parent.
func (r *Runner) Approval(ctx context.Context, obj v1alpha1.Object) (v1alpha1.ApprovalMode, error) {
	x, ok := obj.(*v1alpha1.TFRTenant)
	if !ok || x.Spec.Type != v1alpha1.TenantPersonal {
		return obj.Approval(), nil
	}
	stack, err := stackname.Cluster(x.Spec.ClusterRef)
	if err != nil {
		return "", err
	}
	var p v1alpha1.PersonalSpec
	if c, err := r.opts.Parents.Cluster(ctx, stack); err == nil {
		if p, err = c.PersonalSpec(); err != nil {
			return "", fmt.Errorf("cluster stack %s: %w", stack, err)
		}
	}
	mode, _ := p.Gate()
	return mode, nil
}
