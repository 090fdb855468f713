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
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// kind is what the operator does differently for each of the three kinds: the watches and
// the client reads of relatives that only a controller has. What a kind is (its stacks, its
// parent, its secrets, its validation) it says itself through v1alpha1.Object; which program
// runs is the runner's (stacks/kinds). The rest is the core's (core.go).
type kind struct {
	newObj func() v1alpha1.Object
	// parents lists what the object consumes, to gate its up on and to see when it changed:
	// each parent custom resource that exists, else the parent's stack (a parent made over
	// the HTTP API or the CLI has no custom resource) whose outputs are read from the engine.
	parents func(ctx context.Context, c client.Reader, obj v1alpha1.Object, t kinds.Target) ([]parent, error)
	// children lists the custom resources that must be gone before the object is destroyed.
	// The runner also refuses while the backend has dependent stacks; the custom resources
	// count too, so that a child whose first up has not started yet holds its parent.
	children func(ctx context.Context, c client.Reader, obj v1alpha1.Object) ([]string, error)
	// watch adds the watches that wake the object when a parent or a child changes.
	watch func(b *builder.Builder, c client.Reader) *builder.Builder
	// ready fills the kind's own status fields after a successful up.
	ready func(obj v1alpha1.Object)
	// gate is the approval mode and drift check the object's runs follow; nil: its own
	// spec's (ownGate). A personal tenant follows its cluster's (tenantGate).
	gate func(ctx context.Context, c client.Reader, obj v1alpha1.Object) (v1alpha1.ApprovalMode, v1alpha1.DriftDetectionSpec, error)
}

// name is the kind's name, the label of its metrics and its controller's name.
func (k *kind) name() v1alpha1.Kind { return k.newObj().KindName() }

// parent is one thing a child consumes.
type parent struct {
	obj   v1alpha1.Object // the parent custom resource, nil when there is none
	stack string          // the parent's stack, read from the engine when obj is nil
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
	{&v1alpha1.TFRTenant{}, indexClusterRef, parentName},
	{&v1alpha1.TFRServer{}, indexTenantRef, parentName},
	{&v1alpha1.TFRTenant{}, indexJobType, func(o client.Object) []string {
		if t := o.(*v1alpha1.TFRTenant); t.Spec.Type == v1alpha1.TenantPersonal {
			return []string{t.Spec.JobType}
		}
		return nil
	}},
}

// parentName is the name of o's parent (a tenant's clusterRef, a server's tenantRef).
func parentName(o client.Object) []string { return []string{o.(v1alpha1.Object).Parent().Name} }

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

func request(namespace, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKey{Namespace: namespace, Name: name}}
}

// getParent reads a parent custom resource; nil when it does not exist.
func getParent(ctx context.Context, c client.Reader, obj v1alpha1.Object, key client.ObjectKey) (v1alpha1.Object, error) {
	if err := c.Get(ctx, key, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return obj, nil
}
