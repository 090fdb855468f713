package stacks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	k8scorev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/psaprobe"
	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

// Every pod template the tenant and server programs render passes Pod Security `restricted`
// at the latest policy version, checked with the API server's own policy library
// (k8s.io/pod-security-admission, the code behind the PodSecurity admission plugin). "Every":
// the templates are found by shape, not by kind (any object with a pod spec, at any depth,
// so a CronJob or a kind added later is not missed), the charts are rendered with Helm with
// the values TFRS passes, and the pods the CNPG, MinIO and RabbitMQ operators make are built
// from TFRS's custom resources by the rules those operators follow at their pins.

// podTemplate is one pod as the API server would see it.
type podTemplate struct {
	source string
	meta   metav1.ObjectMeta
	spec   k8scorev1.PodSpec
}

// restrictedViolations evaluates p at restricted, latest, and returns what it forbids.
func restrictedViolations(t *testing.T, p podTemplate) string {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	lv := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	agg := policy.AggregateCheckResults(ev.EvaluatePod(lv, &p.meta, &p.spec))
	if agg.Allowed {
		return ""
	}
	return agg.ForbiddenReason() + ": " + agg.ForbiddenDetail()
}

// findPodSpecs calls fn with every object under v that holds a pod spec: a map whose "spec"
// has "containers". The object is the pod (or pod template) itself: its metadata and spec.
func findPodSpecs(v any, path string, fn func(path string, obj map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		if spec, ok := v["spec"].(map[string]any); ok {
			if _, ok := spec["containers"]; ok {
				fn(path, v)
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			findPodSpecs(v[k], path+"."+k, fn)
		}
	case []any:
		for i, x := range v {
			findPodSpecs(x, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
}

// decodePod turns a pod-shaped object (plain JSON values) into the typed pod.
func decodePod(t *testing.T, source string, obj map[string]any) podTemplate {
	t.Helper()
	var pod struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     k8scorev1.PodSpec `json:"spec"`
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("%s: %v", source, err)
	}
	if err := json.Unmarshal(b, &pod); err != nil {
		t.Fatalf("%s: not a pod spec: %v", source, err)
	}
	return podTemplate{source: source, meta: pod.Metadata, spec: pod.Spec}
}

// Custom resource kinds whose operators make pods; each has a builder below.
const (
	cnpgClusterType     = "kubernetes:postgresql.cnpg.io/v1:Cluster"
	minioTenantType     = "kubernetes:minio.min.io/v2:Tenant"
	rabbitmqClusterType = "kubernetes:rabbitmq.com/v1beta1:RabbitmqCluster"
	chartType           = "kubernetes:helm.sh/v4:Chart"
)

// podTemplates are the pods of every registration: pod-shaped objects anywhere in a
// resource, chart children (rendered), and the operators' pods of the custom resources.
func podTemplates(t *testing.T, regs []*registration) []podTemplate {
	t.Helper()
	var out []podTemplate
	for _, r := range regs {
		in := plainInputs(r.Inputs)
		src := r.Type + "::" + r.Name
		switch r.Type {
		case chartType:
			out = append(out, chartPods(t, src, in)...)
		case cnpgClusterType:
			out = append(out, cnpgPod(t, src, in))
		case minioTenantType:
			out = append(out, minioPods(t, src, in)...)
		case rabbitmqClusterType:
			out = append(out, rabbitmqPod(t, src, in))
		default:
			findPodSpecs(in, "", func(path string, obj map[string]any) {
				out = append(out, decodePod(t, src+path, obj))
			})
		}
	}
	return out
}

// chartPods renders a chart registration with Helm, with the values TFRS passes, and returns
// its pods.
func chartPods(t *testing.T, src string, in map[string]any) []podTemplate {
	t.Helper()
	chart, _ := in["chart"].(string)
	if !filepath.IsAbs(chart) {
		t.Fatalf("%s: chart %q is not a local stand-in; point the test at testdata", src, chart)
	}
	helm, err := tools.Bin("helm")
	if err != nil {
		t.Fatal(err)
	}
	values, err := json.Marshal(in["values"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	vf := filepath.Join(dir, "values.json")
	if err := os.WriteFile(vf, values, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name, _ := in["name"].(string)
	ns, _ := in["namespace"].(string)
	cmd := exec.CommandContext(ctx, helm, "template", name, chart, "-n", ns, "-f", vf)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	rendered, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%s: helm template: %v: %s", src, err, ee.Stderr)
		}
		t.Fatalf("%s: helm template: %v", src, err)
	}
	var out []podTemplate
	for i, doc := range strings.Split(string(rendered), "\n---") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%s: document %d: %v", src, i, err)
		}
		kind, _ := obj["kind"].(string)
		findPodSpecs(obj, fmt.Sprintf("%s/%s[%d]", src, kind, i), func(path string, o map[string]any) {
			out = append(out, decodePod(t, path, o))
		})
	}
	if len(out) == 0 {
		t.Errorf("%s: the chart rendered no pod", src)
	}
	return out
}

// merge lays src over dst, key by key (maps recursively), as a strategic merge does for the
// fields of a securityContext.
func merge(dst, src map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = merge(dm, sm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// operatorPod is a pod of an operator: its pod context and containers' contexts by name
// (init containers prefixed "init:").
func operatorPod(t *testing.T, src string, pod map[string]any, containers map[string]map[string]any) podTemplate {
	t.Helper()
	spec := map[string]any{"securityContext": pod}
	var cs, inits []any
	names := make([]string, 0, len(containers))
	for n := range containers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := map[string]any{"name": strings.TrimPrefix(n, "init:"), "image": "operand", "securityContext": containers[n]}
		if strings.HasPrefix(n, "init:") {
			inits = append(inits, c)
		} else {
			cs = append(cs, c)
		}
	}
	spec["containers"], spec["initContainers"] = cs, inits
	return decodePod(t, src, map[string]any{"spec": spec})
}

// cnpgPod is an instance pod of CloudNativePG 1.30.0 (pkg/specs/pods.go GetPodSecurityContext,
// pkg/specs/containers.go GetSecurityContext): its defaults, with the Cluster's
// podSecurityContext / securityContext laid over them, for postgres and the
// bootstrap-controller init container.
func cnpgPod(t *testing.T, src string, in map[string]any) podTemplate {
	s := asMap(in["spec"])
	uid, gid := 26.0, 26.0
	if v, ok := s["postgresUID"].(float64); ok {
		uid = v
	}
	if v, ok := s["postgresGID"].(float64); ok {
		gid = v
	}
	seccomp := map[string]any{"type": "RuntimeDefault"}
	if v := asMap(s["seccompProfile"]); v != nil {
		seccomp = v
	}
	pod := merge(map[string]any{"seccompProfile": seccomp, "runAsUser": uid, "runAsGroup": gid, "runAsNonRoot": true, "fsGroup": gid}, asMap(s["podSecurityContext"]))
	c := merge(map[string]any{
		"seccompProfile": seccomp, "capabilities": map[string]any{"drop": []any{"ALL"}}, "privileged": false,
		"runAsNonRoot": true, "readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
	}, asMap(s["securityContext"]))
	return operatorPod(t, src, pod, map[string]map[string]any{"postgres": c, "init:bootstrap-controller": c})
}

// minioPods are the pool pods of MinIO operator 7.1.1
// (pkg/resources/statefulsets/minio-statefulset.go poolSecurityContext,
// poolContainerSecurityContext): the pool's securityContext replaces the pod default, its
// containerSecurityContext replaces every container's (minio, sidecar, validate-arguments).
func minioPods(t *testing.T, src string, in map[string]any) []podTemplate {
	var out []podTemplate
	for i, p := range asMap(in["spec"])["pools"].([]any) {
		pool := asMap(p)
		pod := map[string]any{"runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000, "fsGroupChangePolicy": "OnRootMismatch"}
		if v := asMap(pool["securityContext"]); v != nil {
			pod = v
		}
		c := map[string]any{"runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000}
		if v := asMap(pool["containerSecurityContext"]); v != nil {
			c = v
		}
		out = append(out, operatorPod(t, fmt.Sprintf("%s.pools[%d]", src, i), pod, map[string]map[string]any{"minio": c, "sidecar": c, "init:validate-arguments": c}))
	}
	return out
}

// rabbitmqPod is the server pod of the RabbitMQ cluster operator 2.22.3
// (internal/resource/statefulset.go): its defaults, with spec.override.statefulSet's pod
// template merged over them (containers by name).
func rabbitmqPod(t *testing.T, src string, in map[string]any) podTemplate {
	c := map[string]any{
		"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}, "privileged": false,
		"readOnlyRootFilesystem": true, "runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"},
	}
	pod := map[string]any{"fsGroup": 0, "runAsUser": 999, "runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	containers := map[string]map[string]any{"rabbitmq": c, "init:setup-container": c}
	o := asMap(asMap(asMap(asMap(asMap(asMap(asMap(in["spec"])["override"])["statefulSet"])["spec"])["template"])["spec"]))
	pod = merge(pod, asMap(o["securityContext"]))
	for prefix, key := range map[string]string{"": "containers", "init:": "initContainers"} {
		list, _ := o[key].([]any)
		for _, x := range list {
			oc := asMap(x)
			n := prefix + oc["name"].(string)
			containers[n] = merge(containers[n], asMap(oc["securityContext"]))
		}
	}
	return operatorPod(t, src, pod, containers)
}

// standInCharts points the tenant's charts at the stand-ins (rendered by chartPods).
func standInCharts(t *testing.T, s *v1alpha1.TenantMiddleware) {
	t.Helper()
	root, err := filepath.Abs("testdata/tenant/charts")
	if err != nil {
		t.Fatal(err)
	}
	s.Jaeger.LocalPath = filepath.Join(root, "jaeger")
	s.Grafana.LocalPath = filepath.Join(root, "grafana")
}

// extremes turns on every toggle of a tenant and sets its workload settings and the
// documented chart values that change pods to their far ends.
func extremes(t *testing.T, s *v1alpha1.TenantMiddleware) {
	t.Helper()
	on := ptr.To(true)
	for _, tg := range []*v1alpha1.Toggle{
		&s.TimescaleDB.Toggle, &s.Prometheus.Toggle, &s.OtelCollector.Toggle, &s.Vector.Toggle,
		&s.SharedCache.Toggle, &s.TFRobotFront.Toggle, &s.TFRSUtils.Toggle,
	} {
		tg.Enabled = on
	}
	// Replicas and sizes only multiply the same templates; they stay inside the default
	// tenancy class (its quota would refuse more before anything renders).
	for _, w := range []*v1alpha1.WorkloadSpec{&s.TFRobotFront.WorkloadSpec, &s.TFRSUtils.WorkloadSpec} {
		w.Replicas = ptr.To(int32(3))
		w.Resources = k8scorev1.ResourceRequirements{Limits: k8scorev1.ResourceList{k8scorev1.ResourceMemory: k8sresource.MustParse("1Gi")}}
	}
	s.RabbitMQ.Replicas = ptr.To(int32(3))
	s.MinIO.Servers, s.MinIO.VolumesPerServer = ptr.To(int32(4)), ptr.To(int32(2))
	s.PostgreSQL.Instances = ptr.To(int32(3))
	// Grafana with its data on a volume: upstream's chart then adds a root init container.
	s.Grafana.Values = &apiextensionsv1.JSON{Raw: []byte(`{"persistence":{"enabled":true,"size":"100Gi"},"replicas":3}`)}
}

// The check itself can fail: every rule of restricted, broken on a compliant pod, is caught
// (the e2e test makes its hostile probe pods from the same table).
func TestRestrictedCheckCatchesEachRule(t *testing.T) {
	if v := restrictedViolations(t, podTemplate{source: "compliant", spec: psaprobe.Compliant("probe")}); v != "" {
		t.Fatalf("the compliant pod is refused: %s", v)
	}
	for _, m := range psaprobe.Mutations {
		if restrictedViolations(t, podTemplate{source: m.Name, spec: psaprobe.Mutated("probe", m)}) == "" {
			t.Errorf("%s: admitted", m.Name)
		}
	}
}

// withPodSecurityLabels is labels plus the Pod Security labels every tenant namespace carries.
func withPodSecurityLabels(labels map[string]any) map[string]any {
	for k, v := range tenant.PodSecurityLabels() {
		labels[k] = v
	}
	return labels
}
