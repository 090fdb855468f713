package upstream

import (
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// widgetCRD is a small CRD of our own, so the validator's own test needs no upstream folder:
// a declared integer, an enum, a pattern, a required field and a CEL rule.
const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            x-kubernetes-validations:
            - rule: "!has(self.max) || self.size <= self.max"
              message: size above max
            properties:
              size: {type: integer}
              max: {type: integer}
              mode: {type: string, enum: [A, B]}
              name: {type: string, pattern: '^[a-z]+$'}
              free: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v0
    served: false
    storage: false
    schema:
      openAPIV3Schema: {type: object}
`

func widget(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	c := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(widgetCRD), c); err != nil {
		t.Fatal(err)
	}
	return []*apiextensionsv1.CustomResourceDefinition{c}
}

func obj(spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns"},
		"spec":     spec,
	}
}

// Validate accepts what the schema declares and rejects, naming the field, what the API
// server would: an undeclared field, a wrong type, an enum, a pattern, a missing required
// field, a CEL rule, an unserved version and an unknown kind.
func TestValidate(t *testing.T) {
	crds := widget(t)
	if errs := Validate(crds, "example.com/v1", "Widget", obj(map[string]any{
		"size": 3, "max": 4, "mode": "A", "name": "abc", "free": map[string]any{"any": []any{1, "x"}},
	})); len(errs) != 0 {
		t.Fatalf("a valid widget was rejected: %v", errors.Join(errs...))
	}
	for _, tc := range []struct {
		name, apiVersion, kind string
		spec                   map[string]any
		want                   string
	}{
		{"undeclared field", "example.com/v1", "Widget", map[string]any{"size": 1, "poolsMetadata": map[string]any{}}, `unknown field "spec.poolsMetadata"`},
		{"wrong type", "example.com/v1", "Widget", map[string]any{"size": "three"}, `spec.size: Invalid value: "string"`},
		{"float for integer", "example.com/v1", "Widget", map[string]any{"size": 1.5}, `spec.size`},
		{"enum", "example.com/v1", "Widget", map[string]any{"size": 1, "mode": "C"}, `spec.mode: Unsupported value: "C"`},
		{"pattern", "example.com/v1", "Widget", map[string]any{"size": 1, "name": "ABC"}, `spec.name: Invalid value: "ABC"`},
		{"required", "example.com/v1", "Widget", map[string]any{"max": 1}, `spec.size: Required value`},
		{"cel rule", "example.com/v1", "Widget", map[string]any{"size": 5, "max": 4}, `size above max`},
		{"unserved version", "example.com/v0", "Widget", map[string]any{"size": 1}, `does not serve version v0`},
		{"unknown kind", "example.com/v1", "Gadget", map[string]any{"size": 1}, `no CRD serves example.com/v1 Gadget`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := obj(tc.spec)
			o["apiVersion"], o["kind"] = tc.apiVersion, tc.kind
			err := errors.Join(Validate(crds, tc.apiVersion, tc.kind, o)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("errors %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Validate works on a copy: the caller's object keeps the fields pruning drops.
func TestValidateLeavesObjectAlone(t *testing.T) {
	o := obj(map[string]any{"size": 1, "extra": true})
	_ = Validate(widget(t), "example.com/v1", "Widget", o)
	if _, ok := o["spec"].(map[string]any)["extra"]; !ok {
		t.Error("Validate modified its argument")
	}
}
