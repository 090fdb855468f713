package operator

import (
	"context"
	"maps"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Object is a TFRS custom resource as the core sees it: *v1alpha1.TFRCluster, TFRTenant or
// TFRServer.
type Object interface {
	client.Object
	v1alpha1.StackObject
}

// kind is everything the three reconcilers do differently; the rest is the core's (core.go).
// The programs, their inputs and how a parent's stack is read live in stacks/runner.
type kind struct {
	name   runner.Kind
	newObj func() Object
	// parents lists what the object consumes, to gate its up on and to see when it changed:
	// each parent custom resource that exists, else the parent's stack (a parent made over
	// the HTTP API or the CLI has no custom resource) whose outputs are read from the engine.
	parents func(ctx context.Context, c client.Reader, obj Object, t runner.Target) ([]parent, error)
	// children lists the custom resources that must be gone before the object is destroyed.
	// The runner also refuses while the backend has dependent stacks; the custom resources
	// count too, so that a child whose first up has not started yet holds its parent.
	children func(ctx context.Context, c client.Reader, obj Object) ([]string, error)
	// watch adds the watches that wake the object when a parent or a child changes.
	watch func(b *builder.Builder, c client.Reader) *builder.Builder
	// secrets are values the spec holds in plain text, hidden from every message.
	secrets func(obj Object) []string
	// ready fills the kind's own status fields after a successful up.
	ready func(obj Object)
}

// parent is one thing a child consumes.
type parent struct {
	obj   Object // the parent custom resource, nil when there is none
	stack string // the parent's stack, read from the engine when obj is nil
}

// Field indexes the kinds look their relatives up by.
const (
	indexClusterRef = "spec.clusterRef" // TFRTenant → its TFRCluster
	indexTenantRef  = "spec.tenantRef"  // TFRServer → its TFRTenant (same namespace)
	indexJobType    = "spec.jobType"    // personal TFRTenant → its job type
)

// fieldIndex is one cache index; the manager and the unit tests' fake client register the same.
type fieldIndex struct {
	obj   client.Object
	field string
	fn    client.IndexerFunc
}

var fieldIndexes = []fieldIndex{
	{&v1alpha1.TFRTenant{}, indexClusterRef, func(o client.Object) []string { return []string{o.(*v1alpha1.TFRTenant).Spec.ClusterRef} }},
	{&v1alpha1.TFRServer{}, indexTenantRef, func(o client.Object) []string { return []string{o.(*v1alpha1.TFRServer).Spec.TenantRef} }},
	{&v1alpha1.TFRTenant{}, indexJobType, func(o client.Object) []string {
		if t := o.(*v1alpha1.TFRTenant); t.Spec.Type == v1alpha1.TenantPersonal {
			return []string{t.Spec.JobType}
		}
		return nil
	}},
}

// ownChanges lets through the events of a kind's own objects that can change a decision: a
// new generation (spec), annotations (reconcile request, pending decision), deletion and
// finalizers, and the informer's periodic resync (same resourceVersion), which decide() turns
// into a counted skip. The operator's own status patches are filtered out: a job's end wakes
// the object through its own channel instead.
var ownChanges = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o.GetResourceVersion() == n.GetResourceVersion() ||
		o.GetGeneration() != n.GetGeneration() ||
		!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
		!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
		!slices.Equal(o.GetFinalizers(), n.GetFinalizers())
}}

// changed lets through a relative's real changes (its status included), not resyncs.
var changed = predicate.ResourceVersionChangedPredicate{}

// deleted lets through deletions only: a child going away is what a parent waits for.
var deleted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// kindName names an object's kind (typed objects read from the API carry no TypeMeta).
func kindName(o Object) string {
	switch o.(type) {
	case *v1alpha1.TFRCluster:
		return v1alpha1.KindTFRCluster
	case *v1alpha1.TFRTenant:
		return v1alpha1.KindTFRTenant
	default:
		return v1alpha1.KindTFRServer
	}
}

func request(namespace, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKey{Namespace: namespace, Name: name}}
}

// getParent reads a parent custom resource; nil when it does not exist.
func getParent(ctx context.Context, c client.Reader, obj Object, key client.ObjectKey) (Object, error) {
	if err := c.Get(ctx, key, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return obj, nil
}
