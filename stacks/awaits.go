package stacks

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Readiness, and what it costs.
//
// The Kubernetes provider waits for every Service with a selector until its endpoints have
// "settled": after each Endpoints event it sleeps a fixed 10 seconds before it believes them
// (pulumi-kubernetes provider/pkg/await/service.go). Every Service of ours fronts a Deployment
// or StatefulSet of the same component, and that workload's own await already proves its pods
// Ready, which is what the endpoints reflect; the component, and so everything that depends on
// it, completes only after that workload. The settle therefore adds 10 s per Service and, as
// dependents wait for it, 10 s per level of the dependency graph, and proves nothing the
// workload await does not. The benchmark measured a tenant up of 28 s with it, most of it
// these sleeps.
//
// So every program registers skipServiceSettle: ClusterIP and NodePort Services (including
// those the Helm charts render) get pulumi.com/skipAwait. LoadBalancer Services keep the await:
// an external address is a fact only the await establishes. What is lost is the provider
// noticing a selector that matches no pod; the component tests pin each selector to its
// workload's labels instead.

const annotationSkipAwait = "pulumi.com/skipAwait"

// awaitTransforms registers the program-wide readiness transforms; every program calls it
// before it registers any resource.
func awaitTransforms(ctx *pulumi.Context) error {
	return ctx.RegisterResourceTransform(skipServiceSettle)
}

// skipServiceSettle marks in-cluster Services not to be awaited (see above). It leaves the
// resource untouched (nil) whenever it cannot see plainly that the Service is in-cluster.
func skipServiceSettle(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
	if !args.Custom || args.Type != "kubernetes:core/v1:Service" {
		return nil
	}
	if spec, ok := args.Props["spec"].(pulumi.Map); ok {
		switch t := spec["type"].(type) {
		case nil:
		case pulumi.String:
			if t != "ClusterIP" && t != "NodePort" {
				return nil
			}
		default:
			return nil // unknown until applied: keep the await
		}
	} else if args.Props["spec"] != nil {
		return nil
	}
	meta, ok := args.Props["metadata"].(pulumi.Map)
	if !ok {
		if args.Props["metadata"] != nil {
			return nil
		}
		meta = pulumi.Map{}
	}
	annotations := pulumi.Map{}
	switch a := meta["annotations"].(type) {
	case nil:
	case pulumi.Map:
		for k, v := range a {
			annotations[k] = v
		}
	case pulumi.StringMap:
		for k, v := range a {
			annotations[k] = v
		}
	default:
		return nil
	}
	if _, set := annotations[annotationSkipAwait]; set {
		return nil // the program decided already
	}
	annotations[annotationSkipAwait] = pulumi.String("true")
	newMeta := pulumi.Map{}
	for k, v := range meta {
		newMeta[k] = v
	}
	newMeta["annotations"] = annotations
	props := pulumi.Map{}
	for k, v := range args.Props {
		props[k] = v
	}
	props["metadata"] = newMeta
	return &pulumi.ResourceTransformResult{Props: props, Opts: args.Opts}
}
