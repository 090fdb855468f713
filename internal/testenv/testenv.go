// Package testenv holds what integration tests of several packages share: custom resources
// whose every source points at the project's offline stand-ins (stacks/testdata), so a test
// runs the real programs on the local control plane without downloading anything.
package testenv

import (
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/checkout"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// RepoRoot is the checkout (checkout.Root).
func RepoRoot() string { return checkout.Root() }

// StandIns is the directory of one level's stand-ins: "cluster" or "tenant".
func StandIns(level string) string {
	return filepath.Join(RepoRoot(), "stacks", "testdata", level)
}

// RegistryPassword is the inline registry password of StandInCluster; tests check it never
// shows in plain text.
const RegistryPassword = "registry-pass-e2e"

// StandInCluster is a TFRCluster (defaulted) whose components all come from the stand-ins,
// with an inline registry password.
func StandInCluster(name string) *v1alpha1.TFRCluster {
	root := StandIns("cluster")
	tc := &v1alpha1.TFRCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(v1alpha1.KindTFRCluster)},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.TFRClusterSpec{
			Domain:  "tfrobot.test",
			Ingress: v1alpha1.IngressSpec{Mode: v1alpha1.IngressNodePort},
			ImageRegistry: &v1alpha1.ImageRegistrySpec{Credentials: &v1alpha1.RegistryCredentials{
				Name: "tfrobot", Server: "registry.example.com", Username: "robot", Password: RegistryPassword,
			}},
		},
	}
	tc.Spec.CertManager.LocalPath = filepath.Join(root, "charts", "cert-manager")
	tc.Spec.Istio.LocalPath = filepath.Join(root, "charts", "istio")
	tc.Spec.IstioIngress.LocalPath = filepath.Join(root, "charts", "gateway")
	tc.Spec.MinIOOperator.LocalPath = filepath.Join(root, "charts", "minio-operator")
	tc.Spec.CNPGOperator.LocalPath = filepath.Join(root, "manifests", "cnpg.yaml")
	tc.Spec.RabbitMQOperator.LocalPath = filepath.Join(root, "manifests", "rabbitmq")
	// A fixture must not stop working on a calendar date: when a pinned line reaches its end of
	// upstream support, the clusters that do not allow it are refused (stacks/support.go;
	// TestClusterSupportMatrix checks that), these are only warned.
	for _, p := range stacks.PinnedSupports() {
		tc.Spec.AllowUnsupported = append(tc.Spec.AllowUnsupported, p.Project)
	}
	// The shared middleware of personal tenants (a personal TFRTenant sets none).
	charts := filepath.Join(StandIns("tenant"), "charts")
	tc.Spec.Personal.Middleware.Jaeger.LocalPath = filepath.Join(charts, "jaeger")
	tc.Spec.Personal.Middleware.Grafana.LocalPath = filepath.Join(charts, "grafana")
	tc.Default()
	return tc
}

// StandInTenant is an enterprise TFRTenant (defaulted) of cluster whose charts come from the
// stand-ins.
func StandInTenant(namespace, name, cluster string) *v1alpha1.TFRTenant {
	root := filepath.Join(StandIns("tenant"), "charts")
	tt := &v1alpha1.TFRTenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(v1alpha1.KindTFRTenant)},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.TFRTenantSpec{ClusterRef: cluster, Type: v1alpha1.TenantEnterprise, Namespace: name},
	}
	tt.Spec.Jaeger.LocalPath = filepath.Join(root, "jaeger")
	tt.Spec.Grafana.LocalPath = filepath.Join(root, "grafana")
	tt.Default()
	return tt
}

// Lean switches off a tenant's optional components (observability, caches, front end), for
// tests that need a tenant but not all of it: it comes up several times faster.
func Lean(tt *v1alpha1.TFRTenant) *v1alpha1.TFRTenant {
	off := ptr.To(false)
	s := &tt.Spec
	s.TimescaleDB.Enabled, s.Jaeger.Enabled, s.Grafana.Enabled = off, off, off
	s.Prometheus.Enabled, s.OtelCollector.Enabled, s.Vector.Enabled = off, off, off
	s.SharedCache.Enabled, s.TFRobotFront.Enabled, s.TFRSUtils.Enabled = off, off, off
	return tt
}
