package kit

import (
	"context"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

func TestImageTransform(t *testing.T) {
	deployment := func() pulumi.Map {
		return pulumi.Map{
			"metadata": pulumi.Map{"name": pulumi.String("op")},
			"spec": pulumi.Map{"template": pulumi.Map{"spec": pulumi.Map{
				"initContainers": pulumi.Array{pulumi.Map{"name": pulumi.String("init"), "image": pulumi.String("busybox:1")}},
				"containers": pulumi.Array{
					pulumi.Map{"name": pulumi.String("op"), "image": pulumi.String("ghcr.io/cloudnative-pg/cloudnative-pg:1.30.0")},
					pulumi.Map{"name": pulumi.String("noimage")},
				},
			}}},
		}
	}
	tr := ImageTransform(func(s string) string { return "mirror.example.cn/" + s })
	res := tr(t.Context(), &pulumi.ResourceTransformArgs{Custom: true, Type: "kubernetes:apps/v1:Deployment", Name: "op", Props: deployment()})
	if res == nil {
		t.Fatal("deployment not transformed")
	}
	spec := res.Props["spec"].(pulumi.Map)["template"].(pulumi.Map)["spec"].(pulumi.Map)
	pt.Eq(t, "container", spec["containers"].(pulumi.Array)[0].(pulumi.Map)["image"], pulumi.String("mirror.example.cn/ghcr.io/cloudnative-pg/cloudnative-pg:1.30.0"))
	pt.Eq(t, "init", spec["initContainers"].(pulumi.Array)[0].(pulumi.Map)["image"], pulumi.String("mirror.example.cn/busybox:1"))

	cron := pulumi.Map{"spec": pulumi.Map{"jobTemplate": pulumi.Map{"spec": pulumi.Map{"template": pulumi.Map{"spec": pulumi.Map{
		"containers": pulumi.Array{pulumi.Map{"image": pulumi.String("a:1")}},
	}}}}}}
	if tr(t.Context(), &pulumi.ResourceTransformArgs{Custom: true, Type: "kubernetes:batch/v1:CronJob", Props: cron}) == nil {
		t.Error("cronjob not transformed")
	}
	for _, typ := range []string{"kubernetes:core/v1:ConfigMap", "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"} {
		if tr(t.Context(), &pulumi.ResourceTransformArgs{Custom: true, Type: typ, Props: deployment()}) != nil {
			t.Errorf("%s transformed", typ)
		}
	}
	same := ImageTransform(func(s string) string { return s })
	if same(t.Context(), &pulumi.ResourceTransformArgs{Custom: true, Type: "kubernetes:apps/v1:Deployment", Props: deployment()}) != nil {
		t.Error("unchanged images reported as a change")
	}
}

func TestMergeValues(t *testing.T) {
	dst := map[string]any{"a": 1, "m": map[string]any{"x": 1, "y": 2}, "keep": "k"}
	src := map[string]any{"a": 2, "m": map[string]any{"y": 3, "z": 4}, "new": []any{1}}
	got := MergeValues(dst, src)
	pt.Eq(t, "merged", got, map[string]any{"a": 2, "m": map[string]any{"x": 1, "y": 3, "z": 4}, "keep": "k", "new": []any{1}})
	pt.Eq(t, "dst untouched", dst, map[string]any{"a": 1, "m": map[string]any{"x": 1, "y": 2}, "keep": "k"})
	pt.Eq(t, "nil", MergeValues(nil, nil), map[string]any{})
}

func TestPullSecretTransform(t *testing.T) {
	tr := PullSecretTransform("pull")
	props := func() pulumi.Map {
		return pulumi.Map{"spec": pulumi.Map{"template": pulumi.Map{"spec": pulumi.Map{
			"imagePullSecrets": pulumi.Array{pulumi.Map{"name": pulumi.String("other")}},
		}}}}
	}
	res := tr(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:apps/v1:Deployment", Custom: true, Props: props()})
	if res == nil {
		t.Fatal("deployment not transformed")
	}
	got := res.Props["spec"].(pulumi.Map)["template"].(pulumi.Map)["spec"].(pulumi.Map)["imagePullSecrets"]
	pt.Eq(t, "pull secrets", got, pulumi.Array{pulumi.Map{"name": pulumi.String("other")}, pulumi.Map{"name": pulumi.String("pull")}})
	// Idempotent, and nothing but workloads.
	if tr(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:apps/v1:Deployment", Custom: true, Props: res.Props}) != nil {
		t.Error("pull secret added twice")
	}
	if tr(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:core/v1:Service", Custom: true, Props: props()}) != nil {
		t.Error("service transformed")
	}
}
