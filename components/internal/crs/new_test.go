package crs_test

import (
	"strings"
	"testing"

	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// New sends the builder's spec with each Flow's output in its field, secret where the output
// is, and the resource's type from the spec.
func TestNewSubstitutesFlows(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := crs.New(ctx, "perm", crs.Args{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String("p"), Namespace: pulumi.String("ns")},
			Spec:     crs.FullPermission("rabbitmq", "v", crs.Flowing),
			Flows:    []crs.Flow{crs.At(pulumi.ToSecret(pulumi.String("u")).(pulumi.StringOutput), crs.PermissionUserPath...)},
		})
		return err
	})
	r := m.Find(t, "kubernetes:rabbitmq.com/v1beta1:Permission", "perm")
	pt.Eq(t, "user", pt.At(t, pt.Plain(r.Inputs), "spec", "userReference", "name"), "u")
	pt.Eq(t, "vhost", pt.At(t, pt.Plain(r.Inputs), "spec", "vhost"), "v")
	if !r.Inputs["spec"].ObjectValue()["userReference"].ObjectValue()["name"].IsSecret() {
		t.Error("the flowing secret lost its secretness")
	}
}

// A Flowing placeholder without its Flow, and a Flow to a field the builder did not write,
// are refused before anything is registered.
func TestNewRefusesLooseFlows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flows []crs.Flow
		want  string
	}{
		{"placeholder left", nil, "spec field userReference.name is Flowing but no Flow sets it"},
		{"unknown field", []crs.Flow{crs.At(pulumi.String("u"), "userRef", "name")}, "flow to userRef: the spec has no such field"},
		{"through a leaf", []crs.Flow{crs.At(pulumi.String("u"), "vhost", "name")}, "vhost is not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
				_, err := crs.New(ctx, "perm", crs.Args{Spec: crs.FullPermission("rabbitmq", "v", crs.Flowing), Flows: tc.flows})
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
