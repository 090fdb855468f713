package tenant

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kubernetes "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

func provisionerRole(t *testing.T) rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "provisioner_role.yaml"))
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict(b, &role))
	return role
}

func matches(list []string, v string) bool {
	return slices.Contains(list, v) || slices.Contains(list, "*")
}

// The provisioner creates each tenant's applier Role without RBAC `escalate`: the API server
// allows that only when the provisioner holds every permission of the Role itself.
func TestProvisionerHoldsApplierRules(t *testing.T) {
	role := provisionerRole(t)
	for _, r := range ApplierRules {
		for _, g := range r.Groups {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					held := slices.ContainsFunc(role.Rules, func(p rbacv1.PolicyRule) bool {
						return len(p.ResourceNames) == 0 && matches(p.APIGroups, g) && matches(p.Resources, res) && matches(p.Verbs, verb)
					})
					assert.True(t, held, "the provisioner does not hold %s %s.%s, which the applier Role grants", verb, res, g)
				}
			}
		}
	}
}

// The applier stays inside its namespace by what it may not do either: no RBAC escalation, no
// impersonation, no binding of ClusterRoles, nothing that weakens the namespace's isolation
// baseline. bind is held on the namespace's Roles only, which a preview of new RBAC needs.
func TestApplierRulesAreNarrow(t *testing.T) {
	for _, r := range ApplierRules {
		for _, v := range r.Verbs {
			assert.NotContains(t, []string{"escalate", "impersonate", "*"}, v, "%v", r)
			if v == "bind" {
				assert.Equal(t, []string{"roles"}, r.Resources, "bind on anything but Roles: %v", r)
				assert.Equal(t, []string{"rbac.authorization.k8s.io"}, r.Groups, "%v", r)
			}
		}
		for _, res := range r.Resources {
			assert.NotContains(t, []string{"*", "networkpolicies", "peerauthentications", "namespaces", "serviceaccounts/token", "pods/exec"}, res, "%v", r)
		}
		assert.NotContains(t, r.Groups, "*")
	}
	// The provisioner may impersonate the applier and nobody else.
	var imp []rbacv1.PolicyRule
	for _, p := range provisionerRole(t).Rules {
		if matches(p.Verbs, "impersonate") {
			imp = append(imp, p)
		}
	}
	require.Len(t, imp, 1)
	assert.Equal(t, []string{"serviceaccounts"}, imp[0].Resources)
	assert.Equal(t, []string{ApplierName}, imp[0].ResourceNames)
}

// With an applier, the provisioner owns the Namespace, the applier and the isolation
// baseline; what the applier applies (the pull Secret, every dependant through Name) waits
// until the API server authorizes it.
func TestNamespaceApplier(t *testing.T) {
	m := &pt.Mocks{}
	var readyFor []string
	var name func() string
	m.Run(t, func(ctx *pulumi.Context) error {
		prov, err := kubernetes.NewProvider(ctx, "provisioner", &kubernetes.ProviderArgs{})
		if err != nil {
			return err
		}
		c, err := NewNamespace(ctx, "namespace", &NamespaceArgs{
			Name: "acme", PullSecret: &PullSecret{Name: "pull", DockerConfigJSON: pulumi.String("{}")},
			Applier: &Applier{Provider: prov, Ready: func(ns string) error { readyFor = append(readyFor, ns); return nil }},
		})
		if err != nil {
			return err
		}
		name = pt.Collect[string](c.Name)
		return nil
	})
	for _, r := range m.Regs() {
		if !r.Custom || r.Type == "pulumi:providers:kubernetes" {
			continue
		}
		privileged := strings.Contains(r.Provider, "::provisioner::")
		switch r.Type {
		case "kubernetes:core/v1:Secret":
			assert.False(t, privileged, "the pull Secret is the applier's")
		default:
			assert.True(t, privileged, "%s %s is the provisioner's", r.Type, r.Name)
		}
	}
	binding := pt.Plain(m.Find(t, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "").Inputs)
	pt.Eq(t, "subject", pt.At(t, binding, "subjects", 0), map[string]any{"kind": "ServiceAccount", "name": ApplierName, "namespace": "acme"})
	pt.Eq(t, "role", pt.At(t, binding, "roleRef", "name"), ApplierName)
	sa := pt.Plain(m.Find(t, "kubernetes:core/v1:ServiceAccount", "").Inputs)
	pt.Eq(t, "no token mounted", pt.At(t, sa, "automountServiceAccountToken"), false)
	assert.Equal(t, []string{"acme"}, readyFor, "the applier is awaited once")
	assert.Equal(t, "acme", name())
	pull := m.Find(t, "kubernetes:core/v1:Secret", "")
	assert.Contains(t, strings.Join(pull.Deps, " "), "applier-binding", "the pull Secret waits for the binding")
}
