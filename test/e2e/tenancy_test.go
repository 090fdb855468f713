//go:build e2e

package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	k8smetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// TestTenancyQuotaEnforced: a tenant's namespace gets its class's LimitRange and
// ResourceQuotas from the provisioner, and the API server, not TFRS, refuses what the class
// forbids: a pod of a system or unallowed priority class, a 1Pi volume, volumes past the
// storage total. The applier can neither patch nor delete the class objects. A pod without a
// priority class is admitted: the scope is Exists and NotIn, not NotIn alone, which would match
// a pod without a class (components/tenant/quota.go).
func TestTenancyQuotaEnforced(t *testing.T) {
	e, admin, opREST, run, op := asOperator(t, 20*time.Minute)
	ctx := e.ctx
	var err error

	tc := standInCluster(t)
	tc.Spec.Tenancy.AllowedPriorityClasses = []string{"tfrs-e2e-allowed"}
	// The cluster stack as the admin (TestLeastPrivilege covers it under the provisioner
	// role); the tenant below as the operator, so its class objects are the provisioner's.
	_, err = runner.New(e.eng, runner.Options{Kubeconfig: e.cfg["kubernetes:kubeconfig"].Value}).Up(ctx, tc, op)
	require.NoError(t, err)
	for _, name := range []string{"tfrs-e2e-allowed", "tfrs-e2e-other"} {
		_, err = admin.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: 1000}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	x := testenv.Lean(testenv.StandInTenant("team", "quota", tc.Name))
	_, err = run.Up(ctx, x, op)
	require.NoError(t, err, "a lean tenant fits the built-in class")
	ns := x.TargetNamespace()

	lr, err := admin.CoreV1().LimitRanges(ns).Get(ctx, tenant.ClassObjectName, metav1.GetOptions{})
	require.NoError(t, err, "the class's LimitRange")
	require.Equal(t, v1alpha1.BuiltinClassName, lr.Labels[tenant.LabelClass])
	rq, err := admin.CoreV1().ResourceQuotas(ns).Get(ctx, tenant.ClassObjectName, metav1.GetOptions{})
	require.NoError(t, err, "the class's ResourceQuota")
	require.Equal(t, "500Gi", ptr.To(rq.Spec.Hard[corev1.ResourceRequestsStorage]).String())
	_, err = admin.CoreV1().ResourceQuotas(ns).Get(ctx, tenant.PriorityQuotaName, metav1.GetOptions{})
	require.NoError(t, err, "the priority-class ResourceQuota")

	// The applier holds no right on pods (ApplierRules), so a probe that proves the quota
	// needs one: a test-only Role lets it create pods, and whatever is refused below is
	// refused by admission, not by RBAC.
	_, err = admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "e2e-pods"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-pods"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "e2e-pods"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenant.ApplierName, Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	applier := as(t, opREST, tenant.ApplierUser(ns))
	waitAuthorized(t, applier, ns)

	pod := func(name, class string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			PriorityClassName: class,
			// restricted-compliant, so only the class decides.
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		}}
	}
	create := func(p *corev1.Pod) error {
		_, err := applier.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		return err
	}
	for _, class := range []string{"system-node-critical", "system-cluster-critical", "tfrs-e2e-other"} {
		err := create(pod("probe-"+class, class))
		require.True(t, apierrors.IsForbidden(err), "a pod of priority class %s was not refused: %v", class, err)
		require.Contains(t, err.Error(), "exceeded quota: "+tenant.PriorityQuotaName, "refused by the quota, not by RBAC: %v", err)
	}
	require.NoError(t, create(pod("probe-allowed", "tfrs-e2e-allowed")), "an allowed priority class")
	require.NoError(t, create(pod("probe-none", "")), "a pod without a priority class")
	got, err := admin.CoreV1().Pods(ns).Get(ctx, "probe-none", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, got.Spec.Containers[0].Resources.Limits, "the LimitRange filled in the limits the quota counts")

	pvc := func(name, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		}}
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	_, err = applier.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc("huge", "1Pi"), dry)
	require.True(t, apierrors.IsForbidden(err), "a 1Pi volume: %v", err)
	// Two volumes at the class's max fit; a third passes the storage total.
	for _, n := range []string{"big-1", "big-2"} {
		_, err = applier.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc(n, "200Gi"), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// Admission adds each claim to the quota's usage, but the quota controller recomputes the
	// usage from its informer cache on every claim event, and for a moment after a create that
	// cache can lack it (an upstream race: a recompute then lowers the usage). The third claim
	// is tried once the controller itself counts every claim in the namespace (the tenant's
	// own and these two): the same usage on three reads in a row.
	claims, err := admin.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var total resource.Quantity
	for _, c := range claims.Items {
		total.Add(c.Spec.Resources.Requests[corev1.ResourceStorage])
	}
	steady := 0
	require.Eventually(t, func() bool {
		q, err := admin.CoreV1().ResourceQuotas(ns).Get(ctx, tenant.ClassObjectName, metav1.GetOptions{})
		used := q.Status.Used[corev1.ResourceRequestsStorage]
		if err != nil || used.Cmp(total) != 0 {
			steady = 0
			return false
		}
		steady++
		return steady >= 3
	}, time.Minute, 500*time.Millisecond, "the quota counts the %d claims (%s)", len(claims.Items), total.String())
	_, err = applier.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc("big-3", "200Gi"), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "a third 200Gi volume: %v", err)
	require.Contains(t, err.Error(), "exceeded quota: "+tenant.ClassObjectName)

	// The applier cannot touch the class objects.
	dryDel := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	dryPatch := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	loosen := []byte(`{"spec":{"hard":{"requests.storage":"1Ei"}}}`)
	for what, try := range map[string]func() error{
		"delete the class quota": func() error {
			return applier.CoreV1().ResourceQuotas(ns).Delete(ctx, tenant.ClassObjectName, dryDel)
		},
		"delete the priority quota": func() error {
			return applier.CoreV1().ResourceQuotas(ns).Delete(ctx, tenant.PriorityQuotaName, dryDel)
		},
		"patch the class quota": func() error {
			_, err := applier.CoreV1().ResourceQuotas(ns).Patch(ctx, tenant.ClassObjectName, types.MergePatchType, loosen, dryPatch)
			return err
		},
		"delete the LimitRange": func() error {
			return applier.CoreV1().LimitRanges(ns).Delete(ctx, tenant.ClassObjectName, dryDel)
		},
		"patch the LimitRange": func() error {
			_, err := applier.CoreV1().LimitRanges(ns).Patch(ctx, tenant.ClassObjectName, types.MergePatchType, []byte(`{"spec":{"limits":[]}}`), dryPatch)
			return err
		},
		"create another LimitRange": func() error {
			_, err := applier.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dry)
			return err
		},
	} {
		require.True(t, apierrors.IsForbidden(try()), "the applier may %s", what)
	}
}

// waitAuthorized waits until the API server's RBAC cache lets c create pods in ns (a dry run
// that the authorizer, not admission, refuses means not yet).
func waitAuthorized(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rbac-probe"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot create resource") {
			return
		}
		require.True(t, time.Now().Before(deadline), "the applier is still not authorized to create pods: %v", err)
		time.Sleep(200 * time.Millisecond)
	}
}

// TestTenancyNamespaceUpgrade: a new tenant may not take a platform namespace (monitoring,
// which every tenant's isolation trusts) or a personal- one, but a tenant whose stack created
// its namespace before the rule keeps it, and its next up brings the class objects.
func TestTenancyNamespaceUpgrade(t *testing.T) {
	e := newEnv(t, 20*time.Minute)
	ctx := e.ctx
	tc, _ := upStandInCluster(ctx, t, e.eng, e.cfg)
	kc, err := e.cp.Client()
	require.NoError(t, err)
	run := runner.New(e.eng, runner.Options{Kubeconfig: e.cfg["kubernetes:kubeconfig"].Value})
	op := runner.Op{Door: engine.ManagedByCLI}
	refused := func(err error, want string) {
		t.Helper()
		var inv *kinds.InvalidError
		require.True(t, errors.As(err, &inv), "want an InvalidError, got %v", err)
		require.Contains(t, err.Error(), "spec.namespace")
		require.Contains(t, err.Error(), want)
	}

	for _, ns := range []string{clusterns.Monitoring, "personal-chat"} {
		x := testenv.Lean(testenv.StandInTenant("team", "newcomer", tc.Name))
		x.Spec.Namespace = ns
		_, err := run.Up(ctx, x, op)
		refused(err, "reserved")
		_, err = kc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "namespace %s was created: %v", ns, err)
	}

	// A tenant from before the rule: its stack created "monitoring" (the same Namespace
	// resource the tenant program registers, with the marks its stack put on it then).
	legacy := testenv.Lean(testenv.StandInTenant("team", "legacy", tc.Name))
	legacy.Spec.Namespace = clusterns.Monitoring
	stack, _, err := legacy.OwnStacks()
	require.NoError(t, err)
	_, err = e.eng.Up(ctx, engine.Request{Stack: stack, ManagedBy: engine.ManagedByCLI, Config: e.cfg, Program: func(pc *pulumi.Context) error {
		c := &struct{ pulumi.ResourceState }{}
		if err := pc.RegisterComponentResource(tenant.NamespaceType, stacks.TenantNamespace, c); err != nil {
			return err
		}
		_, err := k8scorev1.NewNamespace(pc, stacks.TenantNamespace+"-namespace", &k8scorev1.NamespaceArgs{
			Metadata: &k8smetav1.ObjectMetaArgs{Name: pulumi.String(clusterns.Monitoring),
				Labels:      pulumi.StringMap{cluster.LabelOwner: pulumi.String(stacks.OwnerMark(stack))},
				Annotations: pulumi.StringMap{stacks.AnnotationOwner: pulumi.String(stack), cluster.AnnotationStack: pulumi.String(stack)}}}, pulumi.Parent(c))
		return err
	}})
	require.NoError(t, err)
	before, err := kc.CoreV1().Namespaces().Get(ctx, clusterns.Monitoring, metav1.GetOptions{})
	require.NoError(t, err)
	_, err = run.Up(ctx, legacy, op)
	require.NoError(t, err, "an existing tenant keeps its namespace")
	_, err = run.Up(ctx, legacy, op)
	require.NoError(t, err, "and keeps running")
	after, err := kc.CoreV1().Namespaces().Get(ctx, clusterns.Monitoring, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, before.UID, after.UID, "the namespace was replaced")
	_, err = kc.CoreV1().ResourceQuotas(clusterns.Monitoring).Get(ctx, tenant.ClassObjectName, metav1.GetOptions{})
	require.NoError(t, err, "the upgraded tenant got its class quota")
	_, err = kc.CoreV1().LimitRanges(clusterns.Monitoring).Get(ctx, tenant.ClassObjectName, metav1.GetOptions{})
	require.NoError(t, err, "the upgraded tenant got its LimitRange")
}
