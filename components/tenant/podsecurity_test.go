package tenant

import (
	"os"
	"regexp"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// The pinned policy version is the minor of the k8s.io/api module TFRS builds with (v0.N.x is
// Kubernetes 1.N): bumping the module without the pin, or the pin alone, fails here.
func TestPodSecurityVersionFollowsGoMod(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+)\.\d+`).FindSubmatch(b)
	require.NotNil(t, m, "k8s.io/api not required in go.mod")
	assert.Equal(t, "v1."+string(m[1]), PodSecurityVersion)
}

// The Namespace carries enforce, audit and warn at restricted and the pinned version, and a
// label passed in the args cannot lower any of them.
func TestNamespacePodSecurityLabels(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewNamespace(ctx, "namespace", &NamespaceArgs{Name: "acme", Labels: map[string]string{
			"tfrs.io/tenant":                             "acme",
			"pod-security.kubernetes.io/enforce":         "privileged",
			"pod-security.kubernetes.io/warn":            "baseline",
			"pod-security.kubernetes.io/audit":           "privileged",
			"pod-security.kubernetes.io/enforce-version": "v1.0",
		}})
		return err
	})
	labels := pt.Plain(m.Find(t, "kubernetes:core/v1:Namespace", "").Inputs)["metadata"].(map[string]any)["labels"].(map[string]any)
	for _, mode := range []string{"enforce", "audit", "warn"} {
		assert.Equal(t, "restricted", labels["pod-security.kubernetes.io/"+mode], mode)
		assert.Equal(t, PodSecurityVersion, labels["pod-security.kubernetes.io/"+mode+"-version"], mode)
	}
	assert.Equal(t, "acme", labels["tfrs.io/tenant"], "the caller's other labels stay")
}
