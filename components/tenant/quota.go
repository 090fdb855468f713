package tenant

import (
	"fmt"
	"slices"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Resource governance of the tenant namespace: its class (TFRCluster.spec.tenancy, chosen by
// TFRTenant.spec.class) becomes a LimitRange and two ResourceQuotas, which the API server
// enforces on every pod and volume of the namespace, whoever creates it: the applier, a
// chart, or the CNPG, MinIO and RabbitMQ operators. They are the provisioner's, like the
// isolation objects: ApplierRules grants nothing on resourcequotas or limitranges, so the
// applier cannot edit, delete or add to them (TestApplierCannotTouchQuotas).
//
//	object                  kind           what the API server refuses
//	tfrs-class              LimitRange     a container above max; a volume above maxVolumeSize
//	                                       (and fills defaults into containers that set none,
//	                                       so every pod has what the quota counts)
//	tfrs-class              ResourceQuota  cpu/memory requests and limits, storage, volumes,
//	                                       pods and Services above the class's totals; any
//	                                       NodePort or LoadBalancer Service
//	tfrs-priority-classes   ResourceQuota  any pod whose priority class is not allowed
//
// Why a quota scope, and how a pod without a priority class is treated (checked against
// kube-apiserver v1.37 on the local control plane, see TestTenancyQuotaEnforced): the quota
// evaluator matches a PriorityClass scope on the label set {PriorityClass:
// spec.priorityClassName}, and a pod without a class has no such label at all. So a NotIn
// scope alone matches it (a missing label is "not in" any list, "" among the values included)
// and hard pods "0" would refuse every ordinary pod. The scope is therefore two expressions,
// which must both match: Exists (the pod names a class) and NotIn the allowed ones (no NotIn
// when none is allowed: the API server refuses an empty list). A pod without a class is
// outside the scope and admitted; a pod naming system-node-critical, system-cluster-critical or
// any class not allowed is inside it and refused by the API server ("exceeded quota:
// tfrs-priority-classes"), whoever creates it. The Priority admission plugin runs before
// ResourceQuota and writes a cluster's globalDefault class into pods without one: on such a
// cluster, allow that class or every pod is refused. No ValidatingAdmissionPolicy is needed.
//
// A quota is enforced once the quota controller has written its status.hard: until then the
// API server admits anything. Both quotas therefore carry pulumi.com/waitFor on status.hard,
// and the namespace's name (what every dependant waits on) waits for them.

// Names of the class objects in every tenant namespace.
const (
	// ClassObjectName names the LimitRange and the ResourceQuota of the class.
	ClassObjectName = "tfrs-class"
	// PriorityQuotaName names the ResourceQuota that refuses pods of priority classes the
	// cluster does not allow.
	PriorityQuotaName = "tfrs-priority-classes"
	// LabelClass on the class objects names the class.
	LabelClass = "tfrs.io/class"
)

// Quota is a resolved class as the namespace's objects carry it.
type Quota struct {
	// Class is the class's name (a label on the objects).
	Class string
	// Hard are the ResourceQuota's limits by resource name (requests.cpu, pods, ...).
	Hard map[string]string
	// MaxVolumeSize bounds each PersistentVolumeClaim.
	MaxVolumeSize string
	// Default, DefaultRequest and Max are the LimitRange's per container values by resource
	// name (cpu, memory).
	Default, DefaultRequest, Max map[string]string
	// AllowedPriorityClasses are the priority classes pods may name; none besides "no
	// class" when empty.
	AllowedPriorityClasses []string
}

// PriorityScope is the priority quota's scope: pods that name a priority class (Exists) other
// than an allowed one (NotIn, when any is allowed).
func (q *Quota) PriorityScope() []ScopeRequirement {
	out := []ScopeRequirement{{Operator: "Exists"}}
	if allowed := slices.Compact(slices.Sorted(slices.Values(q.AllowedPriorityClasses))); len(allowed) > 0 {
		out = append(out, ScopeRequirement{Operator: "NotIn", Values: allowed})
	}
	return out
}

// ScopeRequirement is one PriorityClass expression of a quota's scopeSelector.
type ScopeRequirement struct {
	Operator string
	Values   []string
}

// waitForStatus makes the provider wait until the quota controller has processed a quota
// (status.hard set): before that the API server enforces nothing of it.
const waitForStatus = "jsonpath={.status.hard.pods}"

// addQuota registers the class objects in ns with the provisioner's options and returns the
// namespace's name once they exist, so nothing the applier creates starts before them (a pod
// admitted before its quota is never counted against it).
func (c *Namespace) addQuota(ctx *pulumi.Context, name string, ns pulumi.StringOutput, ready pulumi.StringOutput, q *Quota, opts []pulumi.ResourceOption) (pulumi.StringOutput, error) {
	if q.Class == "" || len(q.Hard) == 0 || q.MaxVolumeSize == "" {
		return ready, fmt.Errorf("namespace quota: a class name, its hard limits and its maxVolumeSize are required")
	}
	labels := map[string]string{LabelClass: q.Class}
	lr, err := corev1.NewLimitRange(ctx, name+"-limit-range", &corev1.LimitRangeArgs{
		Metadata: meta(ClassObjectName, ns, labels),
		Spec: &corev1.LimitRangeSpecArgs{Limits: corev1.LimitRangeItemArray{
			corev1.LimitRangeItemArgs{
				Type:           pulumi.String("Container"),
				Default:        pulumi.ToStringMap(q.Default),
				DefaultRequest: pulumi.ToStringMap(q.DefaultRequest),
				Max:            pulumi.ToStringMap(q.Max),
			},
			corev1.LimitRangeItemArgs{
				Type: pulumi.String("PersistentVolumeClaim"),
				Max:  pulumi.StringMap{"storage": pulumi.String(q.MaxVolumeSize)},
			},
		}},
	}, opts...)
	if err != nil {
		return ready, err
	}
	// After the LimitRange: a pod admitted between the two would lack the defaults the quota
	// requires (cpu and memory requests and limits) and be refused.
	after := append(slices.Clip(opts), pulumi.DependsOn([]pulumi.Resource{lr}))
	rq, err := corev1.NewResourceQuota(ctx, name+"-resource-quota", &corev1.ResourceQuotaArgs{
		Metadata: quotaMeta(ClassObjectName, ns, labels),
		Spec:     &corev1.ResourceQuotaSpecArgs{Hard: pulumi.ToStringMap(q.Hard)},
	}, after...)
	if err != nil {
		return ready, err
	}
	var scope corev1.ScopedResourceSelectorRequirementArray
	for _, r := range q.PriorityScope() {
		scope = append(scope, corev1.ScopedResourceSelectorRequirementArgs{
			ScopeName: pulumi.String("PriorityClass"), Operator: pulumi.String(r.Operator), Values: pulumi.ToStringArray(r.Values),
		})
	}
	pq, err := corev1.NewResourceQuota(ctx, name+"-priority-quota", &corev1.ResourceQuotaArgs{
		Metadata: quotaMeta(PriorityQuotaName, ns, labels),
		Spec: &corev1.ResourceQuotaSpecArgs{
			Hard:          pulumi.StringMap{"pods": pulumi.String("0")},
			ScopeSelector: &corev1.ScopeSelectorArgs{MatchExpressions: scope},
		},
	}, opts...)
	if err != nil {
		return ready, err
	}
	c.Keep(lr, rq, pq)
	return pulumi.All(ready, lr.Metadata.Name(), rq.Metadata.Name(), pq.Metadata.Name()).ApplyT(func(v []any) string {
		return v[0].(string)
	}).(pulumi.StringOutput), nil
}

// quotaMeta is a quota's metadata, awaited until the API server enforces it.
func quotaMeta(name string, ns pulumi.StringInput, labels map[string]string) *metav1.ObjectMetaArgs {
	m := meta(name, ns, labels)
	m.Annotations = pulumi.StringMap{"pulumi.com/waitFor": pulumi.String(waitForStatus)}
	return m
}
