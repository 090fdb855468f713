package tenant

import (
	"fmt"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
)

// Names and ports of the tenant's Jaeger (the chart's all-in-one mode, fullname "jaeger").
const (
	JaegerRelease          = "jaeger"
	JaegerQueryService     = "jaeger-query"
	JaegerQueryPort        = 16686
	JaegerCollectorService = "jaeger-collector"
	// JaegerOTLPGRPCPort is the collector's OTLP/gRPC port, where the OTel Collector exports.
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

// Jaeger is the Jaeger Helm chart in all-in-one mode with in-memory storage: traces are a
// debugging aid here, not data, so they are not kept across restarts.
type Jaeger struct {
	pulumi.ResourceState
	children.Set

	// QueryURL is the UI/API, "http://jaeger-query.<namespace>.svc.cluster.local:16686".
	QueryURL pulumi.StringOutput `pulumi:"queryURL"`
	// CollectorEndpoint is the OTLP/gRPC "host:port" of the collector.
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
	own := map[string]any{
		"fullnameOverride":   JaegerRelease,
		"provisionDataStore": map[string]any{"cassandra": false, "elasticsearch": false, "kafka": false},
		"allInOne":           map[string]any{"enabled": true},
		"storage":            map[string]any{"type": "memory"},
		"agent":              map[string]any{"enabled": false},
		"collector":          map[string]any{"enabled": false},
		"query":              map[string]any{"enabled": false},
	}
	chart, err := kit.NewChart(ctx, c, name+"-chart", kit.Chart{
		Release: JaegerRelease, Namespace: args.Namespace, Ref: args.Chart, Values: own, Images: args.Images, PullSecret: args.PullSecret,
	})
	if err != nil {
		return nil, err
	}
	c.Keep(chart)
	c.QueryURL = hostOf(JaegerQueryService, args.Namespace).ApplyT(func(h string) string {
		return "http://" + h + ":" + strconv.Itoa(JaegerQueryPort)
	}).(pulumi.StringOutput)
	c.CollectorEndpoint = hostOf(JaegerCollectorService, args.Namespace).ApplyT(func(h string) string {
		return h + ":" + strconv.Itoa(JaegerOTLPGRPCPort)
	}).(pulumi.StringOutput)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"queryURL": c.QueryURL, "collectorEndpoint": c.CollectorEndpoint})
}
