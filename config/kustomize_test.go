// Package config_test builds the kustomizations of config/ with the kustomize library (what
// `kubectl apply -k` runs) and checks what they deploy: config/default is one operator on a
// ReadWriteOnce file state; config/replicas is two operators with leader election and two API
// replicas on an s3:// state, spread over nodes, each under a PodDisruptionBudget, with the
// RBAC their Leases need. On the local control plane the replicas overlay is applied for real.
package config_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/internal/checkout"
)

const namespace = "tfrs-system"

func configDir() string {
	return filepath.Join(checkout.Root(), "config")
}

// build is `kustomize build config/<dir>` with kustomize's defaults (no plugins, no Helm).
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(configDir(), dir))
	require.NoError(t, err, "kustomize build config/%s", dir)
	b, err := m.AsYaml()
	require.NoError(t, err)
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var o map[string]any
		err := d.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(o) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: o})
		}
	}
	require.NotEmpty(t, objs, dir)
	return objs
}

// get decodes the one object of that kind and name strictly into a typed struct: a field the
// type does not know (a misspelt key in a patch) fails.
func get(t *testing.T, objs []*unstructured.Unstructured, kind, name string, into any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			b, err := yaml.Marshal(o.Object)
			require.NoError(t, err)
			require.NoError(t, yaml.UnmarshalStrict(b, into), "%s %s", kind, name)
			return
		}
	}
	t.Fatalf("%s %s not in the build", kind, name)
}

func count(objs []*unstructured.Unstructured, kind string) int {
	n := 0
	for _, o := range objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

// TestDefaultIsOneOperatorOnAFileState: config/default keeps its shape (the overlay must not
// leak into it): one operator, Recreate, the ReadWriteOnce claim, the backend Secret optional.
func TestDefaultIsOneOperatorOnAFileState(t *testing.T) {
	objs := build(t, "default")
	var d appsv1.Deployment
	get(t, objs, "Deployment", "tfrs-operator", &d)
	require.EqualValues(t, 1, *d.Spec.Replicas)
	require.Equal(t, appsv1.RecreateDeploymentStrategyType, d.Spec.Strategy.Type)
	var pvc corev1.PersistentVolumeClaim
	get(t, objs, "PersistentVolumeClaim", "tfrs-state", &pvc)
	require.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, pvc.Spec.AccessModes)
	require.True(t, *envOf(d.Spec.Template.Spec.Containers[0])["TFRS_BACKEND"].ValueFrom.SecretKeyRef.Optional)
	require.Equal(t, 1, count(objs, "Deployment"))
	require.Zero(t, count(objs, "PodDisruptionBudget"))
}

// checkPod: the conventions of config/manager (non-root, read-only root, nothing escalates,
// probes on a declared port), the released image, the s3:// state from the required Secret
// tfrs-backend, the pod's identity from the downward API, only scratch volumes, and a soft
// anti-affinity over nodes that selects this Deployment's own pods.
func checkPod(t *testing.T, d appsv1.Deployment, image string) corev1.Container {
	t.Helper()
	name := d.Name
	pod := d.Spec.Template.Spec
	require.Equal(t, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels, name)
	require.True(t, *pod.SecurityContext.RunAsNonRoot, name)
	require.EqualValues(t, 65532, *pod.SecurityContext.RunAsUser, name)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type, name)
	require.Len(t, pod.Containers, 1, name)
	c := pod.Containers[0]
	require.Equal(t, image, c.Image, name)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem, name)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation, name)
	require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop, name)
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[p.Name] = true
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		require.NotNil(t, p, name)
		require.True(t, ports[p.HTTPGet.Port.StrVal], "%s: probe port %s not declared", name, p.HTTPGet.Port.StrVal)
	}
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Contains(t, c.Args, "--leader-elect", name)
	require.Contains(t, c.Args, "--passphrase-file=/etc/tfrs/passphrase/passphrase", name)

	env := envOf(c)
	for key, want := range map[string]string{"TFRS_BACKEND": "url", "AWS_ACCESS_KEY_ID": "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY": "AWS_SECRET_ACCESS_KEY"} {
		ref := env[key].ValueFrom
		require.NotNil(t, ref, "%s: %s", name, key)
		require.Equal(t, "tfrs-backend", ref.SecretKeyRef.Name, "%s: %s", name, key)
		require.Equal(t, want, ref.SecretKeyRef.Key, "%s: %s", name, key)
		// Optional would let a pod without the Secret fall back to a file state of its own: a
		// second, diverging state.
		require.False(t, ref.SecretKeyRef.Optional != nil && *ref.SecretKeyRef.Optional, "%s: %s must not be optional", name, key)
	}
	for key, field := range map[string]string{"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name", "POD_UID": "metadata.uid"} {
		require.NotNil(t, env[key].ValueFrom, "%s: %s", name, key)
		require.Equal(t, field, env[key].ValueFrom.FieldRef.FieldPath, "%s: %s", name, key)
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		require.Nil(t, v.PersistentVolumeClaim, "%s: volume %s is a claim; on s3 every volume is scratch", name, v.Name)
		volumes[v.Name] = v
	}
	writable := map[string]bool{}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		require.True(t, ok, "%s: mount %s has no volume", name, m.Name)
		if !m.ReadOnly {
			require.NotNil(t, v.EmptyDir, "%s: writable mount %s", name, m.Name)
			writable[m.MountPath] = true
		}
	}
	require.True(t, writable["/var/lib/tfrs"], "%s: the state dir (PULUMI_HOME, workspaces) is not writable", name)
	require.True(t, writable[env["TMPDIR"].Value], "%s: TMPDIR", name)

	aff := pod.Affinity
	require.NotNil(t, aff, name)
	require.NotNil(t, aff.PodAntiAffinity, name)
	require.Empty(t, aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "%s: soft, so a one-node cluster still runs every replica", name)
	terms := aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	require.Len(t, terms, 1, name)
	require.Equal(t, "kubernetes.io/hostname", terms[0].PodAffinityTerm.TopologyKey, name)
	require.Equal(t, d.Spec.Template.Labels, terms[0].PodAffinityTerm.LabelSelector.MatchLabels, name)
	return c
}

// TestReplicasOverlay: config/replicas runs 2 operators and 2 APIs on the s3:// state.
func TestReplicasOverlay(t *testing.T) {
	objs := build(t, "replicas")
	for _, o := range objs {
		if o.GetKind() != "Namespace" && o.GetNamespace() == "" {
			require.Contains(t, []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}, o.GetKind(), "%s %s has no namespace", o.GetKind(), o.GetName())
		} else if o.GetKind() != "Namespace" {
			require.Equal(t, namespace, o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
		}
	}
	require.Zero(t, count(objs, "PersistentVolumeClaim"), "the file-state claim is dropped")
	require.Equal(t, 2, count(objs, "Deployment"))

	// The image is the one config/manager releases (TestChartVersionMatchesManifests ties it
	// to the chart's appVersion), for both.
	var k struct {
		Images []struct{ Name, NewName, NewTag string } `json:"images"`
	}
	b, err := os.ReadFile(filepath.Join(configDir(), "manager", "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &k))
	require.Len(t, k.Images, 1)
	image := k.Images[0].NewName + ":" + k.Images[0].NewTag

	var op, api appsv1.Deployment
	get(t, objs, "Deployment", "tfrs-operator", &op)
	get(t, objs, "Deployment", "tfrs-api", &api)
	for _, d := range []appsv1.Deployment{op, api} {
		require.EqualValues(t, 2, *d.Spec.Replicas, d.Name)
		// A new pod starts (as a standby, for the operator) before an old one goes.
		require.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type, d.Name)
		require.EqualValues(t, 0, d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue(), d.Name)
		require.EqualValues(t, 1, d.Spec.Strategy.RollingUpdate.MaxSurge.IntValue(), d.Name)
	}
	opc := checkPod(t, op, image)
	require.Equal(t, "operator", opc.Args[0])
	apic := checkPod(t, api, image)
	require.Equal(t, []string{"serve", "--listen=:8080", "--leader-elect", "--auth=kubernetes"}, apic.Args[:4])
	for _, a := range apic.Args {
		require.False(t, strings.HasPrefix(a, "--spec-dir"), "the API keeps its specs in the backend: %s", a)
	}
	require.Equal(t, "tfrs-api", api.Spec.Template.Spec.ServiceAccountName)
	require.EqualValues(t, 780, *api.Spec.Template.Spec.TerminationGracePeriodSeconds, "--shutdown-grace 10m + cancel grace 2m + margin")

	// One pod of each at a time.
	for _, d := range []appsv1.Deployment{op, api} {
		var pdb policyv1.PodDisruptionBudget
		get(t, objs, "PodDisruptionBudget", d.Name, &pdb)
		require.Nil(t, pdb.Spec.MinAvailable, d.Name)
		require.EqualValues(t, 1, pdb.Spec.MaxUnavailable.IntValue(), d.Name)
		require.Equal(t, d.Spec.Template.Labels, pdb.Spec.Selector.MatchLabels, d.Name)
	}

	// The Service reaches the API pods on the declared port.
	var svc corev1.Service
	get(t, objs, "Service", "tfrs-api", &svc)
	require.Equal(t, api.Spec.Template.Labels, svc.Spec.Selector)
	require.Equal(t, "http", svc.Spec.Ports[0].TargetPort.StrVal)

	// RBAC of the API's account: its Lease and pods in the namespace, the programs' role and
	// token/access reviews cluster-wide. Every binding names a role and an account in the build.
	var sa corev1.ServiceAccount
	get(t, objs, "ServiceAccount", "tfrs-api", &sa)
	var locks rbacv1.Role
	get(t, objs, "Role", "tfrs-api-locks", &locks)
	require.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
	}, locks.Rules)
	apiSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: "tfrs-api", Namespace: namespace}
	var rb rbacv1.RoleBinding
	get(t, objs, "RoleBinding", "tfrs-api-locks", &rb)
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tfrs-api-locks"}, rb.RoleRef)
	require.Equal(t, []rbacv1.Subject{apiSubject}, rb.Subjects)
	clusterRoles := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" {
			clusterRoles[o.GetName()] = true
		}
	}
	bound := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		var crb rbacv1.ClusterRoleBinding
		get(t, objs, "ClusterRoleBinding", o.GetName(), &crb)
		require.True(t, clusterRoles[crb.RoleRef.Name], "ClusterRoleBinding %s: no ClusterRole %s", crb.Name, crb.RoleRef.Name)
		for _, s := range crb.Subjects {
			var acct corev1.ServiceAccount
			get(t, objs, "ServiceAccount", s.Name, &acct)
			if s == apiSubject {
				bound[crb.RoleRef.Name] = true
			}
		}
	}
	require.Equal(t, map[string]bool{"tfrs-provisioner": true, "tfrs-api-auth": true}, bound, "the API's cluster roles")

	// The operator keeps its own Lease rules (generated), including the pods and leases get
	// the leader needs to break a dead pod's lock.
	var mgr rbacv1.ClusterRole
	get(t, objs, "ClusterRole", "tfrs-manager", &mgr)
	canGet := map[string]bool{}
	for _, r := range mgr.Rules {
		for _, res := range r.Resources {
			if contains(r.Verbs, "get") {
				canGet[res] = true
			}
		}
	}
	require.True(t, canGet["pods"] && canGet["leases"], "tfrs-manager: get pods and leases")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
