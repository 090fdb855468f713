package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// A personal robot's data lives in its job type's shared middleware. When the job type's
// deletionPolicy is Delete, Destroy removes it before it destroys the robot's stack, at every
// door (stacks/purge.go has the stages): the data's names come from the robot's stack and
// its owner, which are immutable, so the purge reaches only what the robot itself had.

// PurgesRobotData reports whether destroying obj removes a personal robot's data: a
// TFRServer whose stack exists and whose tenant's outputs say the job type deletes robot
// data (what `tfrs destroy --fail-on-data-loss` refuses).
func (r *Runner) PurgesRobotData(ctx context.Context, obj v1alpha1.Object) (bool, error) {
	t, _, err := kinds.Prepare(obj)
	if err != nil {
		return false, err
	}
	_, purge, err := r.robotTenant(ctx, t, obj)
	return purge, err
}

// robotTenant reads the tenant outputs of a server whose stack exists; purge is whether its
// data is to be removed. A tenant stack that is gone took the middleware with it: nothing
// to purge. The outputs are the tenant's last successful up's, whether or not a later up
// failed: the middleware they name is the one the robot used.
func (r *Runner) robotTenant(ctx context.Context, t kinds.Target, obj v1alpha1.Object) (tenant stacks.TenantOutputs, purge bool, err error) {
	if _, ok := obj.(*v1alpha1.TFRServer); !ok {
		return tenant, false, nil
	}
	if _, err := r.eng.Status(ctx, t.Stack); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return tenant, false, nil
		}
		return tenant, false, err
	}
	out, err := r.eng.Outputs(ctx, t.Parent)
	if errors.Is(err, engine.ErrNotFound) {
		return tenant, false, nil
	}
	if err != nil {
		return tenant, false, fmt.Errorf("reading the outputs of tenant stack %s: %w", t.Parent, err)
	}
	if tenant, err = stacks.TenantOutputsFromStack(out); err != nil {
		return tenant, false, err
	}
	return tenant, tenant.DeletesRobotData(), nil
}

// purgeRobotData runs the purge stages of a personal robot whose job type deletes robot data
// (nothing for any other object). Each stage is an up of the robot's own stack, admitted as
// every up is (its identity, door and immutable fields), so a spec whose tenantRef, robotId
// or robotType was changed cannot point the purge at another robot's data.
func (r *Runner) purgeRobotData(ctx context.Context, t kinds.Target, obj v1alpha1.Object, op Op, out *Outcome) error {
	tenant, purge, err := r.robotTenant(ctx, t, obj)
	if err != nil || !purge {
		return err
	}
	s := obj.(*v1alpha1.TFRServer)
	for _, stage := range stacks.PurgeStages {
		req, err := r.request(t.Stack, stacks.Server(stacks.ServerInput{Server: s, Tenant: tenant, Purge: stage}), op, nil, tenant.Namespace)
		if err != nil {
			return err
		}
		req.Admit = admission(t, op.Door, true)
		res, err := r.eng.Up(ctx, req)
		out.add(t.Stack, res)
		if err != nil {
			return fmt.Errorf("removing the data of robot %s (stage %s, deletionPolicy Delete of its job type): %w", t, stage, err)
		}
	}
	return nil
}
