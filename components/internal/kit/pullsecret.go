package kit

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The registry pull Secret in every form a component hands it on: the pod specs it writes
// itself (PullSecrets) and the charts it renders (PullSecretTransform, through Chart); the
// custom resources whose operator writes the pods take it through their builders (crs). Each
// is nothing at all without a Secret (""), so an unset field stays unset.

// PullSecrets is the imagePullSecrets list of a pod spec (nil without a pull Secret).
func PullSecrets(name string) corev1.LocalObjectReferenceArray {
	if name == "" {
		return nil
	}
	return corev1.LocalObjectReferenceArray{corev1.LocalObjectReferenceArgs{Name: pulumi.String(name)}}
}
