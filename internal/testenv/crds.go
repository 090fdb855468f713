package testenv

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/tfrs-io/tfrs-operator/config/crd"
	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/upstream"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// PinnedCRDs are the real upstream CRDs of every project the pinned cluster sources install,
// at the pinned versions. The test skips (fails under CI=true) when they are not there.
func PinnedCRDs(t testing.TB) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	upstream.Require(t)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, u := range stacks.UpstreamCRDs() {
		defs, err := upstream.Load(u.Project, u.Version)
		if err != nil {
			t.Fatalf("pinned %s %s: %v", u.Project, u.Version, err)
		}
		out = append(out, defs...)
	}
	return out
}

// ControlPlane starts a local control plane for the test with the real upstream CRDs of the
// pinned versions installed (the stand-in charts ship none), as a cluster whose operators'
// CRDs are in place. It skips (fails under CI=true) without ../shared/upstream.
func ControlPlane(t testing.TB) *controlplane.ControlPlane {
	t.Helper()
	defs := PinnedCRDs(t)
	cp := controlplane.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := crd.Apply(ctx, cp.RESTConfig, defs); err != nil {
		t.Fatalf("install the upstream CRDs: %v", err)
	}
	return cp
}
