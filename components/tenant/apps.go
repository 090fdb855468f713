package tenant

import (
	"fmt"
	"strconv"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/podsec"
)

// Names and ports of the tenant's TFRobot applications.
const (
	TFRobotFrontService = "tfrobot-front"
	// TFRobotFrontPort is the web front end's HTTP port (Service and container).
	TFRobotFrontPort = 80
	TFRSUtilsName    = "tfrs-utils"
)

// AppArgs configure a TFRobot application of the tenant.
type AppArgs struct {
	Namespace  pulumi.StringInput
	Image      string
	Replicas   int
	Resources  Resources
	PullSecret string
}

func (a *AppArgs) validate(what string) error {
	if a == nil || a.Namespace == nil || a.Image == "" {
		return fmt.Errorf("%s: namespace and image are required", what)
	}
	return nil
}

// TFRobotFront is the TFRobot web front end: a Deployment and its Service.
type TFRobotFront struct {
	pulumi.ResourceState
	children.Set

	// URL is "http://tfrobot-front.<namespace>.svc.cluster.local".
	URL pulumi.StringOutput `pulumi:"url"`
}

// NewTFRobotFront creates the tfrobot-front component.
func NewTFRobotFront(ctx *pulumi.Context, name string, args *AppArgs, opts ...pulumi.ResourceOption) (*TFRobotFront, error) {
	if err := args.validate("tfrobot-front"); err != nil {
		return nil, err
	}
	c := &TFRobotFront{}
	if err := ctx.RegisterComponentResource(TFRobotFrontType, name, c, opts...); err != nil {
		return nil, err
	}
	ports := []Port{{Name: "http", Port: TFRobotFrontPort}}
	dep, err := newDeployment(ctx, c, name+"-deployment", &workload{
		name: TFRobotFrontService, namespace: args.Namespace, image: args.Image, replicas: args.Replicas,
		ports: ports, resources: args.Resources, pullSecret: args.PullSecret, runAs: podsec.TFRobot,
	})
	if err != nil {
		return nil, err
	}
	svc, err := newService(ctx, c, name+"-service", TFRobotFrontService, args.Namespace, ports)
	if err != nil {
		return nil, err
	}
	c.Keep(dep, svc)
	c.URL = hostOf(TFRobotFrontService, args.Namespace).ApplyT(func(h string) string {
		if TFRobotFrontPort == 80 {
			return "http://" + h
		}
		return "http://" + h + ":" + strconv.Itoa(TFRobotFrontPort)
	}).(pulumi.StringOutput)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"url": c.URL})
}

// TFRSUtils is the TFRS utilities workload (no Service: nothing calls it).
type TFRSUtils struct {
	pulumi.ResourceState
	children.Set

	// Name of the Deployment.
	Name pulumi.StringOutput `pulumi:"name"`
}

// NewTFRSUtils creates the tfrs-utils component.
func NewTFRSUtils(ctx *pulumi.Context, name string, args *AppArgs, opts ...pulumi.ResourceOption) (*TFRSUtils, error) {
	if err := args.validate("tfrs-utils"); err != nil {
		return nil, err
	}
	c := &TFRSUtils{}
	if err := ctx.RegisterComponentResource(TFRSUtilsType, name, c, opts...); err != nil {
		return nil, err
	}
	d, err := newDeployment(ctx, c, name+"-deployment", &workload{
		name: TFRSUtilsName, namespace: args.Namespace, image: args.Image, replicas: args.Replicas,
		env: corev1.EnvVarArray{corev1.EnvVarArgs{
			Name:      pulumi.String("TFRS_NAMESPACE"),
			ValueFrom: &corev1.EnvVarSourceArgs{FieldRef: &corev1.ObjectFieldSelectorArgs{FieldPath: pulumi.String("metadata.namespace")}},
		}},
		resources: args.Resources, pullSecret: args.PullSecret, runAs: podsec.TFRobot,
	})
	if err != nil {
		return nil, err
	}
	c.Keep(d)
	c.Name = d.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": c.Name})
}
