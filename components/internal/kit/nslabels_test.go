package kit

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// A manifest's Namespace gets the labels of its name, keeping its own; other namespaces and
// other kinds are left alone.
func TestNamespaceLabelsTransform(t *testing.T) {
	tr := NamespaceLabelsTransform(func(name string) map[string]string {
		if name == "cnpg-system" {
			return map[string]string{"tfrs.io/platform-role": "cnpg-operator"}
		}
		return nil
	})
	ns := func(name string, labels pulumi.Map) pulumi.Map {
		meta := pulumi.Map{"name": pulumi.String(name)}
		if labels != nil {
			meta["labels"] = labels
		}
		return pulumi.Map{"apiVersion": pulumi.String("v1"), "kind": pulumi.String("Namespace"), "metadata": meta}
	}
	res := tr(t.Context(), &pulumi.ResourceTransformArgs{Custom: true, Type: "kubernetes:core/v1:Namespace", Name: "cnpg-system",
		Props: ns("cnpg-system", pulumi.Map{"app.kubernetes.io/name": pulumi.String("cloudnative-pg")})})
	if res == nil {
		t.Fatal("cnpg-system not labelled")
	}
	pt.Eq(t, "labels", res.Props["metadata"].(pulumi.Map)["labels"], pulumi.Map{
		"app.kubernetes.io/name": pulumi.String("cloudnative-pg"), "tfrs.io/platform-role": pulumi.String("cnpg-operator"),
	})
	if res := tr(t.Context(), &pulumi.ResourceTransformArgs{Custom: true, Type: "kubernetes:core/v1:Namespace", Props: ns("cnpg-system", nil)}); res == nil ||
		res.Props["metadata"].(pulumi.Map)["labels"].(pulumi.Map)["tfrs.io/platform-role"] != pulumi.String("cnpg-operator") {
		t.Error("a namespace without labels was not labelled")
	}
	for _, a := range []*pulumi.ResourceTransformArgs{
		{Custom: true, Type: "kubernetes:core/v1:Namespace", Props: ns("other", nil)},
		{Custom: true, Type: "kubernetes:core/v1:ConfigMap", Props: ns("cnpg-system", nil)},
		{Custom: false, Type: "kubernetes:core/v1:Namespace", Props: ns("cnpg-system", nil)},
	} {
		if tr(t.Context(), a) != nil {
			t.Errorf("%s %v transformed", a.Type, a.Props["metadata"])
		}
	}
}
