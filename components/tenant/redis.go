package tenant

import (
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
)

// Names and port of the tenant's Redis.
const (
	RedisService     = "redis"
	RedisPort        = 6379
	RedisSecret      = "redis-credentials"
	RedisClaim       = "redis-data"
	redisPasswordKey = "password"
)

// RedisArgs configure the redis component.
type RedisArgs struct {
	Namespace pulumi.StringInput
	// Image of redis-stack-server.
	Image string
	// Size and StorageClass of the data volume.
	Size, StorageClass string
	Resources          Resources
	// Login gives the password (a user-given Secret's "password" key, or generated).
	Login      Login
	PullSecret string
	// Retain keeps the data volume on destroy.
	Retain bool
}

// Redis is redis-stack-server as a Deployment with a ReadWriteOnce volume, reachable at
// redis.<namespace> and requiring a password.
type Redis struct {
	pulumi.ResourceState
	children.Set

	// Host is "redis.<namespace>.svc.cluster.local".
	Host     pulumi.StringOutput `pulumi:"host"`
	Port     pulumi.IntOutput    `pulumi:"port"`
	Password pulumi.StringOutput `pulumi:"password"`
	// SecretName holds the password under "password" (for secretKeyRef).
	SecretName pulumi.StringOutput `pulumi:"secretName"`
}

// NewRedis creates the redis component.
func NewRedis(ctx *pulumi.Context, name string, args *RedisArgs, opts ...pulumi.ResourceOption) (*Redis, error) {
	if args == nil || args.Namespace == nil || args.Image == "" || args.Size == "" {
		return nil, fmt.Errorf("redis: namespace, image and size are required")
	}
	if err := args.Login.validate("redis"); err != nil {
		return nil, err
	}
	c := &Redis{}
	if err := ctx.RegisterComponentResource(RedisType, name, c, opts...); err != nil {
		return nil, err
	}
	_, password, err := resolveLogin(ctx, c, name, args.Namespace, args.Login, "", redisPasswordKey, false)
	if err != nil {
		return nil, err
	}
	secret, err := corev1.NewSecret(ctx, name+"-credentials", &corev1.SecretArgs{
		Metadata:   meta(RedisSecret, args.Namespace, appLabels(RedisService)),
		StringData: pulumi.StringMap{redisPasswordKey: password},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	pvc, err := newPVC(ctx, c, name+"-data", RedisClaim, args.Namespace, args.Size, args.StorageClass, "ReadWriteOnce", args.Retain)
	if err != nil {
		return nil, err
	}
	secretName := secret.Metadata.Name().Elem()
	ports := []Port{{Name: "redis", Port: RedisPort}}
	dep, err := newDeployment(ctx, c, name+"-deployment", &workload{
		name: RedisService, namespace: args.Namespace, image: args.Image, replicas: 1,
		// The image's entrypoint appends REDIS_ARGS to redis-server (after loading the stack
		// modules); Kubernetes expands $(REDIS_PASSWORD) from the Secret, so the password is
		// never written into the Deployment.
		env: corev1.EnvVarArray{
			secretEnv("REDIS_PASSWORD", secretName, redisPasswordKey),
			corev1.EnvVarArgs{Name: pulumi.String("REDIS_ARGS"), Value: pulumi.String("--requirepass $(REDIS_PASSWORD) --appendonly yes")},
		},
		ports: ports,
		volumes: corev1.VolumeArray{corev1.VolumeArgs{
			Name:                  pulumi.String("data"),
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSourceArgs{ClaimName: pvc.Metadata.Name().Elem()},
		}},
		mounts:     corev1.VolumeMountArray{corev1.VolumeMountArgs{Name: pulumi.String("data"), MountPath: pulumi.String("/data")}},
		resources:  args.Resources,
		pullSecret: args.PullSecret,
		recreate:   true,
	})
	if err != nil {
		return nil, err
	}
	svc, err := newService(ctx, c, name+"-service", RedisService, args.Namespace, ports)
	if err != nil {
		return nil, err
	}
	c.Keep(secret, pvc, dep, svc)
	c.Host = hostOf(RedisService, args.Namespace)
	c.Port = pulumi.Int(RedisPort).ToIntOutput()
	c.Password = password
	c.SecretName = secretName
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"host": c.Host, "port": c.Port, "password": c.Password, "secretName": c.SecretName})
}

// hostOf is ServiceHost of a Service in the namespace output.
func hostOf(service string, ns pulumi.StringInput) pulumi.StringOutput {
	return ns.ToStringOutput().ApplyT(func(ns string) string { return ServiceHost(service, ns) }).(pulumi.StringOutput)
}
