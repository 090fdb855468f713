package tenant

import (
	"fmt"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/podsec"
)

// Names and ports of the tenant's OpenTelemetry Collector.
const (
	OtelCollectorService = "otel-collector"
	OtelGRPCPort         = 4317
	OtelHTTPPort         = 4318
	otelHealthPort       = 13133
	otelConfigDir        = "/conf"
)

// OtelCollectorArgs configure the otel-collector component.
type OtelCollectorArgs struct {
	Namespace pulumi.StringInput
	Image     string
	Replicas  int
	Resources Resources
	// JaegerEndpoint is Jaeger's OTLP/gRPC "host:port" (the jaeger component's output).
	JaegerEndpoint pulumi.StringInput
	PullSecret     string
}

// OtelCollector receives OTLP traces from the tenant's workloads and exports them to Jaeger.
type OtelCollector struct {
	pulumi.ResourceState
	children.Set

	// Endpoint is the OTLP/gRPC endpoint for SDKs,
	// "http://otel-collector.<namespace>.svc.cluster.local:4317".
	Endpoint pulumi.StringOutput `pulumi:"endpoint"`
}

// NewOtelCollector creates the otel-collector component.
func NewOtelCollector(ctx *pulumi.Context, name string, args *OtelCollectorArgs, opts ...pulumi.ResourceOption) (*OtelCollector, error) {
	if args == nil || args.Namespace == nil || args.Image == "" || args.JaegerEndpoint == nil {
		return nil, fmt.Errorf("otel-collector: namespace, image and the Jaeger endpoint are required")
	}
	c := &OtelCollector{}
	if err := ctx.RegisterComponentResource(OtelCollectorType, name, c, opts...); err != nil {
		return nil, err
	}
	config := args.JaegerEndpoint.ToStringOutput().ApplyT(OtelConfig).(pulumi.StringOutput)
	cm, err := newConfigMap(ctx, c, name+"-config", OtelCollectorService, args.Namespace, pulumi.StringMap{"config.yaml": config})
	if err != nil {
		return nil, err
	}
	volumes, mounts := configVolume(cm.Metadata.Name().Elem(), otelConfigDir)
	ports := []Port{{Name: "otlp-grpc", Port: OtelGRPCPort}, {Name: "otlp-http", Port: OtelHTTPPort}}
	dep, err := newDeployment(ctx, c, name+"-deployment", &workload{
		name: OtelCollectorService, namespace: args.Namespace, image: args.Image, replicas: args.Replicas,
		args:  []string{"--config=" + otelConfigDir + "/config.yaml"},
		ports: ports, volumes: volumes, mounts: mounts, resources: args.Resources,
		pullSecret: args.PullSecret, readyPath: "/", readyPort: otelHealthPort,
		podAnnotations: checksum(config), runAs: podsec.OtelCollector,
	})
	if err != nil {
		return nil, err
	}
	svc, err := newService(ctx, c, name+"-service", OtelCollectorService, args.Namespace, ports)
	if err != nil {
		return nil, err
	}
	c.Keep(cm, dep, svc)
	c.Endpoint = hostOf(OtelCollectorService, args.Namespace).ApplyT(func(h string) string {
		return "http://" + h + ":" + strconv.Itoa(OtelGRPCPort)
	}).(pulumi.StringOutput)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"endpoint": c.Endpoint})
}

// OtelConfig is the collector configuration: OTLP in (gRPC and HTTP), batched, OTLP out to
// Jaeger. The hop to Jaeger is plain gRPC inside the mesh; the sidecars encrypt it.
func OtelConfig(jaegerEndpoint string) string {
	return `receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 0.0.0.0:` + strconv.Itoa(OtelGRPCPort) + `
      http:
        endpoint: 0.0.0.0:` + strconv.Itoa(OtelHTTPPort) + `
processors:
  batch: {}
exporters:
  otlp/jaeger:
    endpoint: ` + jaegerEndpoint + `
    tls:
      insecure: true
extensions:
  health_check:
    endpoint: 0.0.0.0:` + strconv.Itoa(otelHealthPort) + `
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlp/jaeger]
`
}
