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
// Helm charts are rendered client-side by the components' kit (kit.NewChart in
// components/internal/kit, which says why): none of the charts used here needs Helm hooks
// (cert-manager's one hook, startupapicheck, is off). They take the image mirror as values,
// which the program resolves into each ChartRef. YAML manifests go through yaml/v2
// ConfigFile, which takes a local path or a URL, and get the mirror by a transform.
//
// The package imports the kit and the routing contract (components/routing), never another
// component package. ChartRef and ImageRewriter are the kit's types, re-exported as aliases
// because the program cannot import an internal package.
package cluster

import (
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	yamlv2 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/yaml/v2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
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

// ChartRef is a Helm chart to render and the values to merge over the component's own (the
// kit's type; see the kit for its fields).
type ChartRef = kit.ChartRef

// ManifestRef is a YAML manifest: a local file path or an http(s) URL.
type ManifestRef struct {
	File string
}

// ImageRewriter maps an upstream image reference to the one to pull (an image mirror).
type ImageRewriter = kit.ImageRewriter

// newNamespace creates a namespace owned by the component. Deleting the component deletes it
// and everything in it, which is what removing cert-manager, Istio or an operator means.
func newNamespace(ctx *pulumi.Context, parent pulumi.Resource, resourceName, name string) (*corev1.Namespace, error) {
	meta := &metav1.ObjectMetaArgs{Name: pulumi.String(name)}
	if l := clusterns.Labels(name); l != nil {
		meta.Labels = pulumi.ToStringMap(l) // the platform role tenants' NetworkPolicies trust
	}
	return corev1.NewNamespace(ctx, resourceName, &corev1.NamespaceArgs{Metadata: meta}, pulumi.Parent(parent))
}

// newManifest applies a YAML manifest. When rewrite is set, the images of every pod template in
// it are rewritten (an image mirror), since a manifest, unlike a chart, has no values for that.
func newManifest(ctx *pulumi.Context, parent pulumi.Resource, name string, ref ManifestRef, rewrite ImageRewriter, opts ...pulumi.ResourceOption) (*yamlv2.ConfigFile, error) {
	if ref.File == "" {
		return nil, fmt.Errorf("%s: manifest reference without a file", name)
	}
	opts = append([]pulumi.ResourceOption{pulumi.Parent(parent)}, opts...)
	// The manifest's own Namespace gets its platform role (clusterns.Labels).
	transforms := []pulumi.ResourceTransform{kit.NamespaceLabelsTransform(clusterns.Labels)}
	if rewrite != nil {
		transforms = append(transforms, kit.ImageTransform(rewrite))
	}
	opts = append(opts, pulumi.Transforms(transforms))
	return yamlv2.NewConfigFile(ctx, name, &yamlv2.ConfigFileArgs{File: pulumi.String(ref.File)}, opts...)
}

// MergeValues deep-merges src over dst into a new map (kit.MergeValues, which merges every
// chart's values): the program merges the spec's values over the mirror values with it.
func MergeValues(dst, src map[string]any) map[string]any { return kit.MergeValues(dst, src) }

// readyWhenDone is true once every resource the chart or manifest created is ready (the
// provider awaits them before resolving the component's resources output).
func readyWhenDone(resources pulumi.ArrayOutput) pulumi.BoolOutput {
	return resources.ApplyT(func([]any) bool { return true }).(pulumi.BoolOutput)
}
