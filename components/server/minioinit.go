package server

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
)

//go:embed scripts/minio-init.sh
var minioInitScript string

// MinIOInitArgs configure the minio-init component.
type MinIOInitArgs struct {
	Robot Robot
	// Image runs mc (DefaultMCImage when empty).
	Image string
	// Host and Port are the tenant's MinIO S3 endpoint (plain HTTP inside the mesh).
	Host string
	Port int
	// RootUser and RootPassword are the tenant's MinIO root login (secrets).
	RootUser, RootPassword pulumi.StringInput
	// Bucket is created when missing.
	Bucket string
	// User, for a robot of a personal tenant, is its own MinIO user, allowed Bucket only.
	User       *MinIOUser
	PullSecret string
}

// MinIOUser is a robot's own MinIO login.
type MinIOUser struct {
	AccessKey string
	SecretKey pulumi.StringInput
}

// MinIOInit is the robot's object-storage initialisation Job: its bucket and, for a personal
// robot, its user and policy.
type MinIOInit struct {
	pulumi.ResourceState
	children.Set

	JobName pulumi.StringOutput `pulumi:"jobName"`
}

// NewMinIOInit creates the minio-init component.
func NewMinIOInit(ctx *pulumi.Context, name string, args *MinIOInitArgs, opts ...pulumi.ResourceOption) (*MinIOInit, error) {
	if args == nil || args.Host == "" || args.Port <= 0 || args.RootUser == nil || args.RootPassword == nil || args.Bucket == "" {
		return nil, fmt.Errorf("minio-init: the tenant's endpoint and root login and a bucket are required")
	}
	if u := args.User; u != nil && (u.AccessKey == "" || u.SecretKey == nil) {
		return nil, fmt.Errorf("minio-init: the robot's user needs an access key and a secret key")
	}
	if err := args.Robot.Validate(); err != nil {
		return nil, err
	}
	c := &MinIOInit{}
	if err := ctx.RegisterComponentResource(MinIOInitType, name, c, opts...); err != nil {
		return nil, err
	}
	img := args.Image
	if img == "" {
		img = DefaultMCImage
	}
	main := jobContainer{
		Name: "mc", Image: img, Command: []string{"/bin/sh", JobDir + "/init.sh"},
		// mc writes its config under $HOME, which may be read-only.
		Env:       map[string]string{"BUCKET": args.Bucket, "MC_CONFIG_DIR": "/tmp/mc"},
		SecretEnv: map[string]string{"MC_HOST_tenant": "mc-host"},
	}
	endpoint := net.JoinHostPort(args.Host, strconv.Itoa(args.Port))
	files := map[string]pulumi.StringInput{
		"init.sh": pulumi.String(minioInitScript),
		"mc-host": pulumi.All(args.RootUser, args.RootPassword).ApplyT(func(v []any) string {
			return MCHost(endpoint, v[0].(string), v[1].(string))
		}).(pulumi.StringOutput),
	}
	if u := args.User; u != nil {
		policy := u.AccessKey + "-bucket"
		main.Env["ROBOT_USER"], main.Env["POLICY"] = u.AccessKey, policy
		main.SecretEnv["ROBOT_SECRET_KEY"] = "secret-key"
		files["secret-key"] = u.SecretKey
		files["policy.json"] = pulumi.String(BucketPolicy(args.Bucket))
	}
	j, err := newJob(ctx, c, name, args.Robot, KindMinIOInit, jobPod{Main: main, PullSecret: args.PullSecret}, files)
	if err != nil {
		return nil, err
	}
	c.Keep(j.secret, j.job)
	c.JobName = j.name
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"jobName": c.JobName})
}

// MCHost is the MC_HOST_<alias> value for an endpoint and login, user and password escaped
// so any character survives.
func MCHost(endpoint, user, password string) string {
	return (&url.URL{Scheme: "http", User: url.UserPassword(user, password), Host: endpoint}).String()
}

// BucketPolicy is the IAM policy of a personal robot's user: everything on its own bucket and
// its objects, nothing else (no other bucket, no admin).
func BucketPolicy(bucket string) string {
	doc := map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{map[string]any{
			"Effect":   "Allow",
			"Action":   []string{"s3:*"},
			"Resource": []string{"arn:aws:s3:::" + bucket, "arn:aws:s3:::" + bucket + "/*"},
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic("server: bucket policy: " + err.Error()) // plain strings cannot fail
	}
	return string(b)
}
