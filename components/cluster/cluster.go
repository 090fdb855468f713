// Package cluster holds the components of the cluster stack (TFRCluster): one
// ComponentResource per node of the cluster graph, each with a tfrs:cluster:<Name> type token.
//
// Components know nothing of the TFRCluster CRD or of where charts come from: the program
// (stacks.Cluster) resolves every chart and manifest source (stacks/sources.go) and passes
// plain references in. The order between components is the program's business too (DependsOn
// on the component); inside a component, children are ordered by data flow (a chart's
// namespace input is the Namespace's name output) or by DependsOn where there is none (a
// custom resource waits for the chart that installs its CRD).
//
// Helm charts are rendered client-side with helm.sh/v4 Chart (every object shows in previews,
// render-to-directory works, local chart paths work offline), not helm.sh/v3 Release: none of
// the charts used here needs Helm hooks (cert-manager's one hook, startupapicheck, is off).
// YAML manifests go through yaml/v2 ConfigFile, which takes a local path or a URL.
package cluster

import (
	"context"
	"fmt"
	"maps"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	helmv4 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v4"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	yamlv2 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/yaml/v2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Type tokens of the cluster components.
const (
	CertManagerType           = "tfrs:cluster:CertManager"
	IstioType                 = "tfrs:cluster:Istio"
	IstioIngressType          = "tfrs:cluster:IstioIngress"
	GatewayType               = "tfrs:cluster:Gateway"
	EnvoyFilterCookieType     = "tfrs:cluster:EnvoyFilterCookie"
	EnvoyFilterLuaRoutingType = "tfrs:cluster:EnvoyFilterLuaRouting"
	ClusterVirtualServiceType = "tfrs:cluster:ClusterVirtualService"
	IstioTelemetryType        = "tfrs:cluster:IstioTelemetry"
	CNPGOperatorType          = "tfrs:cluster:CNPGOperator"
	MinIOOperatorType         = "tfrs:cluster:MinIOOperator"
	RabbitMQOperatorType      = "tfrs:cluster:RabbitMQOperator"
	ImageRegistryType         = "tfrs:cluster:ImageRegistry"
)

// API versions of the custom resources the components create.
const (
	istioNetworkingV1       = "networking.istio.io/v1"
	istioNetworkingV1alpha3 = "networking.istio.io/v1alpha3" // EnvoyFilter has no v1
	istioTelemetryV1        = "telemetry.istio.io/v1"
	certManagerV1           = "cert-manager.io/v1"
)

// ChartRef is a Helm chart to render and the values to merge over the component's own.
type ChartRef struct {
	// Chart is the chart name in Repo, an oci:// reference, or a local chart directory/archive.
	Chart string
	// Repo is the http(s) chart repository; empty for oci:// references and local charts.
	Repo string
	// Version of the chart; empty for local charts (the chart on disk is what is used).
	Version string
	// Values are merged over the component's own values (deep merge, these win): the image
	// mirror values, then the spec's values.
	Values map[string]any
}

func (r ChartRef) validate() error {
	if r.Chart == "" {
		return fmt.Errorf("chart reference without a chart")
	}
	return nil
}

// ManifestRef is a YAML manifest: a local file path or an http(s) URL.
type ManifestRef struct {
	File string
}

// ImageRewriter maps an upstream image reference to the one to pull (an image mirror).
type ImageRewriter func(image string) string

// newNamespace creates a namespace owned by the component. Deleting the component deletes it
// and everything in it, which is what removing cert-manager, Istio or an operator means.
func newNamespace(ctx *pulumi.Context, parent pulumi.Resource, resourceName, name string) (*corev1.Namespace, error) {
	return corev1.NewNamespace(ctx, resourceName, &corev1.NamespaceArgs{
		Metadata: &metav1.ObjectMetaArgs{
			Name: pulumi.String(name),
		},
	}, pulumi.Parent(parent))
}

// newChart renders a chart as the release `release` in namespace ns. own are the values the
// component needs; ref.Values are merged over them.
func newChart(ctx *pulumi.Context, parent pulumi.Resource, name, release string, ns pulumi.StringInput, ref ChartRef, own map[string]any, opts ...pulumi.ResourceOption) (*helmv4.Chart, error) {
	if err := ref.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	args := &helmv4.ChartArgs{
		Name:      pulumi.String(release),
		Namespace: ns,
		Chart:     pulumi.String(ref.Chart),
		Values:    pulumi.ToMap(MergeValues(own, ref.Values)),
	}
	if ref.Version != "" {
		args.Version = pulumi.String(ref.Version)
	}
	if ref.Repo != "" {
		args.RepositoryOpts = &helmv4.RepositoryOptsArgs{Repo: pulumi.String(ref.Repo)}
	}
	return helmv4.NewChart(ctx, name, args, append([]pulumi.ResourceOption{pulumi.Parent(parent)}, opts...)...)
}

// newManifest applies a YAML manifest. When rewrite is set, the images of every pod template in
// it are rewritten (an image mirror), since a manifest, unlike a chart, has no values for that.
func newManifest(ctx *pulumi.Context, parent pulumi.Resource, name string, ref ManifestRef, rewrite ImageRewriter, opts ...pulumi.ResourceOption) (*yamlv2.ConfigFile, error) {
	if ref.File == "" {
		return nil, fmt.Errorf("%s: manifest reference without a file", name)
	}
	opts = append([]pulumi.ResourceOption{pulumi.Parent(parent)}, opts...)
	if rewrite != nil {
		opts = append(opts, pulumi.Transforms([]pulumi.ResourceTransform{ImageTransform(rewrite)}))
	}
	return yamlv2.NewConfigFile(ctx, name, &yamlv2.ConfigFileArgs{File: pulumi.String(ref.File)}, opts...)
}

// MergeValues deep-merges src over dst into a new map: nested maps merge, anything else in
// src replaces. Neither argument is modified.
func MergeValues(dst, src map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(src))
	maps.Copy(out, dst)
	for k, v := range src {
		sm, sok := v.(map[string]any)
		dm, dok := out[k].(map[string]any)
		if sok && dok {
			out[k] = MergeValues(dm, sm)
			continue
		}
		out[k] = v
	}
	return out
}

// readyWhenDone is true once every resource the chart or manifest created is ready (the
// provider awaits them before resolving the component's resources output).
func readyWhenDone(resources pulumi.ArrayOutput) pulumi.BoolOutput {
	return resources.ApplyT(func([]any) bool { return true }).(pulumi.BoolOutput)
}

// podSpecPaths says where the pod spec sits in each workload kind.
var podSpecPaths = map[string][]string{
	"kubernetes:core/v1:Pod":                   {"spec"},
	"kubernetes:apps/v1:Deployment":            {"spec", "template", "spec"},
	"kubernetes:apps/v1:StatefulSet":           {"spec", "template", "spec"},
	"kubernetes:apps/v1:DaemonSet":             {"spec", "template", "spec"},
	"kubernetes:apps/v1:ReplicaSet":            {"spec", "template", "spec"},
	"kubernetes:batch/v1:Job":                  {"spec", "template", "spec"},
	"kubernetes:batch/v1:CronJob":              {"spec", "jobTemplate", "spec", "template", "spec"},
	"kubernetes:core/v1:ReplicationController": {"spec", "template", "spec"},
}

// PodSpec returns the pod spec inside a workload's transform props (Deployment, Job, …), for
// transforms that edit every pod a chart or manifest renders.
func PodSpec(a *pulumi.ResourceTransformArgs) (pulumi.Map, bool) {
	path, ok := podSpecPaths[a.Type]
	if !ok || !a.Custom {
		return nil, false
	}
	return lookupMap(a.Props, path)
}

// ImageTransform is a Pulumi resource transform that rewrites the container images of every
// workload registered under the resource it is set on, including the children a packaged
// component (ConfigFile, Chart) registers in the provider. Images passed to operators through
// environment variables or their own CRs are not touched: mirror those through the operator's
// own settings.
func ImageTransform(rewrite ImageRewriter) pulumi.ResourceTransform {
	return func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		spec, ok := PodSpec(a)
		if !ok {
			return nil
		}
		changed := false
		for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
			list, _ := spec[field].(pulumi.Array)
			for _, c := range list {
				cm, ok := c.(pulumi.Map)
				if !ok {
					continue
				}
				img, ok := cm["image"].(pulumi.String)
				if !ok {
					continue
				}
				if nw := rewrite(string(img)); nw != string(img) {
					cm["image"] = pulumi.String(nw)
					changed = true
				}
			}
		}
		if !changed {
			return nil
		}
		return &pulumi.ResourceTransformResult{Props: a.Props, Opts: a.Opts}
	}
}

func lookupMap(m pulumi.Map, path []string) (pulumi.Map, bool) {
	cur := m
	for _, k := range path {
		next, ok := cur[k].(pulumi.Map)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}
