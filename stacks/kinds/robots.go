package kinds

// Robot names are unique per namespace. A robot's names ("<robotType>-<robotId>…", see
// components/server) are the same for every TFRServer with its robotType and robotId, so a
// second TFRServer of the same robot in the namespace (another metadata.name, another stack)
// would take over the first one's objects. The server stack marks the robot's API Service
// and its ServiceAccount with its stack name (server.OwnerAnnotation); before a server's
// programs run, a Parents that also implements Robots (the runner's) reads them, and a robot
// whose Service or account another stack owns is refused at spec.robotId, before anything
// changes. The account holds the claim while a deleted robot's data is removed, when its API
// Service is already gone.

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// Robots reads a robot's API Service in its namespace: whether it exists and the stack its
// server.OwnerAnnotation names ("" without one).
type Robots interface {
	RobotService(ctx context.Context, namespace, name string) (exists bool, owner string, err error)
}

// RobotAccounts reads a robot's own ServiceAccount in its namespace, with the same owner
// annotation. A Parents that implements it (the runner's) holds the claim from the robot's
// identity on: the account comes before every Job and worker and stays until the stack is
// destroyed, through the stages that remove a deleted robot's data, while the API Service
// comes and goes with the API worker.
type RobotAccounts interface {
	RobotAccount(ctx context.Context, namespace, name string) (exists bool, owner string, err error)
}

// RobotClaimErrors refuses the robot r for stack when its API Service exists and belongs to
// another stack. A Service without the annotation (a robot made before it existed) is left to
// its stack: the next up writes the annotation.
func RobotClaimErrors(r server.Robot, stack string, exists bool, owner string) field.ErrorList {
	if !exists || owner == "" || owner == stack {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "robotId"), fmt.Sprintf(
		"robot %s/%s is %q in namespace %s, which belongs to server stack %s: another TFRServer runs this robot; pick another robotId",
		r.Type, r.ID, r.Name(), r.Namespace, owner))}
}

// Owners lists the Deployments of one owner's robots in a namespace: those labelled
// server.LabelRobotOwner with ownerLabel (server.OwnerLabelValue of the owner). A Parents
// that implements it holds personal robots to their job type's owner share
// (stacks/ownershare.go); the runner's does.
type Owners interface {
	OwnerWorkloads(ctx context.Context, namespace, ownerLabel string) ([]stacks.Workload, error)
}

// ownerShareErrors refuses the personal server s, robot r, when its owner's robots would
// exceed the share of its tenant's job type. No share (nil), or a Parents that cannot list
// workloads, checks nothing.
func ownerShareErrors(ctx context.Context, p Parents, s *v1alpha1.TFRServer, r server.Robot, share *stacks.OwnerShare) (field.ErrorList, error) {
	o, ok := p.(Owners)
	if share == nil || !ok {
		return nil, nil
	}
	owner, err := stacks.ShareOwner(s)
	if err != nil {
		return nil, err
	}
	current, err := o.OwnerWorkloads(ctx, r.Namespace, server.OwnerLabelValue(owner))
	if err != nil {
		return nil, fmt.Errorf("spec.tenantRef: listing the owner's robots in %s: %w", r.Namespace, err)
	}
	return share.ShareErrors(owner, r.Name(), current, stacks.ServerWorkloads(r.Name(), &s.Spec)), nil
}
