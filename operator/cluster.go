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

// clusterKind: a TFRCluster has no parent; its children are the TFRTenants naming it.
func clusterKind() *kind {
	return &kind{
		newObj: func() v1alpha1.Object { return &v1alpha1.TFRCluster{} },
		parents: func(context.Context, client.Reader, v1alpha1.Object, kinds.Target) ([]parent, error) {
			return nil, nil
		},
		children: func(ctx context.Context, c client.Reader, obj v1alpha1.Object) ([]string, error) {
			var list v1alpha1.TFRTenantList
			if err := c.List(ctx, &list, client.MatchingFields{indexClusterRef: obj.GetName()}); err != nil {
				return nil, err
			}
			names := make([]string, 0, len(list.Items))
			for _, t := range list.Items {
				names = append(names, "TFRTenant "+t.Namespace+"/"+t.Name)
			}
			return names, nil
		},
		// A tenant going away may unblock its cluster's deletion.
		watch: func(b *builder.Builder, _ client.Reader) *builder.Builder {
			return b.Watches(&v1alpha1.TFRTenant{}, handler.EnqueueRequestsFromMapFunc(
				func(_ context.Context, o client.Object) []reconcile.Request {
					return []reconcile.Request{request("", o.(v1alpha1.Object).Parent().Name)}
				}), builder.WithPredicates(deleted))
		},
		ready: func(v1alpha1.Object) {},
	}
}
