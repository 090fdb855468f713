package server

import (
	"encoding/base64"
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
)

// ConfzKey is the key of the Confz TOML in its Secret and the file name it is mounted as.
const ConfzKey = "confz.toml"

// ConfzArgs configure the confz component.
type ConfzArgs struct {
	Robot Robot
	// TOML is the merged Confz (stacks/confz): generated connection info with spec.confzData
	// on top. It holds passwords, so it must be a Pulumi secret.
	TOML pulumi.StringInput
	// Broker gives a robot of a personal tenant its own RabbitMQ vhost and user, the ones its
	// Confz's broker_url names; nil for a robot of an enterprise tenant, which uses the
	// tenant's.
	Broker *BrokerArgs
	// RedisUser gives a robot of a personal tenant its own Redis ACL user, the one its
	// Confz's [redis] username names; nil for a robot of an enterprise tenant.
	RedisUser *RedisUserArgs
	// Isolate, for a robot of a personal tenant, denies every inbound request to the robot's
	// pods that serve nothing (newInboundDenyPolicy). The API worker has its own policy.
	Isolate bool
}

// RedisUserArgs are the robot's own Redis ACL user (kit.RedisACLLine): User, allowed only the
// keys and channels under Prefix.
type RedisUserArgs struct {
	User, Prefix string
	// Password of User (a Pulumi secret, stable across runs); only its SHA-256 leaves.
	Password pulumi.StringInput
}

// BrokerArgs are the robot's own RabbitMQ vhost and user, made by the messaging topology
// operator from its custom resources.
type BrokerArgs struct {
	// Cluster is the tenant's RabbitmqCluster (in the robot's namespace).
	Cluster string
	// VHost and User name the robot's vhost and user (Robot.VHost).
	VHost, User string
	// Password of User (a Pulumi secret, stable across runs).
	Password pulumi.StringInput
	// Retain keeps the vhost, with its queues, when the robot goes (its job type's
	// deletionPolicy Retain): the topology operator otherwise deletes it with its resource.
	Retain bool
}

// Confz is the robot's Confz in a Secret ("{robot}-confz-<hash>", key ConfzKey) and the
// identities the robot runs under. Every robot gets its own ServiceAccount
// (Robot.ServiceAccount: no token, no RBAC), its mesh identity. A robot of a personal tenant
// also gets the RabbitMQ identity its Confz points at: a Vhost, a User whose credentials the
// operator imports from "{robot}-rabbitmq", and a Permission of that user on that vhost only
// (nothing grants the user the tenant's default vhost, so robots cannot read each other's
// queues); its Redis ACL user; and, with Isolate, the policy that denies every inbound
// request to its pods that serve nothing. Confz comes before every Job and worker in the
// server graph, so all of this exists before the robot's first pod.
type Confz struct {
	pulumi.ResourceState
	children.Set

	// SecretName is the Confz Secret.
	SecretName pulumi.StringOutput `pulumi:"secretName"`
}

// NewConfz creates the confz component.
func NewConfz(ctx *pulumi.Context, name string, args *ConfzArgs, opts ...pulumi.ResourceOption) (*Confz, error) {
	if args == nil || args.TOML == nil {
		return nil, fmt.Errorf("confz: the TOML is required")
	}
	if err := args.Robot.Validate(); err != nil {
		return nil, err
	}
	if b := args.Broker; b != nil && (b.Cluster == "" || b.VHost == "" || b.User == "" || b.Password == nil) {
		return nil, fmt.Errorf("confz: the broker needs a cluster, vhost, user and password")
	}
	if u := args.RedisUser; u != nil && (u.User == "" || u.Prefix == "" || u.Password == nil || !kit.ReRedisACLLine.MatchString(kit.RedisACLLine(u.User, u.Prefix, ""))) {
		return nil, fmt.Errorf("confz: the Redis user needs a robot's user name, its key prefix and a password")
	}
	c := &Confz{}
	if err := ctx.RegisterComponentResource(ConfzType, name, c, opts...); err != nil {
		return nil, err
	}
	r := args.Robot
	data := pulumi.StringMap{ConfzKey: pulumi.ToSecret(args.TOML).(pulumi.StringOutput)}
	sname, err := contentName(r, r.ConfzSecretBase(), data)
	if err != nil {
		return nil, err
	}
	s, err := corev1.NewSecret(ctx, name+"-secret", &corev1.SecretArgs{
		Metadata:   r.metaNamed(sname, ""),
		Type:       pulumi.String("Opaque"),
		StringData: data,
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	c.Keep(s)
	// The account names its stack (OwnerAnnotation), as the API Service does: it is the
	// robot's claim on its names from its first object to its destroy (stacks/kinds/robots.go).
	saMeta := r.meta(r.ServiceAccount(), "")
	if r.Owner != "" {
		saMeta.Annotations = pulumi.StringMap{OwnerAnnotation: pulumi.String(r.Owner)}
	}
	sa, err := corev1.NewServiceAccount(ctx, name+"-service-account", &corev1.ServiceAccountArgs{
		Metadata:                     saMeta,
		AutomountServiceAccountToken: pulumi.Bool(false),
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	c.Keep(sa)
	if args.Isolate {
		ap, err := newInboundDenyPolicy(ctx, c, name+"-deny-inbound", r)
		if err != nil {
			return nil, err
		}
		c.Keep(ap)
	}
	if b := args.Broker; b != nil {
		if err := c.broker(ctx, name, r, b); err != nil {
			return nil, err
		}
	}
	if u := args.RedisUser; u != nil {
		if err := c.redisUser(ctx, name, r, u); err != nil {
			return nil, err
		}
	}
	c.SecretName = s.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"secretName": c.SecretName})
}

// redisUser writes the robot's ACL line as its own key of the tenant's kit.RedisACLSecret: a
// SecretPatch (server-side apply under a field manager of this resource alone), so robots
// never overwrite each other's keys, and destroying the patch removes exactly this key (the
// provider relinquishes its fields), which takes the user out of Redis on the next sync.
func (c *Confz) redisUser(ctx *pulumi.Context, name string, r Robot, u *RedisUserArgs) error {
	line := u.Password.ToStringOutput().ApplyT(func(pw string) string {
		return base64.StdEncoding.EncodeToString([]byte(kit.RedisACLLine(u.User, u.Prefix, pw) + "\n"))
	}).(pulumi.StringOutput)
	p, err := corev1.NewSecretPatch(ctx, name+"-redis-user", &corev1.SecretPatchArgs{
		Metadata: &metav1.ObjectMetaPatchArgs{Name: pulumi.String(kit.RedisACLSecret), Namespace: pulumi.String(r.Namespace)},
		Data:     pulumi.StringMap{kit.RedisACLKey(u.User): pulumi.ToSecret(line).(pulumi.StringOutput)},
	}, pulumi.Parent(c))
	if err != nil {
		return err
	}
	c.Keep(p)
	return nil
}

// broker registers the robot's vhost, user and permission.
func (c *Confz) broker(ctx *pulumi.Context, name string, r Robot, b *BrokerArgs) error {
	// The keys the operator reads from an importCredentialsSecret.
	creds, err := corev1.NewSecret(ctx, name+"-rabbitmq-credentials", &corev1.SecretArgs{
		Metadata: r.meta(r.Name()+"-rabbitmq", ""),
		Type:     pulumi.String("Opaque"),
		StringData: pulumi.StringMap{
			"username": pulumi.String(b.User),
			"password": pulumi.ToSecret(b.Password).(pulumi.StringOutput),
		},
	}, pulumi.Parent(c))
	if err != nil {
		return err
	}
	custom := func(resourceName string, spec crs.Spec, flows []crs.Flow, opts ...pulumi.ResourceOption) (*apiextensions.CustomResource, error) {
		return crs.New(ctx, resourceName, crs.Args{Metadata: r.meta(r.Name(), ""), Spec: spec, Flows: flows},
			append([]pulumi.ResourceOption{pulumi.Parent(c)}, opts...)...)
	}
	vs := crs.Vhost(b.Cluster, b.VHost)
	if b.Retain {
		vs.DeletionPolicy = crs.VhostRetain
	}
	vhost, err := custom(name+"-vhost", vs, nil)
	if err != nil {
		return err
	}
	// The credentials Secret's name flows in, so the User waits for the Secret.
	user, err := custom(name+"-user", crs.User(b.Cluster, crs.Flowing),
		[]crs.Flow{crs.At(creds.Metadata.Name().Elem(), crs.UserCredentialsSecretPath...)})
	if err != nil {
		return err
	}
	// The operator would retry a permission whose vhost or user does not exist yet; creating
	// them first just saves the retries. The user's name flows in; nothing flows from the
	// vhost, hence DependsOn.
	perm, err := custom(name+"-permission", crs.FullPermission(b.Cluster, b.VHost, crs.Flowing),
		[]crs.Flow{crs.At(user.Metadata.Name().Elem(), crs.PermissionUserPath...)}, pulumi.DependsOn([]pulumi.Resource{vhost}))
	if err != nil {
		return err
	}
	c.Keep(creds, vhost, user, perm)
	return nil
}
