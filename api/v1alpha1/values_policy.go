package v1alpha1

import (
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Helm values a tenant may not set. A tenant's spec.jaeger.values and spec.grafana.values are
// merged over TFRS's own values and applied (as the namespace's applier), so they are an attack
// surface: these keys change what a chart runs (its images: the cluster's mirror policy
// decides those), with which identity and privileges (RBAC, service accounts, security
// contexts, host namespaces) or where (a namespace override), or add arbitrary objects. They
// are refused at any depth (charts nest them per sub-component: sidecar.image, …). The
// namespace boundary (stacks/boundary.go) would still stop a cluster-scoped object or one in
// another namespace; refusing the keys up front names the field instead of an object.
var tenantValuesForbidden = map[string]string{
	"image":                    "images follow the cluster's pins and mirror (spec.imageRegistry of the TFRCluster)",
	"images":                   "images follow the cluster's pins and mirror (spec.imageRegistry of the TFRCluster)",
	"imageRegistry":            "images follow the cluster's pins and mirror (spec.imageRegistry of the TFRCluster)",
	"global":                   "global values reach every sub-chart (image registries among them)",
	"rbac":                     "a tenant's charts get only the RBAC TFRS gives them",
	"serviceAccount":           "a tenant's charts run as the service accounts TFRS gives them",
	"extraObjects":             "a tenant may not add arbitrary objects through chart values",
	"securityContext":          "security contexts are the chart's defaults",
	"podSecurityContext":       "security contexts are the chart's defaults",
	"containerSecurityContext": "security contexts are the chart's defaults",
	"hostNetwork":              "host namespaces are never shared with a tenant",
	"hostPID":                  "host namespaces are never shared with a tenant",
	"hostIPC":                  "host namespaces are never shared with a tenant",
	"namespaceOverride":        "a tenant's charts install into the tenant's namespace only",
}

// validateTenantValues refuses the forbidden keys anywhere in a tenant chart's values.
func validateTenantValues(p *field.Path, c *ComponentSource) field.ErrorList {
	if c.Values == nil || len(c.Values.Raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(c.Values.Raw, &v) != nil {
		return nil // validateComponentSource reports the shape
	}
	var errs field.ErrorList
	var walk func(p *field.Path, v any)
	walk = func(p *field.Path, v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if why, bad := tenantValuesForbidden[k]; bad {
					errs = append(errs, field.Forbidden(p.Child(k), why))
					continue
				}
				walk(p.Child(k), x[k])
			}
		case []any:
			for i, e := range x {
				walk(p.Index(i), e)
			}
		}
	}
	walk(p.Child("values"), v)
	return errs
}
