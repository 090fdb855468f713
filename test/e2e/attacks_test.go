//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/cmd/tfrs/demo"
	"github.com/tfrs-io/tfrs-operator/cmd/tfrs/devenv"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/operator"
	"github.com/tfrs-io/tfrs-operator/server"
)

// attack is one hostile spec and what its refusal must name (a field or an object).
type attack struct {
	name string
	obj  v1alpha1.Object
	want string
}

// hostileTenant is a lean tenant of the dev cluster, its charts from the pinned upstream
// (no local paths: the API and the operator refuse those before any other check).
func hostileTenant(name string, edit func(*v1alpha1.TFRTenant)) *v1alpha1.TFRTenant {
	x := testenv.Lean(testenv.StandInTenant(demo.Namespace, name, demo.ClusterName))
	x.Spec.Jaeger.LocalPath, x.Spec.Grafana.LocalPath = "", ""
	edit(x)
	return x
}

func inNamespace(ns string) func(*v1alpha1.TFRTenant) {
	return func(x *v1alpha1.TFRTenant) { x.Spec.Namespace = ns }
}

func withValues(chart, values string) func(*v1alpha1.TFRTenant) {
	return func(x *v1alpha1.TFRTenant) {
		src := &x.Spec.Grafana.ComponentSource
		if chart == "jaeger" {
			src = &x.Spec.Jaeger.ComponentSource
		}
		src.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
	}
}

// tenantAttacks are the hostile tenants. The victims they aim at exist (see
// TestIsolationAttacks): tenant "victim", namespace "payments" of another team, and the
// cluster's own reserved "finance".
func tenantAttacks() []attack {
	ns := func(i int, target, why string) attack {
		return attack{"namespace " + target + " (" + why + ")", hostileTenant(fmt.Sprintf("atk-ns-%d", i), inNamespace(target)), "spec.namespace"}
	}
	atks := []attack{
		ns(1, "kube-system", "reserved"), ns(2, "kube-public", "reserved"), ns(3, "kube-node-lease", "reserved"),
		ns(4, "default", "reserved"), ns(5, "istio-system", "the cluster stack's"), ns(6, "cert-manager", "the cluster stack's"),
		ns(7, "cnpg-system", "the cluster stack's"), ns(8, demo.Namespace, "the operator's own"),
		ns(9, "finance", "reserved by the TFRCluster"), ns(10, "payments", "another team's"),
		ns(11, "victim", "another tenant's"), ns(12, "../kube-system", "not a DNS label"),
	}
	values := []struct{ chart, values, want string }{
		{"grafana", `{"extraObjects":[{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"pwn"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"ServiceAccount","name":"grafana","namespace":"atk"}]}]}`, "spec.grafana.values.extraObjects"},
		{"grafana", `{"extraObjects":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pwn","namespace":"kube-system"}}]}`, "spec.grafana.values.extraObjects"},
		{"grafana", `{"rbac":{"namespaced":false,"extraClusterRoleRules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}}`, "spec.grafana.values.rbac"},
		{"grafana", `{"serviceAccount":{"name":"tfrs-applier"}}`, "spec.grafana.values.serviceAccount"},
		{"grafana", `{"image":{"registry":"evil.example.com","repository":"grafana"}}`, "spec.grafana.values.image"},
		{"grafana", `{"sidecar":{"image":{"repository":"evil.example.com/sidecar"}}}`, "spec.grafana.values.sidecar"},
		{"grafana", `{"global":{"imageRegistry":"evil.example.com"}}`, "spec.grafana.values.global"},
		{"grafana", `{"namespaceOverride":"kube-system"}`, "spec.grafana.values.namespaceOverride"},
		{"grafana", `{"hostNetwork":true}`, "spec.grafana.values.hostNetwork"},
		{"grafana", `{"securityContext":{"runAsUser":0,"privileged":true}}`, "spec.grafana.values.securityContext"},
		{"jaeger", `{"jaeger":{"image":{"repository":"evil.example.com/jaeger"}}}`, "spec.jaeger.values.jaeger.image"},
		{"jaeger", `{"extraObjects":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"pwn"}}]}`, "spec.jaeger.values.extraObjects"},
		{"jaeger", `{"jaeger":{"podSecurityContext":{"runAsUser":0}}}`, "spec.jaeger.values.jaeger.podSecurityContext"},
	}
	for i, v := range values {
		atks = append(atks, attack{v.want, hostileTenant(fmt.Sprintf("atk-values-%d", i), withValues(v.chart, v.values)), v.want})
	}
	// A personal tenant may not drive the middleware every personal tenant of its job type
	// shares (the cluster's spec.personal does).
	personal := func(name string, edit func(*v1alpha1.TFRTenant)) *v1alpha1.TFRTenant {
		x := &v1alpha1.TFRTenant{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(v1alpha1.KindTFRTenant)},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demo.Namespace},
			Spec:       v1alpha1.TFRTenantSpec{ClusterRef: demo.ClusterName, Type: v1alpha1.TenantPersonal, JobType: "chat"}}
		x.Default()
		edit(x)
		return x
	}
	atks = append(atks,
		attack{"personal tenant sets shared Redis", personal("atk-personal-redis", func(x *v1alpha1.TFRTenant) { x.Spec.Redis.Image = "evil.example.com/redis:7" }), "spec.redis"},
		attack{"personal tenant sets shared PostgreSQL", personal("atk-personal-pg", func(x *v1alpha1.TFRTenant) { x.Spec.PostgreSQL.Instances = ptr.To[int32](9) }), "spec.postgresql"},
	)
	// Robots: a type whose name would collide with another robot's, and a second server of
	// the victim's robot.
	dash := victimServer("atk-robot-dash", "1")
	dash.Spec.RobotType = "chat-bot"
	twin := victimServer("atk-robot-twin", victimRobotID)
	return append(atks, attack{"robotType with a dash", dash, "spec.robotType"}, attack{"second server of a robot", twin, "spec.robotId"})
}

// victimRobotID is the robot of the victim tenant's server.
const victimRobotID = "1"

// victimServer is a server of the victim tenant.
func victimServer(name, robotID string) *v1alpha1.TFRServer {
	s := robotServer(name, robotID)
	s.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(v1alpha1.KindTFRServer)}
	s.Namespace, s.Spec.TenantRef = demo.Namespace, "victim"
	return s
}

// cluster is what an attack may not change, as the API server has it: every namespace with
// its labels and annotations, the names of the objects in every namespace, each
// Deployment's generation, and cluster-wide RBAC.
func clusterSnapshot(ctx context.Context, t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	var out []string
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, n := range nss.Items {
		out = append(out, fmt.Sprintf("namespace %s %v %v", n.Name, n.Labels, n.Annotations))
	}
	add := func(kind string, items []metav1.Object) {
		for _, o := range items {
			out = append(out, fmt.Sprintf("%s %s/%s", kind, o.GetNamespace(), o.GetName()))
		}
	}
	list := func(kind string, l any, err error) {
		require.NoError(t, err, kind)
		b, _ := json.Marshal(l)
		var items struct {
			Items []metav1.ObjectMeta `json:"items"`
		}
		require.NoError(t, json.Unmarshal(b, &items))
		objs := make([]metav1.Object, len(items.Items))
		for i := range items.Items {
			objs[i] = &items.Items[i]
		}
		add(kind, objs)
	}
	all := metav1.ListOptions{}
	l1, err := cs.CoreV1().Secrets("").List(ctx, all)
	list("Secret", l1, err)
	l2, err := cs.CoreV1().ConfigMaps("").List(ctx, all)
	list("ConfigMap", l2, err)
	l3, err := cs.CoreV1().ServiceAccounts("").List(ctx, all)
	list("ServiceAccount", l3, err)
	l4, err := cs.CoreV1().Services("").List(ctx, all)
	list("Service", l4, err)
	l5, err := cs.RbacV1().Roles("").List(ctx, all)
	list("Role", l5, err)
	l6, err := cs.RbacV1().RoleBindings("").List(ctx, all)
	list("RoleBinding", l6, err)
	l7, err := cs.RbacV1().ClusterRoles().List(ctx, all)
	list("ClusterRole", l7, err)
	l8, err := cs.RbacV1().ClusterRoleBindings().List(ctx, all)
	list("ClusterRoleBinding", l8, err)
	l9, err := cs.NetworkingV1().NetworkPolicies("").List(ctx, all)
	list("NetworkPolicy", l9, err)
	l10, err := cs.BatchV1().Jobs("").List(ctx, all)
	list("Job", l10, err)
	deps, err := cs.AppsV1().Deployments("").List(ctx, all)
	require.NoError(t, err)
	for _, d := range deps.Items {
		out = append(out, fmt.Sprintf("Deployment %s/%s generation %d", d.Namespace, d.Name, d.Generation))
	}
	sort.Strings(out)
	return out
}

// tfrsOut runs the CLI against the dev environment; it returns the exit code and everything
// the CLI printed.
func tfrsOut(ctx context.Context, bin string, env *devenv.Env, args ...string) (int, string) {
	full := append(args, "--kubeconfig", env.KubeconfigPath, "--state-dir", env.StateDir, "--passphrase-file", env.PassphraseFile)
	cmd := exec.CommandContext(ctx, bin, full...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, out.String()
}

// apiCollection is where obj is created in the HTTP API (POST); apiPath is where it lives.
func apiCollection(obj v1alpha1.Object) string {
	switch x := obj.(type) {
	case *v1alpha1.TFRTenant:
		return "/v1/namespaces/" + x.Namespace + "/tenants"
	case *v1alpha1.TFRServer:
		return "/v1/namespaces/" + x.Namespace + "/tenants/" + x.Spec.TenantRef + "/servers"
	}
	panic(fmt.Sprintf("no API path for %T", obj))
}

func apiPath(obj v1alpha1.Object) string { return apiCollection(obj) + "/" + obj.GetName() }

// refusedOverHTTP POSTs obj and returns the refusal: a 4xx problem, or an accepted operation
// that failed (a refusal found by the runner before the engine ran). Anything else fails.
func refusedOverHTTP(ctx context.Context, t *testing.T, env *devenv.Env, obj v1alpha1.Object) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()}, "spec": specOf(obj)})
	require.NoError(t, err)
	code, resp := apiDo(ctx, t, env, http.MethodPost, apiCollection(obj), body)
	if code >= 400 && code < 500 {
		return resp
	}
	require.Equal(t, http.StatusAccepted, code, "POST %s: %s", apiCollection(obj), resp)
	var op server.OperationView
	require.NoError(t, json.Unmarshal([]byte(resp), &op))
	for op.State != server.StateFailed {
		require.NotEqual(t, server.StateSucceeded, op.State, "the hostile spec was applied over HTTP")
		time.Sleep(300 * time.Millisecond)
		code, resp = apiDo(ctx, t, env, http.MethodGet, op.Links.Self, nil)
		require.Equal(t, http.StatusOK, code, resp)
		require.NoError(t, json.Unmarshal([]byte(resp), &op))
	}
	return resp
}

func specOf(obj v1alpha1.Object) any {
	switch x := obj.(type) {
	case *v1alpha1.TFRTenant:
		return x.Spec
	case *v1alpha1.TFRServer:
		return x.Spec
	}
	return nil
}

// refusedAsCR applies obj with kubectl and returns the refusal: the API server's admission
// error (CRD schema and CEL rules), or the message of the Ready=False condition the operator
// sets on it. The CR is deleted afterwards.
func refusedAsCR(ctx context.Context, t *testing.T, env *devenv.Env, obj v1alpha1.Object) string {
	t.Helper()
	y, err := yaml.Marshal(obj)
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", env.KubeconfigPath, "apply", "-f", "-")
	cmd.Stdin = bytes.NewReader(y)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out)
	}
	kind := strings.ToLower(string(obj.KindName()))
	defer func() {
		_, _ = kubectlOut(ctx, env, "delete", kind, obj.GetName(), "-n", obj.GetNamespace(), "--timeout=2m")
	}()
	var msg, last string
	defer func() {
		if msg == "" {
			t.Logf("last Ready condition of %s: %s", obj.GetName(), last)
		}
	}()
	require.Eventually(t, func() bool {
		o := kubectlJSON(ctx, t, env, "get", kind, obj.GetName(), "-n", obj.GetNamespace())
		st, _ := o["status"].(map[string]any)
		conds, _ := st["conditions"].([]any)
		for _, c := range conds {
			c := c.(map[string]any)
			if c["type"] == "Ready" {
				last = fmt.Sprintf("%s %s: %s", c["status"], c["reason"], c["message"])
				require.NotEqual(t, "True", c["status"], "the hostile CR became Ready")
				if c["reason"] == v1alpha1.ReasonInvalidSpec {
					msg = fmt.Sprint(c["message"])
					return true
				}
			}
		}
		return false
	}, 2*time.Minute, 300*time.Millisecond, "the operator never refused %s", obj.GetName())
	return msg
}

// TestIsolationAttacks replays every hostile spec through the three doors — a custom
// resource, the HTTP API and the CLI — on a dev environment (operator, API and the local
// control plane with the real upstream CRDs): each is refused with a message naming the field
// or object, and the cluster as the API server has it is exactly as before.
func TestIsolationAttacks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	bin := buildTFRS(t, root)
	env, err := devenv.Start(ctx, devenv.Options{Dir: t.TempDir(),
		Operator: operator.Options{ParentPoll: 2 * time.Second, BackoffBase: 2 * time.Second, BackoffMax: 20 * time.Second, JobPoll: 5 * time.Second,
			// Another test of this process may have run a dev environment's operator already.
			SkipNameValidation: true}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, env.Stop()) })
	story := &demo.Story{Env: env, Root: root, TFRS: bin, Out: &bytes.Buffer{}, Wait: 8 * time.Minute}
	require.NoError(t, story.ApplyCluster(ctx))
	kubectlRun(ctx, t, env, "patch", "tfrcluster", demo.ClusterName, "--type=merge", "-p", `{"spec":{"reservedNamespaces":["finance"]}}`)
	waitGeneration(ctx, t, env, "tfrcluster", demo.ClusterName, "")
	cs, err := env.CP.Client()
	require.NoError(t, err)

	// The victims: another team's namespace with its data, and a tenant of the cluster.
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "payments", Labels: map[string]string{"team": "payments"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps("payments").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger"}, Data: map[string]string{"balance": "100"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The victim tenant and its robot are custom resources, so every door's attack finds its
	// parent (the operator waits for a parent CR; the API and the CLI read its stack).
	victim := testenv.Lean(testenv.StandInTenant(demo.Namespace, "victim", demo.ClusterName))
	for _, obj := range []v1alpha1.Object{victim, victimServer("victim-bot", victimRobotID)} {
		y, err := yaml.Marshal(obj)
		require.NoError(t, err)
		require.NoError(t, story.KubectlIn(ctx, string(y), "apply", "-f", "-"))
		kind := strings.ToLower(string(obj.KindName()))
		kubectlRun(ctx, t, env, "wait", "--for=condition=Ready", kind+"/"+obj.GetName(), "-n", demo.Namespace, "--timeout=8m")
	}
	// A tenant never comes without its NetworkPolicies (the applier cannot remove them:
	// TestLeastPrivilege).
	for _, np := range []string{tenant.NetworkPolicyDefaultDeny, tenant.NetworkPolicyAllowTenant} {
		_, err := cs.NetworkingV1().NetworkPolicies("victim").Get(ctx, np, metav1.GetOptions{})
		require.NoError(t, err, "tenant victim lacks NetworkPolicy %s", np)
	}

	before := clusterSnapshot(ctx, t, cs)
	doors := []struct {
		name   string
		refuse func(t *testing.T, obj v1alpha1.Object) string
	}{
		{"CR", func(t *testing.T, obj v1alpha1.Object) string { return refusedAsCR(ctx, t, env, obj) }},
		{"HTTP", func(t *testing.T, obj v1alpha1.Object) string { return refusedOverHTTP(ctx, t, env, obj) }},
		{"CLI", func(t *testing.T, obj v1alpha1.Object) string {
			code, out := tfrsOut(ctx, bin, env, "up", "-f", writeObject(t, obj))
			require.NotEqual(t, 0, code, "the CLI applied the hostile spec:\n%s", out)
			return out
		}},
	}
	atks := tenantAttacks()
	require.GreaterOrEqual(t, len(atks), 25)
	for _, a := range atks {
		for _, d := range doors {
			t.Run(d.name+"/"+a.name, func(t *testing.T) {
				msg := d.refuse(t, a.obj)
				require.Contains(t, msg, a.want, "the refusal does not name %s", a.want)
				require.Equal(t, before, clusterSnapshot(ctx, t, cs), "the cluster changed")
			})
		}
	}

	// Destroying a tenant aimed at an adopted namespace, deletionPolicy Delete: its up was
	// refused, and no door's destroy touches the namespace it never created.
	adopter := hostileTenant("adopter", inNamespace("payments"))
	adopter.Spec.DeletionPolicy = v1alpha1.DeletionDelete
	code, out := tfrsOut(ctx, bin, env, "up", "-f", writeObject(t, adopter))
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, "spec.namespace")
	code, out = tfrsOut(ctx, bin, env, "destroy", "-f", writeObject(t, adopter), "--yes")
	require.Equal(t, 0, code, out)
	code, resp := apiDo(ctx, t, env, http.MethodDelete, apiPath(adopter), nil)
	require.Contains(t, []int{http.StatusNotFound, http.StatusAccepted}, code, resp)
	y, err := yaml.Marshal(adopter)
	require.NoError(t, err)
	require.NoError(t, story.KubectlIn(ctx, string(y), "apply", "-f", "-"))
	kubectlRun(ctx, t, env, "delete", "tfrtenant", "adopter", "-n", demo.Namespace, "--timeout=2m")
	ledger, err := cs.CoreV1().ConfigMaps("payments").Get(ctx, "ledger", metav1.GetOptions{})
	require.NoError(t, err, "another team's data was deleted")
	require.Equal(t, "100", ledger.Data["balance"])
	require.Equal(t, before, clusterSnapshot(ctx, t, cs), "the cluster changed")
}

// writeObject writes obj as YAML into a file of its own.
func writeObject(t *testing.T, obj v1alpha1.Object) string {
	t.Helper()
	y, err := yaml.Marshal(obj)
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), obj.GetName()+".yaml")
	require.NoError(t, os.WriteFile(f, y, 0o600))
	return f
}
