package tenant

import (
	"fmt"
	"strings"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
)

// Names and port of the tenant's MinIO.
const (
	// MinIOTenant is the MinIO Tenant resource.
	MinIOTenant = "minio"
	// MinIOService is the S3 Service. The MinIO operator creates it for every Tenant under
	// this fixed name (one Tenant per namespace) and reconciles its ports back to its own
	// whenever they differ, so the component does not create a competing Service.
	MinIOService = "minio"
	// MinIOPort is that Service's port without TLS (the operator maps 80 to MinIO's 9000).
	// In-mesh traffic is encrypted by Istio, so the Tenant asks for no certificate of its own.
	MinIOPort = 80
	// MinIOConfigSecret holds config.env, the root credentials as the operator reads them.
	MinIOConfigSecret = "minio-env-configuration"
)

// MinIOArgs configure the minio component.
type MinIOArgs struct {
	Namespace pulumi.StringInput
	// Image of the MinIO server.
	Image                     string
	Servers, VolumesPerServer int
	// Size and StorageClass of each volume.
	Size, StorageClass string
	Resources          Resources
	// Bucket is created by the operator (the tenant's default bucket).
	Bucket string
	// Login is the root user and password (user-given Secret keys "rootUser" (optional, else
	// User) and "rootPassword", or generated).
	Login      Login
	PullSecret string
	// Retain keeps the Tenant (and so its volumes) and its configuration on destroy.
	Retain bool
}

// MinIO is the tenant's object storage: a MinIO operator Tenant and its root credentials.
type MinIO struct {
	pulumi.ResourceState
	children.Set

	// Host is "minio.<namespace>.svc.cluster.local".
	Host pulumi.StringOutput `pulumi:"host"`
	Port pulumi.IntOutput    `pulumi:"port"`
	// AccessKey and SecretKey are the root credentials (both secret).
	AccessKey pulumi.StringOutput `pulumi:"accessKey"`
	SecretKey pulumi.StringOutput `pulumi:"secretKey"`
	Bucket    pulumi.StringOutput `pulumi:"bucket"`
}

// NewMinIO creates the minio component.
func NewMinIO(ctx *pulumi.Context, name string, args *MinIOArgs, opts ...pulumi.ResourceOption) (*MinIO, error) {
	if args == nil || args.Namespace == nil || args.Image == "" || args.Size == "" || args.Bucket == "" {
		return nil, fmt.Errorf("minio: namespace, image, size and bucket are required")
	}
	if args.Servers < 1 || args.VolumesPerServer < 1 {
		return nil, fmt.Errorf("minio: servers and volumes per server must be at least 1")
	}
	if err := args.Login.validate("minio"); err != nil {
		return nil, err
	}
	c := &MinIO{}
	if err := ctx.RegisterComponentResource(MinIOType, name, c, opts...); err != nil {
		return nil, err
	}
	user, password, err := resolveLogin(ctx, c, name, args.Namespace, args.Login, "rootUser", "rootPassword", true)
	if err != nil {
		return nil, err
	}
	env := pulumi.All(user, password).ApplyT(func(v []any) (string, error) {
		return ConfigEnv(v[0].(string), v[1].(string))
	}).(pulumi.StringOutput)
	config, err := corev1.NewSecret(ctx, name+"-configuration", &corev1.SecretArgs{
		Metadata:   retainedSecret(meta(MinIOConfigSecret, args.Namespace, appLabels(MinIOTenant)), args.Retain),
		StringData: pulumi.StringMap{"config.env": env},
	}, retain(args.Retain, pulumi.Parent(c))...)
	if err != nil {
		return nil, err
	}
	spec := crs.MinIOTenant{
		Image: args.Image, Servers: args.Servers, VolumesPerServer: args.VolumesPerServer,
		Size: args.Size, StorageClass: args.StorageClass, Resources: crs.Resources(args.Resources),
		ConfigSecret: crs.Flowing, Bucket: args.Bucket,
		// Pool pods; see noSidecar.
		PodAnnotations: noSidecar, PullSecret: args.PullSecret,
	}.Tenant()
	tenant, err := crs.New(ctx, name+"-tenant", crs.Args{
		Metadata: meta(MinIOTenant, args.Namespace, appLabels(MinIOTenant)),
		Spec:     spec,
		// The configuration Secret's name, so the Tenant waits for it.
		Flows: []crs.Flow{crs.At(config.Metadata.Name().Elem(), crs.MinIOConfigurationPath...)},
	}, retain(args.Retain, pulumi.Parent(c))...)
	if err != nil {
		return nil, err
	}
	c.Keep(config, tenant)
	c.Host = hostOf(MinIOService, args.Namespace)
	c.Port = pulumi.Int(MinIOPort).ToIntOutput()
	c.AccessKey = user
	c.SecretKey = password
	c.Bucket = pulumi.String(args.Bucket).ToStringOutput()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"host": c.Host, "port": c.Port, "accessKey": c.AccessKey, "secretKey": c.SecretKey, "bucket": c.Bucket,
	})
}

// ConfigEnv is the config.env the MinIO operator expects in a Tenant's configuration Secret.
// Values are double-quoted; a value the format cannot carry is refused rather than mangled.
func ConfigEnv(rootUser, rootPassword string) (string, error) {
	for what, v := range map[string]string{"root user": rootUser, "root password": rootPassword} {
		if v == "" || strings.ContainsAny(v, "\"\\$`\n\r") {
			return "", fmt.Errorf("minio: the %s is empty or contains a quote, backslash, $, backtick or newline", what)
		}
	}
	return "export MINIO_ROOT_USER=\"" + rootUser + "\"\nexport MINIO_ROOT_PASSWORD=\"" + rootPassword + "\"\n", nil
}
