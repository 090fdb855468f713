package tenant

import (
	"fmt"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
	"github.com/tfrs-io/tfrs-operator/components/internal/podsec"
)

// Names and ports of the tenant's Jaeger. Jaeger v2 (chart 4.x) is one Deployment and one
// Service, both named after the fullname, carrying the query UI/API and the OTLP receivers
// (templates/jaeger/jaeger-service.yaml of jaegertracing/helm-charts at jaeger-4.11.1).
const (
	JaegerRelease = "jaeger"
	// JaegerService is the chart's one Service: its fullname, fixed by fullnameOverride.
	JaegerService = JaegerRelease
	// JaegerQueryPort is the query UI/API port ("http-query").
	JaegerQueryPort = 16686
	// JaegerOTLPGRPCPort is the OTLP/gRPC receiver port ("otlp-grpc"), where the OTel
	// Collector exports.
	JaegerOTLPGRPCPort = 4317
)

// JaegerArgs configure the jaeger component.
type JaegerArgs struct {
	Namespace pulumi.StringInput
	// Chart is the jaegertracing "jaeger" chart (values merged over the component's).
	Chart      ChartRef
	Images     Images
	PullSecret string
}

// Jaeger is the Jaeger v2 Helm chart with its built-in configuration: all in one process, with
// in-memory storage (the chart passes no --config unless userconfig is set). Traces are a
// debugging aid here, not data, so they are not kept across restarts.
type Jaeger struct {
	pulumi.ResourceState
	children.Set

	// QueryURL is the UI/API, "http://jaeger.<namespace>.svc.cluster.local:16686".
	QueryURL pulumi.StringOutput `pulumi:"queryURL"`
	// CollectorEndpoint is the OTLP/gRPC "host:port", "jaeger.<namespace>.svc.cluster.local:4317".
	CollectorEndpoint pulumi.StringOutput `pulumi:"collectorEndpoint"`
}

// NewJaeger creates the jaeger component.
func NewJaeger(ctx *pulumi.Context, name string, args *JaegerArgs, opts ...pulumi.ResourceOption) (*Jaeger, error) {
	if args == nil || args.Namespace == nil {
		return nil, fmt.Errorf("jaeger: a namespace is required")
	}
	c := &Jaeger{}
	if err := ctx.RegisterComponentResource(JaegerType, name, c, opts...); err != nil {
		return nil, err
	}
	// v2 has no per-role switches (allInOne, agent, collector, query) nor provisionDataStore,
	// and storage.* only configures the optional Spark and Elasticsearch jobs: the fullname is
	// all TFRS sets.
	own := map[string]any{"fullnameOverride": JaegerRelease, "jaeger": jaegerPodSecurity()}
	chart, err := kit.NewChart(ctx, c, name+"-chart", kit.Chart{
		Release: JaegerRelease, Namespace: args.Namespace, Ref: args.Chart, Values: own, Images: args.Images, PullSecret: args.PullSecret,
	})
	if err != nil {
		return nil, err
	}
	c.Keep(chart)
	c.QueryURL = hostOf(JaegerService, args.Namespace).ApplyT(func(h string) string {
		return "http://" + h + ":" + strconv.Itoa(JaegerQueryPort)
	}).(pulumi.StringOutput)
	c.CollectorEndpoint = hostOf(JaegerService, args.Namespace).ApplyT(func(h string) string {
		return h + ":" + strconv.Itoa(JaegerOTLPGRPCPort)
	}).(pulumi.StringOutput)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"queryURL": c.QueryURL, "collectorEndpoint": c.CollectorEndpoint})
}

// jaegerPodSecurity are the chart values (jaegertracing/helm-charts jaeger 4.11.1) that keep
// its one pod Pod Security restricted. Upstream sets only the user (10001) in
// jaeger.podSecurityContext and an empty jaeger.securityContext: no runAsNonRoot, no seccomp,
// privilege escalation allowed, capabilities kept, all of which restricted refuses.
func jaegerPodSecurity() map[string]any {
	return map[string]any{
		"podSecurityContext": podsec.Values(podsec.PodContext(podsec.Jaeger)),
		"securityContext":    podsec.Values(podsec.ContainerContext()),
	}
}
