package tenant

import (
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
)

// ExportedOutputsType is the type token of the exported-outputs component.
const ExportedOutputsType = "tfrs:tenant:ExportedOutputs"

// exportedOutputsApp is the app label of the exported Secret.
const exportedOutputsApp = "exported-outputs"

// ExportedOutputsArgs configure the exported-outputs component.
type ExportedOutputsArgs struct {
	Namespace pulumi.StringInput
	// SecretName is the Secret to write (the user's spec.exportOutputs.secretName).
	SecretName string
	// Labels are the user's labels (validated: no reserved prefix); the component adds its
	// app.kubernetes.io ones.
	Labels map[string]string
	// Data are the Secret's keys and values. Every value is made a Pulumi secret here,
	// whatever it is (a host name too): the Secret describes how to reach the data, so the
	// state holds none of it in plain text.
	Data map[string]pulumi.StringInput
	// Retain keeps the Secret on destroy (the tenant's Retain policy keeps the data it
	// describes).
	Retain bool
}

// ExportedOutputs is one Secret in the tenant namespace that carries the middleware's
// connection info for applications that are not TFRServers.
type ExportedOutputs struct {
	pulumi.ResourceState
	children.Set

	// SecretName is the Secret's name (known once it exists).
	SecretName pulumi.StringOutput `pulumi:"secretName"`
}

// NewExportedOutputs creates the exported-outputs component.
func NewExportedOutputs(ctx *pulumi.Context, name string, args *ExportedOutputsArgs, opts ...pulumi.ResourceOption) (*ExportedOutputs, error) {
	if args == nil || args.Namespace == nil || args.SecretName == "" || len(args.Data) == 0 {
		return nil, fmt.Errorf("exported outputs: namespace, secret name and data are required")
	}
	labels := appLabels(exportedOutputsApp)
	for k, v := range args.Labels {
		if _, ours := labels[k]; ours {
			return nil, fmt.Errorf("exported outputs: label %q is the component's own", k)
		}
		labels[k] = v
	}
	c := &ExportedOutputs{}
	if err := ctx.RegisterComponentResource(ExportedOutputsType, name, c, opts...); err != nil {
		return nil, err
	}
	data := pulumi.StringMap{}
	for k, v := range args.Data {
		data[k] = pulumi.ToSecret(v).(pulumi.StringOutput)
	}
	secret, err := corev1.NewSecret(ctx, name+"-secret", &corev1.SecretArgs{
		Metadata:   retainedSecret(meta(args.SecretName, args.Namespace, labels), args.Retain),
		Type:       pulumi.String("Opaque"),
		StringData: data,
	}, retain(args.Retain, pulumi.Parent(c))...)
	if err != nil {
		return nil, err
	}
	c.Keep(secret)
	c.SecretName = secret.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"secretName": c.SecretName})
}
