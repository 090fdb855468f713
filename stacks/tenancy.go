package stacks

// The cluster's tenancy policy at the tenant's doors. The cluster stack exports its
// TFRCluster's spec.tenancy (ClusterOutputTenancy); a tenant reads it with the rest of its
// cluster's outputs and, before anything runs, is checked against it where the cluster's
// reserved namespaces are (TenantNamespaceErrors, so every door that runs a tenant checks
// both): its class exists and its spec fits the class, and a namespace it is about to create
// is one a new tenant may take. The namespace rule spares a namespace the stack already holds
// (NamespaceOurs, NamespaceAdoptMarker): a tenant whose namespace was taken before a rule
// existed keeps it, and its stack keeps running. The class becomes the namespace's quota
// objects (tenant.Quota), which the API server enforces.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
)

// tenancyOutput is the ClusterOutputTenancy value of spec.tenancy.
func tenancyOutput(s *v1alpha1.TenancySpec) OptionalString {
	b, err := json.Marshal(s)
	if err != nil { // a struct of strings, numbers and quantities always marshals
		panic(fmt.Sprintf("stacks: spec.tenancy: %v", err))
	}
	return OptionalString(b)
}

// TenancyPolicy is the cluster's spec.tenancy ("" reads as the zero policy: the built-in
// class, no priority classes, no namespace prefixes).
func (c TenantCluster) TenancyPolicy() (*v1alpha1.TenancySpec, error) {
	s := &v1alpha1.TenancySpec{}
	if c.Tenancy == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(c.Tenancy), s); err != nil {
		return nil, fmt.Errorf("cluster output %q: %w", ClusterOutputTenancy, err)
	}
	return s, nil
}

// tenancyErrors are the policy's refusals of t: the namespace claim of a tenant whose
// namespace is to be created (decision NamespaceCreate, or NamespaceUnverified, where the
// stack cannot show it holds one), and the class.
func tenancyErrors(t *v1alpha1.TFRTenant, c TenantCluster, decision NamespaceDecision) field.ErrorList {
	s, err := c.TenancyPolicy()
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "class"), err)}
	}
	var errs field.ErrorList
	if decision == NamespaceCreate || decision == NamespaceUnverified {
		errs = append(errs, v1alpha1.NamespaceClaimErrors(t, s)...)
	}
	return append(errs, v1alpha1.TenancyErrors(t, s)...)
}

// tenantQuota is the namespace quota of t's class under the cluster's policy.
func tenantQuota(t *v1alpha1.TFRTenant, c TenantCluster) (*tenant.Quota, error) {
	s, err := c.TenancyPolicy()
	if err != nil {
		return nil, err
	}
	class, ferr := s.ClassOf(t)
	if ferr != nil {
		return nil, ferr
	}
	return QuotaOf(&class, s.AllowedPriorityClasses), nil
}

// QuotaOf is the namespace quota of a resolved class. NodePort and LoadBalancer Services
// are always 0: a tenant is reached through the ingress gateway only, never on a node's port
// or a cloud load balancer of its own.
func QuotaOf(c *v1alpha1.TenantClass, allowedPriorityClasses []string) *tenant.Quota {
	q := c.Quota
	res := func(r v1alpha1.ContainerResources) map[string]string {
		return map[string]string{"cpu": r.CPU.String(), "memory": r.Memory.String()}
	}
	return &tenant.Quota{
		Class: c.Name,
		Hard: map[string]string{
			"requests.cpu": q.RequestsCPU.String(), "requests.memory": q.RequestsMemory.String(),
			"limits.cpu": q.LimitsCPU.String(), "limits.memory": q.LimitsMemory.String(),
			"requests.storage":       q.Storage.String(),
			"persistentvolumeclaims": fmt.Sprint(*q.PersistentVolumeClaims),
			"pods":                   fmt.Sprint(*q.Pods),
			"services":               fmt.Sprint(*q.Services),
			"services.nodeports":     "0",
			"services.loadbalancers": "0",
		},
		MaxVolumeSize:          c.MaxVolumeSize.String(),
		Default:                res(c.Container.Default),
		DefaultRequest:         res(c.Container.DefaultRequest),
		Max:                    res(c.Container.Max),
		AllowedPriorityClasses: slices.Sorted(maps.Keys(setOf(allowedPriorityClasses))),
	}
}

func setOf(s []string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, v := range s {
		m[v] = true
	}
	return m
}
