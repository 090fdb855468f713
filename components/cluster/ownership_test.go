package cluster

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	admissionv1 "k8s.io/api/admissionregistration/v1"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

func testOwnershipArgs(pullSecret string) *OwnershipArgs {
	return &OwnershipArgs{
		Resources:            map[string][]string{"": {"secrets", "services"}, "apps": {"deployments"}, "security.istio.io": {"authorizationpolicies"}},
		ApplierName:          "tfrs-applier",
		TenantNamespaceLabel: "tfrs.io/tenant-type",
		PullSecretName:       pullSecret,
	}
}

// plainJSON is v as the JSON object the API server receives.
func plainJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOwnershipRendersThePolicies: the component applies exactly the policies and bindings
// OwnershipPolicies returns (what the e2e test creates directly), each binding after its
// policy.
func TestOwnershipRendersThePolicies(t *testing.T) {
	args := testOwnershipArgs("ccr-pull-secret")
	want, err := OwnershipPolicies(args)
	if err != nil {
		t.Fatal(err)
	}
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewOwnership(ctx, "ownership-policy", args)
		return err
	})
	const vapType, bindingType = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
	m.AssertChildren(t, OwnershipType,
		vapType+"::ownership-policy-ownership", bindingType+"::ownership-policy-ownership-binding",
		vapType+"::ownership-policy-tenant-services", bindingType+"::ownership-policy-tenant-services-binding",
		vapType+"::ownership-policy-tenant-pods", bindingType+"::ownership-policy-tenant-pods-binding")
	for _, p := range want {
		short := strings.TrimPrefix(p.Policy.Name, "tfrs-")
		vap := m.Find(t, vapType, "ownership-policy-"+short)
		b := m.Find(t, bindingType, "ownership-policy-"+short+"-binding")
		got := pt.Plain(vap.Inputs)
		pt.Eq(t, p.Policy.Name+" name", pt.At(t, got, "metadata", "name"), p.Policy.Name)
		pt.Eq(t, p.Policy.Name+" spec", got["spec"], plainJSON(t, p.Policy.Spec))
		pt.Eq(t, p.Policy.Name+" binding spec", pt.Plain(b.Inputs)["spec"], plainJSON(t, p.Binding.Spec))
		pt.Eq(t, p.Policy.Name+" binding deps", b.Deps, []string{vap.URN})
	}
}

func TestOwnershipPolicyShape(t *testing.T) {
	ps, err := OwnershipPolicies(testOwnershipArgs("ccr-pull-secret"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Policy{}
	for _, p := range ps {
		byName[p.Policy.Name] = p
		pt.Eq(t, p.Policy.Name+" binding", p.Binding.Spec.PolicyName, p.Policy.Name)
		pt.Eq(t, p.Policy.Name+" actions", p.Binding.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny})
		pt.Eq(t, p.Policy.Name+" failure policy", *p.Policy.Spec.FailurePolicy, admissionv1.Fail)
		for _, v := range p.Policy.Spec.Validations {
			if v.Reason == nil || *v.Reason != "Invalid" || v.MessageExpression == "" {
				t.Errorf("%s: validation %q without the Invalid reason (previews show it) and a message", p.Policy.Name, v.Expression)
			}
		}
	}
	own := byName[OwnershipPolicyName]
	// The ownership rule covers exactly the given kinds, on UPDATE and DELETE, in every namespace.
	got := map[string][]string{}
	for _, r := range own.Policy.Spec.MatchConstraints.ResourceRules {
		pt.Eq(t, "operations", r.Operations, []admissionv1.OperationType{admissionv1.Update, admissionv1.Delete})
		got[r.APIGroups[0]] = r.Resources
	}
	pt.Eq(t, "owned kinds", got, testOwnershipArgs("").Resources)
	if own.Policy.Spec.MatchConstraints.NamespaceSelector != nil {
		t.Error("the ownership rule holds in every namespace, but has a namespace selector")
	}
	// Its parameter is the policy itself: the cutoff of the upgrade path is its creation.
	pt.Eq(t, "param kind", *own.Policy.Spec.ParamKind, admissionv1.ParamKind{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"})
	pt.Eq(t, "param ref", own.Binding.Spec.ParamRef.Name, OwnershipPolicyName)
	pt.Eq(t, "param not found", *own.Binding.Spec.ParamRef.ParameterNotFoundAction, admissionv1.DenyAction)

	for _, name := range []string{TenantServicesPolicyName, TenantPodsPolicyName} {
		sel := byName[name].Policy.Spec.MatchConstraints.NamespaceSelector
		if sel == nil || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != "tfrs.io/tenant-type" || sel.MatchExpressions[0].Operator != "Exists" {
			t.Errorf("%s: namespace selector %+v, want the tenant label", name, sel)
		}
	}
	var podKinds []string
	for _, r := range byName[TenantPodsPolicyName].Policy.Spec.MatchConstraints.ResourceRules {
		podKinds = append(podKinds, r.Resources...)
	}
	pt.Eq(t, "pod kinds", strings.Join(podKinds, ","), "pods,pods/ephemeralcontainers,replicationcontrollers,daemonsets,deployments,replicasets,statefulsets,cronjobs,jobs")
	pt.Eq(t, "pod rules", len(byName[TenantPodsPolicyName].Policy.Spec.Validations), len(PodRules("ccr-pull-secret")))
}

// TestPodRulesAreGenerated: one rule per affinity term list and per container list and
// volume source that can name a Secret; the pull Secret rules only when there is one.
func TestPodRulesAreGenerated(t *testing.T) {
	with, without := PodRules("ccr-pull-secret"), PodRules("")
	pt.Eq(t, "rules without a pull secret", len(without), 4)
	pt.Eq(t, "rules with a pull secret", len(with), 4+3*2+2)
	fields := map[string]bool{}
	for _, r := range with {
		if fields[r.Field] {
			t.Errorf("field %s twice", r.Field)
		}
		fields[r.Field] = true
		if strings.ContainsAny(r.Why+r.Field, `'\`) {
			t.Errorf("%s: a quote or backslash in a text written into a CEL string literal", r.Field)
		}
		if strings.Contains(r.Field, "Secret") || strings.Contains(r.Field, "secret") {
			if !strings.Contains(r.Expression, "'ccr-pull-secret'") {
				t.Errorf("%s does not name the pull secret: %s", r.Field, r.Expression)
			}
		}
	}
	for _, f := range []string{"affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm",
		"initContainers[].envFrom[].secretRef.name", "ephemeralContainers[].env[].valueFrom.secretKeyRef.name", "volumes[].projected.sources[].secret.name"} {
		if !fields[f] {
			t.Errorf("no rule for %s", f)
		}
	}
}

func TestOwnershipRefusesBadArgs(t *testing.T) {
	for name, a := range map[string]*OwnershipArgs{
		"nil":              nil,
		"no resources":     {ApplierName: "a", TenantNamespaceLabel: "l"},
		"no applier":       {Resources: map[string][]string{"": {"secrets"}}, TenantNamespaceLabel: "l"},
		"bad applier":      {Resources: map[string][]string{"": {"secrets"}}, ApplierName: "a' || true || '", TenantNamespaceLabel: "l"},
		"bad pull secret":  {Resources: map[string][]string{"": {"secrets"}}, ApplierName: "a", TenantNamespaceLabel: "l", PullSecretName: "x' || true || '"},
		"no tenant label:": {Resources: map[string][]string{"": {"secrets"}}, ApplierName: "a"},
	} {
		if _, err := OwnershipPolicies(a); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
