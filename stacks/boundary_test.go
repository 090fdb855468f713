package stacks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The Pulumi mocks do not run stack transforms, so these tests call the boundary's transform
// on the registration it would see and register its result: a violation must fail the run
// with a BoundaryError before the object reaches the engine. (The transform on real
// registrations, chart children included, is TestIsolationChartCannotLeaveTheNamespace.)

func objectArgs(typ, name string, ns pulumi.Input) *pulumi.ResourceTransformArgs {
	meta := pulumi.Map{"name": pulumi.String(name)}
	if ns != nil {
		meta["namespace"] = ns
	}
	return &pulumi.ResourceTransformArgs{Type: typ, Name: name, Custom: true, Props: pulumi.Map{"metadata": meta}}
}

// boundaryRegister runs the boundary of namespace "acme" over a, registers the result under
// mocks, and returns the run's error and what reached the engine.
func boundaryRegister(t *testing.T, owns bool, a *pulumi.ResourceTransformArgs) (*pulumi.ResourceTransformResult, error, *recordingMocks) {
	t.Helper()
	b := boundary{namespace: "acme", ownsNamespace: owns}
	r := b.transform(context.Background(), a)
	props := a.Props
	if r != nil {
		props = r.Props
	}
	m := &recordingMocks{stack: "tenant.tfrs-system.acme", prefix: "tfrs:tenant:"}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		var res pulumi.CustomResourceState
		return ctx.RegisterResource(a.Type, a.Name, props, &res)
	}, pulumi.WithMocks(tenantTestProject, "tenant.tfrs-system.acme", m))
	return r, err, m
}

// TestBoundary: what a tenant or server program may register, and that a violation fails the
// run with a BoundaryError naming the object and the rule, the object never registered.
func TestBoundary(t *testing.T) {
	for _, tc := range []struct {
		name     string
		owns     bool
		args     *pulumi.ResourceTransformArgs
		wantRule string // "" = allowed
	}{
		{"in its namespace", true, objectArgs("kubernetes:core/v1:ConfigMap", "cm", pulumi.String("acme")), ""},
		{"in its namespace, known later", true, objectArgs("kubernetes:core/v1:ConfigMap", "cm", pulumi.String("acme").ToStringOutput()), ""},
		{"its own Namespace", true, objectArgs("kubernetes:core/v1:Namespace", "acme", nil), ""},
		{"another namespace", true, objectArgs("kubernetes:core/v1:ConfigMap", "cm", pulumi.String("kube-system")), "an object in another namespace"},
		{"another namespace, known later", true, objectArgs("kubernetes:core/v1:ConfigMap", "cm", pulumi.String("kube-system").ToStringOutput()), "an object in another namespace"},
		{"no namespace (the provider's default)", true, objectArgs("kubernetes:apps/v1:Deployment", "d", nil), "a cluster-scoped object, or one without a namespace"},
		{"another Namespace", true, objectArgs("kubernetes:core/v1:Namespace", "kube-system", nil), "a Namespace other than the stack's own"},
		{"a server's tenant Namespace", false, objectArgs("kubernetes:core/v1:Namespace", "acme", nil), "a Namespace other than the stack's own"},
		{"cluster RBAC", true, objectArgs("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "pwn", nil), "a cluster-scoped object, or one without a namespace"},
		{"a cluster-scoped custom resource", true, objectArgs("kubernetes:cert-manager.io/v1:ClusterIssuer", "evil", nil), "a cluster-scoped object, or one without a namespace"},
		{"a webhook", true, objectArgs("kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration", "evil", nil), "a cluster-scoped object, or one without a namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err, m := boundaryRegister(t, tc.owns, tc.args)
			if tc.wantRule == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(m.regs) != 1 {
					t.Fatalf("registered %d objects, want 1", len(m.regs))
				}
				if _, known := tc.args.Props["metadata"].(pulumi.Map)["namespace"].(pulumi.String); known && r != nil {
					t.Error("an allowed object with a known namespace was changed")
				}
				return
			}
			var be *BoundaryError
			if !errors.As(err, &be) {
				t.Fatalf("error %v, want a BoundaryError", err)
			}
			check(t, "rule", be.Rule, tc.wantRule)
			check(t, "namespace", be.Namespace, "acme")
			if len(m.regs) != 0 {
				t.Errorf("the violating object reached the engine: %+v", m.regs)
			}
		})
	}
}

// TestBoundaryLeavesComponents: components (a chart, a manifest) and providers pass; the
// objects a component renders are checked one by one.
func TestBoundaryLeavesComponents(t *testing.T) {
	b := boundary{namespace: "acme", ownsNamespace: true}
	for _, a := range []*pulumi.ResourceTransformArgs{
		{Type: "kubernetes:helm.sh/v4:Chart", Custom: false, Props: pulumi.Map{"namespace": pulumi.String("kube-system")}},
		{Type: "kubernetes:yaml/v2:ConfigFile", Custom: false},
		{Type: "pulumi:providers:kubernetes", Custom: true},
	} {
		if r := b.transform(context.Background(), a); r != nil {
			t.Errorf("%s changed", a.Type)
		}
	}
}

// TestBoundaryErrorNamesTheObject is what a user reads.
func TestBoundaryErrorNamesTheObject(t *testing.T) {
	_, err, _ := boundaryRegister(t, true, objectArgs("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "pwn", nil))
	if err == nil {
		t.Fatal("accepted")
	}
	check(t, "message", (&BoundaryError{Object: "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding /pwn", Namespace: "acme",
		Rule: "a cluster-scoped object, or one without a namespace"}).Error(),
		`namespace boundary: kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding /pwn: a cluster-scoped object, or one without a namespace (this stack may write only to namespace "acme")`)
	if !strings.Contains(err.Error(), "ClusterRoleBinding /pwn") {
		t.Errorf("the run's error %q does not name the object", err)
	}
}
