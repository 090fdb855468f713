package tenant

import (
	"slices"
	"strings"
	"testing"

	kubernetes "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

func testQuota() *Quota {
	return &Quota{
		Class:          "standard",
		Hard:           map[string]string{"requests.storage": "500Gi", "pods": "200", "services.nodeports": "0"},
		MaxVolumeSize:  "200Gi",
		Default:        map[string]string{"cpu": "2", "memory": "2Gi"},
		DefaultRequest: map[string]string{"cpu": "100m", "memory": "128Mi"},
		Max:            map[string]string{"cpu": "16", "memory": "64Gi"},
		// Unsorted and repeated: the scope lists each once, sorted.
		AllowedPriorityClasses: []string{"batch-low", "app-high", "batch-low"},
	}
}

// The class objects are the provisioner's, as the isolation objects are; the LimitRange comes
// before the class quota, and the namespace's name (what every dependant waits on) waits for
// all three.
func TestNamespaceQuota(t *testing.T) {
	m := &pt.Mocks{}
	var name func() string
	m.Run(t, func(ctx *pulumi.Context) error {
		prov, err := kubernetes.NewProvider(ctx, "provisioner", &kubernetes.ProviderArgs{})
		if err != nil {
			return err
		}
		c, err := NewNamespace(ctx, "namespace", &NamespaceArgs{
			Name: "acme", Quota: testQuota(),
			Applier: &Applier{Provider: prov, Ready: func(string) error { return nil }},
		})
		if err != nil {
			return err
		}
		name = pt.Collect[string](c.Name)
		return nil
	})
	lr := m.Find(t, "kubernetes:core/v1:LimitRange", "")
	quotas := m.All("kubernetes:core/v1:ResourceQuota")
	require.Len(t, quotas, 2)
	for _, r := range append(quotas, lr) {
		assert.Contains(t, r.Provider, "::provisioner::", "%s %s is the provisioner's", r.Type, r.Name)
		pt.Eq(t, r.Name+" class label", pt.At(t, pt.Plain(r.Inputs), "metadata", "labels", LabelClass), "standard")
		pt.Eq(t, r.Name+" namespace", pt.At(t, pt.Plain(r.Inputs), "metadata", "namespace"), "acme")
	}
	l := pt.Plain(lr.Inputs)
	pt.Eq(t, "limit range name", pt.At(t, l, "metadata", "name"), ClassObjectName)
	pt.Eq(t, "container", pt.At(t, l, "spec", "limits", 0), map[string]any{
		"type":           "Container",
		"default":        map[string]any{"cpu": "2", "memory": "2Gi"},
		"defaultRequest": map[string]any{"cpu": "100m", "memory": "128Mi"},
		"max":            map[string]any{"cpu": "16", "memory": "64Gi"},
	})
	pt.Eq(t, "volume max", pt.At(t, l, "spec", "limits", 1), map[string]any{"type": "PersistentVolumeClaim", "max": map[string]any{"storage": "200Gi"}})

	var class, prio *pt.Registration
	for _, q := range quotas {
		switch pt.At(t, pt.Plain(q.Inputs), "metadata", "name") {
		case ClassObjectName:
			class = q
		case PriorityQuotaName:
			prio = q
		}
	}
	require.NotNil(t, class)
	require.NotNil(t, prio)
	pt.Eq(t, "class hard", pt.At(t, pt.Plain(class.Inputs), "spec", "hard"), map[string]any{"requests.storage": "500Gi", "pods": "200", "services.nodeports": "0"})
	assert.Contains(t, strings.Join(class.Deps, " "), lr.URN, "the class quota waits for the LimitRange")
	p := pt.Plain(prio.Inputs)
	pt.Eq(t, "priority hard", pt.At(t, p, "spec", "hard"), map[string]any{"pods": "0"})
	pt.Eq(t, "priority scope: names a class", pt.At(t, p, "spec", "scopeSelector", "matchExpressions", 0, "operator"), "Exists")
	pt.Eq(t, "priority scope: not an allowed one", pt.At(t, p, "spec", "scopeSelector", "matchExpressions", 1), map[string]any{
		"scopeName": "PriorityClass", "operator": "NotIn", "values": []any{"app-high", "batch-low"},
	})
	for _, q := range quotas {
		pt.Eq(t, "awaited until enforced", pt.At(t, pt.Plain(q.Inputs), "metadata", "annotations"), map[string]any{"pulumi.com/waitFor": "jsonpath={.status.hard.pods}"})
	}
	assert.Equal(t, "acme", name())

	err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
		_, err := NewNamespace(ctx, "namespace", &NamespaceArgs{Name: "acme", Quota: &Quota{Class: "x"}})
		return err
	})
	assert.Error(t, err, "a quota without limits")
}

// TestApplierCannotTouchQuotas: the class objects are enforced on the applier, so it may hold
// no right on them, nor on anything that sets or bypasses them (priority classes are
// cluster-scoped and never the applier's either).
func TestApplierCannotTouchQuotas(t *testing.T) {
	for _, r := range ApplierRules {
		for _, res := range r.Resources {
			assert.NotContains(t, []string{"resourcequotas", "resourcequotas/status", "limitranges", "priorityclasses", "*"}, res, "%v", r)
		}
		assert.False(t, slices.Contains(r.Groups, "scheduling.k8s.io"), "%v", r)
	}
}

// With no allowed class the scope is Exists alone: an empty NotIn list is invalid.
func TestPriorityScopeNoneAllowed(t *testing.T) {
	assert.Equal(t, []ScopeRequirement{{Operator: "Exists"}}, (&Quota{}).PriorityScope())
}
