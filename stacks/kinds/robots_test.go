package kinds

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// robotParents is a tenant stack up in namespace personal-chat, and the cluster's robot API
// Services (name → owner annotation; "-" = present without one).
type robotParents struct{ services map[string]string }

func (robotParents) Cluster(context.Context, string) (stacks.TenantCluster, error) {
	return stacks.TenantCluster{}, errors.New("unused")
}

func (robotParents) Tenant(context.Context, string) (stacks.TenantOutputs, error) {
	return stacks.TenantOutputs{Namespace: "personal-chat", TenantType: string(v1alpha1.TenantPersonal)}, nil
}

func (p robotParents) RobotService(_ context.Context, namespace, name string) (bool, string, error) {
	owner, ok := p.services[namespace+"/"+name]
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
	svc := "personal-chat/chat-r-1-api"
	for name, tc := range map[string]struct {
		services map[string]string
		refused  bool
	}{
		"absent":          {map[string]string{}, false},
		"its own":         {map[string]string{svc: tgt.Stack}, false},
		"unannotated":     {map[string]string{svc: "-"}, false},
		"another's":       {map[string]string{svc: "server.tfrs-system.alice"}, true},
		"another robot":   {map[string]string{"personal-chat/chat-r-2-api": "server.tfrs-system.alice"}, false},
		"other namespace": {map[string]string{"acme/chat-r-1-api": "server.acme.alice"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			progs, err := ProgramsOf(t.Context(), tgt, obj, robotParents{tc.services})
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
