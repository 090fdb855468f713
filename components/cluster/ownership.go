package cluster

import (
	"fmt"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	pmetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
)

// The ownership policies: ValidatingAdmissionPolicies the cluster stack installs, so the API
// server itself, for every writer, keeps TFRS from taking over or deleting what it did not
// create, and keeps tenant namespaces' Services and pods inside the tenant boundary.
//
// Ownership (OwnershipPolicyName). Every Kubernetes object a tenant or server stack registers
// carries LabelOwner, a hash of the stack's name (stacks/ownership.go adds it to every
// object, chart children included). Server-side apply upserts: a create that meets an
// existing object is an UPDATE at the API server, and the provider would silently merge into
// it (a user's Secret named by exportOutputs) and later delete it. The policy refuses:
//
//   - an UPDATE whose new object carries LabelOwner while the old one carries another value or
//     none: a stack never takes over a user's object or another stack's, in an up and in a
//     preview's server-side dry run alike;
//   - a DELETE by a namespace applier of an object without LabelOwner: destroy and
//     deletionPolicy Delete touch only what a stack created;
//   - an UPDATE by a namespace applier of an object without LabelOwner (a *Patch resource, the
//     only writes that do not carry the label): the applier changes nothing TFRS did not make.
//
// The label rather than an annotation: the Deployment controller copies a Deployment's
// annotations to its ReplicaSets, never its labels, so a derived object never looks owned.
//
// Upgrade path. Objects a stack created before marks existed carry none; the next up adds it,
// an unmarked-to-marked UPDATE the first rule refuses. Such an object is let through (the
// "legacy" variable) when it was written by pulumi-kubernetes (a managedFields entry of the
// provider's field manager: "pulumi-kubernetes-<random>" under server-side apply, and
// "pulumi-kubernetes" under client-side apply) AND created before the policy itself. The
// policy is its own parameter (paramKind ValidatingAdmissionPolicy, paramRef its own name),
// so its creationTimestamp is the moment marks came into force on this cluster, stable
// across ups. The trade-off, chosen over a one-time pass that lets the program mark what its
// state holds (the API server cannot tell that pass from a takeover, so it would need an
// exemption any writer could claim): until its next up, a stack may adopt an unmarked
// object some other Pulumi Kubernetes program wrote before the policy was installed. Every
// object made after it, and every object kubectl, Helm or a controller wrote, is refused.
// A recreated policy moves the cutoff forward: stacks not yet upgraded then fail closed,
// naming the object (docs/security/ownership.md says what the admin does).
//
// Tenant namespaces (TenantServicesPolicyName, TenantPodsPolicyName), selected by the label
// every tenant namespace carries, for every writer (TFRS's applier, a user with rights there,
// a middleware operator creating pods from a custom resource): Services only of type
// ClusterIP and without externalIPs; pod templates (pods and every workload kind) without
// pod (anti-)affinity terms reaching other namespaces' pods, and never the cluster's pull
// Secret in a volume or an env/envFrom reference (imagePullSecrets is its one use). Topology
// spread constraints count only the pod's own namespace, so they need no rule. An UPDATE
// that leaves spec unchanged is let through (an object from before the policy keeps getting
// its metadata updates); any change of spec must satisfy the rules.

// OwnershipType is the type token of the ownership component.
const OwnershipType = "tfrs:cluster:Ownership"

// The ownership mark.
const (
	// LabelOwner is the owning stack's mark (OwnerMark in stacks/ownership.go: a short hash
	// of its name, since label values are at most 63 characters).
	LabelOwner = "tfrs.io/owner"
	// AnnotationStack names the owning stack in full, for people and refusal messages.
	AnnotationStack = "tfrs.io/stack"
)

// Names of the policies (and of their bindings).
const (
	OwnershipPolicyName      = "tfrs-ownership"
	TenantServicesPolicyName = "tfrs-tenant-services"
	TenantPodsPolicyName     = "tfrs-tenant-pods"
)

// fieldManagerPrefix is the provider's field manager (pulumi/pulumi-kubernetes,
// provider.fieldManagerName): "pulumi-kubernetes" under client-side apply,
// "pulumi-kubernetes-<random>" under server-side apply.
const fieldManagerPrefix = "pulumi-kubernetes"

// OwnershipArgs configure the ownership component.
type OwnershipArgs struct {
	// Resources are the kinds tenant and server stacks write, by API group (stacks derives
	// them from the applier's and the provisioner's rules): the ownership rules cover them.
	Resources map[string][]string
	// ApplierName is the namespace appliers' ServiceAccount name.
	ApplierName string
	// TenantNamespaceLabel is the label key every tenant namespace carries (set by the
	// provisioner): the Service and pod rules apply where it is.
	TenantNamespaceLabel string
	// PullSecretName is the registry pull Secret's name in tenant namespaces ("" when the
	// cluster has none: no rule for it).
	PullSecretName string
}

// Policy is one ValidatingAdmissionPolicy and its binding, as the API server takes them.
type Policy struct {
	Policy  admissionv1.ValidatingAdmissionPolicy
	Binding admissionv1.ValidatingAdmissionPolicyBinding
}

// OwnershipPolicies are the policies of args: what the component applies and what a test
// creates directly.
func OwnershipPolicies(args *OwnershipArgs) ([]Policy, error) {
	if args == nil || len(args.Resources) == 0 || args.ApplierName == "" || args.TenantNamespaceLabel == "" {
		return nil, fmt.Errorf("ownership: resources, applier name and tenant namespace label are required")
	}
	// Both are written into CEL string literals.
	if len(validation.IsDNS1123Subdomain(args.ApplierName)) > 0 {
		return nil, fmt.Errorf("ownership: applier name %q is not a DNS subdomain", args.ApplierName)
	}
	if n := args.PullSecretName; n != "" && len(validation.IsDNS1123Subdomain(n)) > 0 {
		return nil, fmt.Errorf("ownership: pull secret name %q is not a DNS subdomain", n)
	}
	return []Policy{ownerPolicy(args), servicesPolicy(args), podsPolicy(args)}, nil
}

// ownerPolicy is the ownership rule (see above).
func ownerPolicy(a *OwnershipArgs) Policy {
	label := func(obj, field, key string) string {
		return fmt.Sprintf("%[1]s != null && has(%[1]s.metadata.%[2]s) && '%[3]s' in %[1]s.metadata.%[2]s ? %[1]s.metadata.%[2]s['%[3]s'] : ''", obj, field, key)
	}
	applier := fmt.Sprintf("request.userInfo.username.startsWith('system:serviceaccount:') && request.userInfo.username.endsWith(':%s')", a.ApplierName)
	newMarked := fmt.Sprintf("object != null && has(object.metadata.labels) && '%s' in object.metadata.labels", LabelOwner)
	unmarkedByApplier := "request.operation != '%s' || !variables.applier || variables.oldOwner != '' || variables.legacy"
	spec := admissionv1.ValidatingAdmissionPolicySpec{
		FailurePolicy: ptr(admissionv1.Fail),
		ParamKind:     &admissionv1.ParamKind{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		MatchConstraints: &admissionv1.MatchResources{
			ResourceRules: resourceRules(a.Resources, admissionv1.Update, admissionv1.Delete),
		},
		// Only marked objects and the appliers' requests are evaluated: every other write in
		// the cluster passes untouched, whatever these expressions would say.
		MatchConditions: []admissionv1.MatchCondition{{
			Name:       "marked-or-applier",
			Expression: "(" + newMarked + ") || (" + applier + ")",
		}},
		Variables: []admissionv1.Variable{
			{Name: "oldOwner", Expression: label("oldObject", "labels", LabelOwner)},
			{Name: "newOwner", Expression: label("object", "labels", LabelOwner)},
			{Name: "oldStack", Expression: label("oldObject", "annotations", AnnotationStack)},
			{Name: "target", Expression: "request.resource.resource + ' ' + (request.namespace != '' ? request.namespace + '/' : '') + request.name"},
			{Name: "applier", Expression: applier},
			{Name: "legacy", Expression: fmt.Sprintf("variables.oldOwner == '' && oldObject != null && "+
				"timestamp(string(oldObject.metadata.creationTimestamp)) < timestamp(string(params.metadata.creationTimestamp)) && "+
				"has(oldObject.metadata.managedFields) && oldObject.metadata.managedFields.exists(f, has(f.manager) && f.manager.startsWith('%s'))", fieldManagerPrefix)},
		},
		Validations: []admissionv1.Validation{
			{
				Expression: "request.operation != 'UPDATE' || variables.newOwner == '' || variables.newOwner == variables.oldOwner || variables.legacy",
				MessageExpression: "'tfrs ownership: ' + variables.target + (variables.oldOwner == '' ? " +
					fmt.Sprintf("' exists and was not created by TFRS (it carries no %s label)'", LabelOwner) +
					" : ' belongs to ' + (variables.oldStack != '' ? 'stack ' + variables.oldStack : 'another stack') + ' (" + LabelOwner + "=' + variables.oldOwner + ')') + " +
					"': a TFRS stack never takes over an object it did not create; pick another name or remove the object'",
				Reason: refused,
			},
			{
				Expression:        fmt.Sprintf(unmarkedByApplier, admissionv1.Delete),
				MessageExpression: fmt.Sprintf("'tfrs ownership: ' + variables.target + ' carries no %s label: the namespace applier deletes only objects a TFRS stack created'", LabelOwner),
				Reason:            refused,
			},
			{
				Expression:        fmt.Sprintf(unmarkedByApplier, admissionv1.Update),
				MessageExpression: fmt.Sprintf("'tfrs ownership: ' + variables.target + ' carries no %s label: the namespace applier changes only objects a TFRS stack created'", LabelOwner),
				Reason:            refused,
			},
		},
	}
	p := policy(OwnershipPolicyName, spec)
	p.Binding.Spec.ParamRef = &admissionv1.ParamRef{
		Name:                    OwnershipPolicyName,
		ParameterNotFoundAction: ptr(admissionv1.DenyAction),
	}
	return p
}

// tenantScope is what the tenant-namespace policies match: resources in namespaces that
// carry the tenant label, on CREATE and on an UPDATE that changes spec.
func tenantScope(a *OwnershipArgs, rules map[string][]string) (*admissionv1.MatchResources, []admissionv1.MatchCondition) {
	return &admissionv1.MatchResources{
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: a.TenantNamespaceLabel, Operator: metav1.LabelSelectorOpExists,
			}}},
			ResourceRules: resourceRules(rules, admissionv1.Create, admissionv1.Update),
		}, []admissionv1.MatchCondition{{
			Name:       "spec-written",
			Expression: "request.operation == 'CREATE' || oldObject == null || object.spec != oldObject.spec",
		}}
}

// servicesPolicy: Services in tenant namespaces are ClusterIP, without externalIPs.
func servicesPolicy(a *OwnershipArgs) Policy {
	match, conds := tenantScope(a, map[string][]string{"": {"services"}})
	return policy(TenantServicesPolicyName, admissionv1.ValidatingAdmissionPolicySpec{
		FailurePolicy:    ptr(admissionv1.Fail),
		MatchConstraints: match,
		MatchConditions:  conds,
		Validations: []admissionv1.Validation{
			{
				Expression:        "!has(object.spec.type) || object.spec.type == 'ClusterIP'",
				MessageExpression: "'spec.type: ' + object.spec.type + ' is refused in tenant namespace ' + request.namespace + ': a Service there is of type ClusterIP only (traffic enters through the mesh gateway)'",
				Reason:            refused,
			},
			{
				Expression:        "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
				MessageExpression: "'spec.externalIPs: refused in tenant namespace ' + request.namespace + ': a Service there takes no external IPs'",
				Reason:            refused,
			},
		},
	})
}

// PodTemplateResources are the kinds that carry a pod template, by API group: every way to
// make a pod, so no route (a controller, an operator) goes around the pod rules.
var PodTemplateResources = map[string][]string{
	"":      {"pods", "pods/ephemeralcontainers", "replicationcontrollers"},
	"apps":  {"daemonsets", "deployments", "replicasets", "statefulsets"},
	"batch": {"cronjobs", "jobs"},
}

// PodRule is one rule of the pod policy: the field it constrains (relative to the pod spec)
// and its CEL expression over variables.pod.
type PodRule struct {
	Field, Expression, Why string
}

// PodRules are the pod policy's rules, generated over every pod (anti-)affinity term list
// and every container list, so no variant of a field is left out.
func PodRules(pullSecret string) []PodRule {
	var out []PodRule
	inNamespace := func(t string) string {
		return fmt.Sprintf("!has(%[1]s.namespaceSelector) && (!has(%[1]s.namespaces) || %[1]s.namespaces.all(n, n == request.namespace))", t)
	}
	const why = "a term selects pods of its own namespace only (no namespaceSelector, no other namespace in namespaces)"
	for _, aff := range []string{"podAffinity", "podAntiAffinity"} {
		base := "variables.pod.?affinity.?" + aff
		out = append(out,
			PodRule{"affinity." + aff + ".requiredDuringSchedulingIgnoredDuringExecution",
				base + ".?requiredDuringSchedulingIgnoredDuringExecution.orValue([]).all(t, " + inNamespace("t") + ")", why},
			PodRule{"affinity." + aff + ".preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm",
				base + ".?preferredDuringSchedulingIgnoredDuringExecution.orValue([]).all(w, " + inNamespace("w.podAffinityTerm") + ")", why})
	}
	if pullSecret == "" {
		return out
	}
	not := fmt.Sprintf(".orValue('') != '%s'", pullSecret)
	secretWhy := fmt.Sprintf("the registry pull Secret %s is for imagePullSecrets only (a container that reads it holds the cluster registry credential)", pullSecret)
	for _, list := range []string{"containers", "initContainers", "ephemeralContainers"} {
		each := "variables.pod.?" + list + ".orValue([]).all(c, "
		out = append(out,
			PodRule{list + "[].env[].valueFrom.secretKeyRef.name", each + "c.?env.orValue([]).all(e, e.?valueFrom.?secretKeyRef.?name" + not + "))", secretWhy},
			PodRule{list + "[].envFrom[].secretRef.name", each + "c.?envFrom.orValue([]).all(e, e.?secretRef.?name" + not + "))", secretWhy})
	}
	vols := "variables.pod.?volumes.orValue([]).all(v, "
	return append(out,
		PodRule{"volumes[].secret.secretName", vols + "v.?secret.?secretName" + not + ")", secretWhy},
		PodRule{"volumes[].projected.sources[].secret.name", vols + "v.?projected.?sources.orValue([]).all(s, s.?secret.?name" + not + "))", secretWhy})
}

// podsPolicy: pod templates in tenant namespaces keep to PodRules.
func podsPolicy(a *OwnershipArgs) Policy {
	match, conds := tenantScope(a, PodTemplateResources)
	// The pod spec and its path, per kind (pods/ephemeralcontainers is a Pod).
	pick := func(pod, cronjob, template string) string {
		return "request.resource.resource == 'pods' ? " + pod + " : request.resource.resource == 'cronjobs' ? " + cronjob + " : " + template
	}
	spec := admissionv1.ValidatingAdmissionPolicySpec{
		FailurePolicy:    ptr(admissionv1.Fail),
		MatchConstraints: match,
		MatchConditions:  conds,
		Variables: []admissionv1.Variable{
			{Name: "pod", Expression: pick("object.spec", "object.spec.jobTemplate.spec.template.spec", "object.spec.template.spec")},
			{Name: "path", Expression: pick("'spec'", "'spec.jobTemplate.spec.template.spec'", "'spec.template.spec'")},
		},
	}
	for _, r := range PodRules(a.PullSecretName) {
		spec.Validations = append(spec.Validations, admissionv1.Validation{
			Expression:        r.Expression,
			MessageExpression: "variables.path + '." + r.Field + ": refused in tenant namespace ' + request.namespace + ': " + r.Why + "'",
			Reason:            refused,
		})
	}
	return policy(TenantPodsPolicyName, spec)
}

// policy is spec as a policy named name with its Deny binding of the same name.
func policy(name string, spec admissionv1.ValidatingAdmissionPolicySpec) Policy {
	return Policy{
		Policy: admissionv1.ValidatingAdmissionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       spec,
		},
		Binding: admissionv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        name,
				ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			},
		},
	}
}

// resourceRules are one rule per API group (sorted, for a stable diff) for ops.
func resourceRules(byGroup map[string][]string, ops ...admissionv1.OperationType) []admissionv1.NamedRuleWithOperations {
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var out []admissionv1.NamedRuleWithOperations
	for _, g := range groups {
		res := append([]string(nil), byGroup[g]...)
		sort.Strings(res)
		out = append(out, admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: ops,
			Rule: admissionv1.Rule{
				APIGroups: []string{g}, APIVersions: []string{"*"}, Resources: res, Scope: ptr(admissionv1.AllScopes),
			},
		}})
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// refused is every rule's reason: 422 Invalid, not 403 Forbidden. pulumi-kubernetes takes a
// 403 in a preview's server-side dry run for missing RBAC and falls back to a client-side
// preview that passes; a 422 fails the preview, so a refused takeover, NodePort Service or
// pod template shows in the preview, before anything changes, as well as in the up.
var refused = ptr(metav1.StatusReasonInvalid)

// Ownership is the ownership and tenant-namespace admission policies with their bindings.
type Ownership struct {
	pulumi.ResourceState
	children.Set

	// Policies are the names of the policies (and bindings).
	Policies pulumi.StringArrayOutput `pulumi:"policies"`
}

// vapSpec and bindingSpec are the upstream API types as crs specs: crs.New is the one place
// a typed spec becomes the provider's input, and OwnershipPolicies the one place the
// policies are written (the end-to-end test creates the very same objects).
type (
	vapSpec struct {
		admissionv1.ValidatingAdmissionPolicySpec
	}
	bindingSpec struct {
		admissionv1.ValidatingAdmissionPolicyBindingSpec
	}
)

func (vapSpec) TypeMeta() crs.TypeMeta {
	return crs.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"}
}

func (bindingSpec) TypeMeta() crs.TypeMeta {
	return crs.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"}
}

// NewOwnership creates the ownership component.
func NewOwnership(ctx *pulumi.Context, name string, args *OwnershipArgs, opts ...pulumi.ResourceOption) (*Ownership, error) {
	policies, err := OwnershipPolicies(args)
	if err != nil {
		return nil, err
	}
	c := &Ownership{}
	if err := ctx.RegisterComponentResource(OwnershipType, name, c, opts...); err != nil {
		return nil, err
	}
	var names pulumi.StringArray
	for _, p := range policies {
		n := p.Policy.Name
		short := strings.TrimPrefix(n, "tfrs-")
		vap, err := crs.New(ctx, name+"-"+short, crs.Args{
			Metadata: &pmetav1.ObjectMetaArgs{Name: pulumi.String(n)}, Spec: vapSpec{p.Policy.Spec},
		}, pulumi.Parent(c))
		if err != nil {
			return nil, err
		}
		// The binding after its policy: the ownership binding's parameter is the policy.
		b, err := crs.New(ctx, name+"-"+short+"-binding", crs.Args{
			Metadata: &pmetav1.ObjectMetaArgs{Name: pulumi.String(p.Binding.Name)}, Spec: bindingSpec{p.Binding.Spec},
		}, pulumi.Parent(c), pulumi.DependsOn([]pulumi.Resource{vap}))
		if err != nil {
			return nil, err
		}
		c.Keep(vap, b)
		names = append(names, vap.Metadata.Name().Elem())
	}
	c.Policies = names.ToStringArrayOutput()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"policies": c.Policies})
}
