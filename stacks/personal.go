package stacks

// Personal tenants. Every personal tenant of a job type shares one namespace
// ("personal-<jobType>") and one set of middleware. That set belongs to the job type, not to
// any TFRTenant: it lives in one stack per job type, PersonalSharedStack(jobType)
// ("tenant.personal-<jobType>._shared"; the "_" cannot occur in a TFRTenant-derived stack
// name, so no CR can collide with it). Each personal TFRTenant keeps its own stack
// ("tenant.<ns>.<name>", its status, lock and managed-by tag) as a *member*: it registers
// nothing and re-exports the shared stack's outputs, so servers read their tenant's outputs
// the same way for both tenant types. The program enforces this by its stack name: for a
// personal tenant it registers middleware only when it runs as the job type's shared stack,
// and anywhere else it needs the shared outputs (TenantInput.Shared) and only re-exports
// them (memberOutputs). So however many personal tenants of a job type exist, and through
// whichever door they arrive, there is exactly one copy of the middleware, and removing one
// tenant never removes what the others use.
//
// What the shared stack holds is the cluster's, not a tenant's: its middleware settings are
// the TFRCluster's spec.personal for the job type (personal_middleware.go), and a personal
// TFRTenant that sets middleware is refused. The caller (operator, HTTP API, CLI) drives it:
// up the shared stack through one of the job type's tenants (the operator lets
// SharedStackOwner, the oldest live one, run it, so two tenants never race on it), read its
// outputs (TenantOutputsFromStack), up the tenant's own stack with them; on deletion destroy
// the own stack, and the shared one only when no live tenant is left.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
)

// PersonalCacheSubPath is the directory of the job type's shared-cache volume that a personal
// robot mounts (at the tenant's cache dir, where TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR points):
// its own, named by its data name (robot type and id, and its owner's hash), so robots never
// see or write each other's files, and a robot that reuses a deleted robot's id under another
// owner starts in an empty directory. An enterprise tenant's robots share the whole volume:
// one owner.
func PersonalCacheSubPath(r server.Robot) string { return "robots/" + r.DataName() }

// PersonalSharedStack names the stack that owns the namespace and middleware shared by the
// personal tenants of jobType (the rule is stackname.PersonalShared).
func PersonalSharedStack(jobType string) (string, error) { return stackname.PersonalShared(jobType) }

// TenantStackNames are the stacks of a TFRTenant: its own, and for a personal tenant the
// shared stack of its job type ("" for an enterprise tenant). See TFRTenant.OwnStacks.
func TenantStackNames(t *v1alpha1.TFRTenant) (own, shared string, err error) {
	if t == nil {
		return "", "", errors.New("tenant stack names: nil TFRTenant")
	}
	return t.OwnStacks()
}

// SharedStackOwner picks, among tenants, the personal tenant of jobType whose runs bring the
// job type's shared stack up: the oldest one not being deleted (ties by namespace/name, so
// every caller picks the same). It decides who runs the stack, not what it holds (the
// cluster's spec.personal). Nil means no live tenant uses the shared stack any more: destroy
// it.
func SharedStackOwner(tenants []v1alpha1.TFRTenant, jobType string) *v1alpha1.TFRTenant {
	var owner *v1alpha1.TFRTenant
	for i := range tenants {
		t := &tenants[i]
		// A suspended tenant runs nothing, so it cannot drive the shared stack: were it the
		// owner, its suspension would hold every other tenant of the job type.
		if t.Spec.Type != v1alpha1.TenantPersonal || t.Spec.JobType != jobType || t.DeletionTimestamp != nil || t.Spec.Suspend {
			continue
		}
		if owner == nil || olderThan(t, owner) {
			owner = t
		}
	}
	return owner
}

func olderThan(a, b *v1alpha1.TFRTenant) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// isStack reports whether the running stack is name (the engine may qualify it with an
// organization and project).
func isStack(running, name string) bool {
	return running == name || strings.HasSuffix(running, "/"+name)
}

// personalRole is what the program does for t when it runs as stack running: a personal
// tenant anywhere but its job type's shared stack is a member (it registers nothing and
// re-exports the outputs of shared); an enterprise tenant and the shared stack register the
// middleware themselves, so they take no shared outputs.
func personalRole(running string, t *v1alpha1.TFRTenant, in TenantInput) (shared string, member bool, err error) {
	if t.Spec.Type != v1alpha1.TenantPersonal {
		if in.Shared != nil {
			return "", false, fmt.Errorf("tenant program: enterprise tenant %q owns its middleware; it takes no shared outputs", t.Name)
		}
		return "", false, nil
	}
	if shared, err = PersonalSharedStack(t.Spec.JobType); err != nil {
		return "", false, err
	}
	if !isStack(running, shared) {
		return shared, true, nil
	}
	if in.Shared != nil {
		return "", false, fmt.Errorf("tenant program: stack %s owns the shared middleware; it takes no shared outputs", shared)
	}
	return shared, false, nil
}

// memberOutputs are a personal tenant's own stack: nothing registered, the shared stack's
// outputs re-exported after checking they are the job type's.
func memberOutputs(t *v1alpha1.TFRTenant, in TenantInput, shared string) (pulumi.Map, error) {
	s := in.Shared
	if s == nil {
		return nil, fmt.Errorf("personal tenant %q: the outputs of %s (the middleware of job type %q) are required; up that stack first", t.Name, shared, t.Spec.JobType)
	}
	ns := t.TargetNamespace()
	switch {
	case s.TenantType != string(v1alpha1.TenantPersonal) || s.JobType != t.Spec.JobType:
		return nil, fmt.Errorf("personal tenant %q: shared outputs are of a %s tenant of job type %q, want job type %q", t.Name, s.TenantType, s.JobType, t.Spec.JobType)
	case s.Namespace != ns:
		return nil, fmt.Errorf("personal tenant %q: job type %q shares namespace %q, but the tenant asks for %q", t.Name, t.Spec.JobType, s.Namespace, ns)
	}
	if in.Graph != nil {
		for _, st := range (&tenantRegistrar{t: t}).steps() {
			in.Graph.Skipped = append(in.Graph.Skipped, GraphSkip{ID: st.id, Reason: "shared: owned by stack " + shared})
		}
	}
	out := *s
	out.SharedStack = shared
	return out.fields().pulumiMap(), nil
}
