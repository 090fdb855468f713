package server

import (
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
)

// EnvArgs configure the secret and config components: the robot's environment variables
// from spec.secretData or spec.configData. Keys are environment variable names (the CRD
// checks them).
type EnvArgs struct {
	Robot Robot
	Data  map[string]string
}

// envSource is what the secret and config components are: one object whose keys the workers
// load with envFrom. It always exists, even empty, because envFrom on a missing object keeps
// the pod from starting.
type envSource struct {
	pulumi.ResourceState
	children.Set

	// Name of the Secret or ConfigMap (an output, so the workers wait for it).
	Name pulumi.StringOutput `pulumi:"name"`
}

// Secret is "{robot}-secret-<hash>": spec.secretData (API keys such as OPENAI_API_KEY).
type Secret struct{ envSource }

// Config is "{robot}-config-<hash>": spec.configData (OPENAI_BASE_URL, TFS_PROFILE …).
type Config struct{ envSource }

// NewSecret creates the secret component. The values become a Pulumi secret, so they are
// encrypted in the state and masked in previews.
func NewSecret(ctx *pulumi.Context, name string, args *EnvArgs, opts ...pulumi.ResourceOption) (*Secret, error) {
	c := &Secret{}
	err := registerEnvSource(ctx, SecretType, name, args, &c.envSource, func(parent pulumi.Resource) (pulumi.Resource, pulumi.StringOutput, error) {
		data := secretStrings(args.Data)
		sname, err := contentName(args.Robot, args.Robot.SecretBase(), data)
		if err != nil {
			return nil, pulumi.StringOutput{}, err
		}
		sa := &corev1.SecretArgs{
			Metadata: args.Robot.metaNamed(sname, ""),
			Type:     pulumi.String("Opaque"),
		}
		// An empty secret map does not survive the round trip through the state (it comes
		// back absent), so it would show as a change, and a replacement, on every run.
		if len(args.Data) > 0 {
			sa.StringData = data
		}
		s, err := corev1.NewSecret(ctx, name+"-secret", sa, pulumi.Parent(parent))
		if err != nil {
			return nil, pulumi.StringOutput{}, err
		}
		return s, s.Metadata.Name().Elem(), nil
	}, opts...)
	return c, err
}

// NewConfig creates the config component.
func NewConfig(ctx *pulumi.Context, name string, args *EnvArgs, opts ...pulumi.ResourceOption) (*Config, error) {
	c := &Config{}
	err := registerEnvSource(ctx, ConfigType, name, args, &c.envSource, func(parent pulumi.Resource) (pulumi.Resource, pulumi.StringOutput, error) {
		data := pulumi.ToStringMap(args.Data)
		cname, err := contentName(args.Robot, args.Robot.ConfigMapBase(), data)
		if err != nil {
			return nil, pulumi.StringOutput{}, err
		}
		cm, err := corev1.NewConfigMap(ctx, name+"-configmap", &corev1.ConfigMapArgs{
			Metadata: args.Robot.metaNamed(cname, ""),
			Data:     data,
		}, pulumi.Parent(parent))
		if err != nil {
			return nil, pulumi.StringOutput{}, err
		}
		return cm, cm.Metadata.Name().Elem(), nil
	}, opts...)
	return c, err
}

// registerEnvSource registers component c of type typ and its one object, made by create.
func registerEnvSource(ctx *pulumi.Context, typ, name string, args *EnvArgs, c *envSource,
	create func(parent pulumi.Resource) (pulumi.Resource, pulumi.StringOutput, error), opts ...pulumi.ResourceOption,
) error {
	if args == nil {
		return fmt.Errorf("%s: nil args", typ)
	}
	if err := args.Robot.Validate(); err != nil {
		return err
	}
	if err := ctx.RegisterComponentResource(typ, name, c, opts...); err != nil {
		return err
	}
	obj, objName, err := create(c)
	if err != nil {
		return err
	}
	c.Keep(obj)
	c.Name = objName
	return ctx.RegisterResourceOutputs(c, pulumi.Map{"name": c.Name})
}
