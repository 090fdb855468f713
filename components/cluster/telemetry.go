package cluster

import (
	"fmt"

	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"

	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
)

// MeshTelemetryName is the mesh-wide Telemetry. A Telemetry in the root namespace
// (IstioNamespace) without a selector applies to the whole mesh; tenants may refine it with
// their own per namespace.
const MeshTelemetryName = "mesh-default"

// IstioTelemetryArgs configure the istio-telemetry component.
type IstioTelemetryArgs struct {
	// TracingProvider is the extension provider defined by the Istio component; empty turns
	// tracing off.
	TracingProvider string
	// SamplingPercent of requests traced (0-100).
	SamplingPercent float64
}

// IstioTelemetry is the mesh-wide Istio Telemetry: Envoy access logs and tracing.
type IstioTelemetry struct {
	pulumi.ResourceState
	children.Set

	// Name of the Telemetry.
	Name pulumi.StringOutput `pulumi:"name"`
}

// NewIstioTelemetry creates the istio-telemetry component.
func NewIstioTelemetry(ctx *pulumi.Context, name string, args *IstioTelemetryArgs, opts ...pulumi.ResourceOption) (*IstioTelemetry, error) {
	if args == nil {
		return nil, fmt.Errorf("istio-telemetry: nil args")
	}
	if args.SamplingPercent < 0 || args.SamplingPercent > 100 {
		return nil, fmt.Errorf("istio-telemetry: sampling %v%% outside 0-100", args.SamplingPercent)
	}
	c := &IstioTelemetry{}
	if err := ctx.RegisterComponentResource(IstioTelemetryType, name, c, opts...); err != nil {
		return nil, err
	}
	t, err := crs.New(ctx, name+"-telemetry", crs.Args{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(MeshTelemetryName), Namespace: pulumi.String(IstioNamespace)},
		Spec:     crs.MeshTelemetry(args.TracingProvider, args.SamplingPercent),
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	c.Keep(t)
	c.Name = t.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": c.Name})
}
