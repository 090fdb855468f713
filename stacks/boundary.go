package stacks

import (
	"context"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The namespace boundary of tenant and server programs. A tenant owns one namespace and
// nothing else: every Kubernetes object its stack registers — its own components' and every
// object a chart or manifest renders (Grafana, Jaeger, with the tenant's values) — must be in
// that namespace, and the only cluster-scoped object it may own is that Namespace itself. A
// server lives in its tenant's namespace and owns no Namespace at all.
//
// The rule is enforced by a stack-wide resource transform, registered before the level's
// components, so it sees every registration, the children of packaged components (Helm
// charts rendered by the provider) included, and no component has to remember it. A
// violating object is never sent to the API server: its metadata is replaced by a value that
// fails, so its registration — and with it the run — fails with a BoundaryError naming the
// object and the rule. A namespace still unknown at registration (an output of another
// resource) is checked the same way once it is known, before the object is applied.

// BoundaryError is an object outside its program's namespace boundary.
type BoundaryError struct {
	// Object is "<type> <namespace>/<name>" as registered ("" namespace: cluster-scoped).
	Object string
	// Namespace is the one namespace the program may write to.
	Namespace string
	// Rule says which part of the boundary the object crosses.
	Rule string
}

func (e *BoundaryError) Error() string {
	return fmt.Sprintf("namespace boundary: %s: %s (this stack may write only to namespace %q)", e.Object, e.Rule, e.Namespace)
}

// boundary is one program's namespace boundary.
type boundary struct {
	namespace string
	// ownsNamespace: the program may register the Namespace object of its namespace (a tenant
	// creates it; a server only lives in it).
	ownsNamespace bool
}

// register installs the boundary's transform on the stack: every resource registered after
// this call passes through it.
func (b boundary) register(ctx *pulumi.Context) error {
	return ctx.RegisterResourceTransform(b.transform)
}

// transform is the pulumi.ResourceTransform of the boundary. It leaves allowed objects
// untouched (nil) and poisons violating ones (see above).
func (b boundary) transform(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
	if !a.Custom || !strings.HasPrefix(a.Type, "kubernetes:") {
		return nil // components (charts, manifests) and providers: their objects pass here one by one
	}
	meta, _ := a.Props["metadata"].(pulumi.Map)
	name, _ := meta["name"].(pulumi.String)
	ns := meta["namespace"]
	if a.Type == "kubernetes:core/v1:Namespace" {
		if b.ownsNamespace && string(name) == b.namespace {
			return nil
		}
		return b.poison(a, b.violation(a.Type, "", string(name), "a Namespace other than the stack's own"))
	}
	switch v := ns.(type) {
	case pulumi.String:
		if string(v) == b.namespace {
			return nil
		}
		return b.poison(a, b.violation(a.Type, string(v), string(name), "an object in another namespace"))
	case nil:
		// Absent: cluster-scoped, or namespaced and left to the provider's default namespace.
		return b.poison(a, b.violation(a.Type, "", string(name), "a cluster-scoped object, or one without a namespace"))
	}
	// Not known yet (an output): check it once it is, before the object is applied.
	checked := copyMap(meta)
	checked["namespace"] = pulumi.ToOutput(ns).ApplyT(func(v any) (string, error) {
		if s, _ := v.(string); s == b.namespace {
			return s, nil
		}
		return "", b.violation(a.Type, fmt.Sprint(v), string(name), "an object in another namespace")
	}).(pulumi.StringOutput)
	props := copyMap(a.Props)
	props["metadata"] = checked
	return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
}

func (b boundary) violation(typ, ns, name, rule string) *BoundaryError {
	return &BoundaryError{Object: typ + " " + ns + "/" + name, Namespace: b.namespace, Rule: rule}
}

// poison replaces the object's metadata with an output that fails with err: the registration
// fails before the provider sees the object. The output hangs off a known value, so it fails
// in a preview as well as in an up.
func (b boundary) poison(a *pulumi.ResourceTransformArgs, err error) *pulumi.ResourceTransformResult {
	props := copyMap(a.Props)
	props["metadata"] = pulumi.String("").ToStringOutput().ApplyT(func(string) (map[string]any, error) { return nil, err })
	return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
}

// copyMap is a shallow copy: a transform must not edit the props it was handed.
func copyMap(m pulumi.Map) pulumi.Map {
	out := make(pulumi.Map, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
