package runner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// versionedCluster is client-go's fake clientset answering /version with kube: the runner's
// own Kubernetes reader (kubeNamespaces) over a faked discovery.
func versionedCluster(kube string) *kubeNamespaces {
	cs := fake.NewClientset()
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: kube}
	return &kubeNamespaces{c: cs}
}

// The runner checks a cluster against the support matrix with the version discovery reports:
// a Kubernetes older than a pinned component supports is refused at that component's version
// field before any stack runs; a newer one runs with the warning in the outcome.
func TestClusterSupportFromDiscovery(t *testing.T) {
	newest := 0 // the lowest maximum: above it something is warned about
	for _, p := range stacks.PinnedSupports() {
		require.NotEmpty(t, p.Support.KubeMin, p.Project)
		if m := minor(t, p.Support.KubeMax); m > 0 && (newest == 0 || m < newest) {
			newest = m
		}
	}
	ctx := context.Background()

	f := newFake()
	r := New(f, Options{Namespaces: versionedCluster("v1.20.0")})
	_, err := r.Preview(ctx, cluster(), operatorOp)
	require.ErrorIs(t, err, kinds.ErrInvalid)
	assert.Contains(t, err.Error(), "supports Kubernetes")
	assert.Regexp(t, `spec\.[a-zA-Z]+\.version`, err.Error())
	assert.Empty(t, f.Ops(), "refused before anything runs")

	// Allowed: the same cluster runs, and says what is outside support.
	c := cluster()
	for _, p := range stacks.PinnedSupports() {
		c.Spec.AllowUnsupported = append(c.Spec.AllowUnsupported, p.Project)
	}
	out, err := New(f, Options{Namespaces: versionedCluster("v1.20.0")}).Preview(ctx, c, operatorOp)
	require.NoError(t, err)
	require.NotEmpty(t, out.Support)
	for _, s := range out.Support {
		assert.False(t, s.Refused)
	}

	if newest > 0 {
		above := fmt.Sprintf("v1.%d.1", newest+1)
		out, err := New(newFake(), Options{Namespaces: versionedCluster(above)}).Preview(ctx, cluster(), operatorOp)
		require.NoError(t, err, "a newer Kubernetes is a warning, not a refusal")
		assert.Equal(t, stacks.SupportFindings(cluster(), above, time.Now()), out.Support)
		var tooNew bool
		for _, s := range out.Support {
			tooNew = tooNew || s.Reason == stacks.SupportKubeTooNew
		}
		assert.True(t, tooNew, "%s is newer than 1.%d: %+v", above, newest, out.Support)
	}

	// No version reader (a fake without discovery, or rendering): nothing is checked.
	out, err = New(newFake(), Options{Namespaces: absentNamespaces{}}).Preview(ctx, cluster(), operatorOp)
	require.NoError(t, err)
	assert.Empty(t, out.Support)
}

// minor is the minor of "1.36" (0 for "").
func minor(t *testing.T, v string) int {
	if v == "" {
		return 0
	}
	var major, m int
	_, err := fmt.Sscanf(v, "%d.%d", &major, &m)
	require.NoError(t, err, v)
	return m
}
