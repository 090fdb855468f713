package runner

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cserver "github.com/tfrs-io/tfrs-operator/components/server"
)

// Robot names (stacks/kinds/robots.go): before a server's programs run, the runner reads the
// robot's API Service from the cluster, so a second TFRServer of the same robot in a
// namespace is refused at spec.robotId before anything changes.

// ServiceGetter reads a Service's existence and owner annotation. A NamespaceGetter given in
// Options.Namespaces that implements it is used; one that does not (a test fake) reads no
// Service, and the check passes.
type ServiceGetter interface {
	ServiceOwner(ctx context.Context, namespace, name string) (exists bool, owner string, err error)
}

// RobotService implements kinds.Robots.
func (p ownershipParents) RobotService(ctx context.Context, namespace, name string) (bool, string, error) {
	get, err := p.r.namespaceGetter()
	if err != nil {
		return false, "", err
	}
	sg, ok := get.(ServiceGetter)
	if !ok {
		return false, "", nil
	}
	return sg.ServiceOwner(ctx, namespace, name)
}

func (k *kubeNamespaces) ServiceOwner(ctx context.Context, namespace, name string) (bool, string, error) {
	svc, err := k.c.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return true, svc.Annotations[cserver.OwnerAnnotation], nil
}
