package testenv

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"

	"github.com/tfrs-io/tfrs-operator/config/crd"
	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/upstream"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// PinnedRefs are the upstream projects and versions whose CRDs the pinned cluster sources
// install.
func PinnedRefs() []upstream.Ref {
	var out []upstream.Ref
	for _, u := range stacks.UpstreamCRDs() {
		out = append(out, upstream.Ref{Project: u.Project, Version: u.Version})
	}
	return out
}

// PinnedCRDs are the real upstream CRDs at the pinned versions. The test skips (fails under
// CI=true) when they are not there.
func PinnedCRDs(t testing.TB) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	upstream.Require(t)
	defs, err := upstream.LoadAll(PinnedRefs())
	if err != nil {
		t.Fatal(err)
	}
	return defs
}

// InstallCRDs installs TFRS's own CRDs and, of the real upstream CRDs at the pinned versions
// (the stand-in charts ship none), those of the kinds TFRS creates (CustomResourceKinds), as on
// a cluster whose operators' CRDs are in place. The other 34 upstream CRDs (Istio's
// DestinationRule, CNPG's Pooler …) are never written by TFRS, and installing them cost every
// control plane 2.5 s of API server CPU and 1.6 s of wall time (48 CRDs against 14). Callers
// check upstream.Require first: without ../shared/upstream this returns upstream.ErrMissing.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	defs, err := upstream.LoadAll(PinnedRefs())
	if err != nil {
		return err
	}
	own, err := crd.Definitions()
	if err != nil {
		return err
	}
	return crd.Apply(ctx, cfg, append(own, CreatedKinds(defs)...))
}

// CreatedKinds are the CRDs of defs that define one of CustomResourceKinds.
func CreatedKinds(defs []*apiextensionsv1.CustomResourceDefinition) []*apiextensionsv1.CustomResourceDefinition {
	want := map[string]bool{}
	for _, k := range CustomResourceKinds {
		want[k] = true
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, d := range defs {
		for _, v := range d.Spec.Versions {
			if want[d.Spec.Group+"/"+v.Name+" "+d.Spec.Names.Kind] {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// ControlPlane starts a local control plane for the test with TFRS's and the pinned upstream
// CRDs installed. It skips (fails under CI=true) without ../shared/upstream.
func ControlPlane(t testing.TB) *controlplane.ControlPlane {
	t.Helper()
	upstream.Require(t)
	cp := controlplane.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := InstallCRDs(ctx, cp.RESTConfig); err != nil {
		t.Fatalf("install the CRDs: %v", err)
	}
	return cp
}

// CustomResourceKinds are the custom resource kinds the programs create ("<group>/<version>
// <Kind>"), each checked against its real upstream CRD by TestRenderedResourcesPassUpstreamSchemas
// (which fails when a program creates one not listed, or a listed one goes unrendered).
var CustomResourceKinds = []string{
	"cert-manager.io/v1 Certificate",
	"cert-manager.io/v1 ClusterIssuer",
	"minio.min.io/v2 Tenant",
	"networking.istio.io/v1alpha3 EnvoyFilter", // EnvoyFilter has no v1
	"networking.istio.io/v1 Gateway",
	"networking.istio.io/v1 VirtualService",
	"postgresql.cnpg.io/v1 Cluster",
	"rabbitmq.com/v1beta1 Permission",
	"rabbitmq.com/v1beta1 RabbitmqCluster",
	"rabbitmq.com/v1beta1 User",
	"rabbitmq.com/v1beta1 Vhost",
	"security.istio.io/v1 AuthorizationPolicy",
	"security.istio.io/v1 PeerAuthentication",
	"telemetry.istio.io/v1 Telemetry",
}
