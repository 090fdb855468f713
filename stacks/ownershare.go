package stacks

// A personal job type's namespace is shared by the robots of many owners (personal
// TFRTenants), under one ResourceQuota. A ResourceQuota cannot count per owner, so one user's
// robots could take the whole quota. The cluster's spec.personal.ownerShare caps each owner.
//
// The share travels as the tenant stacks' outputs travel: the job type's shared stack exports
// it with the namespace class's LimitRange default (TenantOutputOwnerShare), every personal
// tenant's stack re-exports it, and a robot's server reads it from its tenant's outputs. Before
// a personal server runs, at every door (stacks/kinds), the runner lists the Deployments its
// owner already runs in the namespace (marked by the server component with
// server.LabelRobotOwner) and ShareErrors refuses the run when the owner's robots, with this
// one as its spec asks, would exceed the share. Only TFRS writes workloads in a personal
// namespace (users hold no RBAC there), so the Deployments are all there is to count.

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
)

// OwnerShare is the share of one owner in a personal job type's namespace, as the shared
// stack exports it.
type OwnerShare struct {
	v1alpha1.OwnerShare `json:",inline"`
	// DefaultLimits are the namespace class's LimitRange default: the limits the API server
	// gives a container that sets none, and so what such a container counts for.
	DefaultLimits corev1.ResourceList `json:"defaultLimits,omitempty"`
}

// ownerShareOutput is TenantOutputOwnerShare of a personal job type's shared stack: the
// cluster's spec.personal.ownerShare and q's default limits; "" when the cluster sets no
// share.
func ownerShareOutput(c TenantCluster, q *tenant.Quota) (OptionalString, error) {
	p, err := c.PersonalSpec()
	if err != nil {
		return "", err
	}
	if p.OwnerShare.IsZero() {
		return "", nil
	}
	s := OwnerShare{OwnerShare: p.OwnerShare}
	if q != nil {
		s.DefaultLimits = corev1.ResourceList{}
		for name, v := range q.Default {
			qty, err := resource.ParseQuantity(v)
			if err != nil {
				return "", fmt.Errorf("class %s: default %s %q: %w", q.Class, name, v, err)
			}
			s.DefaultLimits[corev1.ResourceName(name)] = qty
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	return OptionalString(b), nil
}

// Share is the owner share of the tenant's job type; nil when it has none (an enterprise
// tenant, a cluster without spec.personal.ownerShare, or a stack made before the output).
func (o *TenantOutputs) Share() (*OwnerShare, error) {
	if o.OwnerShare == "" {
		return nil, nil
	}
	s := &OwnerShare{}
	if err := json.Unmarshal([]byte(o.OwnerShare), s); err != nil {
		return nil, fmt.Errorf("tenant output %q: %w", TenantOutputOwnerShare, err)
	}
	return s, nil
}

// Workload is one Deployment of a robot, as the share counts it.
type Workload struct {
	// Robot is the robot the Deployment belongs to (its instance label, "{robot}").
	Robot    string
	Replicas int32
	// Limits are its containers' limits, one list per container (nil: none set).
	Limits []corev1.ResourceList
}

// ServerWorkloads are the Deployments a server's spec asks for: its API and robot worker,
// each with one container, under robot (server.Robot.Name).
func ServerWorkloads(robot string, s *v1alpha1.TFRServerSpec) []Workload {
	w := func(ws v1alpha1.WorkloadSpec) Workload {
		n := int32(1) // the CRD's default
		if ws.Replicas != nil {
			n = *ws.Replicas
		}
		return Workload{Robot: robot, Replicas: n, Limits: []corev1.ResourceList{ws.Resources.Limits}}
	}
	return []Workload{w(s.APIWorker), w(s.RobotWorker)}
}

// usage is what workloads hold: their robots, and each shared resource's limits summed over
// replicas and containers, a container without a limit counting with the default.
type usage struct {
	robots    map[string]bool
	resources map[corev1.ResourceName]*resource.Quantity
}

func (s *OwnerShare) usage(ws []Workload) usage {
	u := usage{robots: map[string]bool{}, resources: map[corev1.ResourceName]*resource.Quantity{}}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		u.resources[name] = resource.NewQuantity(0, resource.DecimalSI)
	}
	for _, w := range ws {
		u.robots[w.Robot] = true
		for name, total := range u.resources {
			for _, l := range w.Limits {
				q, ok := l[name]
				if !ok {
					q = s.DefaultLimits[name] // zero when the class has none
				}
				for range w.Replicas {
					total.Add(q)
				}
			}
		}
	}
	return u
}

// ShareErrors refuses a personal robot (its Deployments as its spec asks, own) when its
// owner's robots would exceed the share: current are the Deployments the owner runs now; own
// replaces the robot's among them. The refusal is at spec.tenantRef (the owner)
// and names the share, what the owner holds without this robot, and what this robot asks.
// A robot that fits is never refused because of others already over the share (an admin
// lowered it): only what would grow is counted against it.
func (s *OwnerShare) ShareErrors(owner, robot string, current, own []Workload) field.ErrorList {
	if s == nil {
		return nil
	}
	var rest, now []Workload
	for _, w := range current {
		if w.Robot == robot {
			now = append(now, w)
		} else {
			rest = append(rest, w)
		}
	}
	before, after := s.usage(append(append([]Workload(nil), rest...), now...)), s.usage(append(append([]Workload(nil), rest...), own...))
	p := field.NewPath("spec", "tenantRef")
	var errs field.ErrorList
	if s.Robots != nil && !before.robots[robot] && len(after.robots) > int(*s.Robots) {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf(
			"owner %s already runs %d robots in this job type, and spec.personal.ownerShare.robots of the cluster is %d: delete a robot first",
			owner, len(after.robots)-1, *s.Robots)))
	}
	others := s.usage(rest)
	for _, l := range []struct {
		name corev1.ResourceName
		max  *resource.Quantity
	}{{corev1.ResourceCPU, s.CPU}, {corev1.ResourceMemory, s.Memory}} {
		a, b := after.resources[l.name], before.resources[l.name]
		if l.max == nil || a.Cmp(*l.max) <= 0 || a.Cmp(*b) <= 0 {
			continue
		}
		mine := a.DeepCopy()
		mine.Sub(*others.resources[l.name])
		errs = append(errs, field.Forbidden(p, fmt.Sprintf(
			"owner %s's robots would hold %s of %s limits (this robot %s, the others %s), over spec.personal.ownerShare.%s of the cluster, %s: lower this robot's replicas or limits, or delete a robot",
			owner, a.String(), l.name, mine.String(), others.resources[l.name].String(), l.name, l.max.String())))
	}
	return errs
}
