package server

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
	"github.com/tfrs-io/tfrs-operator/components/routing"
)

// APIPort is the API worker's container port ("http"); its Service maps routing.UpstreamPort
// to it.
const APIPort = 8000

// RobotIDHeader is the header Istio checks in a personal robot's AuthorizationPolicy: Envoy
// keys headers in lowercase.
const RobotIDHeader = "x-tf-robotid"

// WorkerArgs configure a worker component.
type WorkerArgs struct {
	Robot Robot
	Pod   Pod
	// Args select the worker's role in the server image.
	Args     []string
	Replicas int
	// Checksum is the ChecksumAnnotation value (ChecksumOf).
	Checksum pulumi.StringInput
	// Isolation, for the API worker of a robot of a personal tenant, lets only the ingress
	// gateway reach the API pods, and only with this robot's X-TF-RobotId. Ignored by the
	// robot worker, which serves nothing.
	Isolation *Isolation
}

// Isolation is who may call a personal robot's API.
type Isolation struct {
	// GatewayPrincipal is the ingress gateway's mTLS identity,
	// "cluster.local/ns/<namespace>/sa/<service account>".
	GatewayPrincipal string
}

func (a *WorkerArgs) validate(what string) error {
	if a == nil || !a.Pod.valid() || a.Checksum == nil || a.Replicas < 0 {
		return fmt.Errorf("%s: image, secret, config map, confz, checksum and replicas >= 0 are required", what)
	}
	if i := a.Isolation; i != nil && i.GatewayPrincipal == "" {
		return fmt.Errorf("%s: isolation needs the gateway principal", what)
	}
	return a.Robot.Validate()
}

// APIWorker is the robot's HTTP API: a Deployment and the Service the gateway routes to, both
// named Robot.APIName, and for a personal robot its AuthorizationPolicy.
type APIWorker struct {
	pulumi.ResourceState
	children.Set

	DeploymentName pulumi.StringOutput `pulumi:"deploymentName"`
	ServiceName    pulumi.StringOutput `pulumi:"serviceName"`
	// Host is the Service's in-cluster DNS name, built from the created Service; it equals
	// routing.UpstreamHost for the robot.
	Host pulumi.StringOutput `pulumi:"host"`
	Port pulumi.IntOutput    `pulumi:"port"`
}

// NewAPIWorker creates the api-worker component.
func NewAPIWorker(ctx *pulumi.Context, name string, args *WorkerArgs, opts ...pulumi.ResourceOption) (*APIWorker, error) {
	if err := args.validate("api-worker"); err != nil {
		return nil, err
	}
	c := &APIWorker{}
	if err := ctx.RegisterComponentResource(APIWorkerType, name, c, opts...); err != nil {
		return nil, err
	}
	r := args.Robot
	ports := corev1.ContainerPortArray{corev1.ContainerPortArgs{Name: pulumi.String("http"), ContainerPort: pulumi.Int(APIPort)}}
	probe := &corev1.ProbeArgs{TcpSocket: &corev1.TCPSocketActionArgs{Port: pulumi.String("http")}, PeriodSeconds: pulumi.Int(10)}
	// The policy comes first: the API pods never run without it.
	var first []pulumi.Resource
	if iso := args.Isolation; iso != nil {
		ap, err := newIsolationPolicy(ctx, c, name+"-authorization-policy", r, iso)
		if err != nil {
			return nil, err
		}
		c.Keep(ap)
		first = append(first, ap)
	}
	dep, err := newWorkerDeployment(ctx, c, name+"-deployment", r.APIName(), ComponentAPIWorker, args, ports, probe, pulumi.DependsOn(first))
	if err != nil {
		return nil, err
	}
	svcMeta := r.meta(r.APIName(), ComponentAPIWorker)
	if r.Owner != "" {
		svcMeta.Annotations = pulumi.StringMap{OwnerAnnotation: pulumi.String(r.Owner)}
	}
	svc, err := corev1.NewService(ctx, name+"-service", &corev1.ServiceArgs{
		Metadata: svcMeta,
		Spec: &corev1.ServiceSpecArgs{
			Selector: pulumi.ToStringMap(r.selector(ComponentAPIWorker)),
			// "http" tells Istio the protocol, so the AuthorizationPolicy can match headers.
			Ports: corev1.ServicePortArray{corev1.ServicePortArgs{
				Name: pulumi.String("http"), Port: pulumi.Int(routing.UpstreamPort), TargetPort: pulumi.String("http"),
			}},
		},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	c.Keep(dep, svc)
	c.DeploymentName = dep.Metadata.Name().Elem()
	c.ServiceName = svc.Metadata.Name().Elem()
	c.Host = pulumi.All(svc.Metadata.Name().Elem(), svc.Metadata.Namespace().Elem()).ApplyT(func(v []any) string {
		return v[0].(string) + "." + v[1].(string) + ".svc." + routing.ClusterDomain
	}).(pulumi.StringOutput)
	c.Port = svc.Spec.Ports().Index(pulumi.Int(0)).Port()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"deploymentName": c.DeploymentName, "serviceName": c.ServiceName, "host": c.Host, "port": c.Port,
	})
}

// RobotWorker runs the robot's tasks: one Deployment, no Service.
type RobotWorker struct {
	pulumi.ResourceState
	children.Set

	DeploymentName pulumi.StringOutput `pulumi:"deploymentName"`
}

// NewRobotWorker creates the robot-worker component.
func NewRobotWorker(ctx *pulumi.Context, name string, args *WorkerArgs, opts ...pulumi.ResourceOption) (*RobotWorker, error) {
	if err := args.validate("robot-worker"); err != nil {
		return nil, err
	}
	c := &RobotWorker{}
	if err := ctx.RegisterComponentResource(RobotWorkerType, name, c, opts...); err != nil {
		return nil, err
	}
	dep, err := newWorkerDeployment(ctx, c, name+"-deployment", args.Robot.WorkerName(), ComponentRobotWorker, args, nil, nil)
	if err != nil {
		return nil, err
	}
	c.Keep(dep)
	c.DeploymentName = dep.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"deploymentName": c.DeploymentName})
}

// newWorkerDeployment is a worker's Deployment: the robot's Pod, run as the robot's
// ServiceAccount, its pods labelled for the component (podLabels) and annotated with the
// checksum.
func newWorkerDeployment(ctx *pulumi.Context, parent pulumi.Resource, resourceName, deployment, component string,
	a *WorkerArgs, ports corev1.ContainerPortArray, probe *corev1.ProbeArgs, opts ...pulumi.ResourceOption,
) (*appsv1.Deployment, error) {
	r := a.Robot
	return appsv1.NewDeployment(ctx, resourceName, &appsv1.DeploymentArgs{
		Metadata: r.workloadMeta(deployment, component),
		Spec: &appsv1.DeploymentSpecArgs{
			Replicas: pulumi.Int(a.Replicas),
			Selector: &metav1.LabelSelectorArgs{MatchLabels: pulumi.ToStringMap(r.selector(component))},
			Template: &corev1.PodTemplateSpecArgs{
				Metadata: &metav1.ObjectMetaArgs{
					Labels:      pulumi.ToStringMap(r.podLabels(component)),
					Annotations: pulumi.StringMap{ChecksumAnnotation: a.Checksum},
				},
				Spec: a.Pod.spec(r.ServiceAccount(), component, a.Args, ports, probe),
			},
		},
	}, append([]pulumi.ResourceOption{pulumi.Parent(parent)}, opts...)...)
}

// newInboundDenyPolicy refuses every inbound request to the robot's pods that serve nothing
// (LabelInbound InboundNone: the robot worker and the init Jobs). A DENY policy with one empty
// rule matches every request; like newIsolationPolicy it is a DENY because the namespace's
// ALLOW policy admits the whole namespace. It selects by label, not by component, so every
// pod a builder of this package makes is covered the moment it exists.
func newInboundDenyPolicy(ctx *pulumi.Context, parent pulumi.Resource, resourceName string, r Robot) (*apiextensions.CustomResource, error) {
	return crs.New(ctx, resourceName, crs.Args{
		Metadata: r.meta(r.Name()+"-deny-inbound", ""),
		Spec:     crs.AuthorizationPolicy(r.policySelector(InboundNone), crs.Deny, crs.Rule{}),
	}, pulumi.Parent(parent))
}

// newIsolationPolicy keeps everyone but the gateway, carrying this robot's X-TF-RobotId, away
// from the robot's API pods.
//
// It is a DENY policy because Istio ORs ALLOW policies: the namespace's "tenant-isolation"
// ALLOW policy admits every workload of the (shared) namespace, so a per-robot ALLOW could
// add callers but never remove any. DENY policies are evaluated first and win. A request is
// denied when ANY rule matches: (1) its mTLS peer is not the gateway — other robots, jobs,
// anything else in the mesh — or (2) its X-TF-RobotId is not this robot's, so a request the
// gateway routed for another robot (or one without the header) never lands here.
func newIsolationPolicy(ctx *pulumi.Context, parent pulumi.Resource, resourceName string, r Robot, iso *Isolation) (*apiextensions.CustomResource, error) {
	return crs.New(ctx, resourceName, crs.Args{
		Metadata: r.meta(r.APIName(), ComponentAPIWorker),
		Spec: crs.AuthorizationPolicy(r.selector(ComponentAPIWorker), crs.Deny,
			crs.FromNotPrincipals(iso.GatewayPrincipal),
			crs.WhenHeaderNot(RobotIDHeader, r.ID)),
	}, pulumi.Parent(parent))
}
