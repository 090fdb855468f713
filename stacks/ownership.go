package stacks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/cluster"
	tenantc "github.com/tfrs-io/tfrs-operator/components/tenant"
)

// Ownership marks. Every Kubernetes object a tenant or server stack registers — its own
// components' and every object a chart or manifest renders — carries the owning stack's mark:
// the label cluster.LabelOwner (OwnerMark: a short hash of the stack name, since label values
// are at most 63 characters) and the annotation cluster.AnnotationStack (the name in full).
// The mark is what the cluster's ownership policy (components/cluster/ownership.go) checks:
// the API server refuses an update that would put this stack's mark on an object that
// carries another or none, so server-side apply can no longer take over a user's object, and
// the namespace applier deletes only marked objects.
//
// Like the namespace boundary, the mark is added by a stack-wide resource transform
// registered before the level's components, so every registration passes through it and no
// component has to remember it. The transform overrides a label a chart's values may have
// set: a tenant cannot wear another stack's mark. *Patch resources are not marked: a patch
// owns some fields of an object another stack made (a server's key of its tenant's Redis ACL
// Secret), never the object.

// OwnerMark is the value of cluster.LabelOwner for stack (its bare name).
func OwnerMark(stack string) string {
	sum := sha256.Sum256([]byte(stack))
	return hex.EncodeToString(sum[:16])
}

// marksOff is the upgrade test's switch: a stack run while it is set registers its objects
// as they were before marks existed.
var marksOff atomic.Bool

// WithoutOwnershipMarksForTest makes the stacks run until restore is called register their
// objects without marks, as a stack from before marks did. Only the upgrade test uses it.
func WithoutOwnershipMarksForTest() (restore func()) {
	marksOff.Store(true)
	return func() { marksOff.Store(false) }
}

// ownership is one stack's mark.
type ownership struct {
	stack string
}

// register installs the mark's transform on the stack: every resource registered after this
// call passes through it.
func (o ownership) register(ctx *pulumi.Context) error {
	if marksOff.Load() {
		return nil
	}
	return ctx.RegisterResourceTransform(o.transform)
}

// markable reports whether a registration of typ is a Kubernetes object the stack owns:
// not a component (a chart, a manifest), a provider, a Helm v3 release or a *Patch.
func markable(custom bool, typ string) bool {
	parts := strings.Split(typ, ":")
	if !custom || len(parts) != 3 || parts[0] != "kubernetes" {
		return false
	}
	return !strings.HasPrefix(parts[1], "helm.sh/") && !strings.HasSuffix(parts[2], "Patch")
}

// transform is the pulumi.ResourceTransform of the mark.
func (o ownership) transform(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
	if !markable(a.Custom, a.Type) {
		return nil
	}
	props := copyMap(a.Props)
	props["metadata"] = o.mark(a.Props["metadata"])
	return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
}

// mark is metadata with the stack's label and annotation set. Metadata not known yet (an
// output, or the boundary's poisoned value) is marked once it is.
func (o ownership) mark(metadata pulumi.Input) pulumi.Input {
	labels := map[string]string{cluster.LabelOwner: OwnerMark(o.stack)}
	annotations := map[string]string{cluster.AnnotationStack: o.stack}
	switch m := metadata.(type) {
	case nil:
		return pulumi.Map{"labels": pulumi.ToStringMap(labels), "annotations": pulumi.ToStringMap(annotations)}
	case pulumi.Map:
		out := copyMap(m)
		out["labels"] = withEntries(m["labels"], labels)
		out["annotations"] = withEntries(m["annotations"], annotations)
		return out
	}
	return pulumi.ToOutput(metadata).ApplyT(func(v any) map[string]any {
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m)+2)
		for k, x := range m {
			out[k] = x
		}
		out["labels"] = mergePlain(m["labels"], labels)
		out["annotations"] = mergePlain(m["annotations"], annotations)
		return out
	})
}

// withEntries is the string map v (absent, a map, or an output) with add set over it.
func withEntries(v pulumi.Input, add map[string]string) pulumi.Input {
	switch m := v.(type) {
	case nil:
		return pulumi.ToStringMap(add)
	case pulumi.Map:
		out := copyMap(m)
		for k, x := range add {
			out[k] = pulumi.String(x)
		}
		return out
	case pulumi.StringMap:
		out := make(pulumi.StringMap, len(m)+len(add))
		for k, x := range m {
			out[k] = x
		}
		for k, x := range add {
			out[k] = pulumi.String(x)
		}
		return out
	}
	return pulumi.ToOutput(v).ApplyT(func(x any) map[string]any { return mergePlain(x, add) })
}

// mergePlain is the resolved map x (nil when absent) with add set over it.
func mergePlain(x any, add map[string]string) map[string]any {
	out := map[string]any{}
	switch m := x.(type) {
	case map[string]any:
		for k, v := range m {
			out[k] = v
		}
	case map[string]string:
		for k, v := range m {
			out[k] = v
		}
	}
	for k, v := range add {
		out[k] = v
	}
	return out
}

// provisionerResources are the kinds the provisioner (the runner's own identity) applies
// into a tenant namespace: the Namespace, the applier's identity and the isolation and
// governance objects the applier may not touch (components/tenant/namespace.go).
var provisionerResources = map[string][]string{
	"":                          {"namespaces", "serviceaccounts", "secrets", "resourcequotas", "limitranges"},
	"rbac.authorization.k8s.io": {"roles", "rolebindings"},
	"networking.k8s.io":         {"networkpolicies"},
	"security.istio.io":         {"peerauthentications", "authorizationpolicies"},
}

// OwnedResources are the kinds tenant and server stacks write, by API group: every resource
// the applier's Role lets it change (tenant.ApplierRules) and the provisioner's kinds. The
// ownership policy covers exactly these; TestOwnershipCoversEveryRegisteredKind checks that
// every kind a rendered tenant or server registers is among them.
func OwnedResources() map[string][]string {
	out := map[string][]string{}
	add := func(group, res string) {
		if !strings.Contains(res, "/") && !slices.Contains(out[group], res) {
			out[group] = append(out[group], res)
		}
	}
	for _, r := range tenantc.ApplierRules {
		if !slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "update" || v == "patch" || v == "delete" }) {
			continue
		}
		for _, g := range r.Groups {
			for _, res := range r.Resources {
				add(g, res)
			}
		}
	}
	for g, rs := range provisionerResources {
		for _, res := range rs {
			add(g, res)
		}
	}
	for g := range out {
		slices.Sort(out[g])
	}
	return out
}

// OwnershipArgs are the cluster's ownership policies for a cluster whose tenant namespaces
// hold the pull Secret pullSecret ("" for none).
func OwnershipArgs(pullSecret string) *cluster.OwnershipArgs {
	return &cluster.OwnershipArgs{
		Resources:            OwnedResources(),
		ApplierName:          tenantc.ApplierName,
		TenantNamespaceLabel: LabelTenantType,
		PullSecretName:       pullSecret,
	}
}

// pullSecretName is the pull Secret tenant namespaces hold ("" without registry credentials).
func (p *clusterPlan) pullSecretName() string { return p.tenantPullSecretName }
