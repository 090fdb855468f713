package podsec

import (
	"testing"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Restrict reaches every container and init container, pointer or value, and refuses what it
// cannot see into rather than leaving it unrestricted.
func TestRestrict(t *testing.T) {
	spec := &corev1.PodSpecArgs{
		Containers:     corev1.ContainerArray{&corev1.ContainerArgs{Name: pulumi.String("a")}, corev1.ContainerArgs{Name: pulumi.String("b")}},
		InitContainers: corev1.ContainerArray{corev1.ContainerArgs{Name: pulumi.String("i")}},
	}
	if err := Restrict(spec, TFRobot); err != nil {
		t.Fatal(err)
	}
	for _, list := range []corev1.ContainerArrayInput{spec.Containers, spec.InitContainers} {
		for i, c := range list.(corev1.ContainerArray) {
			if c.(corev1.ContainerArgs).SecurityContext == nil {
				t.Errorf("container %d has no security context", i)
			}
		}
	}
	if sc := spec.SecurityContext.(*corev1.PodSecurityContextArgs); sc.RunAsUser == nil || sc.SeccompProfile == nil {
		t.Errorf("pod context %+v", sc)
	}

	opaque := &corev1.PodSpecArgs{Containers: corev1.ContainerArray{}.ToContainerArrayOutput()}
	if err := Restrict(opaque, TFRobot); err == nil {
		t.Error("containers given as an output were accepted unseen")
	}
}

// A zero id leaves the user to the image or operator; the rest of restricted stays.
func TestOperatorContext(t *testing.T) {
	v := Values(PodContext(Operator))
	if _, ok := v["runAsUser"]; ok {
		t.Errorf("operator context sets a user: %v", v)
	}
	if v["runAsNonRoot"] != true || v["seccompProfile"].(map[string]any)["type"] != RuntimeDefault {
		t.Errorf("operator context %v", v)
	}
	if c := Values(ContainerContext()); c["allowPrivilegeEscalation"] != false {
		t.Errorf("allowPrivilegeEscalation not sent as false: %v", c)
	}
}
