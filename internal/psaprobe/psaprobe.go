// Package psaprobe generates hostile pods for tests of Pod Security Admission: a pod that
// `restricted` admits, and one mutation per rule of the baseline and restricted levels, each
// breaking exactly that rule. The unit test of rendered stacks checks that the policy library
// catches every mutation; the e2e test creates every mutated pod in a tenant namespace as
// the applier and expects the API server to refuse it.
package psaprobe

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Mutation breaks one rule of Pod Security on a Compliant pod.
type Mutation struct {
	// Name says which rule (and names the probe pod: lower case, dashes).
	Name string
	// Level is the lowest Pod Security level that forbids it.
	Level string
	// Apply breaks the rule.
	Apply func(*corev1.PodSpec)
}

// Compliant is a pod spec that Pod Security restricted admits: one container of image, non-root,
// RuntimeDefault seccomp, no privilege escalation, every capability dropped.
func Compliant(image string) corev1.PodSpec {
	return corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To(int64(1000)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name: "probe", Image: image,
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
	}
}

func c0(s *corev1.PodSpec) *corev1.SecurityContext { return s.Containers[0].SecurityContext }

// Mutations are one per rule: the baseline rules (host namespaces, privileged, capabilities,
// hostPath, host ports, AppArmor, SELinux, /proc mount, sysctls) and the restricted ones
// (volume types, privilege escalation, non-root, seccomp, dropping ALL).
var Mutations = []Mutation{
	{"privileged", "baseline", func(s *corev1.PodSpec) {
		// The API server's own validation refuses privileged with allowPrivilegeEscalation
		// false (422, before admission), so the probe drops that too, as a real attacker would.
		c0(s).Privileged, c0(s).AllowPrivilegeEscalation = ptr.To(true), nil
	}},
	{"host-pid", "baseline", func(s *corev1.PodSpec) { s.HostPID = true }},
	{"host-network", "baseline", func(s *corev1.PodSpec) { s.HostNetwork = true }},
	{"host-ipc", "baseline", func(s *corev1.PodSpec) { s.HostIPC = true }},
	{"host-path", "baseline", func(s *corev1.PodSpec) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "node-root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "node-root", MountPath: "/host"})
	}},
	{"host-port", "baseline", func(s *corev1.PodSpec) {
		s.Containers[0].Ports = append(s.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 8080, HostPort: 8080})
	}},
	{"add-sys-admin", "baseline", func(s *corev1.PodSpec) { c0(s).Capabilities.Add = []corev1.Capability{"SYS_ADMIN"} }},
	{"add-net-admin", "restricted", func(s *corev1.PodSpec) { c0(s).Capabilities.Add = []corev1.Capability{"NET_ADMIN", "NET_RAW"} }},
	{"apparmor-unconfined", "baseline", func(s *corev1.PodSpec) {
		c0(s).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	}},
	{"selinux-type", "baseline", func(s *corev1.PodSpec) { c0(s).SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"} }},
	{"proc-mount-unmasked", "baseline", func(s *corev1.PodSpec) {
		s.HostUsers = ptr.To(false) // Unmasked is only valid in a user namespace
		c0(s).ProcMount = ptr.To(corev1.UnmaskedProcMount)
	}},
	{"unsafe-sysctl", "baseline", func(s *corev1.PodSpec) {
		s.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}
	}},
	{"privilege-escalation", "restricted", func(s *corev1.PodSpec) { c0(s).AllowPrivilegeEscalation = ptr.To(true) }},
	{"run-as-root", "restricted", func(s *corev1.PodSpec) {
		s.SecurityContext.RunAsNonRoot, s.SecurityContext.RunAsUser = nil, ptr.To(int64(0))
	}},
	{"seccomp-unconfined", "restricted", func(s *corev1.PodSpec) {
		s.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}},
	{"keep-capabilities", "restricted", func(s *corev1.PodSpec) { c0(s).Capabilities.Drop = nil }},
	{"volume-type", "restricted", func(s *corev1.PodSpec) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "nfs", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/"}}})
	}},
	{"init-privileged", "baseline", func(s *corev1.PodSpec) {
		init := s.Containers[0]
		init.Name, init.SecurityContext = "init", &corev1.SecurityContext{Privileged: ptr.To(true)}
		s.InitContainers = append(s.InitContainers, init)
	}},
}

// Mutated is Compliant(image) with m applied.
func Mutated(image string, m Mutation) corev1.PodSpec {
	s := Compliant(image)
	m.Apply(&s)
	return s
}
