package cluster

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
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
	spec := map[string]any{
		// "envoy" is Istio's built-in stdout access log provider.
		"accessLogging": []any{map[string]any{"providers": []any{map[string]any{"name": "envoy"}}}},
	}
	if args.TracingProvider != "" {
		spec["tracing"] = []any{map[string]any{
			"providers":                []any{map[string]any{"name": args.TracingProvider}},
			"randomSamplingPercentage": args.SamplingPercent,
		}}
	}
	t, err := apiextensions.NewCustomResource(ctx, name+"-telemetry", &apiextensions.CustomResourceArgs{
		ApiVersion:  pulumi.String(istioTelemetryV1),
		Kind:        pulumi.String("Telemetry"),
		Metadata:    &metav1.ObjectMetaArgs{Name: pulumi.String(MeshTelemetryName), Namespace: pulumi.String(IstioNamespace)},
		OtherFields: map[string]any{"spec": spec},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	c.Name = t.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": c.Name})
}
