package tenant

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
	"github.com/tfrs-io/tfrs-operator/components/internal/podsec"
)

// Port is a named container/Service port.
type Port struct {
	Name string
	Port int
}

// workload is a single-container Deployment the tenant runs itself (not through a chart or
// an operator).
type workload struct {
	name      string
	namespace pulumi.StringInput
	image     string
	replicas  int
	command   []string
	args      []string
	env       corev1.EnvVarArray
	ports     []Port
	volumes   corev1.VolumeArray
	mounts    corev1.VolumeMountArray
	resources Resources
	// pullSecret is the registry pull Secret in the namespace ("" = none).
	pullSecret     string
	serviceAccount string
	// recreate stops the old pod before starting the new one: a ReadWriteOnce volume cannot
	// be attached to both.
	recreate bool
	// readyPath is an HTTP readiness path; empty means a TCP check. It is probed on
	// readyPort, or on the first port when readyPort is 0.
	readyPath string
	readyPort int
	// podAnnotations go on the pod template (a config checksum rolls the pods).
	podAnnotations pulumi.StringMapInput
	// initContainers run before the container, sidecars beside it (both TFRS's own).
	initContainers, sidecars corev1.ContainerArray
	// runAs is the image's non-root user (podsec): every pod runs under the namespace's
	// Pod Security level restricted.
	runAs podsec.RunAs
}

func (w *workload) validate() error {
	if w.name == "" || w.image == "" || w.namespace == nil {
		return fmt.Errorf("workload: name, namespace and image are required")
	}
	if w.replicas < 0 {
		return fmt.Errorf("%s: replicas %d < 0", w.name, w.replicas)
	}
	if w.runAs.User <= 0 || w.runAs.Group <= 0 {
		return fmt.Errorf("%s: a non-root user and group are required (Pod Security restricted)", w.name)
	}
	return nil
}

// newDeployment creates the workload's Deployment, a child of parent named resourceName.
func newDeployment(ctx *pulumi.Context, parent pulumi.Resource, resourceName string, w *workload, opts ...pulumi.ResourceOption) (*appsv1.Deployment, error) {
	if err := w.validate(); err != nil {
		return nil, err
	}
	labels := appLabels(w.name)
	c := &corev1.ContainerArgs{
		Name:         pulumi.String(w.name),
		Image:        pulumi.String(w.image),
		Env:          w.env,
		VolumeMounts: w.mounts,
		Resources:    w.resources.Args(),
	}
	if len(w.command) > 0 {
		c.Command = pulumi.ToStringArray(w.command)
	}
	if len(w.args) > 0 {
		c.Args = pulumi.ToStringArray(w.args)
	}
	if len(w.ports) > 0 {
		var ports corev1.ContainerPortArray
		for _, p := range w.ports {
			ports = append(ports, corev1.ContainerPortArgs{Name: pulumi.String(p.Name), ContainerPort: pulumi.Int(p.Port)})
		}
		c.Ports = ports
		port := w.ports[0].Port
		if w.readyPort != 0 {
			port = w.readyPort
		}
		probe := &corev1.ProbeArgs{PeriodSeconds: pulumi.Int(10)}
		if w.readyPath != "" {
			probe.HttpGet = &corev1.HTTPGetActionArgs{Path: pulumi.String(w.readyPath), Port: pulumi.Int(port)}
		} else {
			probe.TcpSocket = &corev1.TCPSocketActionArgs{Port: pulumi.Int(port)}
		}
		c.ReadinessProbe = probe
	}
	podMeta := &metav1.ObjectMetaArgs{Labels: pulumi.ToStringMap(labels)}
	if w.podAnnotations != nil {
		podMeta.Annotations = w.podAnnotations
	}
	spec := &corev1.PodSpecArgs{
		Containers:       append(corev1.ContainerArray{c}, w.sidecars...),
		Volumes:          w.volumes,
		ImagePullSecrets: kit.PullSecrets(w.pullSecret),
	}
	if len(w.initContainers) > 0 {
		spec.InitContainers = w.initContainers
	}
	if w.serviceAccount != "" {
		spec.ServiceAccountName = pulumi.String(w.serviceAccount)
	}
	if err := podsec.Restrict(spec, w.runAs); err != nil {
		return nil, fmt.Errorf("%s: %w", w.name, err)
	}
	if lowPort(w.ports) {
		// A non-root process may bind a port below 1024 only with this namespaced sysctl
		// (NET_BIND_SERVICE is dropped, and an added capability does not reach a non-root
		// process). Pod Security restricted allows it: it is on the safe-sysctl list.
		spec.SecurityContext.(*corev1.PodSecurityContextArgs).Sysctls = corev1.SysctlArray{corev1.SysctlArgs{
			Name: pulumi.String("net.ipv4.ip_unprivileged_port_start"), Value: pulumi.String("0"),
		}}
	}
	dspec := &appsv1.DeploymentSpecArgs{
		Replicas: pulumi.Int(w.replicas),
		Selector: &metav1.LabelSelectorArgs{MatchLabels: pulumi.StringMap{kit.LabelName: pulumi.String(w.name)}},
		Template: &corev1.PodTemplateSpecArgs{Metadata: podMeta, Spec: spec},
	}
	if w.recreate {
		dspec.Strategy = &appsv1.DeploymentStrategyArgs{Type: pulumi.String("Recreate")}
	}
	return appsv1.NewDeployment(ctx, resourceName, &appsv1.DeploymentArgs{
		Metadata: meta(w.name, w.namespace, labels),
		Spec:     dspec,
	}, append([]pulumi.ResourceOption{pulumi.Parent(parent)}, opts...)...)
}

// lowPort tells whether a container port is privileged (below 1024).
func lowPort(ports []Port) bool {
	for _, p := range ports {
		if p.Port < 1024 {
			return true
		}
	}
	return false
}

// newService exposes app's pods (selected by name) on ports.
func newService(ctx *pulumi.Context, parent pulumi.Resource, resourceName, app string, ns pulumi.StringInput, ports []Port, opts ...pulumi.ResourceOption) (*corev1.Service, error) {
	var sp corev1.ServicePortArray
	for _, p := range ports {
		sp = append(sp, corev1.ServicePortArgs{
			Name:       pulumi.String(p.Name),
			Port:       pulumi.Int(p.Port),
			TargetPort: pulumi.String(p.Name),
		})
	}
	return corev1.NewService(ctx, resourceName, &corev1.ServiceArgs{
		Metadata: meta(app, ns, appLabels(app)),
		Spec: &corev1.ServiceSpecArgs{
			Selector: pulumi.StringMap{kit.LabelName: pulumi.String(app)},
			Ports:    sp,
		},
	}, append([]pulumi.ResourceOption{pulumi.Parent(parent)}, opts...)...)
}

// newConfigMap holds a component's configuration file(s).
func newConfigMap(ctx *pulumi.Context, parent pulumi.Resource, resourceName, app string, ns pulumi.StringInput, data pulumi.StringMapInput) (*corev1.ConfigMap, error) {
	return corev1.NewConfigMap(ctx, resourceName, &corev1.ConfigMapArgs{
		Metadata: meta(app, ns, appLabels(app)),
		Data:     data,
	}, pulumi.Parent(parent))
}

// checksum is a pod annotation that changes with the configuration, so a config change
// rolls the pods (a mounted ConfigMap alone is not re-read by these programs). It is an
// unkeyed sha256 on purpose: its input is the ConfigMap's own data (OtelConfig, VectorConfig,
// PrometheusConfig: endpoints and names, never a secret), stored in the clear right beside
// it, so the hash tells nobody anything the ConfigMap does not. A checksum over secret data
// must be keyed (contenthash, as the server components do).
func checksum(config pulumi.StringInput) pulumi.StringMapInput {
	return pulumi.StringMap{"tfrs.io/config-checksum": config.ToStringOutput().ApplyT(func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:8])
	}).(pulumi.StringOutput)}
}

// configVolume mounts ConfigMap name at path.
func configVolume(name pulumi.StringInput, path string) (corev1.VolumeArray, corev1.VolumeMountArray) {
	return corev1.VolumeArray{corev1.VolumeArgs{
			Name:      pulumi.String("config"),
			ConfigMap: &corev1.ConfigMapVolumeSourceArgs{Name: name},
		}}, corev1.VolumeMountArray{corev1.VolumeMountArgs{
			Name:      pulumi.String("config"),
			MountPath: pulumi.String(path),
			ReadOnly:  pulumi.Bool(true),
		}}
}

// secretEnv is an environment variable read from a Secret key.
func secretEnv(name string, secret pulumi.StringInput, key string) corev1.EnvVarArgs {
	return corev1.EnvVarArgs{
		Name: pulumi.String(name),
		ValueFrom: &corev1.EnvVarSourceArgs{SecretKeyRef: &corev1.SecretKeySelectorArgs{
			Name: secret,
			Key:  pulumi.String(key),
		}},
	}
}

// newPVC is a data PersistentVolumeClaim. Pulumi does not wait for it to bind: with a
// WaitForFirstConsumer storage class it binds only once a pod uses it, and the shared cache
// has no pod until the first robot arrives.
func newPVC(ctx *pulumi.Context, parent pulumi.Resource, resourceName, claim string, ns pulumi.StringInput, size, storageClass, accessMode string, keep bool) (*corev1.PersistentVolumeClaim, error) {
	if claim == "" || size == "" || accessMode == "" {
		return nil, fmt.Errorf("%s: claim name, size and access mode are required", resourceName)
	}
	m := meta(claim, ns, appLabels(claim))
	m.Annotations = pulumi.StringMap{skipAwait: pulumi.String("true")}
	spec := &corev1.PersistentVolumeClaimSpecArgs{
		AccessModes: pulumi.StringArray{pulumi.String(accessMode)},
		Resources: &corev1.VolumeResourceRequirementsArgs{
			Requests: pulumi.StringMap{"storage": pulumi.String(size)},
		},
	}
	if storageClass != "" {
		spec.StorageClassName = pulumi.String(storageClass)
	}
	return corev1.NewPersistentVolumeClaim(ctx, resourceName, &corev1.PersistentVolumeClaimArgs{
		Metadata: m,
		Spec:     spec,
	}, retain(keep, pulumi.Parent(parent))...)
}
