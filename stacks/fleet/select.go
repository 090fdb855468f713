package fleet

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Selector picks objects of a fleet; the zero Selector picks all. Every field given must
// match.
type Selector struct {
	// Kinds are the kinds to pick (none: every kind).
	Kinds []v1alpha1.Kind
	// Namespace picks the objects of one namespace (clusters have none and are left out).
	Namespace string
	// Labels is a label selector on metadata.labels ("team=a,tier!=free").
	Labels string
	// Cluster picks a TFRCluster, its tenants and their servers.
	Cluster string
}

// ParseKind reads a kind the way kubectl names it: TFRTenant, tfrtenant, tenant, tenants.
func ParseKind(s string) (v1alpha1.Kind, error) {
	n := strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(s), "tfr"), "s")
	for _, k := range v1alpha1.Kinds {
		if strings.TrimPrefix(strings.ToLower(string(k)), "tfr") == n {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown kind %q (cluster, tenant or server)", s)
}

// Select returns the objects sel picks, in their order. The cluster rule needs the whole set:
// a server belongs to a cluster through its tenant, which must be among objs.
func (sel Selector) Select(objs []v1alpha1.Object) ([]v1alpha1.Object, error) {
	ls, err := labels.Parse(sel.Labels)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %w", sel.Labels, err)
	}
	tenantsOf := map[string]bool{} // namespace/name of the tenants of sel.Cluster
	if sel.Cluster != "" {
		for _, o := range objs {
			if t, ok := o.(*v1alpha1.TFRTenant); ok && t.Spec.ClusterRef == sel.Cluster {
				tenantsOf[t.Namespace+"/"+t.Name] = true
			}
		}
	}
	var out []v1alpha1.Object
	for _, o := range objs {
		switch {
		case len(sel.Kinds) > 0 && !slices.Contains(sel.Kinds, o.KindName()):
		case sel.Namespace != "" && o.GetNamespace() != sel.Namespace:
		case !ls.Matches(labels.Set(o.GetLabels())):
		case sel.Cluster != "" && !inCluster(o, sel.Cluster, tenantsOf):
		default:
			out = append(out, o)
		}
	}
	return out, nil
}

func inCluster(o v1alpha1.Object, cluster string, tenants map[string]bool) bool {
	switch o.KindName() {
	case v1alpha1.KindTFRCluster:
		return o.GetName() == cluster
	case v1alpha1.KindTFRTenant:
		return tenants[o.GetNamespace()+"/"+o.GetName()]
	default:
		return tenants[o.GetNamespace()+"/"+o.Parent().Name]
	}
}
