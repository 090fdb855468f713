package tenant

import (
	"fmt"
	"strconv"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/podsec"
)

// Names and ports of the tenant's Vector.
const (
	VectorService = "vector"
	// VectorHTTPPort takes JSON log events over HTTP; VectorNativePort takes Vector's own
	// protocol (another Vector, e.g. a node agent, forwarding).
	VectorHTTPPort   = 8080
	VectorNativePort = 6000
	vectorAPIPort    = 8686
	vectorConfigDir  = "/conf"
	vectorDataDir    = "/var/lib/vector"
)

// VectorArgs configure the vector component.
type VectorArgs struct {
	Namespace  pulumi.StringInput
	Image      string
	Replicas   int
	Resources  Resources
	PullSecret string
}

// Vector is the tenant's log aggregator: a Deployment (it reads no node files) that takes
// events pushed by the tenant's workloads, tags them with the namespace and writes them to
// stdout as JSON, where the cluster's log pipeline picks them up.
type Vector struct {
	pulumi.ResourceState
	children.Set

	// Endpoint is the HTTP intake, "http://vector.<namespace>.svc.cluster.local:8080".
	Endpoint pulumi.StringOutput `pulumi:"endpoint"`
}

// NewVector creates the vector component.
func NewVector(ctx *pulumi.Context, name string, args *VectorArgs, opts ...pulumi.ResourceOption) (*Vector, error) {
	if args == nil || args.Namespace == nil || args.Image == "" {
		return nil, fmt.Errorf("vector: namespace and image are required")
	}
	c := &Vector{}
	if err := ctx.RegisterComponentResource(VectorType, name, c, opts...); err != nil {
		return nil, err
	}
	config := args.Namespace.ToStringOutput().ApplyT(VectorConfig).(pulumi.StringOutput)
	cm, err := newConfigMap(ctx, c, name+"-config", VectorService, args.Namespace, pulumi.StringMap{"vector.yaml": config})
	if err != nil {
		return nil, err
	}
	volumes, mounts := configVolume(cm.Metadata.Name().Elem(), vectorConfigDir)
	// Vector's data_dir, writable by its non-root user (the image's is root's).
	volumes = append(volumes, corev1.VolumeArgs{Name: pulumi.String("data"), EmptyDir: &corev1.EmptyDirVolumeSourceArgs{}})
	mounts = append(mounts, corev1.VolumeMountArgs{Name: pulumi.String("data"), MountPath: pulumi.String(vectorDataDir)})
	ports := []Port{{Name: "http", Port: VectorHTTPPort}, {Name: "vector", Port: VectorNativePort}}
	dep, err := newDeployment(ctx, c, name+"-deployment", &workload{
		name: VectorService, namespace: args.Namespace, image: args.Image, replicas: args.Replicas,
		args:  []string{"--config", vectorConfigDir + "/vector.yaml"},
		ports: ports, volumes: volumes, mounts: mounts, resources: args.Resources,
		pullSecret: args.PullSecret, readyPath: "/health", readyPort: vectorAPIPort,
		podAnnotations: checksum(config), runAs: podsec.Vector,
	})
	if err != nil {
		return nil, err
	}
	svc, err := newService(ctx, c, name+"-service", VectorService, args.Namespace, ports)
	if err != nil {
		return nil, err
	}
	c.Keep(cm, dep, svc)
	c.Endpoint = hostOf(VectorService, args.Namespace).ApplyT(func(h string) string {
		return "http://" + h + ":" + strconv.Itoa(VectorHTTPPort)
	}).(pulumi.StringOutput)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"endpoint": c.Endpoint})
}

// VectorConfig is the aggregator configuration for namespace.
func VectorConfig(namespace string) string {
	return `api:
  enabled: true
  address: 0.0.0.0:` + strconv.Itoa(vectorAPIPort) + `
sources:
  http_in:
    type: http_server
    address: 0.0.0.0:` + strconv.Itoa(VectorHTTPPort) + `
    decoding:
      codec: json
  vector_in:
    type: vector
    address: 0.0.0.0:` + strconv.Itoa(VectorNativePort) + `
transforms:
  tag:
    type: remap
    inputs: [http_in, vector_in]
    source: |
      .tenant_namespace = "` + namespace + `"
sinks:
  stdout:
    type: console
    inputs: [tag]
    encoding:
      codec: json
`
}
