package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	batchv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/batch/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/contenthash"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
	"github.com/tfrs-io/tfrs-operator/components/internal/podsec"
)

// How the init Jobs run.
//
// A Job's pod template is immutable and a completed Job never runs again, so a Job is named
// after a hash of everything it is made of: its containers (images, commands, plain env) and
// the content of its Secret (scripts, SQL, credentials). When any input changes the name
// changes, Pulumi replaces the Job (the new one is created, awaited, then the old one
// deleted) and the work runs again; when nothing changes the name is the same and nothing
// happens. pulumi-kubernetes awaits a Job until it is Complete and fails the `up` as soon as
// the Job is Failed, with the Job's reason (BackoffLimitExceeded, DeadlineExceeded …).
const (
	// JobDir is where a Job's own Secret is mounted.
	JobDir = "/tfrs-job"
	// jobBackoffLimit retries a failing pod twice (a middleware still starting up).
	jobBackoffLimit = 2
	// jobDeadlineSeconds fails a stuck Job, with reason DeadlineExceeded, before Pulumi's
	// own 10-minute await timeout would fail it without one.
	jobDeadlineSeconds = 540
	// nativeSidecar runs Istio's proxy as a Kubernetes native sidecar: it keeps the Job's
	// traffic under the namespace's STRICT mTLS, yet stops when the Job's container exits,
	// so the pod (and the Job) can complete.
	nativeSidecar = "sidecar.istio.io/nativeSidecar"
	// replaceUnready: a Job that failed is run again (replaced) by the next `up` even when
	// its inputs did not change — the failure may have been a middleware that was not ready
	// yet — instead of Pulumi waiting on the failed Job forever.
	replaceUnready = "pulumi.com/replaceUnready"
	// maxJobName: the Job controller copies the name into a label value (63 at most).
	maxJobName = 63
)

// jobContainer is one container of a Job, in plain values so it can be hashed.
type jobContainer struct {
	Name    string            `json:"name"`
	Image   string            `json:"image"`
	Command []string          `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// SecretEnv maps a variable to a key of the Job's Secret.
	SecretEnv map[string]string `json:"secretEnv,omitempty"`
	// Files are the keys of the Job's Secret the container sees at JobDir; nil means all of
	// them. A container that runs an image TFRS does not control (the robot's own) lists only
	// its own files, so it never sees another container's credentials (see DBInit).
	Files []string `json:"files,omitempty"`
	// NoSecret mounts none of the Job's Secret (Files is ignored).
	NoSecret bool `json:"noSecret,omitempty"`
	// Cache mounts the pod's Cache (the data purge's view of the shared cache).
	Cache bool `json:"cache,omitempty"`
}

// jobPod is a Job's pod: Init runs in order before Main. Every container has the Job's
// Secret mounted at JobDir: all of it, or only its Files.
type jobPod struct {
	Init []jobContainer `json:"init,omitempty"`
	Main jobContainer   `json:"main"`
	// ServiceAccount the pod runs as: the robot's (Robot.ServiceAccount) when empty, without
	// a token. Only a Job that talks to the Kubernetes API names another one, of the robot
	// too, and sets APIToken.
	ServiceAccount string `json:"serviceAccount,omitempty"`
	APIToken       bool   `json:"apiToken,omitempty"`
	PullSecret     string `json:"pullSecret,omitempty"`
	// Cache is the shared cache, for the containers that set Cache; nil: none.
	Cache *jobCache `json:"cache,omitempty"`
	// Labels of the pod (Robot.podLabels), set by newJob: hashed with the rest, since a Job's
	// template cannot change under the same name.
	Labels map[string]string `json:"labels,omitempty"`
}

// job is the Secret and Job of one init Job.
type job struct {
	secret *corev1.Secret
	job    *batchv1.Job
	// name is the Job's name (with the input hash).
	name pulumi.StringOutput
}

// newJob registers, under parent, the Job "{robot}-<kind>-<hash>" and its Secret of the same
// name holding files (every value a secret), mounted at JobDir. Both are content-named (see
// contentName): a change makes a new Secret and a new Job, which runs; the old ones go once
// it has completed. opts apply to the Job (e.g. RBAC it needs first).
func newJob(ctx *pulumi.Context, parent pulumi.Resource, name string, r Robot, kind string, pod jobPod, files map[string]pulumi.StringInput, opts ...pulumi.ResourceOption) (*job, error) {
	if pod.Main.Image == "" {
		return nil, fmt.Errorf("%s: an image is required", kind)
	}
	data := pulumi.StringMap{}
	for k, v := range files {
		data[k] = pulumi.ToSecret(v).(pulumi.StringOutput)
	}
	keys := slices.Sorted(maps.Keys(files))
	if pod.ServiceAccount == "" {
		pod.ServiceAccount, pod.APIToken = r.ServiceAccount(), false
	}
	pod.Labels = r.podLabels(kind)
	spec, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	// The keyed hash sees the secret values inside Apply; only the hash leaves, in the clear.
	jobName, err := contenthash.Of(r.HashKey, data, func(key string, v any) string {
		d := v.(map[string]string)
		h := fmt.Appendf(nil, "%s\x00%s\x00%s", r.Namespace, r.Name(), spec)
		for _, k := range keys {
			h = fmt.Appendf(h, "\x00%s\x00%s", k, d[k])
		}
		return jobName(r, kind, contenthash.Short(key, h, contentHashLength))
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	secret, err := corev1.NewSecret(ctx, name+"-secret", &corev1.SecretArgs{
		Metadata:   r.metaNamed(jobName, kind),
		Type:       pulumi.String("Opaque"),
		StringData: data,
	}, pulumi.Parent(parent))
	if err != nil {
		return nil, err
	}

	secretName := secret.Metadata.Name().Elem()
	for _, c := range append(slices.Clone(pod.Init), pod.Main) {
		for _, f := range c.Files {
			if _, ok := files[f]; !ok {
				return nil, fmt.Errorf("%s: container %s mounts %q, which the Job's Secret does not hold", kind, c.Name, f)
			}
		}
	}
	podSpec := &corev1.PodSpecArgs{
		RestartPolicy:    pulumi.String("Never"),
		ImagePullSecrets: kit.PullSecrets(pod.PullSecret),
		Volumes:          pod.volumes(secretName),
		Containers:       corev1.ContainerArray{pod.Main.args(secretName, pod.Cache)},
		// Pod Security restricted, as every pod in a tenant namespace: the robot image and
		// the helper images (psql, mc, curl) all run as TFRS's non-root user.
		SecurityContext: podsec.PodArgs(podsec.TFRobot),
	}
	if len(pod.Init) > 0 {
		var init corev1.ContainerArray
		for _, c := range pod.Init {
			init = append(init, c.args(secretName, pod.Cache))
		}
		podSpec.InitContainers = init
	}
	podSpec.ServiceAccountName = pulumi.String(pod.ServiceAccount)
	// Only the Grafana job talks to the Kubernetes API.
	podSpec.AutomountServiceAccountToken = pulumi.Bool(pod.APIToken)
	labels := pulumi.ToStringMap(r.Labels(kind))
	j, err := batchv1.NewJob(ctx, name+"-job", &batchv1.JobArgs{
		Metadata: &metav1.ObjectMetaArgs{
			Name: jobName, Namespace: pulumi.String(r.Namespace), Labels: labels,
			Annotations: pulumi.StringMap{replaceUnready: pulumi.String("true")},
		},
		Spec: &batchv1.JobSpecArgs{
			BackoffLimit:          pulumi.Int(jobBackoffLimit),
			ActiveDeadlineSeconds: pulumi.Int(jobDeadlineSeconds),
			Template: &corev1.PodTemplateSpecArgs{
				Metadata: &metav1.ObjectMetaArgs{
					Labels:      pulumi.ToStringMap(pod.Labels),
					Annotations: pulumi.StringMap{nativeSidecar: pulumi.String("true")},
				},
				Spec: podSpec,
			},
		},
	}, append([]pulumi.ResourceOption{pulumi.Parent(parent)}, opts...)...)
	if err != nil {
		return nil, err
	}
	return &job{secret: secret, job: j, name: j.Metadata.Name().Elem()}, nil
}

// jobName is "{robot}-<kind>-<hash>", with {robot} cut so the whole fits maxJobName; the
// hash covers the robot, so a cut never makes two robots' Jobs share a name.
func jobName(r Robot, kind, hash string) string {
	base := r.Name()
	if n := maxJobName - len(kind) - len(hash) - 2; len(base) > n {
		base = base[:n]
	}
	return base + "-" + kind + "-" + hash
}

// volumes are the pod's views of the Job's Secret: "job", all of it, for the containers
// without Files, and "job-<container>", only its Files, for each container with them.
func (p jobPod) volumes(secret pulumi.StringInput) corev1.VolumeArray {
	var out corev1.VolumeArray
	all := false
	for _, c := range append(slices.Clone(p.Init), p.Main) {
		if c.NoSecret {
			continue
		}
		if c.Files == nil {
			all = true
			continue
		}
		var items corev1.KeyToPathArray
		for _, f := range c.Files {
			items = append(items, corev1.KeyToPathArgs{Key: pulumi.String(f), Path: pulumi.String(f)})
		}
		out = append(out, corev1.VolumeArgs{
			Name:   pulumi.String(c.volume()),
			Secret: &corev1.SecretVolumeSourceArgs{SecretName: secret, Items: items},
		})
	}
	if all {
		out = append(corev1.VolumeArray{corev1.VolumeArgs{
			Name:   pulumi.String("job"),
			Secret: &corev1.SecretVolumeSourceArgs{SecretName: secret},
		}}, out...)
	}
	if p.Cache != nil {
		out = append(out, p.Cache.volume())
	}
	return out
}

// volume names the container's view of the Job's Secret (see jobPod.volumes).
func (c jobContainer) volume() string {
	if c.Files == nil {
		return "job"
	}
	return "job-" + c.Name
}

// args is the container's Kubernetes form, reading SecretEnv from the Job's Secret, with
// the pod's cache mounted when the container asks for it.
func (c jobContainer) args(secret pulumi.StringInput, cache *jobCache) corev1.ContainerArgs {
	var env corev1.EnvVarArray
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		env = append(env, corev1.EnvVarArgs{Name: pulumi.String(k), Value: pulumi.String(c.Env[k])})
	}
	for _, k := range slices.Sorted(maps.Keys(c.SecretEnv)) {
		ref := &corev1.SecretKeySelectorArgs{Name: secret, Key: pulumi.String(c.SecretEnv[k])}
		env = append(env, corev1.EnvVarArgs{Name: pulumi.String(k), ValueFrom: &corev1.EnvVarSourceArgs{SecretKeyRef: ref}})
	}
	out := corev1.ContainerArgs{
		Name:            pulumi.String(c.Name),
		Image:           pulumi.String(c.Image),
		SecurityContext: podsec.ContainerArgs(),
	}
	var mounts corev1.VolumeMountArray
	if !c.NoSecret {
		mounts = append(mounts, corev1.VolumeMountArgs{Name: pulumi.String(c.volume()), MountPath: pulumi.String(JobDir), ReadOnly: pulumi.Bool(true)})
	}
	if c.Cache && cache != nil {
		mounts = append(mounts, cache.mount())
	}
	if len(mounts) > 0 {
		out.VolumeMounts = mounts
	}
	if len(env) > 0 {
		out.Env = env
	}
	if len(c.Command) > 0 {
		out.Command = pulumi.ToStringArray(c.Command)
	}
	if len(c.Args) > 0 {
		out.Args = pulumi.ToStringArray(c.Args)
	}
	return out
}
