package cluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
)

// SecretKeySelector names a key of a Secret.
type SecretKeySelector struct {
	Namespace, Name, Key string
}

// ImageRegistryArgs configure the image-registry component.
type ImageRegistryArgs struct {
	// Namespace the pull Secret is created in. Tenants copy its dockerconfigjson (a stack
	// output) into their namespaces; this copy is the source.
	Namespace string
	// SecretName is "{name}-pull-secret".
	SecretName string
	// Server, Username of the registry.
	Server, Username string
	// Password in plain text; or PasswordFrom, read from an existing Secret. Exactly one.
	Password     string
	PasswordFrom *SecretKeySelector
}

// ImageRegistry creates the kubernetes.io/dockerconfigjson pull Secret of the cluster's
// registry, and exports its content (secret) so every tenant namespace can get a copy.
type ImageRegistry struct {
	pulumi.ResourceState
	children.Set

	// SecretName of the pull Secret.
	SecretName pulumi.StringOutput `pulumi:"secretName"`
	// DockerConfigJSON is the Secret's .dockerconfigjson (a Pulumi secret).
	DockerConfigJSON pulumi.StringOutput `pulumi:"dockerConfigJSON"`
}

// NewImageRegistry creates the image-registry component.
func NewImageRegistry(ctx *pulumi.Context, name string, args *ImageRegistryArgs, opts ...pulumi.ResourceOption) (*ImageRegistry, error) {
	if args == nil || args.Namespace == "" || args.SecretName == "" || args.Server == "" || args.Username == "" {
		return nil, fmt.Errorf("image-registry: namespace, secret name, server and username are required")
	}
	if (args.Password == "") == (args.PasswordFrom == nil) {
		return nil, fmt.Errorf("image-registry: exactly one of password and password secret is required")
	}
	c := &ImageRegistry{}
	if err := ctx.RegisterComponentResource(ImageRegistryType, name, c, opts...); err != nil {
		return nil, err
	}

	var password pulumi.StringOutput
	if ref := args.PasswordFrom; ref != nil {
		// Read, not managed: the Secret belongs to whoever created it.
		src, err := corev1.GetSecret(ctx, name+"-password", pulumi.ID(ref.Namespace+"/"+ref.Name), nil, pulumi.Parent(c))
		if err != nil {
			return nil, err
		}
		// Listed like any child: the SDK attaches it to c only once its read is under way,
		// so a dependant that did not find it in the list would wait for it only sometimes.
		c.Keep(src)
		password = src.Data.ApplyT(func(data map[string]string) (string, error) {
			v, ok := data[ref.Key]
			if !ok {
				return "", fmt.Errorf("image-registry: Secret %s/%s has no key %q", ref.Namespace, ref.Name, ref.Key)
			}
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return "", fmt.Errorf("image-registry: key %q of Secret %s/%s is not base64", ref.Key, ref.Namespace, ref.Name)
			}
			return string(b), nil
		}).(pulumi.StringOutput)
	} else {
		password = pulumi.String(args.Password).ToStringOutput()
	}
	config := pulumi.ToSecret(password.ApplyT(func(p string) (string, error) {
		return DockerConfigJSON(args.Server, args.Username, p)
	})).(pulumi.StringOutput)

	secret, err := corev1.NewSecret(ctx, name+"-pull-secret", &corev1.SecretArgs{
		Metadata: &metav1.ObjectMetaArgs{
			Name:      pulumi.String(args.SecretName),
			Namespace: pulumi.String(args.Namespace),
		},
		Type: pulumi.String("kubernetes.io/dockerconfigjson"),
		Data: pulumi.StringMap{
			".dockerconfigjson": config.ApplyT(func(s string) string {
				return base64.StdEncoding.EncodeToString([]byte(s))
			}).(pulumi.StringOutput),
		},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	c.Keep(secret)
	c.SecretName = secret.Metadata.Name().Elem()
	c.DockerConfigJSON = config
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"secretName":       c.SecretName,
		"dockerConfigJSON": c.DockerConfigJSON,
	})
}

// DockerConfigJSON is the .dockerconfigjson of one registry login.
func DockerConfigJSON(server, username, password string) (string, error) {
	type entry struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"`
	}
	b, err := json.Marshal(struct {
		Auths map[string]entry `json:"auths"`
	}{Auths: map[string]entry{server: {
		Username: username,
		Password: password,
		Auth:     base64.StdEncoding.EncodeToString([]byte(username + ":" + password)),
	}}})
	return string(b), err
}
