package tenant

import (
	"fmt"
	"strconv"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	rbacv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/rbac/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/podsec"
)

// Names and port of the tenant's Prometheus.
const (
	PrometheusService = "prometheus"
	PrometheusPort    = 9090
	prometheusConfig  = "/conf"
)

// PrometheusArgs configure the prometheus component.
type PrometheusArgs struct {
	Namespace pulumi.StringInput
	Image     string
	// Retention of the TSDB, e.g. "15d".
	Retention  string
	Resources  Resources
	PullSecret string
}

// Prometheus scrapes the pods of the tenant namespace that ask for it (prometheus.io/*
// annotations, which Istio also sets for its merged metrics), and only those: its Role is
// namespaced, so it can neither see nor scrape other tenants.
//
// It runs without a sidecar: under STRICT mTLS a scraper in the mesh needs Istio's
// certificates mounted into Prometheus, while Istio serves the merged metrics of every
// sidecar-injected pod in plain text on its agent port precisely for scrapers outside the
// mesh. Its TSDB is an emptyDir: metrics are not part of the tenant's data.
type Prometheus struct {
	pulumi.ResourceState
	children.Set

	// URL is "http://prometheus.<namespace>.svc.cluster.local:9090".
	URL pulumi.StringOutput `pulumi:"url"`
}

// NewPrometheus creates the prometheus component.
func NewPrometheus(ctx *pulumi.Context, name string, args *PrometheusArgs, opts ...pulumi.ResourceOption) (*Prometheus, error) {
	if args == nil || args.Namespace == nil || args.Image == "" || args.Retention == "" {
		return nil, fmt.Errorf("prometheus: namespace, image and retention are required")
	}
	c := &Prometheus{}
	if err := ctx.RegisterComponentResource(PrometheusType, name, c, opts...); err != nil {
		return nil, err
	}
	labels := appLabels(PrometheusService)
	sa, err := corev1.NewServiceAccount(ctx, name+"-service-account", &corev1.ServiceAccountArgs{
		Metadata: meta(PrometheusService, args.Namespace, labels),
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	role, err := rbacv1.NewRole(ctx, name+"-role", &rbacv1.RoleArgs{
		Metadata: meta(PrometheusService, args.Namespace, labels),
		Rules: rbacv1.PolicyRuleArray{
			rbacv1.PolicyRuleArgs{
				ApiGroups: pulumi.StringArray{pulumi.String("")},
				Resources: pulumi.ToStringArray([]string{"pods", "services", "endpoints"}),
				Verbs:     pulumi.ToStringArray([]string{"get", "list", "watch"}),
			},
			rbacv1.PolicyRuleArgs{
				ApiGroups: pulumi.StringArray{pulumi.String("discovery.k8s.io")},
				Resources: pulumi.StringArray{pulumi.String("endpointslices")},
				Verbs:     pulumi.ToStringArray([]string{"get", "list", "watch"}),
			},
		},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	binding, err := rbacv1.NewRoleBinding(ctx, name+"-role-binding", &rbacv1.RoleBindingArgs{
		Metadata: meta(PrometheusService, args.Namespace, labels),
		RoleRef: rbacv1.RoleRefArgs{
			ApiGroup: pulumi.String("rbac.authorization.k8s.io"),
			Kind:     pulumi.String("Role"),
			Name:     role.Metadata.Name().Elem(),
		},
		Subjects: rbacv1.SubjectArray{rbacv1.SubjectArgs{
			Kind:      pulumi.String("ServiceAccount"),
			Name:      sa.Metadata.Name().Elem(),
			Namespace: args.Namespace,
		}},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	config := args.Namespace.ToStringOutput().ApplyT(PrometheusConfig).(pulumi.StringOutput)
	cm, err := newConfigMap(ctx, c, name+"-config", PrometheusService, args.Namespace, pulumi.StringMap{"prometheus.yml": config})
	if err != nil {
		return nil, err
	}
	volumes, mounts := configVolume(cm.Metadata.Name().Elem(), prometheusConfig)
	volumes = append(volumes, corev1.VolumeArgs{Name: pulumi.String("data"), EmptyDir: &corev1.EmptyDirVolumeSourceArgs{}})
	mounts = append(mounts, corev1.VolumeMountArgs{Name: pulumi.String("data"), MountPath: pulumi.String("/prometheus")})
	ports := []Port{{Name: "http", Port: PrometheusPort}}
	annotations := pulumi.StringMap{sidecarInjection: pulumi.String("false")}
	for k, v := range checksum(config).(pulumi.StringMap) {
		annotations[k] = v
	}
	dep, err := newDeployment(ctx, c, name+"-deployment", &workload{
		name: PrometheusService, namespace: args.Namespace, image: args.Image, replicas: 1,
		args: []string{
			"--config.file=" + prometheusConfig + "/prometheus.yml",
			"--storage.tsdb.path=/prometheus",
			"--storage.tsdb.retention.time=" + args.Retention,
		},
		ports: ports, volumes: volumes, mounts: mounts, resources: args.Resources,
		pullSecret: args.PullSecret, serviceAccount: PrometheusService, readyPath: "/-/ready",
		podAnnotations: annotations, runAs: podsec.Prometheus,
	}, pulumi.DependsOn([]pulumi.Resource{sa}))
	if err != nil {
		return nil, err
	}
	svc, err := newService(ctx, c, name+"-service", PrometheusService, args.Namespace, ports)
	if err != nil {
		return nil, err
	}
	c.Keep(sa, role, binding, cm, dep, svc)
	c.URL = hostOf(PrometheusService, args.Namespace).ApplyT(func(h string) string {
		return "http://" + h + ":" + strconv.Itoa(PrometheusPort)
	}).(pulumi.StringOutput)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"url": c.URL})
}

// PrometheusConfig scrapes the annotated pods of namespace.
func PrometheusConfig(namespace string) string {
	return `global:
  scrape_interval: 30s
scrape_configs:
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
        namespaces:
          names: [` + namespace + `]
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape]
        action: keep
        regex: "true"
      - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
        action: replace
        regex: ([^:]+)(?::\d+)?;(\d+)
        replacement: $1:$2
        target_label: __address__
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_path]
        action: replace
        regex: (.+)
        target_label: __metrics_path__
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
`
}
