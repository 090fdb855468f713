// Package smoke is the smallest real program: a Namespace and a Deployment. It proves the
// whole chain (engine → Pulumi CLI → Kubernetes provider → API server → controllers → kwok)
// before any TFRobot component is involved; `tfrs dev --smoke` and the smoke test run it.
package smoke

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Output keys.
const (
	OutNamespace     = "namespace"
	OutReadyReplicas = "readyReplicas"
)

// Program creates namespace/web with two replicas on the cluster the kubeconfig points at.
func Program(kubeconfig, namespace string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		prov, err := kubernetes.NewProvider(ctx, "k8s", &kubernetes.ProviderArgs{
			Kubeconfig: pulumi.ToSecret(pulumi.String(kubeconfig)).(pulumi.StringOutput),
		})
		if err != nil {
			return err
		}
		ns, err := corev1.NewNamespace(ctx, "ns", &corev1.NamespaceArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(namespace)},
		}, pulumi.Provider(prov))
		if err != nil {
			return err
		}
		labels := pulumi.StringMap{"app": pulumi.String("web")}
		dep, err := appsv1.NewDeployment(ctx, "web", &appsv1.DeploymentArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String("web"), Namespace: ns.Metadata.Name()},
			Spec: &appsv1.DeploymentSpecArgs{
				Replicas: pulumi.Int(2),
				Selector: &metav1.LabelSelectorArgs{MatchLabels: labels},
				Template: &corev1.PodTemplateSpecArgs{
					Metadata: &metav1.ObjectMetaArgs{Labels: labels},
					Spec: &corev1.PodSpecArgs{Containers: corev1.ContainerArray{&corev1.ContainerArgs{
						Name: pulumi.String("web"), Image: pulumi.String("nginx:1.27"),
					}}},
				},
			},
		}, pulumi.Provider(prov))
		if err != nil {
			return err
		}
		ctx.Export(OutNamespace, ns.Metadata.Name())
		ctx.Export(OutReadyReplicas, dep.Status.ReadyReplicas())
		return nil
	}
}
