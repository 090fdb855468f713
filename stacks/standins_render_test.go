//go:build integration

package stacks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// These tests render stand-in charts with the real Pulumi CLI and Kubernetes provider, whose
// embedded Helm enforces a chart's values.schema.json exactly as on the real chart. No cluster
// is reached: the provider writes the manifests into a directory. Missing tools fail the tests
// with the tools error, which names `make tools`.

// renderComponents runs program as a throwaway stack in render-to-directory mode and returns
// the rendered objects (the provider's 1-manifest/ directory) by "Kind/name".
func renderComponents(t *testing.T, program pulumi.RunFunc) (map[string][]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{
		StateDir: filepath.Join(tmp, "state"), Passphrase: hex.EncodeToString(key), MaxConcurrent: 1,
		// Nothing to reach: the render must not read a kubeconfig.
		Env: map[string]string{"KUBECONFIG": filepath.Join(tmp, "absent"), "KUBERNETES_SERVICE_HOST": ""},
	})
	if err != nil {
		t.Fatal(err) // the tools error names `make tools`
	}
	defer func() { _ = eng.Close() }()
	dir := filepath.Join(tmp, "render")
	if _, err := eng.Up(ctx, engine.Request{
		Stack: "cluster.standins", Program: program, ManagedBy: engine.ManagedByCLI,
		Config: map[string]engine.ConfigValue{"kubernetes:renderYamlToDirectory": {Value: dir}},
	}); err != nil {
		return nil, err
	}
	objs := map[string][]byte{}
	files, err := filepath.Glob(filepath.Join(dir, "1-manifest", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal(b, &meta); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		objs[meta.Kind+"/"+meta.Metadata.Name] = b
	}
	return objs, nil
}

// gatewayAndJaeger is a program of the istio-ingress and jaeger components on their
// stand-ins, their charts resolved as the programs resolve them (the component's own values,
// then the spec's), with extra as the istioIngress spec's values.
func gatewayAndJaeger(t *testing.T, extra string) pulumi.RunFunc {
	t.Helper()
	// The provider runs elsewhere: a relative chart path would read as a repository name.
	root, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	spec := v1alpha1.ComponentSource{LocalPath: filepath.Join(root, "cluster", "charts", "gateway")}
	if extra != "" {
		spec.Values = &apiextensionsv1.JSON{Raw: []byte(extra)}
	}
	gw, err := resolveCharts(ClusterIstioIngress, spec, "")
	if err != nil {
		t.Fatal(err)
	}
	jg, err := resolveCharts(TenantJaeger, v1alpha1.ComponentSource{LocalPath: filepath.Join(root, "tenant", "charts", "jaeger")}, "")
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx *pulumi.Context) error {
		if _, err := cluster.NewIstioIngress(ctx, "istio-ingress", &cluster.IstioIngressArgs{
			Chart: gw[0], Mode: cluster.IngressNodePort,
			HTTPNodePort: int(v1alpha1.DefaultNodePortHTTP), HTTPSNodePort: int(v1alpha1.DefaultNodePortHTTPS),
		}); err != nil {
			return err
		}
		_, err := tenant.NewJaeger(ctx, TenantJaeger, &tenant.JaegerArgs{Namespace: pulumi.String("acme"), Chart: jg[0]})
		return err
	}
}

// TestGatewayStandInSchema renders the gateway stand-in, whose values.schema.json has the
// shape of the real chart's (1.30.3 to 1.32), with the values TFRS sets: Helm accepts them (the 1.24.2
// schema rejected every value), and a root key the schema does not declare is refused, so the
// schema is really enforced. The same render checks the Jaeger v2 stand-in's one Service
// against the ports TFRS exports to.
func TestGatewayStandInSchema(t *testing.T) {
	objs, err := renderComponents(t, gatewayAndJaeger(t, ""))
	if err != nil {
		t.Fatalf("TFRS's gateway values fail the chart's schema: %v", err)
	}

	// The gateway pods carry the labels the Gateway, EnvoyFilters and the component's own
	// Service select, and the chart's own Service is off.
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(objs["Deployment/"+cluster.IngressRelease], &dep); err != nil {
		t.Fatal(err)
	}
	check(t, "gateway pod labels", dep.Spec.Template.Labels, map[string]string{
		"app": cluster.IngressRelease, cluster.IngressSelectorLabel: cluster.IngressSelectorValue,
	})
	var svc corev1.Service
	if err := yaml.Unmarshal(objs["Service/"+cluster.IngressService], &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort {
		t.Errorf("the ingress Service is %q, not the component's NodePort one (the chart's rendered too?)", svc.Spec.Type)
	}

	var jaeger corev1.Service
	if err := yaml.Unmarshal(objs["Service/"+tenant.JaegerService], &jaeger); err != nil {
		t.Fatalf("no Service %q: %v", tenant.JaegerService, err)
	}
	ports := map[string]int32{}
	for _, p := range jaeger.Spec.Ports {
		ports[p.Name] = p.Port
	}
	check(t, "jaeger ports", []int32{ports["http-query"], ports["otlp-grpc"]}, []int32{tenant.JaegerQueryPort, tenant.JaegerOTLPGRPCPort})
	for k := range objs {
		if strings.HasPrefix(k, "Service/jaeger-") {
			t.Errorf("%s: Jaeger v2 has one Service", k)
		}
	}

	_, err = renderComponents(t, gatewayAndJaeger(t, `{"notInTheSchema": true}`))
	if err == nil || !strings.Contains(err.Error(), "notInTheSchema") {
		t.Fatalf("a root key the schema does not declare was not refused: %v", err)
	}
}
