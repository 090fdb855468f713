package tenant

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
)

// ExternalObjectStorageArgs configure the external object storage component: an
// S3-compatible endpoint the platform runs, in place of the tenant's MinIO.
type ExternalObjectStorageArgs struct {
	Namespace pulumi.StringInput
	// Endpoint is the S3 API's base URL (http(s)://host[:port]), Host and Port its parts.
	Endpoint, Host string
	Port           int
	Region, Bucket string
	// CredentialsSecret is the user-given Secret in the namespace with the keys "accessKey"
	// and "secretKey". It is read, never managed.
	CredentialsSecret string
	// Ensure checks the bucket with the credentials (and creates it, by the bucket policy).
	// Nil in a preview: a preview connects nowhere.
	Ensure func(accessKey, secretKey string) error
	// Unread, when rendering without a cluster, stands for both keys (Login.Unread).
	Unread string
}

// ExternalObjectStorage is the tenant's object storage on an external endpoint: the
// credentials read from the user's Secret and the bucket, checked (or made) before anything
// that uses it. It creates no Kubernetes object.
type ExternalObjectStorage struct {
	pulumi.ResourceState
	children.Set

	Endpoint pulumi.StringOutput `pulumi:"endpoint"`
	Host     pulumi.StringOutput `pulumi:"host"`
	Port     pulumi.IntOutput    `pulumi:"port"`
	Region   pulumi.StringOutput `pulumi:"region"`
	// AccessKey and SecretKey are the Secret's (both secret).
	AccessKey pulumi.StringOutput `pulumi:"accessKey"`
	SecretKey pulumi.StringOutput `pulumi:"secretKey"`
	// Bucket resolves once Ensure passed: whatever reads it waits for the check.
	Bucket pulumi.StringOutput `pulumi:"bucket"`
}

// NewExternalObjectStorage creates the external object storage component.
func NewExternalObjectStorage(ctx *pulumi.Context, name string, args *ExternalObjectStorageArgs, opts ...pulumi.ResourceOption) (*ExternalObjectStorage, error) {
	if args == nil || args.Namespace == nil || args.Endpoint == "" || args.Host == "" || args.Port < 1 ||
		args.Region == "" || args.Bucket == "" || args.CredentialsSecret == "" {
		return nil, fmt.Errorf("external object storage: namespace, endpoint, host, port, region, bucket and credentials Secret are required")
	}
	c := &ExternalObjectStorage{}
	if err := ctx.RegisterComponentResource(ObjectStorageType, name, c, opts...); err != nil {
		return nil, err
	}
	key, secret, err := resolveLogin(ctx, c, name, args.Namespace, Login{ExistingSecret: args.CredentialsSecret, Unread: args.Unread}, "accessKey", "secretKey", true)
	if err != nil {
		return nil, err
	}
	// The name is no secret; it only became one by waiting for the credentials.
	c.Bucket = pulumi.All(key, secret).ApplyT(func(v []any) (string, error) {
		k, s := v[0].(string), v[1].(string)
		if k == "" {
			return "", fmt.Errorf("%s: Secret %q has no key %q", name, args.CredentialsSecret, "accessKey")
		}
		if args.Ensure != nil {
			if err := args.Ensure(k, s); err != nil {
				return "", fmt.Errorf("%s: bucket %q at %s: %w", name, args.Bucket, args.Endpoint, err)
			}
		}
		return args.Bucket, nil
	}).(pulumi.StringOutput)
	c.Bucket = pulumi.Unsecret(c.Bucket).(pulumi.StringOutput)
	c.Endpoint = pulumi.String(args.Endpoint).ToStringOutput()
	c.Host = pulumi.String(args.Host).ToStringOutput()
	c.Port = pulumi.Int(args.Port).ToIntOutput()
	c.Region = pulumi.String(args.Region).ToStringOutput()
	c.AccessKey, c.SecretKey = key, secret
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"endpoint": c.Endpoint, "host": c.Host, "port": c.Port, "region": c.Region,
		"accessKey": c.AccessKey, "secretKey": c.SecretKey, "bucket": c.Bucket,
	})
}
