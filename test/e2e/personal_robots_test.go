//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// TestPersonalRobots brings personal robots of two owners (the personal tenants alice and
// bob of one job type) up on one local control plane with the real engine, and checks on
// the API server what issue 45 item 4 promises:
//
//   - every pod of a robot runs as the robot's own ServiceAccount with no token (its
//     grafana-sa Job as the robot's second account, the only one with a token), and every
//     pod of the namespace is selected by the AuthorizationPolicies of its own robot only;
//   - a robot's data is named after its owner: bob's robot that reuses the id of alice's
//     destroyed robot gets other names for all of it; alice's robot made again gets its own
//     names back.
func TestPersonalRobots(t *testing.T) {
	e := newEnv(t, 20*time.Minute)
	ctx, eng, cfg := e.ctx, e.eng, e.cfg
	cs, err := e.cp.Client()
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(e.cp.RESTConfig)
	require.NoError(t, err)

	tc, clusterOut := upStandInCluster(ctx, t, eng, cfg)
	out := map[string]stacks.TenantOutputs{}
	for _, owner := range []string{"alice", "bob"} {
		o, err := upPersonalTenant(ctx, eng, serverTenant(t, tc.Name, owner, v1alpha1.TenantPersonal), clusterOut, cfg)
		require.NoError(t, err, "personal tenant %s", owner)
		out[owner] = o
	}

	// Two robots of alice and one of bob live together; "r-1-robot" ends with the suffix of
	// a robot's ServiceAccount name.
	type robotOf struct{ owner, id string }
	live := []robotOf{{"alice", "r-1"}, {"alice", "r-1-robot"}, {"bob", "r-2"}}
	reqs := map[robotOf]engine.Request{}
	names := map[robotOf]map[string]any{}
	for _, r := range live {
		reqs[r] = serverRequest(t, ownedRobot(r.owner, r.id), out[r.owner], cfg)
		res, err := eng.Up(ctx, reqs[r])
		require.NoError(t, err, "robot %s/%s", r.owner, r.id)
		names[r] = dataNamesOf(res.Outputs)
		requireRobotUp(ctx, t, cs, server.Robot{Namespace: "personal-chat", Type: "chat", ID: r.id}, res.Outputs, 3)
	}
	requireRobotIdentities(ctx, t, cs, dyn, "personal-chat")

	// alice's r-1 goes; bob's robot reuses its id: nothing of alice's is its.
	first := robotOf{"alice", "r-1"}
	_, err = eng.Destroy(ctx, reqs[first])
	require.NoError(t, err)
	reuse := robotOf{"bob", "r-1"}
	reqs[reuse] = serverRequest(t, ownedRobot("bob", "r-1"), out["bob"], cfg)
	res, err := eng.Up(ctx, reqs[reuse])
	require.NoError(t, err)
	names[reuse] = dataNamesOf(res.Outputs)
	for k, v := range names[first] {
		require.NotEqual(t, v, names[reuse][k], "bob's r-1 reuses alice's %s", k)
	}
	requireRobotIdentities(ctx, t, cs, dyn, "personal-chat")
	_, err = eng.Destroy(ctx, reqs[reuse])
	require.NoError(t, err)

	// alice makes r-1 again: its data is under its own names, as it was.
	res, err = eng.Up(ctx, serverRequest(t, ownedRobot("alice", "r-1"), out["alice"], cfg))
	require.NoError(t, err)
	require.Equal(t, names[first], dataNamesOf(res.Outputs), "alice's r-1 gets its own names back")
}

// ownedRobot is owner's TFRServer of robot chat/id.
func ownedRobot(owner, id string) *v1alpha1.TFRServer {
	s := robotServer(owner+"-"+id, id)
	s.Spec.TenantRef = owner
	return s
}

// dataNamesOf are the data names a server stack exports.
func dataNamesOf(out program.Outputs) map[string]any {
	m := map[string]any{}
	for _, k := range []string{stacks.ServerOutputDBSchema, stacks.ServerOutputBucket, stacks.ServerOutputRabbitMQVHost, stacks.ServerOutputRedisKeyPrefix} {
		m[k] = out[k].Value
	}
	return m
}

// requireRobotIdentities checks every pod of ns on the API server: a robot's pod runs as
// its robot's ServiceAccount (or, for the grafana-sa Job, the robot's grafana account) with
// no token but there, and AuthorizationPolicies of its robot, and of no other robot, select
// it; a pod of the middleware is selected by no robot's policy.
func requireRobotIdentities(ctx context.Context, t *testing.T, cs kubernetes.Interface, dyn dynamic.Interface, ns string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	gvr := schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"}
	aps, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	robotPods := 0
	for _, p := range pods.Items {
		robot := ""
		if p.Labels[server.LabelName] == "tfrobot-server" {
			robot = p.Labels[server.LabelInstance]
			robotPods++
			requireRobotAccount(ctx, t, cs, &p, robot)
		}
		own := 0
		for _, ap := range aps.Items {
			sel, _, _ := unstructuredMap(ap.Object, "spec", "selector", "matchLabels")
			if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(labels.Set(p.Labels)) {
				continue
			}
			owner := ap.GetLabels()[server.LabelInstance]
			require.Equal(t, robot, owner, "policy %s selects pod %s", ap.GetName(), p.Name)
			own++
		}
		if robot != "" {
			require.NotZero(t, own, "pod %s of robot %s has no policy", p.Name, robot)
		}
	}
	require.NotZero(t, robotPods)
	t.Logf("%d pods (%d of robots), %d policies checked", len(pods.Items), robotPods, len(aps.Items))
}

func requireRobotAccount(ctx context.Context, t *testing.T, cs kubernetes.Interface, p *corev1.Pod, robot string) {
	t.Helper()
	token := p.Spec.AutomountServiceAccountToken != nil && *p.Spec.AutomountServiceAccountToken
	if p.Labels[server.LabelComponent] == server.KindGrafanaSA {
		require.Equal(t, robot+"-"+server.KindGrafanaSA, p.Spec.ServiceAccountName, "pod %s", p.Name)
		return
	}
	require.Equal(t, robot+"-robot", p.Spec.ServiceAccountName, "pod %s", p.Name)
	require.False(t, token, "pod %s mounts a token", p.Name)
	sa, err := cs.CoreV1().ServiceAccounts(p.Namespace).Get(ctx, p.Spec.ServiceAccountName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, sa.AutomountServiceAccountToken)
	require.False(t, *sa.AutomountServiceAccountToken)
	rbs, err := cs.RbacV1().RoleBindings(p.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, rb := range rbs.Items {
		for _, s := range rb.Subjects {
			require.False(t, s.Kind == "ServiceAccount" && s.Name == sa.Name, "RoleBinding %s grants the robot's account", rb.Name)
		}
	}
}

// unstructuredMap reads a map of strings at path.
func unstructuredMap(obj map[string]any, path ...string) (map[string]string, bool, error) {
	cur := any(obj)
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[k]
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, false, nil
	}
	out := map[string]string{}
	for k, v := range m {
		s, _ := v.(string)
		out[k] = strings.TrimSpace(s)
	}
	return out, true, nil
}
