package stacks

// The shared middleware of a personal job type comes from the cluster, never from a tenant.
// The cluster stack exports its TFRCluster's spec.personal (ClusterOutputPersonal), and the
// job type's shared stack builds its middleware from that output alone
// (TenantCluster.PersonalMiddleware): whichever personal tenant's run brings the shared stack
// up (SharedStackOwner picks who runs it, not what it holds), the result is the same, and a
// personal TFRTenant that sets middleware is refused by validation (v1alpha1,
// personal_rules.go). A change of spec.personal reaches a job type's shared stack on its next
// run after the cluster stack's `up`.

import (
	"encoding/json"
	"fmt"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// encodePersonal is the ClusterOutputPersonal value of a defaulted spec.personal.
func encodePersonal(p *v1alpha1.PersonalSpec) (OptionalString, error) {
	b, err := json.Marshal(p) // sorted map keys: the same spec, the same output
	if err != nil {
		return "", fmt.Errorf("spec.personal: %w", err)
	}
	return OptionalString(b), nil
}

// PersonalSpec is the cluster's spec.personal as its stack exported it (the zero spec from a
// cluster stack made before the output): the one reader of ClusterOutputPersonal.
func (c TenantCluster) PersonalSpec() (v1alpha1.PersonalSpec, error) {
	var p v1alpha1.PersonalSpec
	if c.Personal != "" {
		if err := json.Unmarshal([]byte(c.Personal), &p); err != nil {
			return p, fmt.Errorf("cluster output %q: %w", ClusterOutputPersonal, err)
		}
	}
	return p, nil
}

// PersonalMiddleware is the shared middleware of jobType as the cluster sets it, defaulted,
// and the cluster field it comes from (for messages).
func (c TenantCluster) PersonalMiddleware(jobType string) (v1alpha1.TenantMiddleware, string, error) {
	p, err := c.PersonalSpec()
	if err != nil {
		return v1alpha1.TenantMiddleware{}, "", err
	}
	return p.For(jobType), p.Source(jobType), nil
}

// sharedTenant is the tenant the job type's shared stack provisions: t (a personal tenant of
// the job type, already validated) with the cluster's middleware for the job type in place of
// its own, so the tenant that happens to run the stack decides nothing in it. The result is
// validated as an enterprise tenant carrying that middleware would be.
func sharedTenant(t *v1alpha1.TFRTenant, c TenantCluster) (*v1alpha1.TFRTenant, error) {
	m, source, err := c.PersonalMiddleware(t.Spec.JobType)
	if err != nil {
		return nil, err
	}
	s := t.DeepCopy()
	s.Spec.TenantMiddleware = m
	check := s.DeepCopy()
	check.Spec.Type, check.Spec.JobType = v1alpha1.TenantEnterprise, ""
	if errs := check.ValidateWithAdminValues(); len(errs) > 0 { // the cluster's values: free-form
		return nil, fmt.Errorf("job type %q: the cluster's %s: %w", t.Spec.JobType, source, errs.ToAggregate())
	}
	return s, nil
}
