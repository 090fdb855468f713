package runner

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	cserver "github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// Robot names (stacks/kinds/robots.go): before a server's programs run, the runner reads the
// robot's API Service and ServiceAccount from the cluster, so a second TFRServer of the same
// robot in a namespace is refused at spec.robotId before anything changes.

// RobotObject is a robot's object that names its stack (server.OwnerAnnotation).
type RobotObject string

// The robot's objects that carry its claim.
const (
	RobotAPIService RobotObject = "Service"
	RobotAccount    RobotObject = "ServiceAccount"
)

// OwnerReader reads a robot object's existence and owner annotation. A NamespaceGetter given
// in Options.Namespaces that implements it is used; one that does not (a test fake) reads
// none, and the checks pass.
type OwnerReader interface {
	ObjectOwner(ctx context.Context, kind RobotObject, namespace, name string) (exists bool, owner string, err error)
}

// RobotService implements kinds.Robots.
func (p ownershipParents) RobotService(ctx context.Context, namespace, name string) (bool, string, error) {
	return p.objectOwner(ctx, RobotAPIService, namespace, name)
}

// RobotAccount implements kinds.RobotAccounts.
func (p ownershipParents) RobotAccount(ctx context.Context, namespace, name string) (bool, string, error) {
	return p.objectOwner(ctx, RobotAccount, namespace, name)
}

func (p ownershipParents) objectOwner(ctx context.Context, kind RobotObject, namespace, name string) (bool, string, error) {
	get, err := p.r.namespaceGetter()
	if err != nil {
		return false, "", err
	}
	or, ok := get.(OwnerReader)
	if !ok {
		return false, "", nil
	}
	return or.ObjectOwner(ctx, kind, namespace, name)
}

func (k *kubeNamespaces) ObjectOwner(ctx context.Context, kind RobotObject, namespace, name string) (bool, string, error) {
	var obj metav1.Object
	var err error
	switch kind {
	case RobotAPIService:
		obj, err = k.c.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	case RobotAccount:
		obj, err = k.c.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	default:
		return false, "", fmt.Errorf("robot object %q: not a Service or a ServiceAccount", kind)
	}
	if apierrors.IsNotFound(err) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return true, obj.GetAnnotations()[cserver.OwnerAnnotation], nil
}

// WorkloadLister lists the Deployments of one robot owner (kinds.Owners). A NamespaceGetter
// given in Options.Namespaces that implements it is used; one that does not (a test fake)
// lists none, and the owner share counts only the robot being run.
type WorkloadLister interface {
	OwnerWorkloads(ctx context.Context, namespace, ownerLabel string) ([]stacks.Workload, error)
}

// OwnerWorkloads implements kinds.Owners. Within an up it first takes the owner's lock
// (ownerlock.go), so what it counts stays true until the up has finished.
func (p ownershipParents) OwnerWorkloads(ctx context.Context, namespace, ownerLabel string) ([]stacks.Workload, error) {
	if err := p.r.holdOwner(ctx, namespace, ownerLabel); err != nil {
		return nil, err
	}
	get, err := p.r.namespaceGetter()
	if err != nil {
		return nil, err
	}
	l, ok := get.(WorkloadLister)
	if !ok {
		return nil, nil
	}
	return l.OwnerWorkloads(ctx, namespace, ownerLabel)
}

func (k *kubeNamespaces) OwnerWorkloads(ctx context.Context, namespace, ownerLabel string) ([]stacks.Workload, error) {
	sel := labels.SelectorFromSet(labels.Set{cserver.LabelRobotOwner: ownerLabel}).String()
	var out []stacks.Workload
	opts := metav1.ListOptions{LabelSelector: sel}
	for {
		list, err := k.c.AppsV1().Deployments(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, d := range list.Items {
			out = append(out, workloadOf(&d))
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// workloadOf is what a Deployment holds for the owner share: its replicas (1 when unset, the
// API server's default) and its containers' limits, under its robot's instance label.
func workloadOf(d *appsv1.Deployment) stacks.Workload {
	w := stacks.Workload{Robot: d.Labels[cserver.LabelInstance], Replicas: 1}
	if d.Spec.Replicas != nil {
		w.Replicas = *d.Spec.Replicas
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		w.Limits = append(w.Limits, c.Resources.Limits)
	}
	return w
}
