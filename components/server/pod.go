package server

import (
	"maps"
	"slices"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
	"github.com/tfrs-io/tfrs-operator/components/internal/podsec"
)

// Environment variables and paths the operator sets in the server image's containers.
const (
	// ConfzDir is where the workers mount the Confz Secret; the file is ConfzDir/ConfzKey.
	ConfzDir = "/etc/tfrobot/confz"
	// ConfzFileEnv points the server at its Confz file (ConfzDir/ConfzKey in the workers).
	ConfzFileEnv = "TFS_CONFZ_FILE"
	// ExtractedImagesDirEnv is the tenant's shared-cache dir, where the shared-cache PVC is
	// mounted.
	ExtractedImagesDirEnv = "TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR"
	// DBSchemaEnv is the robot's PostgreSQL schema (robots of personal tenants).
	DBSchemaEnv = "TFS_ROBOT__DB_SCHEMA"
)

// Pod is what every container of a worker gets: the image, the robot's environment and its
// Confz, and the tenant's shared cache.
//
// Environment precedence, highest first, as Kubernetes resolves it:
//
//  1. Env, the variables the operator sets as explicit `env` entries: ConfzFileEnv,
//     ExtractedImagesDirEnv (the shared-cache dir) and, for a robot of a personal tenant,
//     DBSchemaEnv. An `env` entry always beats an `envFrom` source with the same key, so a
//     user cannot point a robot away from its mount or out of its isolation.
//  2. The "{robot}-secret" Secret (spec.secretData), via envFrom. It is listed after the
//     ConfigMap, and of several envFrom sources defining a key the last one wins.
//  3. The "{robot}-config" ConfigMap (spec.configData), via envFrom.
//  4. The image's own ENV.
type Pod struct {
	Image string
	// SecretName and ConfigMapName are the robot's environment (envFrom).
	SecretName, ConfigMapName pulumi.StringInput
	// ConfzSecretName is mounted read-only at ConfzDir.
	ConfzSecretName pulumi.StringInput
	// SharedCache is the tenant's shared image cache; nil when the tenant has none.
	SharedCache *SharedCache
	// Env are the operator's variables (step 1 above); ConfzFileEnv and ExtractedImagesDirEnv
	// are added to them.
	Env map[string]string
	// PullSecret is the registry pull Secret in the namespace ("" = none).
	PullSecret string
	// Resources of the container; nil = none.
	Resources *corev1.ResourceRequirementsArgs
}

// SharedCache is the tenant's shared-cache PVC and where robots mount it. SubPath, when set,
// is the directory of the volume the robot mounts at Dir instead of the whole volume (a
// personal robot's own, so robots of different owners never share writable storage).
type SharedCache struct {
	Claim, Dir, SubPath string
}

func (p *Pod) valid() bool {
	return p.Image != "" && p.SecretName != nil && p.ConfigMapName != nil && p.ConfzSecretName != nil &&
		(p.SharedCache == nil || p.SharedCache.Claim != "" && p.SharedCache.Dir != "")
}

// env is Env with the operator's mount paths, sorted by name (a map's order would show as a
// diff on every run).
func (p *Pod) env() corev1.EnvVarArray {
	all := map[string]string{ConfzFileEnv: ConfzDir + "/" + ConfzKey}
	for k, v := range p.Env {
		all[k] = v
	}
	if sc := p.SharedCache; sc != nil {
		all[ExtractedImagesDirEnv] = sc.Dir
	}
	out := make(corev1.EnvVarArray, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		out = append(out, corev1.EnvVarArgs{Name: pulumi.String(k), Value: pulumi.String(all[k])})
	}
	return out
}

// spec is the pod spec of one container named container running args, as serviceAccount
// (the robot's) with no token: the robot talks to no Kubernetes API.
func (p *Pod) spec(serviceAccount, container string, args []string, ports corev1.ContainerPortArray, probe *corev1.ProbeArgs) *corev1.PodSpecArgs {
	c := &corev1.ContainerArgs{
		Name:            pulumi.String(container),
		Image:           pulumi.String(p.Image),
		Env:             p.env(),
		SecurityContext: podsec.ContainerArgs(),
		// Order matters: see Pod.
		EnvFrom: corev1.EnvFromSourceArray{
			corev1.EnvFromSourceArgs{ConfigMapRef: &corev1.ConfigMapEnvSourceArgs{Name: p.ConfigMapName}},
			corev1.EnvFromSourceArgs{SecretRef: &corev1.SecretEnvSourceArgs{Name: p.SecretName}},
		},
	}
	mounts := corev1.VolumeMountArray{corev1.VolumeMountArgs{Name: pulumi.String("confz"), MountPath: pulumi.String(ConfzDir), ReadOnly: pulumi.Bool(true)}}
	// Optional fields are set only when given: a typed nil in a Pulumi input is not "unset".
	if len(args) > 0 {
		c.Args = pulumi.ToStringArray(args)
	}
	if len(ports) > 0 {
		c.Ports = ports
	}
	if probe != nil {
		c.ReadinessProbe = probe
	}
	if p.Resources != nil {
		c.Resources = p.Resources
	}
	volumes := corev1.VolumeArray{corev1.VolumeArgs{
		Name:   pulumi.String("confz"),
		Secret: &corev1.SecretVolumeSourceArgs{SecretName: p.ConfzSecretName},
	}}
	if sc := p.SharedCache; sc != nil {
		volumes = append(volumes, corev1.VolumeArgs{
			Name:                  pulumi.String("shared-cache"),
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSourceArgs{ClaimName: pulumi.String(sc.Claim)},
		})
		mount := corev1.VolumeMountArgs{Name: pulumi.String("shared-cache"), MountPath: pulumi.String(sc.Dir)}
		if sc.SubPath != "" {
			mount.SubPath = pulumi.String(sc.SubPath) // kubelet creates it with the volume's mode and fsGroup
		}
		mounts = append(mounts, mount)
	}
	c.VolumeMounts = mounts
	return &corev1.PodSpecArgs{
		ServiceAccountName:           pulumi.String(serviceAccount),
		AutomountServiceAccountToken: pulumi.Bool(false),
		Containers:                   corev1.ContainerArray{c},
		Volumes:                      volumes,
		ImagePullSecrets:             kit.PullSecrets(p.PullSecret),
		// The tenant namespace enforces Pod Security restricted; the robot image runs as
		// TFRS's documented non-root user.
		SecurityContext: podsec.PodArgs(podsec.TFRobot),
	}
}
