package kit

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// NamespaceLabelsTransform is a Pulumi resource transform that adds labels(name) to every
// Namespace registered under the resource it is set on (the children of a manifest that
// carries its own Namespace), keeping the labels the object has. A namespace for which
// labels returns none is left alone.
func NamespaceLabelsTransform(labels func(name string) map[string]string) pulumi.ResourceTransform {
	return func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		if !a.Custom || a.Type != "kubernetes:core/v1:Namespace" {
			return nil
		}
		meta, ok := a.Props["metadata"].(pulumi.Map)
		if !ok {
			return nil
		}
		name, ok := meta["name"].(pulumi.String)
		if !ok {
			return nil
		}
		add := labels(string(name))
		if len(add) == 0 {
			return nil
		}
		have, _ := meta["labels"].(pulumi.Map)
		merged := pulumi.Map{}
		for k, v := range have {
			merged[k] = v
		}
		for k, v := range add {
			merged[k] = pulumi.String(v)
		}
		meta["labels"] = merged
		return &pulumi.ResourceTransformResult{Props: a.Props, Opts: a.Opts}
	}
}
