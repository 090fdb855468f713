//go:build e2e

package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/psaprobe"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
)

// warnings collects the API server's warning headers of one client.
type warnings struct {
	mu   sync.Mutex
	text []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

// take returns the warnings so far and forgets them.
func (w *warnings) take() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := strings.Join(w.text, "\n")
	w.text = nil
	return out
}

// asWarned is as, with the API server's warnings collected.
func asWarned(t *testing.T, rc *rest.Config, user string) (kubernetes.Interface, *warnings) {
	t.Helper()
	c := rest.CopyConfig(rc)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	w := &warnings{}
	c.WarningHandler = w
	cs, err := kubernetes.NewForConfig(c)
	require.NoError(t, err)
	return cs, w
}

// probeDeployment is a one-replica Deployment of spec, labelled for the probe.
func probeDeployment(name string, spec corev1.PodSpec) *appsv1.Deployment {
	labels := map[string]string{"tfrs.io/probe": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// replicaFailure is the ReplicaFailure message of the Deployment's ReplicaSets ("" = none).
func replicaFailure(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, probe string) string {
	t.Helper()
	rss, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "tfrs.io/probe=" + probe})
	require.NoError(t, err)
	for _, rs := range rss.Items {
		for _, cond := range rs.Status.Conditions {
			if cond.Type == appsv1.ReplicaSetReplicaFailure && cond.Status == corev1.ConditionTrue {
				return cond.Message
			}
		}
	}
	return ""
}

// TestPodSecurityRestricted brings up the stand-in cluster, a full tenant and a robot server
// through the runner as an operator holding only the provisioner role (so the tenant's
// objects go through its applier), then checks with the API server:
//
//   - the tenant namespace carries enforce/audit/warn = restricted at the pinned version,
//     and the applier cannot relabel it;
//   - every hostile pod of psaprobe.Mutations (one per Pod Security rule) is refused at
//     admission: created directly by a principal RBAC allows (dry run), the API server
//     answers Forbidden "violates PodSecurity"; the applier has no right to create Pods at
//     all, and when it creates a Deployment of the pod, the API server warns and the
//     ReplicaSet controller's pod creations are refused with the PodSecurity message, so no
//     pod of it exists;
//   - a compliant probe Deployment of the applier gets its pod (the control);
//   - TFRS's own workloads there have their pods: the ReplicaSet and Job controllers created
//     them, which the API server admits only if they are restricted.
func TestPodSecurityRestricted(t *testing.T) {
	e, admin, opREST, run, op := asOperator(t, 25*time.Minute)
	ctx := e.ctx
	var err error

	tc := standInCluster(t)
	_, err = run.Up(ctx, tc, op)
	require.NoError(t, err, "the cluster stack")
	x := testenv.StandInTenant("team", "psa", tc.Name)
	_, err = run.Up(ctx, x, op)
	require.NoError(t, err, "a full tenant under Pod Security restricted")
	ns := x.TargetNamespace()
	srv := robotServer("bot", "9")
	srv.Namespace, srv.Spec.TenantRef = "team", x.Name
	_, err = run.Up(ctx, srv, op)
	require.NoError(t, err, "a robot server under Pod Security restricted")

	// The labels, on the Namespace as the API server holds it.
	got, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	for k, v := range tenant.PodSecurityLabels() {
		require.Equal(t, v, got.Labels[k], "namespace %s label %s", ns, k)
	}
	applier, warned := asWarned(t, opREST, tenant.ApplierUser(ns))
	_, err = applier.CoreV1().Namespaces().Patch(ctx, ns, "application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	require.True(t, apierrors.IsForbidden(err), "the applier relabelled its namespace's Pod Security level: %v", err)

	// TFRS's own pods: every Deployment and Job it made has pods, and no ReplicaSet was
	// refused one.
	deps, err := admin.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, deps.Items)
	ownPods := 0
	require.Eventually(t, func() bool {
		pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		byOwner := map[string]int{}
		for _, p := range pods.Items {
			for _, o := range p.OwnerReferences {
				byOwner[o.Kind+"/"+o.Name]++
			}
		}
		rss, err := admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, rs := range rss.Items {
			if ptr.Deref(rs.Spec.Replicas, 0) > 0 && byOwner["ReplicaSet/"+rs.Name] == 0 {
				return false
			}
		}
		ownPods = len(pods.Items)
		return true
	}, 2*time.Minute, time.Second, "a TFRS workload in %s has no pod", ns)
	rss, err := admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, rs := range rss.Items {
		for _, c := range rs.Status.Conditions {
			require.False(t, c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue,
				"ReplicaSet %s: %s", rs.Name, c.Message)
		}
	}
	t.Logf("%d Deployments, %d of TFRS's pods admitted in %s", len(deps.Items), ownPods, ns)

	// The hostile probes.
	const image = "registry.example.com/probe:1"
	podSecurity := `violates PodSecurity "restricted:` + tenant.PodSecurityVersion + `"`
	for _, m := range psaprobe.Mutations {
		name := "probe-" + m.Name
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: psaprobe.Mutated(image, m)}
		_, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.True(t, apierrors.IsForbidden(err), "%s: a pod of the cluster admin was not refused: %v", m.Name, err)
		require.Contains(t, err.Error(), podSecurity, m.Name)

		_, err = applier.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.True(t, apierrors.IsForbidden(err), "%s: the applier may create a Pod: %v", m.Name, err)

		warned.take()
		_, err = applier.AppsV1().Deployments(ns).Create(ctx, probeDeployment(name, psaprobe.Mutated(image, m)), metav1.CreateOptions{})
		require.NoError(t, err, "%s: the applier's Deployment", m.Name)
		require.Contains(t, warned.take(), `would violate PodSecurity "restricted:`+tenant.PodSecurityVersion+`"`, "%s: no warning", m.Name)
	}
	_, err = applier.AppsV1().Deployments(ns).Create(ctx, probeDeployment("probe-compliant", psaprobe.Compliant(image)), metav1.CreateOptions{})
	require.NoError(t, err)

	refused := 0
	for _, m := range psaprobe.Mutations {
		name := "probe-" + m.Name
		var msg string
		require.Eventually(t, func() bool {
			msg = replicaFailure(ctx, t, admin, ns, name)
			return msg != ""
		}, time.Minute, 500*time.Millisecond, "%s: the ReplicaSet was never refused a pod", m.Name)
		require.Contains(t, msg, podSecurity, m.Name)
		pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "tfrs.io/probe=" + name})
		require.NoError(t, err)
		require.Empty(t, pods.Items, "%s: a hostile pod exists", m.Name)
		refused++
	}
	require.Eventually(t, func() bool {
		pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "tfrs.io/probe=probe-compliant"})
		return err == nil && len(pods.Items) == 1
	}, time.Minute, 500*time.Millisecond, "the compliant probe got no pod")
	require.Empty(t, replicaFailure(ctx, t, admin, ns, "probe-compliant"))
	t.Logf("%d hostile probe pods generated, %d refused by the API server's PodSecurity admission", len(psaprobe.Mutations), refused)
}
