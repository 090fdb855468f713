package kit

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Actions of an AuthorizationPolicy.
const (
	// Allow admits what a rule matches; once a workload has any ALLOW policy, what none of
	// them matches is denied. Istio ORs ALLOW policies, so one can add callers, never remove.
	Allow = "ALLOW"
	// Deny refuses what a rule matches. DENY policies are evaluated before ALLOW ones and win.
	Deny = "DENY"
)

// AuthorizationPolicy is an Istio AuthorizationPolicy (security.istio.io/v1): the tenant
// namespace's allow-list and a personal robot's API isolation are both built from it.
type AuthorizationPolicy struct {
	// Metadata names the policy and its namespace.
	Metadata *metav1.ObjectMetaArgs
	// Selector picks the workloads (pod labels) it applies to; nil applies it to every
	// workload of the namespace.
	Selector map[string]string
	// Action is Allow or Deny.
	Action string
	// Rules are ORed: a request matches the policy when it matches any of them
	// (FromSource, WhenHeader).
	Rules []Rule
}

// Rule is one rule of an AuthorizationPolicy.
type Rule = map[string]any

// FromSource is a rule on the request's source: field is a source field ("namespaces",
// "notPrincipals" …), values its values. Istio knows a source's namespace and principal only
// for mTLS traffic.
func FromSource(field string, values ...string) Rule {
	return Rule{"from": []any{map[string]any{"source": map[string]any{field: toAnySlice(values)}}}}
}

// WhenHeader is a rule on a request header: field is "values" or "notValues". Envoy keys
// headers in lowercase, so header must be lowercase.
func WhenHeader(header, field string, values ...string) Rule {
	return Rule{"when": []any{map[string]any{"key": "request.headers[" + header + "]", field: toAnySlice(values)}}}
}

// NewAuthorizationPolicy creates p as the custom resource `name`, a child of parent.
func NewAuthorizationPolicy(ctx *pulumi.Context, parent pulumi.Resource, name string, p AuthorizationPolicy, opts ...pulumi.ResourceOption) (*apiextensions.CustomResource, error) {
	rules := make([]any, len(p.Rules))
	for i, r := range p.Rules {
		rules[i] = r
	}
	spec := map[string]any{"action": p.Action, "rules": rules}
	if p.Selector != nil {
		spec["selector"] = map[string]any{"matchLabels": ToAnyMap(p.Selector)}
	}
	return apiextensions.NewCustomResource(ctx, name, &apiextensions.CustomResourceArgs{
		ApiVersion:  pulumi.String(IstioSecurityV1),
		Kind:        pulumi.String("AuthorizationPolicy"),
		Metadata:    p.Metadata,
		OtherFields: map[string]any{"spec": spec},
	}, append([]pulumi.ResourceOption{pulumi.Parent(parent)}, opts...)...)
}
