package pulumitest

import (
	"encoding/base64"
	"strings"
	"testing"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

type component struct{ pulumi.ResourceState }

// The mocks record parents, dependencies, options and inputs, answer a read Secret with
// SecretData encoded as the API server would, and build URNs as the engine does.
func TestMocksRecord(t *testing.T) {
	m := &Mocks{Stack: "tenant.test", SecretData: map[string]string{"password": "hunter2"}}
	var password func() string
	m.Run(t, func(ctx *pulumi.Context) error {
		c := &component{}
		if err := ctx.RegisterComponentResource("tfrs:test:Thing", "thing", c); err != nil {
			return err
		}
		cm, err := corev1.NewConfigMap(ctx, "cm", &corev1.ConfigMapArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String("cm")},
			Data:     pulumi.StringMap{"k": pulumi.ToSecret(pulumi.String("v")).(pulumi.StringOutput)},
		}, pulumi.Parent(c), pulumi.RetainOnDelete(true))
		if err != nil {
			return err
		}
		s, err := corev1.GetSecret(ctx, "read", pulumi.ID("ns/s"), nil, pulumi.Parent(c), pulumi.DependsOn([]pulumi.Resource{cm}))
		if err != nil {
			return err
		}
		password = Collect[string](s.Data.MapIndex(pulumi.String("password")))
		return nil
	})
	c := m.Find(t, "tfrs:test:Thing", "thing")
	cm := m.Find(t, "kubernetes:core/v1:ConfigMap", "cm")
	Eq(t, "urn", cm.URN, "urn:pulumi:tenant.test::tfrs::tfrs:test:Thing$kubernetes:core/v1:ConfigMap::cm")
	Eq(t, "parent", cm.Parent, c.URN)
	Eq(t, "retain, custom", []bool{cm.Retain, cm.Custom, cm.Read}, []bool{true, true, false})
	Eq(t, "plain unwraps secrets", Plain(cm.Inputs)["data"], map[string]any{"k": "v"})
	read := m.Find(t, "kubernetes:core/v1:Secret", "read")
	Eq(t, "read", []any{read.Read, read.ID, read.Deps}, []any{true, "ns/s", []string(nil)})
	Eq(t, "secret data", password(), base64.StdEncoding.EncodeToString([]byte("hunter2")))
	Eq(t, "all", len(m.All("kubernetes:core/v1:Secret")), 1)
	if names := strings.Join(m.Regs().Names(), " "); !strings.Contains(names, "kubernetes:core/v1:ConfigMap::cm") {
		t.Errorf("names %s", names)
	}
	m.AssertChildren(t, "tfrs:test:Thing", "kubernetes:core/v1:ConfigMap::cm", "kubernetes:core/v1:Secret::read")
	Eq(t, "at", At(t, map[string]any{"a": []any{map[string]any{"b": 1}}}, "a", 0, "b"), 1)
}
