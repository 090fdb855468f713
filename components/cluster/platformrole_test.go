package cluster

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// The namespaces the cluster stack creates carry the platform role tenants' NetworkPolicies
// trust (and only those with a role: cert-manager is no tenant's peer).
func TestNamespacesCarryPlatformRole(t *testing.T) {
	want := map[string]any{
		IstioNamespace:         map[string]any{clusterns.PlatformRoleLabel: clusterns.RoleMesh},
		IngressNamespace:       map[string]any{clusterns.PlatformRoleLabel: clusterns.RoleIngress},
		MinIOOperatorNamespace: map[string]any{clusterns.PlatformRoleLabel: clusterns.RoleMinIOOperator},
		CertManagerNamespace:   nil,
	}
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		for ns := range want {
			if _, err := newNamespace(ctx, nil, ns+"-namespace", ns); err != nil {
				return err
			}
		}
		return nil
	})
	for ns, labels := range want {
		meta := pt.Plain(m.Find(t, "kubernetes:core/v1:Namespace", ns+"-namespace").Inputs)["metadata"].(map[string]any)
		pt.Eq(t, ns+" labels", meta["labels"], labels)
	}
}
