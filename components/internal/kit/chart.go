package kit

import (
	"fmt"
	"maps"

	helmv4 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v4"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ChartRef is a Helm chart to render and the values to merge over the component's own. The
// program resolves it (stacks/sources.go); cluster.ChartRef and tenant.ChartRef are this type.
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

// ImageRewriter maps an upstream image reference to the one to pull (an image mirror); nil
// keeps images as they are.
type ImageRewriter func(image string) string

// Chart is one chart a component renders.
type Chart struct {
	// Release is the Helm release name (it names the chart's objects).
	Release string
	// Namespace the chart is rendered into; a namespace output orders the chart after it.
	Namespace pulumi.StringInput
	// Ref is the chart; its values are merged over Values.
	Ref ChartRef
	// Values are the component's own values (nil: none).
	Values map[string]any
	// Images rewrites the images of every rendered workload (ImageTransform); nil keeps them.
	// For charts whose values already take the mirror (the cluster's), leave it nil.
	Images ImageRewriter
	// PullSecret is added to every rendered pod template (PullSecretTransform); "" adds none.
	PullSecret string
}

// NewChart renders c as the helm.sh/v4 Chart `name`, a child of parent; opts follow the
// parent (e.g. DependsOn). The mirror and the pull Secret reach the workloads through
// transforms, so they do not depend on each chart's value names.
//
// Charts are rendered client-side (Chart, not Release): every object shows in previews,
// render-to-directory works and local chart paths work offline. None of the charts TFRS uses
// needs a Helm hook.
func NewChart(ctx *pulumi.Context, parent pulumi.Resource, name string, c Chart, opts ...pulumi.ResourceOption) (*helmv4.Chart, error) {
	if c.Ref.Chart == "" {
		return nil, fmt.Errorf("%s: chart reference without a chart", name)
	}
	args := &helmv4.ChartArgs{
		Name:      pulumi.String(c.Release),
		Namespace: c.Namespace,
		Chart:     pulumi.String(c.Ref.Chart),
		Values:    pulumi.ToMap(MergeValues(c.Values, c.Ref.Values)),
	}
	if c.Ref.Version != "" {
		args.Version = pulumi.String(c.Ref.Version)
	}
	if c.Ref.Repo != "" {
		args.RepositoryOpts = &helmv4.RepositoryOptsArgs{Repo: pulumi.String(c.Ref.Repo)}
	}
	var transforms []pulumi.ResourceTransform
	if c.Images != nil {
		transforms = append(transforms, ImageTransform(c.Images))
	}
	if c.PullSecret != "" {
		transforms = append(transforms, PullSecretTransform(c.PullSecret))
	}
	all := []pulumi.ResourceOption{pulumi.Parent(parent)}
	if len(transforms) > 0 {
		all = append(all, pulumi.Transforms(transforms))
	}
	return helmv4.NewChart(ctx, name, args, append(all, opts...)...)
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
