package stacks

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
	"github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// The Pulumi mocks do not run stack transforms (see boundary_test.go), so these tests hand
// the mark's transform the registrations it would see, register its result under mocks and
// read what reached the engine. The transform on real registrations, chart children
// included, is test/e2e/ownership_test.go.

const ownershipTestStack = "tenant.tfrs-system.acme"

// toInput is a recorded property value as a transform receives it (sdk unmarshalPropertyMap:
// plain values as pulumi.String/Map/Array, secrets as secret outputs).
func toInput(v resource.PropertyValue) pulumi.Input {
	switch {
	case v.IsNull():
		return nil
	case v.IsBool():
		return pulumi.Bool(v.BoolValue())
	case v.IsNumber():
		return pulumi.Float64(v.NumberValue())
	case v.IsString():
		return pulumi.String(v.StringValue())
	case v.IsArray():
		out := pulumi.Array{}
		for _, e := range v.ArrayValue() {
			out = append(out, toInput(e))
		}
		return out
	case v.IsObject():
		return toMap(v.ObjectValue())
	case v.IsSecret():
		return pulumi.ToSecret(toInput(v.SecretValue().Element))
	case v.IsOutput():
		return pulumi.ToOutput(toInput(v.OutputValue().Element))
	}
	return pulumi.String(v.String())
}

func toMap(m resource.PropertyMap) pulumi.Map {
	out := pulumi.Map{}
	for k, v := range m {
		out[string(k)] = toInput(v)
	}
	return out
}

// markAndRegister runs the mark of ownershipTestStack over each registration and registers
// the results under mocks; it returns what reached the engine, in order.
func markAndRegister(t *testing.T, args []*pulumi.ResourceTransformArgs) []*registration {
	t.Helper()
	o := ownership{stack: ownershipTestStack}
	m := &recordingMocks{stack: ownershipTestStack, prefix: "tfrs:tenant:"}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		for i, a := range args {
			props := a.Props
			if r := o.transform(context.Background(), a); r != nil {
				props = r.Props
			}
			var res pulumi.CustomResourceState
			if err := ctx.RegisterResource(a.Type, fmt.Sprintf("%s-%d", a.Name, i), props, &res); err != nil {
				return err
			}
		}
		return nil
	}, pulumi.WithMocks(tenantTestProject, ownershipTestStack, m))
	if err != nil {
		t.Fatal(err)
	}
	return m.regs
}

// metaString is metadata.<field>[key] of a recorded registration ("" when absent).
func metaString(r *registration, field, key string) string {
	meta, _ := pulumitest.Plain(r.Inputs)["metadata"].(map[string]any)
	f, _ := meta[field].(map[string]any)
	v, _ := f[key].(string)
	return v
}

func TestOwnerMark(t *testing.T) {
	long := "server." + strings.Repeat("n", 60) + "." + strings.Repeat("s", 120)
	seen := map[string]string{}
	for _, s := range []string{ownershipTestStack, "tenant.tfrs-system.acme2", "server.acme.bot", long} {
		v := OwnerMark(s)
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 || len(v) > 63 {
			t.Errorf("OwnerMark(%q) = %q: not a label value: %v", s, v, errs)
		}
		if v != OwnerMark(s) {
			t.Errorf("OwnerMark(%q) is not stable", s)
		}
		if prev, ok := seen[v]; ok {
			t.Errorf("%q and %q share the mark %q", prev, s, v)
		}
		seen[v] = s
	}
}

// TestOwnershipMarksEveryShape: whatever form an object's metadata takes when a transform
// sees it (absent, a map with or without labels, labels a chart set, values not known yet,
// secrets), the engine receives the stack's label and annotation, and the object's own
// labels and annotations are kept. A chart cannot wear another stack's mark.
func TestOwnershipMarksEveryShape(t *testing.T) {
	obj := func(meta pulumi.Input) *pulumi.ResourceTransformArgs {
		props := pulumi.Map{"data": pulumi.Map{"k": pulumi.String("v")}}
		if meta != nil {
			props["metadata"] = meta
		}
		return &pulumi.ResourceTransformArgs{Type: "kubernetes:core/v1:ConfigMap", Name: "cm", Custom: true, Props: props}
	}
	own := pulumi.Map{"app": pulumi.String("mine")}
	cases := map[string]*pulumi.ResourceTransformArgs{
		"no metadata":     obj(nil),
		"no labels":       obj(pulumi.Map{"name": pulumi.String("cm"), "namespace": pulumi.String("acme")}),
		"labels":          obj(pulumi.Map{"name": pulumi.String("cm"), "labels": own, "annotations": own}),
		"string map":      obj(pulumi.Map{"name": pulumi.String("cm"), "labels": pulumi.StringMap{"app": pulumi.String("mine")}}),
		"labels later":    obj(pulumi.Map{"name": pulumi.String("cm"), "labels": pulumi.ToOutput(own)}),
		"secret labels":   obj(pulumi.Map{"name": pulumi.String("cm"), "labels": pulumi.ToSecret(own)}),
		"metadata later":  obj(pulumi.ToOutput(pulumi.Map{"name": pulumi.String("cm"), "labels": own})),
		"metadata secret": obj(pulumi.ToSecret(pulumi.Map{"name": pulumi.String("cm")})),
		"a chart's forged mark": obj(pulumi.Map{"name": pulumi.String("cm"), "labels": pulumi.Map{
			cluster.LabelOwner: pulumi.String(OwnerMark("tenant.other.victim")), "app": pulumi.String("mine"),
		}, "annotations": pulumi.Map{cluster.AnnotationStack: pulumi.String("tenant.other.victim")}}),
	}
	var names []string
	var args []*pulumi.ResourceTransformArgs
	for name, a := range cases {
		names = append(names, name)
		args = append(args, a)
	}
	regs := markAndRegister(t, args)
	if len(regs) != len(args) {
		t.Fatalf("registered %d of %d", len(regs), len(args))
	}
	for _, r := range regs {
		var i int
		_, err := fmt.Sscanf(r.Name[strings.LastIndex(r.Name, "-")+1:], "%d", &i)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(names[i], func(t *testing.T) {
			check(t, "label", metaString(r, "labels", cluster.LabelOwner), OwnerMark(ownershipTestStack))
			check(t, "annotation", metaString(r, "annotations", cluster.AnnotationStack), ownershipTestStack)
			if !r.Inputs["data"].IsObject() {
				t.Error("the object's other properties were lost")
			}
			if names[i] != "no metadata" && names[i] != "no labels" && names[i] != "metadata secret" {
				check(t, "the object's own label", metaString(r, "labels", "app"), "mine")
			}
		})
	}
}

// TestOwnershipLeavesWhatIsNotAnObject: components (a chart, a manifest), providers, Helm v3
// releases and *Patch resources (which own fields of another stack's object, never the
// object) pass unchanged.
func TestOwnershipLeavesWhatIsNotAnObject(t *testing.T) {
	o := ownership{stack: ownershipTestStack}
	for _, a := range []*pulumi.ResourceTransformArgs{
		{Type: "kubernetes:helm.sh/v4:Chart", Custom: false, Props: pulumi.Map{"namespace": pulumi.String("acme")}},
		{Type: "kubernetes:yaml/v2:ConfigFile", Custom: false},
		{Type: "pulumi:providers:kubernetes", Custom: true},
		{Type: "kubernetes:helm.sh/v3:Release", Custom: true},
		{Type: "kubernetes:core/v1:SecretPatch", Custom: true, Props: pulumi.Map{"metadata": pulumi.Map{"name": pulumi.String("redis-acl")}}},
		{Type: "tfrs:tenant:Redis", Custom: false},
	} {
		if r := o.transform(context.Background(), a); r != nil {
			t.Errorf("%s changed", a.Type)
		}
	}
}

// kindResource is the API group and resource (plural) of a kubernetes:<group>/<version>:<Kind>
// type token.
func kindResource(typ string) (group, res string) {
	parts := strings.Split(typ, ":")
	gv := parts[1]
	if i := strings.LastIndex(gv, "/"); i >= 0 {
		group = gv[:i]
	}
	if group == "core" {
		group = ""
	}
	kind := strings.TrimSuffix(parts[2], "Patch")
	res = strings.ToLower(kind)
	switch {
	case strings.HasSuffix(res, "y"):
		res = res[:len(res)-1] + "ies"
	case strings.HasSuffix(res, "s"):
		res += "es"
	default:
		res += "s"
	}
	return group, res
}

// renderedObjects are every Kubernetes registration of a full enterprise tenant (exported
// outputs on) and of a server in it, as the transform would see them.
func renderedObjects(t *testing.T) []*registration {
	t.Helper()
	tt := newEnterprise(func(s *v1alpha1.TFRTenantSpec) {
		s.ExportOutputs = &v1alpha1.ExportOutputsSpec{SecretName: "exported"}
	})
	tr := runTenant(t, TenantInput{Tenant: tt, Cluster: testTenantCluster}, enterpriseStack, nil)
	sr := runServer(t, ServerInput{Server: newServer(nil), Tenant: enterpriseTenant(t)})
	var out []*registration
	for _, r := range append(append([]*registration{}, tr.m.regs...), sr.m.regs...) {
		if strings.HasPrefix(r.Type, "kubernetes:") {
			out = append(out, r)
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d Kubernetes registrations in a full tenant and server", len(out))
	}
	return out
}

// TestOwnershipMarksEveryRegisteredObject: every Kubernetes object a full tenant and a server
// register gets the stack's mark, from its real inputs; the only ones left unmarked are
// *Patch resources (TestOwnershipLeavesWhatIsNotAnObject says why).
func TestOwnershipMarksEveryRegisteredObject(t *testing.T) {
	var args []*pulumi.ResourceTransformArgs
	unmarked := map[string]bool{}
	for _, r := range renderedObjects(t) {
		if !r.Custom {
			continue // components (a chart): their objects register one by one
		}
		if !markable(r.Custom, r.Type) {
			unmarked[r.Type] = true
			continue
		}
		args = append(args, &pulumi.ResourceTransformArgs{Type: r.Type, Name: r.Name, Custom: r.Custom, Props: toMap(r.Inputs)})
	}
	for typ := range unmarked {
		if !strings.HasSuffix(typ, "Patch") {
			t.Errorf("%s is registered but not marked", typ)
		}
	}
	regs := markAndRegister(t, args)
	if len(regs) != len(args) {
		t.Fatalf("registered %d of %d", len(regs), len(args))
	}
	for _, r := range regs {
		if got := metaString(r, "labels", cluster.LabelOwner); got != OwnerMark(ownershipTestStack) {
			t.Errorf("%s %s: label %q", r.Type, r.Name, got)
		}
		if got := metaString(r, "annotations", cluster.AnnotationStack); got != ownershipTestStack {
			t.Errorf("%s %s: annotation %q", r.Type, r.Name, got)
		}
	}
	t.Logf("%d objects marked, unmarked kinds %v", len(regs), sortedNames(unmarked))
}

// TestOwnershipCoversEveryRegisteredKind: the ownership policy matches every kind a tenant or
// server registers (derived from the applier's and the provisioner's rules, never listed by
// hand), so no object a stack writes escapes the API server's ownership rule.
func TestOwnershipCoversEveryRegisteredKind(t *testing.T) {
	owned := OwnedResources()
	seen := map[string]bool{}
	for _, r := range renderedObjects(t) {
		if !r.Custom {
			continue // components: their objects register one by one
		}
		g, res := kindResource(r.Type)
		key := g + "/" + res
		if seen[key] {
			continue
		}
		seen[key] = true
		found := false
		for _, x := range owned[g] {
			found = found || x == res
		}
		if !found {
			t.Errorf("%s (%s) is registered by a tenant or server stack but the ownership policy does not match it", r.Type, key)
		}
	}
	if len(seen) < 8 {
		t.Errorf("only %d kinds seen: %v", len(seen), sortedNames(seen))
	}
	t.Logf("kinds registered and covered: %v", sortedNames(seen))
}

// TestOwnedResourcesComeFromTheRules: every resource the applier may change is matched, and
// no subresource or read-only kind is.
func TestOwnedResourcesComeFromTheRules(t *testing.T) {
	owned := OwnedResources()
	for _, want := range [][2]string{{"", "secrets"}, {"apps", "deployments"}, {"", "namespaces"}, {"networking.k8s.io", "networkpolicies"},
		{"security.istio.io", "peerauthentications"}, {"postgresql.cnpg.io", "clusters"}, {"", "resourcequotas"}, {"", "limitranges"}} {
		found := false
		for _, x := range owned[want[0]] {
			found = found || x == want[1]
		}
		if !found {
			t.Errorf("%s/%s is not owned", want[0], want[1])
		}
	}
	for g, rs := range owned {
		for _, x := range rs {
			if strings.Contains(x, "/") || x == "pods" || x == "replicasets" || x == "events" || strings.IndexFunc(x, unicode.IsUpper) >= 0 {
				t.Errorf("%s/%s is owned", g, x)
			}
		}
	}
}
