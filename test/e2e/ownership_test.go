//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// The ownership and tenant-namespace admission policies (components/cluster/ownership.go)
// on the real kube-apiserver: the objects OwnershipPolicies returns are what the cluster stack
// applies (TestOwnershipRendersThePolicies); TestOwnershipExportOutputsCannotTakeOver gets
// them from the cluster stack itself.

const ownPullSecret = "tfrobot-pull-secret"

// admissionEnv is a control plane for tests of admission alone (no engine).
func admissionEnv(t *testing.T) (context.Context, *controlplane.ControlPlane) {
	t.Helper()
	cp := testenv.ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx, cp
}

// installOwnershipPolicies creates the cluster's policies directly and waits until the API
// server enforces them (policies reach the admission plugin through an informer).
func installOwnershipPolicies(ctx context.Context, t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	ps, err := cluster.OwnershipPolicies(stacks.OwnershipArgs(ownPullSecret))
	require.NoError(t, err)
	for _, p := range ps {
		_, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &p.Policy, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &p.Binding, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	waitEnforced(ctx, t, admin)
}

// waitEnforced waits until a marked takeover of an unmarked ConfigMap is refused and a
// NodePort Service in a tenant namespace too.
func waitEnforced(ctx context.Context, t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	probeNS := "own-probe"
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNS,
		Labels: map[string]string{stacks.LabelTenantType: "enterprise"}}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	_, err = admin.CoreV1().ConfigMaps(probeNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		err := applyObject(ctx, admin, probeNS, "configmaps", "probe", "kubectl", true, marked(configMap("probe"), "a"))
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
		_, serr := admin.CoreV1().Services(probeNS).Create(ctx, svc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) && apierrors.IsInvalid(serr)
	}, time.Minute, 200*time.Millisecond, "the ownership policies are not enforced")
}

// tenantNamespace creates ns with the tenant label and the applier's ServiceAccount, Role
// (tenant.ApplierRules) and RoleBinding, as the provisioner does, and returns a client acting
// as the applier.
func tenantNamespace(ctx context.Context, t *testing.T, admin kubernetes.Interface, rc *rest.Config, ns string) kubernetes.Interface {
	t.Helper()
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{stacks.LabelTenantType: "enterprise"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: tenant.ApplierName}}, metav1.CreateOptions{})
	require.NoError(t, err)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: tenant.ApplierName}}
	for _, r := range tenant.ApplierRules {
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: r.Groups, Resources: r.Resources, Verbs: r.Verbs})
	}
	_, err = admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: tenant.ApplierName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: tenant.ApplierName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenant.ApplierName, Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	applier := as(t, rc, tenant.ApplierUser(ns))
	require.Eventually(t, func() bool {
		_, err := applier.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the applier's RBAC")
	return applier
}

func configMap(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": map[string]any{"owner": "tfrs"}}
}

// marked is obj with stack's ownership mark, as the stacks' transform adds it.
func marked(obj map[string]any, stack string) map[string]any {
	meta := obj["metadata"].(map[string]any)
	meta["labels"] = map[string]any{cluster.LabelOwner: stacks.OwnerMark(stack)}
	meta["annotations"] = map[string]any{cluster.AnnotationStack: stack}
	return obj
}

// applyObject server-side applies obj (a core/v1 object of resource res) with manager, forced
// like the provider's upserts; dryRun like a preview.
func applyObject(ctx context.Context, c kubernetes.Interface, ns, res, name, manager string, dryRun bool, obj map[string]any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: manager, Force: ptr.To(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return c.CoreV1().RESTClient().Patch(types.ApplyPatchType).Namespace(ns).Resource(res).Name(name).
		VersionedParams(&opts, metav1.ParameterCodec).Body(b).Do(ctx).Error()
}

// TestOwnershipAdmission: the ownership rule at the API server, for the applier and for any
// writer, in an apply and in its dry run.
func TestOwnershipAdmission(t *testing.T) {
	ctx, cp := admissionEnv(t)
	admin, err := cp.Client()
	require.NoError(t, err)
	const ns = "own-a"
	applier := tenantNamespace(ctx, t, admin, cp.RESTConfig, ns)

	// Before the policy: objects a Pulumi program made (its field manager) and one kubectl
	// made, none marked: what a cluster upgraded to marks holds.
	const pulumiManager = "pulumi-kubernetes-0a1b2c3d"
	for name, manager := range map[string]string{"legacy-pulumi": pulumiManager, "legacy-kubectl": "kubectl"} {
		require.NoError(t, applyObject(ctx, admin, ns, "configmaps", name, manager, false, configMap(name)))
	}
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has a resolution of seconds
	installOwnershipPolicies(ctx, t, admin)
	// After it: a user's objects, and one another Pulumi program made.
	for name, manager := range map[string]string{"user-cm": "kubectl", "new-pulumi": pulumiManager} {
		require.NoError(t, applyObject(ctx, admin, ns, "configmaps", name, manager, false, configMap(name)))
	}
	_, err = admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "user-secret"},
		StringData: map[string]string{"mine": "keep"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	writers := map[string]kubernetes.Interface{"the applier": applier, "an admin": admin}
	refused := 0
	refuse := func(what string, err error, words ...string) {
		t.Helper()
		require.True(t, apierrors.IsInvalid(err), "%s: %v", what, err)
		for _, w := range words {
			require.ErrorContains(t, err, w, what)
		}
		if refused == 0 {
			t.Logf("the API server's answer: %v", err)
		}
		refused++
	}
	for wname, w := range writers {
		for _, dry := range []bool{true, false} {
			what := fmt.Sprintf("%s (dry run %v)", wname, dry)
			// A stack's create that meets a user's object.
			refuse(what+" takes a user's ConfigMap", applyObject(ctx, w, ns, "configmaps", "user-cm", pulumiManager, dry, marked(configMap("user-cm"), "tenant.x.a")),
				"tfrs ownership", "configmaps "+ns+"/user-cm", "was not created by TFRS")
			sec := marked(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "user-secret"}, "stringData": map[string]any{"postgresql_password": "x"}}, "tenant.x.a")
			refuse(what+" takes a user's Secret", applyObject(ctx, w, ns, "secrets", "user-secret", pulumiManager, dry, sec), "secrets "+ns+"/user-secret")
			// A kubectl-made object from before the policy is a user's too.
			refuse(what+" takes a kubectl object from before the policy", applyObject(ctx, w, ns, "configmaps", "legacy-kubectl", pulumiManager, dry, marked(configMap("legacy-kubectl"), "tenant.x.a")), "legacy-kubectl")
			// Pulumi-made after the policy: not a legacy object.
			refuse(what+" takes a Pulumi object from after the policy", applyObject(ctx, w, ns, "configmaps", "new-pulumi", pulumiManager, dry, marked(configMap("new-pulumi"), "tenant.x.a")), "new-pulumi")
		}
	}
	s, err := admin.CoreV1().Secrets(ns).Get(ctx, "user-secret", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"mine": []byte("keep")}, s.Data, "the user's Secret changed")
	require.Empty(t, s.Labels)

	// Stack A's object: A updates it, B cannot take it, whoever writes.
	require.NoError(t, applyObject(ctx, applier, ns, "configmaps", "of-a", "pulumi-kubernetes-a", false, marked(configMap("of-a"), "tenant.x.a")))
	require.NoError(t, applyObject(ctx, applier, ns, "configmaps", "of-a", "pulumi-kubernetes-a", false, marked(configMap("of-a"), "tenant.x.a")), "its own stack updates it")
	for wname, w := range writers {
		refuse(wname+": stack B takes stack A's object", applyObject(ctx, w, ns, "configmaps", "of-a", "pulumi-kubernetes-b", false, marked(configMap("of-a"), "server.x.b")),
			"belongs to stack tenant.x.a")
	}

	// The upgrade path: a legacy Pulumi object gets its mark.
	require.NoError(t, applyObject(ctx, applier, ns, "configmaps", "legacy-pulumi", pulumiManager, false, marked(configMap("legacy-pulumi"), "tenant.x.a")))

	// The applier changes (a patch without a mark) and deletes only marked objects; others may.
	patch := []byte(`{"data":{"patched":"yes"}}`)
	_, err = applier.CoreV1().ConfigMaps(ns).Patch(ctx, "user-cm", types.MergePatchType, patch, metav1.PatchOptions{})
	refuse("the applier patches a user's ConfigMap", err, "the namespace applier changes only objects a TFRS stack created")
	err = applier.CoreV1().Secrets(ns).Delete(ctx, "user-secret", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	refuse("the applier deletes a user's Secret (dry run)", err, "the namespace applier deletes only objects a TFRS stack created")
	err = applier.CoreV1().Secrets(ns).Delete(ctx, "user-secret", metav1.DeleteOptions{})
	refuse("the applier deletes a user's Secret", err, "secrets "+ns+"/user-secret")
	_, err = applier.CoreV1().ConfigMaps(ns).Patch(ctx, "of-a", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err, "the applier patches a marked object")
	require.NoError(t, applier.CoreV1().ConfigMaps(ns).Delete(ctx, "of-a", metav1.DeleteOptions{}), "the applier deletes a marked object")
	require.NoError(t, admin.CoreV1().ConfigMaps(ns).Delete(ctx, "user-cm", metav1.DeleteOptions{}), "a user deletes their own object")
	_, err = admin.CoreV1().Secrets(ns).Get(ctx, "user-secret", metav1.GetOptions{})
	require.NoError(t, err, "the user's Secret survived")
	t.Logf("ownership: %d writes refused", refused)
}

// serviceCase is one generated Service and whether the tenant-namespace policy admits it.
type serviceCase struct {
	name  string
	spec  corev1.ServiceSpec
	admit bool
	field string
}

// serviceCases are every Service type crossed with externalIPs absent, empty and set: only
// ClusterIP (headless included) without external IPs is admitted.
func serviceCases() []serviceCase {
	var out []serviceCase
	for _, typ := range []corev1.ServiceType{"", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName} {
		for _, ips := range [][]string{nil, {}, {"203.0.113.7"}, {"10.0.0.1", "198.51.100.2"}} {
			for _, headless := range []bool{false, true} {
				spec := corev1.ServiceSpec{Type: typ, ExternalIPs: ips, Ports: []corev1.ServicePort{{Port: 80}}}
				if typ == corev1.ServiceTypeExternalName {
					spec.ExternalName, spec.Ports = "example.com", nil
					if headless {
						continue
					}
				} else if headless {
					if typ != "" && typ != corev1.ServiceTypeClusterIP {
						continue
					}
					spec.ClusterIP = corev1.ClusterIPNone
				}
				okType := typ == "" || typ == corev1.ServiceTypeClusterIP
				c := serviceCase{name: fmt.Sprintf("type=%q externalIPs=%v headless=%v", typ, ips, headless), spec: spec, admit: okType && len(ips) == 0}
				switch {
				case !okType:
					c.field = "spec.type"
				case len(ips) > 0:
					c.field = "spec.externalIPs"
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// podMutation is one generated change of a pod spec and the field the refusal must name ("" if
// admitted).
type podMutation struct {
	name   string
	mutate func(ns string, s *corev1.PodSpec)
	field  string
}

// podMutations cross every pod (anti-)affinity term list with every way a term can reach
// pods (no namespaces, its own, another, a namespace selector matching all or some), and
// every place a container or volume can name a Secret with the pull Secret and another.
func podMutations() []podMutation {
	var out []podMutation
	term := func(namespaces []string, sel *metav1.LabelSelector) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", Namespaces: namespaces, NamespaceSelector: sel,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}}}
	}
	reaches := []struct {
		name  string
		term  func(ns string) corev1.PodAffinityTerm
		admit bool
	}{
		{"same namespace", func(string) corev1.PodAffinityTerm { return term(nil, nil) }, true},
		{"its own namespace by name", func(ns string) corev1.PodAffinityTerm { return term([]string{ns}, nil) }, true},
		{"another namespace", func(string) corev1.PodAffinityTerm { return term([]string{"kube-system"}, nil) }, false},
		{"its own and another", func(ns string) corev1.PodAffinityTerm { return term([]string{ns, "victim"}, nil) }, false},
		{"every namespace (empty selector)", func(string) corev1.PodAffinityTerm { return term(nil, &metav1.LabelSelector{}) }, false},
		{"a namespace selector", func(string) corev1.PodAffinityTerm {
			return term(nil, &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "victim"}})
		}, false},
	}
	for _, aff := range []string{"podAffinity", "podAntiAffinity"} {
		for _, list := range []string{"required", "preferred"} {
			for _, r := range reaches {
				aff, list, r := aff, list, r
				field := "affinity." + aff + ".requiredDuringSchedulingIgnoredDuringExecution"
				if list == "preferred" {
					field = "affinity." + aff + ".preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm"
				}
				m := podMutation{name: aff + " " + list + " " + r.name, mutate: func(ns string, s *corev1.PodSpec) {
					t := r.term(ns)
					var req []corev1.PodAffinityTerm
					var pref []corev1.WeightedPodAffinityTerm
					if list == "required" {
						req = []corev1.PodAffinityTerm{term(nil, nil), t}
					} else {
						pref = []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term(nil, nil)}, {Weight: 10, PodAffinityTerm: t}}
					}
					s.Affinity = &corev1.Affinity{}
					if aff == "podAffinity" {
						s.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: req, PreferredDuringSchedulingIgnoredDuringExecution: pref}
					} else {
						s.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: req, PreferredDuringSchedulingIgnoredDuringExecution: pref}
					}
				}}
				if !r.admit {
					m.field = field
				}
				out = append(out, m)
			}
		}
	}
	for _, secret := range []string{ownPullSecret, "app-secret"} {
		bad := secret == ownPullSecret
		fieldIf := func(f string) string {
			if bad {
				return f
			}
			return ""
		}
		for _, list := range []string{"containers", "initContainers"} {
			list := list
			pick := func(s *corev1.PodSpec) *corev1.Container {
				if list == "initContainers" {
					s.InitContainers = append(s.InitContainers, corev1.Container{Name: "init", Image: "busybox"})
					return &s.InitContainers[len(s.InitContainers)-1]
				}
				return &s.Containers[0]
			}
			out = append(out,
				podMutation{list + " env secretKeyRef " + secret, func(_ string, s *corev1.PodSpec) {
					c := pick(s)
					c.Env = append(c.Env, corev1.EnvVar{Name: "PLAIN", Value: "x"}, corev1.EnvVar{Name: "S", ValueFrom: &corev1.EnvVarSource{
						SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: ".dockerconfigjson"}}})
				}, fieldIf(list + "[].env[].valueFrom.secretKeyRef.name")},
				podMutation{list + " envFrom secretRef " + secret, func(_ string, s *corev1.PodSpec) {
					c := pick(s)
					c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
						corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}})
				}, fieldIf(list + "[].envFrom[].secretRef.name")})
		}
		out = append(out,
			podMutation{"volume secret " + secret, func(_ string, s *corev1.PodSpec) {
				s.Volumes = append(s.Volumes, corev1.Volume{Name: "empty", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
			}, fieldIf("volumes[].secret.secretName")},
			podMutation{"projected volume secret " + secret, func(_ string, s *corev1.PodSpec) {
				s.Volumes = append(s.Volumes, corev1.Volume{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}},
				}}}})
			}, fieldIf("volumes[].projected.sources[].secret.name")})
	}
	out = append(out, podMutation{"imagePullSecrets names the pull secret", func(_ string, s *corev1.PodSpec) {
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: ownPullSecret}}
	}, ""})
	return out
}

// podKind creates a dry-run object of one pod-carrying kind around a pod spec, and says the
// path of the pod spec in it.
type podKind struct {
	kind, path string
	create     func(ctx context.Context, c kubernetes.Interface, ns string, spec corev1.PodSpec) error
}

func podKinds() []podKind {
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	labels := map[string]string{"app": "probe"}
	tmpl := func(s corev1.PodSpec) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: s}
	}
	om := metav1.ObjectMeta{Name: "probe"}
	sel := &metav1.LabelSelector{MatchLabels: labels}
	job := func(s corev1.PodSpec) batchv1.JobSpec {
		s.RestartPolicy = corev1.RestartPolicyNever
		return batchv1.JobSpec{Template: tmpl(s)}
	}
	return []podKind{
		{"Pod", "spec", func(ctx context.Context, c kubernetes.Interface, ns string, s corev1.PodSpec) error {
			_, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: om, Spec: s}, dry)
			return err
		}},
		{"Deployment", "spec.template.spec", func(ctx context.Context, c kubernetes.Interface, ns string, s corev1.PodSpec) error {
			_, err := c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: om, Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl(s)}}, dry)
			return err
		}},
		{"StatefulSet", "spec.template.spec", func(ctx context.Context, c kubernetes.Interface, ns string, s corev1.PodSpec) error {
			_, err := c.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: om, Spec: appsv1.StatefulSetSpec{Selector: sel, Template: tmpl(s)}}, dry)
			return err
		}},
		{"DaemonSet", "spec.template.spec", func(ctx context.Context, c kubernetes.Interface, ns string, s corev1.PodSpec) error {
			_, err := c.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: om, Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl(s)}}, dry)
			return err
		}},
		{"ReplicaSet", "spec.template.spec", func(ctx context.Context, c kubernetes.Interface, ns string, s corev1.PodSpec) error {
			_, err := c.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: om, Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl(s)}}, dry)
			return err
		}},
		{"Job", "spec.template.spec", func(ctx context.Context, c kubernetes.Interface, ns string, s corev1.PodSpec) error {
			_, err := c.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: om, Spec: job(s)}, dry)
			return err
		}},
		{"CronJob", "spec.jobTemplate.spec.template.spec", func(ctx context.Context, c kubernetes.Interface, ns string, s corev1.PodSpec) error {
			_, err := c.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{ObjectMeta: om, Spec: batchv1.CronJobSpec{Schedule: "@daily",
				JobTemplate: batchv1.JobTemplateSpec{Spec: job(s)}}}, dry)
			return err
		}},
	}
}

// applierWrites are the kinds the applier's Role lets it create.
var applierWrites = map[string]bool{"Deployment": true, "StatefulSet": true, "Job": true}

// TestTenantNamespaceServicesAndPods: every generated Service and pod template in a tenant
// namespace, written as the applier and as an admin (any writer), is admitted or refused by
// the API server exactly as the rules say, the refusal naming the field; outside tenant
// namespaces the same objects are admitted.
func TestTenantNamespaceServicesAndPods(t *testing.T) {
	ctx, cp := admissionEnv(t)
	admin, err := cp.Client()
	require.NoError(t, err)
	const ns = "own-svc"
	applier := tenantNamespace(ctx, t, admin, cp.RESTConfig, ns)
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-a-tenant"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	installOwnershipPolicies(ctx, t, admin)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	var cases, refused int
	expect := func(what string, err error, field, path string) {
		t.Helper()
		cases++
		if field == "" {
			require.NoError(t, err, what)
			return
		}
		require.True(t, apierrors.IsInvalid(err), "%s: want refused at %s, got %v", what, field, err)
		require.ErrorContains(t, err, path+field, what)
		refused++
	}

	for _, c := range serviceCases() {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: c.spec}
		for wname, w := range map[string]kubernetes.Interface{"applier": applier, "admin": admin} {
			_, err := w.CoreV1().Services(ns).Create(ctx, svc.DeepCopy(), dry)
			expect(wname+" Service "+c.name, err, c.field, "")
		}
		_, err := admin.CoreV1().Services("not-a-tenant").Create(ctx, svc.DeepCopy(), dry)
		expect("Service outside tenant namespaces "+c.name, err, "", "")
	}
	// An update that turns a Service into a NodePort is refused as its create is.
	_, err = applier.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web",
		Labels: map[string]string{cluster.LabelOwner: stacks.OwnerMark("tenant.x.a")}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = applier.CoreV1().Services(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"type":"NodePort"}}`), metav1.PatchOptions{})
	expect("applier patches a Service to NodePort", err, "spec.type", "")

	base := func() corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}
	}
	for _, k := range podKinds() {
		for _, m := range podMutations() {
			s := base()
			m.mutate(ns, &s)
			writers := map[string]kubernetes.Interface{"admin": admin}
			if applierWrites[k.kind] {
				writers["applier"] = applier
			}
			for wname, w := range writers {
				expect(wname+" "+k.kind+" "+m.name, k.create(ctx, w, ns, s), m.field, k.path+".")
			}
			expect(k.kind+" outside tenant namespaces "+m.name, k.create(ctx, admin, "not-a-tenant", s), "", "")
		}
	}
	t.Logf("tenant namespace rules: %d generated writes, %d refused (Services %d cases, pod mutations %d × kinds %d)",
		cases, refused, len(serviceCases()), len(podMutations()), len(podKinds()))
}

// TestOwnershipExportOutputsCannotTakeOver: with the cluster stack's policies, a tenant whose
// exportOutputs names a user's existing Secret is refused, in its preview and its up, naming
// the object, and the Secret keeps its keys; without exportOutputs the tenant comes up and
// the Secret is still there. Every object the tenant's stack made, a chart's included,
// carries its mark.
func TestOwnershipExportOutputsCannotTakeOver(t *testing.T) {
	e := newEnv(t, 15*time.Minute)
	ctx, eng := e.ctx, e.eng
	_, clusterOut := upStandInCluster(ctx, t, eng, e.cfg)
	admin, err := e.cp.Client()
	require.NoError(t, err)
	_, err = admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, cluster.OwnershipPolicyName, metav1.GetOptions{})
	require.NoError(t, err, "the cluster stack installs the ownership policy")

	tt := testenv.Lean(testenv.StandInTenant("tfrs-system", "owned", "e2e"))
	tt.Spec.Grafana.Enabled = ptr.To(true) // a chart's objects are marked too
	ns := tt.TargetNamespace()
	tstack, _, err := stacks.TenantStackNames(tt)
	require.NoError(t, err)
	req := func(x *v1alpha1.TFRTenant) engine.Request {
		return engine.Request{Stack: tstack, ManagedBy: engine.ManagedByCLI, Config: e.cfg,
			Program: stacks.Tenant(stacks.TenantInput{Tenant: x, Cluster: clusterOut})}
	}
	_, err = eng.Up(ctx, req(tt))
	require.NoError(t, err)
	requireAllMarked(ctx, t, e.cp.RESTConfig, ns, tstack)

	_, err = admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "user-secret"},
		StringData: map[string]string{"mine": "keep"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	exp := tt.DeepCopy()
	exp.Spec.ExportOutputs = &v1alpha1.ExportOutputsSpec{SecretName: "user-secret"}
	exp.Default()
	require.Empty(t, exp.Validate())
	_, err = eng.Preview(ctx, req(exp))
	require.ErrorContains(t, err, "tfrs ownership", "the preview's server-side dry run")
	_, err = eng.Up(ctx, req(exp))
	require.ErrorContains(t, err, "tfrs ownership")
	require.ErrorContains(t, err, "secrets "+ns+"/user-secret")
	s, err := admin.CoreV1().Secrets(ns).Get(ctx, "user-secret", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"mine": []byte("keep")}, s.Data, "the user's Secret changed")

	_, err = eng.Up(ctx, req(tt))
	require.NoError(t, err, "without exportOutputs the tenant applies again")
	s, err = admin.CoreV1().Secrets(ns).Get(ctx, "user-secret", metav1.GetOptions{})
	require.NoError(t, err, "the user's Secret survived removing exportOutputs")
	require.Equal(t, map[string][]byte{"mine": []byte("keep")}, s.Data)
}

// requireAllMarked checks that every object in ns (and ns itself) a Pulumi program wrote
// (its field manager) carries stack's mark, over every kind the ownership policy covers.
func requireAllMarked(ctx context.Context, t *testing.T, rc *rest.Config, ns, stack string) int {
	t.Helper()
	disco, err := discovery.NewDiscoveryClientForConfig(rc)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	meta, err := metadata.NewForConfig(rc)
	require.NoError(t, err)
	n := 0
	for g, rs := range stacks.OwnedResources() {
		for _, r := range rs {
			gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Group: g, Resource: r})
			if err != nil {
				continue // a custom resource whose CRD this cluster lacks
			}
			var items []metav1.PartialObjectMetadata
			if r == "namespaces" {
				o, err := meta.Resource(gvr).Get(ctx, ns, metav1.GetOptions{})
				require.NoError(t, err)
				items = append(items, *o)
			} else {
				l, err := meta.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
				require.NoError(t, err, "%s", gvr)
				items = l.Items
			}
			for _, o := range items {
				if !slices.ContainsFunc(o.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return strings.HasPrefix(f.Manager, "pulumi-kubernetes") }) {
					continue
				}
				n++
				require.Equal(t, stacks.OwnerMark(stack), o.Labels[cluster.LabelOwner], "%s %s/%s carries no mark of %s", r, ns, o.Name, stack)
				require.Equal(t, stack, o.Annotations[cluster.AnnotationStack], "%s %s/%s", r, ns, o.Name)
			}
		}
	}
	require.Greater(t, n, 10, "too few objects of the stack found in %s", ns)
	t.Logf("%d objects of %s carry its mark", n, stack)
	return n
}

// TestOwnershipUpgrade: a tenant created before marks existed (its stack run without the
// transform, no policy installed) gets its marks on the next up, once the cluster's policy is
// in force, and keeps every object: no replace, no create, no delete, the same UIDs.
func TestOwnershipUpgrade(t *testing.T) {
	e := newEnv(t, 15*time.Minute)
	ctx, eng := e.ctx, e.eng
	admin, err := e.cp.Client()
	require.NoError(t, err)

	tt := testenv.Lean(testenv.StandInTenant("tfrs-system", "legacy", "e2e"))
	tt.Spec.Grafana.Enabled = ptr.To(true)
	ns := tt.TargetNamespace()
	tstack, _, err := stacks.TenantStackNames(tt)
	require.NoError(t, err)
	req := engine.Request{Stack: tstack, ManagedBy: engine.ManagedByCLI, Config: e.cfg,
		Program: stacks.Tenant(stacks.TenantInput{Tenant: tt, Cluster: stacks.TenantCluster{RabbitMQOperatorReady: true}})}

	restore := stacks.WithoutOwnershipMarksForTest()
	_, err = eng.Up(ctx, req)
	restore()
	require.NoError(t, err, "the tenant as it was before marks")
	uids := func(unmarked bool) map[string]types.UID {
		out := map[string]types.UID{}
		l, err := admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, x := range l.Items {
			out["secret/"+x.Name] = x.UID
			if unmarked {
				require.Empty(t, x.Labels[cluster.LabelOwner], "marked before marks existed")
			}
		}
		d, err := admin.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, x := range d.Items {
			out["deployment/"+x.Name] = x.UID
		}
		n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.NoError(t, err)
		out["namespace"] = n.UID
		return out
	}
	before := uids(true)
	require.Greater(t, len(before), 3)

	time.Sleep(1100 * time.Millisecond) // the policy is created after the tenant's objects
	installOwnershipPolicies(ctx, t, admin)

	pv, err := eng.Preview(ctx, req)
	require.NoError(t, err, "the upgrade's preview (server-side dry run)")
	up, err := eng.Up(ctx, req)
	require.NoError(t, err, "the upgrade marks the tenant's objects")
	t.Logf("upgrade preview %v, up %v", map[engine.StepOp]int(pv.Changes), map[engine.StepOp]int(up.Changes))
	for _, op := range []engine.StepOp{engine.StepReplace, engine.StepCreate, engine.StepDelete} {
		require.Zero(t, up.Changes[op], "the upgrade did %s: %v", op, up.Changes)
	}
	require.Positive(t, up.Changes[engine.StepUpdate])
	after := uids(false)
	for k, uid := range before {
		require.Equal(t, uid, after[k], "%s was replaced", k)
	}
	requireAllMarked(ctx, t, e.cp.RESTConfig, ns, tstack)
}
