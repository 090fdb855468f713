package tenant

import (
	"fmt"
	"strconv"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
)

// Names and ports of the tenant's RabbitMQ.
const (
	// RabbitMQCluster is the RabbitmqCluster; the operator names its client Service after it.
	RabbitMQCluster = "rabbitmq"
	RabbitMQPort    = 5672
	// RabbitMQDefaultUserSecret is "<cluster>-default-user": when a Secret of that name
	// exists before the cluster, the cluster operator takes the default user from it instead
	// of generating one (its documented way to preset the default user).
	RabbitMQDefaultUserSecret = RabbitMQCluster + "-default-user"
	// RabbitMQDefaultVHost is the vhost the default user gets.
	RabbitMQDefaultVHost = "/"
)

// RabbitMQArgs configure the rabbitmq component.
type RabbitMQArgs struct {
	Namespace pulumi.StringInput
	// Image of RabbitMQ (with the management plugin).
	Image    string
	Replicas int
	// Size and StorageClass of each node's volume.
	Size, StorageClass string
	Resources          Resources
	// Login is the default user (user-given Secret keys "username" (optional, else User) and
	// "password", or generated).
	Login      Login
	PullSecret string
}

// RabbitMQ is the tenant's RabbitmqCluster and its default user.
type RabbitMQ struct {
	pulumi.ResourceState
	children.Set

	// Host is "rabbitmq.<namespace>.svc.cluster.local".
	Host     pulumi.StringOutput `pulumi:"host"`
	Port     pulumi.IntOutput    `pulumi:"port"`
	User     pulumi.StringOutput `pulumi:"user"`
	Password pulumi.StringOutput `pulumi:"password"`
	VHost    pulumi.StringOutput `pulumi:"vhost"`
}

// NewRabbitMQ creates the rabbitmq component.
func NewRabbitMQ(ctx *pulumi.Context, name string, args *RabbitMQArgs, opts ...pulumi.ResourceOption) (*RabbitMQ, error) {
	if args == nil || args.Namespace == nil || args.Image == "" || args.Size == "" || args.Replicas < 1 {
		return nil, fmt.Errorf("rabbitmq: namespace, image, size and at least one replica are required")
	}
	if err := args.Login.validate("rabbitmq"); err != nil {
		return nil, err
	}
	c := &RabbitMQ{}
	if err := ctx.RegisterComponentResource(RabbitMQType, name, c, opts...); err != nil {
		return nil, err
	}
	user, password, err := resolveLogin(ctx, c, name, args.Namespace, args.Login, "username", "password", false)
	if err != nil {
		return nil, err
	}
	host := hostOf(RabbitMQCluster, args.Namespace)
	conf := pulumi.All(user, password).ApplyT(func(v []any) (string, error) {
		return DefaultUserConf(v[0].(string), v[1].(string))
	}).(pulumi.StringOutput)
	// The same keys the operator writes into a Secret it generates (service binding format).
	secret, err := corev1.NewSecret(ctx, name+"-default-user", &corev1.SecretArgs{
		Metadata: meta(RabbitMQDefaultUserSecret, args.Namespace, appLabels(RabbitMQCluster)),
		StringData: pulumi.StringMap{
			"username":          user,
			"password":          password,
			"default_user.conf": conf,
			"host":              host,
			"port":              pulumi.String(strconv.Itoa(RabbitMQPort)),
			"provider":          pulumi.String("rabbitmq"),
			"type":              pulumi.String("rabbitmq"),
		},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	spec := crs.RabbitMQCluster{
		Replicas: args.Replicas, Image: args.Image, Size: args.Size, StorageClass: args.StorageClass,
		Resources: crs.Resources(args.Resources),
		// Server pods; see noSidecar.
		PodAnnotations: noSidecar, PullSecret: args.PullSecret,
	}.Cluster()
	// The operator looks for the default-user Secret only when it first creates the cluster:
	// the Secret must exist before, and nothing flows from it into the cluster's spec.
	cl, err := crs.New(ctx, name+"-cluster", crs.Args{
		Metadata: meta(RabbitMQCluster, args.Namespace, appLabels(RabbitMQCluster)),
		Spec:     spec,
	}, pulumi.Parent(c), pulumi.DependsOn([]pulumi.Resource{secret}))
	if err != nil {
		return nil, err
	}
	c.Keep(secret, cl)
	c.Host = host
	c.Port = pulumi.Int(RabbitMQPort).ToIntOutput()
	c.User = user
	c.Password = password
	c.VHost = pulumi.String(RabbitMQDefaultVHost).ToStringOutput()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"host": c.Host, "port": c.Port, "user": c.User, "password": c.Password, "vhost": c.VHost,
	})
}

// DefaultUserConf is the RabbitMQ conf.d snippet that sets the default user. A value with a
// newline would inject configuration, so it is refused.
func DefaultUserConf(user, password string) (string, error) {
	for what, v := range map[string]string{"user": user, "password": password} {
		if v == "" || containsNewline(v) {
			return "", fmt.Errorf("rabbitmq: the default %s is empty or contains a newline", what)
		}
	}
	return "default_user = " + user + "\ndefault_pass = " + password + "\n", nil
}

func containsNewline(s string) bool {
	for _, r := range s {
		if r == '\n' || r == '\r' {
			return true
		}
	}
	return false
}
