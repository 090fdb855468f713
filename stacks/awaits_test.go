package stacks

import (
	"context"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSkipServiceSettle(t *testing.T) {
	service := func(props pulumi.Map) *pulumi.ResourceTransformArgs {
		return &pulumi.ResourceTransformArgs{Custom: true, Type: "kubernetes:core/v1:Service", Name: "svc", Props: props}
	}
	annotations := func(t *testing.T, res *pulumi.ResourceTransformResult) pulumi.Map {
		t.Helper()
		require.NotNil(t, res, "Service not transformed")
		meta, ok := res.Props["metadata"].(pulumi.Map)
		require.True(t, ok, "metadata: %T", res.Props["metadata"])
		a, ok := meta["annotations"].(pulumi.Map)
		require.True(t, ok, "annotations: %T", meta["annotations"])
		return a
	}

	t.Run("ClusterIP with annotations keeps them and skips the await", func(t *testing.T) {
		in := pulumi.Map{
			"metadata": pulumi.Map{"name": pulumi.String("redis"), "annotations": pulumi.Map{"a": pulumi.String("b")}},
			"spec":     pulumi.Map{"type": pulumi.String("ClusterIP"), "selector": pulumi.Map{"app": pulumi.String("redis")}},
		}
		res := skipServiceSettle(context.Background(), service(in))
		assert.Equal(t, pulumi.Map{"a": pulumi.String("b"), "pulumi.com/skipAwait": pulumi.String("true")}, annotations(t, res))
		assert.Equal(t, pulumi.String("redis"), res.Props["metadata"].(pulumi.Map)["name"])
		assert.Equal(t, in["spec"], res.Props["spec"], "spec untouched")
		_, changed := in["metadata"].(pulumi.Map)["annotations"].(pulumi.Map)["pulumi.com/skipAwait"]
		assert.False(t, changed, "the caller's map must not be modified")
	})
	t.Run("default type, typed StringMap annotations, NodePort", func(t *testing.T) {
		res := skipServiceSettle(context.Background(), service(pulumi.Map{"metadata": pulumi.Map{"annotations": pulumi.StringMap{"x": pulumi.String("y")}}}))
		assert.Equal(t, pulumi.Map{"x": pulumi.String("y"), "pulumi.com/skipAwait": pulumi.String("true")}, annotations(t, res))
		res = skipServiceSettle(context.Background(), service(pulumi.Map{"spec": pulumi.Map{"type": pulumi.String("NodePort")}}))
		assert.Equal(t, pulumi.String("true"), annotations(t, res)["pulumi.com/skipAwait"])
	})
	t.Run("left alone", func(t *testing.T) {
		for name, args := range map[string]*pulumi.ResourceTransformArgs{
			"LoadBalancer keeps its await": service(pulumi.Map{"spec": pulumi.Map{"type": pulumi.String("LoadBalancer")}}),
			"type unknown until applied":   service(pulumi.Map{"spec": pulumi.Map{"type": pulumi.String("ClusterIP").ToStringOutput()}}),
			"program already decided":      service(pulumi.Map{"metadata": pulumi.Map{"annotations": pulumi.Map{"pulumi.com/skipAwait": pulumi.String("false")}}}),
			"not a Service":                {Custom: true, Type: "kubernetes:apps/v1:Deployment", Props: pulumi.Map{}},
			"a component named like one":   {Custom: false, Type: "kubernetes:core/v1:Service", Props: pulumi.Map{}},
		} {
			assert.Nil(t, skipServiceSettle(context.Background(), args), name)
		}
	})
}
