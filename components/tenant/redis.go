package tenant

import (
	_ "embed"
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
	"github.com/tfrs-io/tfrs-operator/components/internal/podsec"
)

//go:embed scripts/redis-acl.sh
var redisACLScript string

// Where the Redis pod keeps its ACL file (an emptyDir) and reads the robots' users (the
// RedisACLSecret, mounted).
const (
	redisACLDir      = "/acl"
	redisACLUsersDir = "/etc/redis-acl"
	redisACLScriptCM = "redis-acl-script"
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
	// RobotUsers turns on the robots' own ACL users (a personal job type's shared Redis):
	// the Secret kit.RedisACLSecret, whose keys the robots' server stacks write, and the
	// pod's init and sync containers that build the ACL file from it (see redisACL).
	RobotUsers bool
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
	w := &workload{
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
		runAs:      podsec.Redis,
	}
	if args.RobotUsers {
		acl, err := redisACL(ctx, c, name, args, w, secretName)
		if err != nil {
			return nil, err
		}
		c.Keep(acl...)
	}
	dep, err := newDeployment(ctx, c, name+"-deployment", w)
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

// redisACL gives the robots of a personal job type their own Redis users. Why a Secret the
// pod reads, and not a Job per robot running ACL SETUSER: users made with ACL SETUSER live
// only in memory (lost on a restart unless ACL SAVE wrote an aclfile), and a Job cannot take
// a user away when its robot goes. Here the users are declared: each robot's server stack
// owns one key of kit.RedisACLSecret (a server-side-apply patch; destroying the stack removes
// its key), the init container builds the ACL file from the Secret before redis-server
// starts (so a restart loses nobody), and the sync container rebuilds it and runs ACL LOAD
// whenever the mounted Secret changes (Redis then drops the connections of a removed user).
// Both containers run TFRS's script in the Redis image; only they and redis-server hold the
// default password, and the file holds only SHA-256 hashes of passwords. The default user
// keeps the tenant password (the one TFRS's own Jobs and enterprise robots use).
func redisACL(ctx *pulumi.Context, c pulumi.Resource, name string, args *RedisArgs, w *workload, passwordSecret pulumi.StringInput) ([]pulumi.Resource, error) {
	users, err := corev1.NewSecret(ctx, name+"-acl", &corev1.SecretArgs{
		Metadata: meta(kit.RedisACLSecret, args.Namespace, appLabels(RedisService)),
		Type:     pulumi.String("Opaque"),
	}, pulumi.Parent(c),
		// Its keys are the robots' (their server stacks' patches); this stack never diffs them.
		pulumi.IgnoreChanges([]string{"data", "stringData"}))
	if err != nil {
		return nil, err
	}
	script, err := corev1.NewConfigMap(ctx, name+"-acl-script", &corev1.ConfigMapArgs{
		Metadata: meta(redisACLScriptCM, args.Namespace, appLabels(RedisService)),
		Data:     pulumi.StringMap{"redis-acl.sh": pulumi.String(redisACLScript)},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	w.env = corev1.EnvVarArray{
		secretEnv("REDIS_PASSWORD", passwordSecret, redisPasswordKey),
		corev1.EnvVarArgs{Name: pulumi.String("REDIS_ARGS"), Value: pulumi.String("--aclfile " + redisACLDir + "/users.acl --appendonly yes")},
	}
	w.volumes = append(w.volumes,
		corev1.VolumeArgs{Name: pulumi.String("acl"), EmptyDir: &corev1.EmptyDirVolumeSourceArgs{}},
		corev1.VolumeArgs{Name: pulumi.String("acl-users"), Secret: &corev1.SecretVolumeSourceArgs{SecretName: users.Metadata.Name().Elem()}},
		corev1.VolumeArgs{Name: pulumi.String("acl-script"), ConfigMap: &corev1.ConfigMapVolumeSourceArgs{Name: script.Metadata.Name().Elem()}},
	)
	aclMount := corev1.VolumeMountArgs{Name: pulumi.String("acl"), MountPath: pulumi.String(redisACLDir)}
	w.mounts = append(w.mounts, aclMount)
	helper := func(mode string) corev1.ContainerArgs {
		return corev1.ContainerArgs{
			Name:    pulumi.String("acl-" + mode),
			Image:   pulumi.String(args.Image),
			Command: pulumi.ToStringArray([]string{"/bin/sh", "/tfrs/redis-acl.sh", mode}),
			Env: corev1.EnvVarArray{
				secretEnv("REDIS_PASSWORD", passwordSecret, redisPasswordKey),
				corev1.EnvVarArgs{Name: pulumi.String("USERS_DIR"), Value: pulumi.String(redisACLUsersDir)},
				corev1.EnvVarArgs{Name: pulumi.String("ACL_LINE"), Value: pulumi.String(kit.RedisACLLinePattern)},
			},
			VolumeMounts: corev1.VolumeMountArray{
				aclMount,
				corev1.VolumeMountArgs{Name: pulumi.String("acl-users"), MountPath: pulumi.String(redisACLUsersDir), ReadOnly: pulumi.Bool(true)},
				corev1.VolumeMountArgs{Name: pulumi.String("acl-script"), MountPath: pulumi.String("/tfrs"), ReadOnly: pulumi.Bool(true)},
			},
		}
	}
	w.initContainers = corev1.ContainerArray{helper("init")}
	w.sidecars = corev1.ContainerArray{helper("sync")}
	return []pulumi.Resource{users, script}, nil
}
