package operator

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// serverKind: a TFRServer consumes its TFRTenant (same namespace) and has no children.
func serverKind() *kind {
	return &kind{
		newObj: func() v1alpha1.Object { return &v1alpha1.TFRServer{} },
		parents: func(ctx context.Context, c client.Reader, obj v1alpha1.Object, t kinds.Target) ([]parent, error) {
			tn, err := getParent(ctx, c, &v1alpha1.TFRTenant{}, client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.Parent().Name})
			if err != nil {
				return nil, err
			}
			return []parent{{obj: tn, stack: t.Parent}}, nil
		},
		children: func(context.Context, client.Reader, v1alpha1.Object) ([]string, error) { return nil, nil },
		// The tenant's status (Ready, outputs digest) gates and re-runs its servers.
		watch: func(b *builder.Builder, c client.Reader) *builder.Builder {
			return b.Watches(&v1alpha1.TFRTenant{}, handler.EnqueueRequestsFromMapFunc(
				func(ctx context.Context, o client.Object) []reconcile.Request {
					var list v1alpha1.TFRServerList
					if err := c.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexTenantRef: o.GetName()}); err != nil {
						return nil
					}
					reqs := make([]reconcile.Request, 0, len(list.Items))
					for _, s := range list.Items {
						reqs = append(reqs, request(s.Namespace, s.Name))
					}
					return reqs
				}), builder.WithPredicates(changed))
		},
		ready: func(v1alpha1.Object) {},
	}
}
