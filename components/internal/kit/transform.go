package kit

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

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

// PullSecretTransform adds the registry pull Secret to every pod template registered under
// the resource it is set on (a chart's workloads), whatever the chart calls that value.
func PullSecretTransform(name string) pulumi.ResourceTransform {
	return func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		spec, ok := PodSpec(a)
		if !ok {
			return nil
		}
		list, _ := spec["imagePullSecrets"].(pulumi.Array)
		for _, e := range list {
			if m, ok := e.(pulumi.Map); ok && m["name"] == pulumi.String(name) {
				return nil
			}
		}
		spec["imagePullSecrets"] = append(list, pulumi.Map{"name": pulumi.String(name)})
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
