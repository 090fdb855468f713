package kinds

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// robotParents is a tenant stack up in namespace personal-chat, and the cluster's robot API
// Services and robot ServiceAccounts (name → owner annotation; "-" = present without one).
type robotParents struct{ services, accounts map[string]string }

func (robotParents) Cluster(context.Context, string) (stacks.TenantCluster, error) {
	return stacks.TenantCluster{}, errors.New("unused")
}

func (robotParents) Tenant(context.Context, string) (stacks.TenantOutputs, error) {
	return stacks.TenantOutputs{Namespace: "personal-chat", TenantType: string(v1alpha1.TenantPersonal)}, nil
}

func (p robotParents) RobotService(_ context.Context, namespace, name string) (bool, string, error) {
	return annotated(p.services, namespace+"/"+name)
}

func (p robotParents) RobotAccount(_ context.Context, namespace, name string) (bool, string, error) {
	return annotated(p.accounts, namespace+"/"+name)
}

func annotated(objs map[string]string, key string) (bool, string, error) {
	owner, ok := objs[key]
	if owner == "-" {
		owner = ""
	}
	return ok, owner, nil
}

// A second TFRServer of a robot whose names another server stack holds in the namespace is
// refused at spec.robotId before any program runs; the robot's own stack, an absent Service,
// and one made before the owner annotation existed are not.
func TestSecondServerOfARobotRefused(t *testing.T) {
	bob := &v1alpha1.TFRServer{ObjectMeta: metav1.ObjectMeta{Name: "bob", Namespace: "tfrs-system"},
		Spec: v1alpha1.TFRServerSpec{TenantRef: "chat", RobotID: "r-1", RobotType: "chat", Image: "img:1"}}
	tgt, obj, err := Prepare(bob)
	if err != nil {
		t.Fatal(err)
	}
	svc, sa := "personal-chat/chat-r-1-api", "personal-chat/chat-r-1-robot"
	for name, tc := range map[string]struct {
		services, accounts map[string]string
		refused            bool
	}{
		"absent":          {map[string]string{}, nil, false},
		"its own":         {map[string]string{svc: tgt.Stack}, map[string]string{sa: tgt.Stack}, false},
		"unannotated":     {map[string]string{svc: "-"}, map[string]string{sa: "-"}, false},
		"another's":       {map[string]string{svc: "server.tfrs-system.alice"}, nil, true},
		"another robot":   {map[string]string{"personal-chat/chat-r-2-api": "server.tfrs-system.alice"}, nil, false},
		"other namespace": {map[string]string{"acme/chat-r-1-api": "server.acme.alice"}, nil, false},
		// The API Service is gone but the robot's account is not: another stack's robot is
		// being deleted (its data removed), and its names are still its own.
		"another's account": {map[string]string{}, map[string]string{sa: "server.tfrs-system.alice"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			progs, err := ProgramsOf(t.Context(), tgt, obj, robotParents{tc.services, tc.accounts})
			if !tc.refused {
				if err != nil || progs == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want an invalid spec", err)
			}
			if len(inv.Errors) != 1 || inv.Errors[0].Field != "spec.robotId" || !strings.Contains(err.Error(), "server.tfrs-system.alice") {
				t.Errorf("refusal %v: want spec.robotId naming the owner", err)
			}
		})
	}
}

// shareParents is robotParents whose tenant's job type has an owner share of 2 robots and 1
// CPU, and whose owner already runs the Deployments in workloads (by owner label).
type shareParents struct {
	robotParents
	workloads map[string][]stacks.Workload
}

func (shareParents) Tenant(context.Context, string) (stacks.TenantOutputs, error) {
	return stacks.TenantOutputs{Namespace: "personal-chat", TenantType: string(v1alpha1.TenantPersonal),
		OwnerShare: `{"robots":2,"cpu":"1","defaultLimits":{"cpu":"100m","memory":"128Mi"}}`}, nil
}

func (p shareParents) OwnerWorkloads(_ context.Context, namespace, ownerLabel string) ([]stacks.Workload, error) {
	if namespace != "personal-chat" {
		return nil, errors.New("wrong namespace " + namespace)
	}
	return p.workloads[ownerLabel], nil
}

// A personal robot that would take its owner past the job type's share is refused at
// spec.tenantRef before any program runs; another owner's robots do not count against it.
func TestOwnerShareRefusedBeforeRun(t *testing.T) {
	robot := func(owner, id string) (Target, v1alpha1.Object) {
		s := &v1alpha1.TFRServer{ObjectMeta: metav1.ObjectMeta{Name: owner + "-" + id, Namespace: owner},
			Spec: v1alpha1.TFRServerSpec{TenantRef: owner, RobotID: id, RobotType: "chat", Image: "img:1"}}
		tgt, obj, err := Prepare(s)
		if err != nil {
			t.Fatal(err)
		}
		return tgt, obj
	}
	alice := server.OwnerLabelValue("tenant.alice.alice")
	oneContainer := []corev1.ResourceList{nil} // at the default limit, 100m
	two := []stacks.Workload{{Robot: "chat-r-1", Replicas: 1}, {Robot: "chat-r-2", Replicas: 1}}
	for name, tc := range map[string]struct {
		owner, id string
		workloads map[string][]stacks.Workload
		refused   string
	}{
		"first robot":            {"alice", "r-1", nil, ""},
		"third robot":            {"alice", "r-3", map[string][]stacks.Workload{alice: two}, "ownerShare.robots"},
		"one of the two again":   {"alice", "r-2", map[string][]stacks.Workload{alice: two}, ""},
		"another owner's robots": {"bob", "r-3", map[string][]stacks.Workload{alice: two}, ""},
		"over the CPU share":     {"alice", "r-2", map[string][]stacks.Workload{alice: {{Robot: "chat-r-1", Replicas: 9, Limits: oneContainer}}}, "ownerShare.cpu"},
		"within the CPU share":   {"alice", "r-2", map[string][]stacks.Workload{alice: {{Robot: "chat-r-1", Replicas: 8, Limits: oneContainer}}}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			tgt, obj := robot(tc.owner, tc.id)
			progs, err := ProgramsOf(t.Context(), tgt, obj, shareParents{robotParents{services: map[string]string{}}, tc.workloads})
			if tc.refused == "" {
				if err != nil || progs == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) || len(inv.Errors) != 1 || inv.Errors[0].Field != "spec.tenantRef" || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("err = %v, want one refusal at spec.tenantRef naming %s", err, tc.refused)
			}
		})
	}
}
