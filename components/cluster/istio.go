package cluster

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
)

// IstioNamespace is where istiod runs and where mesh-wide Istio config (Telemetry) lives.
const IstioNamespace = clusterns.Istio

// CNIRelease is the Istio CNI node agent's release; its DaemonSet is "<release>-node"
// (upstream's name template gives "istio-cni-node").
const CNIRelease = "istio-cni"

// TracingProvider is a mesh extension provider that receives traces over OTLP/gRPC.
type TracingProvider struct {
	// Name is how Telemetry resources refer to it.
	Name string
	// Service is the collector's host, e.g. "otel-collector.observability.svc.cluster.local".
	Service string
	// Port is the collector's OTLP/gRPC port.
	Port int
}

// IstioArgs configure the Istio component.
type IstioArgs struct {
	// Base is the istio "base" chart (CRDs, cluster roles); Istiod the "istiod" chart; CNI the
	// "cni" chart (the node agent that sets up each pod's traffic redirection).
	Base, Istiod, CNI ChartRef
	// Ingress is the gateway that serves Kubernetes Ingress objects of class "istio" (ACME
	// HTTP-01 challenges): its Service name and its "istio" label value.
	IngressService, IngressSelector string
	// Tracing is the mesh's tracing provider, used by the istio-telemetry component.
	Tracing TracingProvider
}

// Istio installs the Istio control plane: base (CRDs), the CNI node agent, then istiod, all
// Helm charts.
//
// Why the CNI node agent: without it every injected pod carries the istio-init container,
// which needs NET_ADMIN and NET_RAW (as root) to write the pod's iptables rules, and tenant
// namespaces enforce Pod Security restricted, which refuses both. With it, the node agent
// (a privileged DaemonSet in istio-system, a platform namespace) writes the rules when the
// pod's network is set up, and injection adds only istio-validation, which runs as 1337 with
// every capability dropped.
type Istio struct {
	pulumi.ResourceState
	children.Set

	// Namespace of istiod.
	Namespace pulumi.StringOutput `pulumi:"namespace"`
}

// NewIstio creates the Istio component.
func NewIstio(ctx *pulumi.Context, name string, args *IstioArgs, opts ...pulumi.ResourceOption) (*Istio, error) {
	if args == nil {
		return nil, fmt.Errorf("istio: nil args")
	}
	c := &Istio{}
	if err := ctx.RegisterComponentResource(IstioType, name, c, opts...); err != nil {
		return nil, err
	}
	ns, err := newNamespace(ctx, c, name+"-namespace", IstioNamespace)
	if err != nil {
		return nil, err
	}
	nsName := ns.Metadata.Name().Elem()
	base, err := kit.NewChart(ctx, c, name+"-base", kit.Chart{Release: "istio-base", Namespace: nsName, Ref: args.Base, Values: map[string]any{
		"defaultRevision": "default",
	}})
	if err != nil {
		return nil, err
	}
	// Upstream installs the agent into istio-system (Istio's Helm install guide); its pods run
	// privileged on every node. It comes before istiod: a pod injected for CNI mode on a node
	// whose agent is missing would start without redirection.
	cni, err := kit.NewChart(ctx, c, name+"-cni", kit.Chart{Release: CNIRelease, Namespace: nsName, Ref: args.CNI},
		pulumi.DependsOn([]pulumi.Resource{base}))
	if err != nil {
		return nil, err
	}
	mesh := map[string]any{
		"ingressClass":          "istio",
		"ingressControllerMode": "STRICT",
		"ingressService":        args.IngressService,
		"ingressSelector":       args.IngressSelector,
	}
	if t := args.Tracing; t.Name != "" {
		mesh["extensionProviders"] = []any{map[string]any{
			"name":          t.Name,
			"opentelemetry": map[string]any{"service": t.Service, "port": t.Port},
		}}
	}
	// istiod registers webhooks that validate Istio's CRs, so the CRDs must be there first.
	istiod, err := kit.NewChart(ctx, c, name+"-istiod", kit.Chart{Release: "istiod", Namespace: nsName, Ref: args.Istiod, Values: map[string]any{
		"meshConfig": mesh,
		// The chart's own key (istio-discovery values.yaml `cni.enabled`, 1.30.3 to 1.32); the
		// injection template reads it as pilot.cni.enabled and then injects no istio-init.
		"cni": map[string]any{"enabled": true},
	}}, pulumi.DependsOn([]pulumi.Resource{base, cni}))
	if err != nil {
		return nil, err
	}
	c.Keep(ns, base, cni, istiod)
	c.Namespace = nsName
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"namespace": c.Namespace})
}
