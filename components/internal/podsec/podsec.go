// Package podsec is the one definition of the security settings every pod TFRS renders into a
// tenant namespace carries, so that the namespace's Pod Security Admission level `restricted`
// (set by the tenant namespace component) admits it: a non-root user, the runtime's default
// seccomp profile, no privilege escalation and no Linux capabilities.
//
// The settings are plain JSON-tagged structs, the shape the Kubernetes API gives them, so the
// same values serve three consumers: pod specs TFRS builds itself (PodArgs, ContainerArgs,
// Restrict), the custom resources whose operators build pods (components/internal/crs embeds
// Pod and Container), and Helm chart values (Values). Change a rule here and every pod follows.
package podsec

import (
	"encoding/json"
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// RuntimeDefault is the seccomp profile type of the container runtime's default profile.
const RuntimeDefault = "RuntimeDefault"

// RunAs is the non-root identity a pod runs as: its user and group, and the group that owns
// its volumes (fsGroup), so a non-root process can write its PersistentVolume.
type RunAs struct {
	User, Group, FSGroup int
}

// Identities of the images TFRS runs itself. Each is the image's own non-root user where the
// image has one, so files the image ships stay readable and writable as built.
var (
	// Redis: redis/redis-stack-server has no user of its own (it starts as root); 999 is the
	// "redis" user of the official redis images. It writes only /data (its volume, fsGroup)
	// and the ACL emptyDir.
	Redis = RunAs{User: 999, Group: 999, FSGroup: 999}
	// Prometheus: prom/prometheus runs as "nobody" (USER nobody, 65534), owner of /prometheus.
	Prometheus = RunAs{User: 65534, Group: 65534, FSGroup: 65534}
	// OtelCollector: otel/opentelemetry-collector-contrib runs as USER 10001.
	OtelCollector = RunAs{User: 10001, Group: 10001, FSGroup: 10001}
	// Vector: timberio/vector has no user of its own; it needs nothing writable but its data
	// dir, an emptyDir.
	Vector = RunAs{User: 65534, Group: 65534, FSGroup: 65534}
	// TFRobot is the user of TFRS's and TFRobot's own images (the robot server, its init Jobs'
	// helper images psql, mc and curl, tfrobot-front and tfrs-utils). An image built for TFRS
	// must run as an arbitrary non-root user; 1000 is the documented one
	// (docs/security/pod-security.md).
	TFRobot = RunAs{User: 1000, Group: 1000, FSGroup: 1000}
	// MinIO: the MinIO operator's own default for tenant pools (1000:1000, fsGroup 1000),
	// kept so existing volumes stay readable.
	MinIO = RunAs{User: 1000, Group: 1000, FSGroup: 1000}
	// Grafana: the grafana/grafana image's user and the chart's default (472).
	Grafana = RunAs{User: 472, Group: 472, FSGroup: 472}
	// Jaeger: jaegertracing/jaeger runs as USER 10001, the chart's default too.
	Jaeger = RunAs{User: 10001, Group: 10001, FSGroup: 10001}
	// Operator leaves the user to an operator that sets a non-root one itself (the RabbitMQ
	// cluster operator runs its image as 999 with fsGroup 0): TFRS then only requires
	// non-root and the seccomp profile, so the operator's pods do not change.
	Operator = RunAs{}
)

// Seccomp is a seccomp profile.
type Seccomp struct {
	Type string `json:"type"`
}

// Capabilities are the Linux capabilities a container drops.
type Capabilities struct {
	Drop []string `json:"drop"`
}

// Pod is a pod's securityContext. A zero id is left out: the image's or the operator's own
// (an operator that already picks a non-root user for its image, see Operator).
type Pod struct {
	RunAsNonRoot   bool    `json:"runAsNonRoot"`
	RunAsUser      int     `json:"runAsUser,omitempty"`
	RunAsGroup     int     `json:"runAsGroup,omitempty"`
	FSGroup        int     `json:"fsGroup,omitempty"`
	SeccompProfile Seccomp `json:"seccompProfile"`
}

// Container is a container's securityContext. Every field is sent, false included:
// allowPrivilegeEscalation left out means true for a non-root process.
type Container struct {
	AllowPrivilegeEscalation bool         `json:"allowPrivilegeEscalation"`
	Capabilities             Capabilities `json:"capabilities"`
	RunAsNonRoot             bool         `json:"runAsNonRoot"`
	// SeccompProfile repeats the pod's: a container context is sometimes all a chart or an
	// operator passes on.
	SeccompProfile Seccomp `json:"seccompProfile"`
}

// PodContext is the restricted pod securityContext for id.
func PodContext(id RunAs) Pod {
	return Pod{RunAsNonRoot: true, RunAsUser: id.User, RunAsGroup: id.Group, FSGroup: id.FSGroup, SeccompProfile: Seccomp{RuntimeDefault}}
}

// ContainerContext is the restricted container securityContext (the user is the pod's).
func ContainerContext() Container {
	return Container{
		AllowPrivilegeEscalation: false,
		Capabilities:             Capabilities{Drop: []string{"ALL"}},
		RunAsNonRoot:             true,
		SeccompProfile:           Seccomp{RuntimeDefault},
	}
}

// PodArgs is PodContext(id) as a Pulumi input.
func PodArgs(id RunAs) *corev1.PodSecurityContextArgs {
	p := PodContext(id)
	out := &corev1.PodSecurityContextArgs{
		RunAsNonRoot:   pulumi.Bool(p.RunAsNonRoot),
		SeccompProfile: &corev1.SeccompProfileArgs{Type: pulumi.String(p.SeccompProfile.Type)},
	}
	// A typed nil in a Pulumi input is not "unset": set only what is given.
	if p.RunAsUser != 0 {
		out.RunAsUser = pulumi.Int(p.RunAsUser)
	}
	if p.RunAsGroup != 0 {
		out.RunAsGroup = pulumi.Int(p.RunAsGroup)
	}
	if p.FSGroup != 0 {
		out.FsGroup = pulumi.Int(p.FSGroup)
	}
	return out
}

// ContainerArgs is ContainerContext() as a Pulumi input.
func ContainerArgs() *corev1.SecurityContextArgs {
	c := ContainerContext()
	return &corev1.SecurityContextArgs{
		AllowPrivilegeEscalation: pulumi.Bool(c.AllowPrivilegeEscalation),
		Capabilities:             &corev1.CapabilitiesArgs{Drop: pulumi.ToStringArray(c.Capabilities.Drop)},
		RunAsNonRoot:             pulumi.Bool(c.RunAsNonRoot),
		SeccompProfile:           &corev1.SeccompProfileArgs{Type: pulumi.String(c.SeccompProfile.Type)},
	}
}

// Restrict gives spec the pod context of id and every container and init container the
// container context, replacing whatever they had. It fails on a container it cannot see into
// (an output rather than plain args), so no container slips through unrestricted.
func Restrict(spec *corev1.PodSpecArgs, id RunAs) error {
	spec.SecurityContext = PodArgs(id)
	for _, list := range []*corev1.ContainerArrayInput{&spec.Containers, &spec.InitContainers} {
		if *list == nil {
			continue
		}
		in, ok := (*list).(corev1.ContainerArray)
		if !ok {
			return fmt.Errorf("podsec: containers given as %T, not a ContainerArray", *list)
		}
		out := make(corev1.ContainerArray, len(in))
		for i, c := range in {
			var args corev1.ContainerArgs
			switch c := c.(type) {
			case corev1.ContainerArgs:
				args = c
			case *corev1.ContainerArgs:
				args = *c
			default:
				return fmt.Errorf("podsec: container %d given as %T, not ContainerArgs", i, c)
			}
			args.SecurityContext = ContainerArgs()
			out[i] = args
		}
		*list = out
	}
	return nil
}

// Values turns a context (Pod or Container) into Helm chart values.
func Values(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic("podsec: " + err.Error()) // plain structs cannot fail
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic("podsec: " + err.Error())
	}
	return out
}
