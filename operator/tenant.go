package operator

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// tenantKind: a TFRTenant consumes its TFRCluster and, for a personal tenant that does not
// drive its job type's shared stack, the tenant that does; its children are its TFRServers.
func tenantKind() *kind {
	return &kind{
		newObj: func() v1alpha1.Object { return &v1alpha1.TFRTenant{} },
		parents: func(ctx context.Context, c client.Reader, obj v1alpha1.Object, t kinds.Target) ([]parent, error) {
			x := obj.(*v1alpha1.TFRTenant)
			cl, err := getParent(ctx, c, &v1alpha1.TFRCluster{}, client.ObjectKey{Name: x.Spec.ClusterRef})
			if err != nil {
				return nil, err
			}
			ps := []parent{{obj: cl, stack: t.Parent}}
			if x.Spec.Type != v1alpha1.TenantPersonal {
				return ps, nil
			}
			owner, err := sharedOwner(ctx, c, x.Spec.JobType)
			if err != nil {
				return nil, err
			}
			if owner != nil && (owner.Namespace != x.Namespace || owner.Name != x.Name) {
				ps = append(ps, parent{obj: owner, stack: t.Shared})
			}
			return ps, nil
		},
		children: func(ctx context.Context, c client.Reader, obj v1alpha1.Object) ([]string, error) {
			var list v1alpha1.TFRServerList
			if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{indexTenantRef: obj.GetName()}); err != nil {
				return nil, err
			}
			names := make([]string, 0, len(list.Items))
			for _, s := range list.Items {
				names = append(names, "TFRServer "+s.Namespace+"/"+s.Name)
			}
			return names, nil
		},
		watch: func(b *builder.Builder, c client.Reader) *builder.Builder {
			return b.
				// The cluster's status (Ready, outputs digest) gates and re-runs its tenants.
				Watches(&v1alpha1.TFRCluster{}, handler.EnqueueRequestsFromMapFunc(
					func(ctx context.Context, o client.Object) []reconcile.Request {
						var list v1alpha1.TFRTenantList
						if err := c.List(ctx, &list, client.MatchingFields{indexClusterRef: o.GetName()}); err != nil {
							return nil
						}
						return tenantRequests(list.Items, "")
					}), builder.WithPredicates(changed)).
				// A server going away may unblock its tenant's deletion.
				Watches(&v1alpha1.TFRServer{}, handler.EnqueueRequestsFromMapFunc(
					func(_ context.Context, o client.Object) []reconcile.Request {
						return []reconcile.Request{request(o.GetNamespace(), o.(v1alpha1.Object).Parent().Name)}
					}), builder.WithPredicates(deleted)).
				// The personal tenant that drives a job type's shared stack gates (and, when its
				// outputs change, re-runs) the job type's other tenants; its deletion hands the
				// shared stack to the next oldest.
				Watches(&v1alpha1.TFRTenant{}, handler.EnqueueRequestsFromMapFunc(
					func(ctx context.Context, o client.Object) []reconcile.Request {
						t := o.(*v1alpha1.TFRTenant)
						if t.Spec.Type != v1alpha1.TenantPersonal {
							return nil
						}
						var list v1alpha1.TFRTenantList
						if err := c.List(ctx, &list, client.MatchingFields{indexJobType: t.Spec.JobType}); err != nil {
							return nil
						}
						return tenantRequests(list.Items, t.Namespace+"/"+t.Name)
					}), builder.WithPredicates(changed))
		},
		ready: func(obj v1alpha1.Object) {
			x := obj.(*v1alpha1.TFRTenant)
			x.Status.TargetNamespace = x.TargetNamespace()
		},
		gate: tenantGate,
	}
}

func tenantRequests(items []v1alpha1.TFRTenant, except string) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(items))
	for _, t := range items {
		if t.Namespace+"/"+t.Name != except {
			reqs = append(reqs, request(t.Namespace, t.Name))
		}
	}
	return reqs
}

// sharedOwner is the personal tenant that drives jobType's shared stack (the oldest live one,
// see stacks.SharedStackOwner), or nil.
func sharedOwner(ctx context.Context, c client.Reader, jobType string) (*v1alpha1.TFRTenant, error) {
	var list v1alpha1.TFRTenantList
	if err := c.List(ctx, &list, client.MatchingFields{indexJobType: jobType}); err != nil {
		return nil, err
	}
	return stacks.SharedStackOwner(list.Items, jobType), nil
}
