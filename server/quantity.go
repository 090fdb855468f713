package server

import (
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

var quantityType = reflect.TypeOf(resource.Quantity{})

// quantityProblems names every malformed quantity in a body's spec. A Quantity's own decoder
// fails without saying where (encoding/json gives no path for an UnmarshalJSON error), so the
// body is walked once more beside the spec's Go type: each value that lands in a Quantity is
// parsed on its own, and a failure is reported at its full JSON path (spec.postgresql.size).
func quantityProblems(body []byte, specType reflect.Type) []FieldProblem {
	var doc struct {
		Spec any `json:"spec"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return nil
	}
	var out []FieldProblem
	walkQuantities(specType, doc.Spec, "spec", func(path string) {
		out = append(out, FieldProblem{Field: path, Reason: "invalid", Detail: "a malformed quantity (write e.g. 10Gi or 500m)"})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// walkQuantities visits v, decoded into t, and calls bad with the path of each value that is
// not a valid quantity where t holds one.
func walkQuantities(t reflect.Type, v any, path string, bad func(path string)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil {
		return
	}
	if t == quantityType {
		if !validQuantity(v) {
			bad(path)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
			case name == "" && f.Anonymous: // inline: the embedded fields sit at this level
				walkQuantities(f.Type, v, path, bad)
			case name != "":
				if fv, ok := m[name]; ok {
					walkQuantities(f.Type, fv, path+"."+name, bad)
				}
			}
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			for k, mv := range m {
				walkQuantities(t.Elem(), mv, path+"["+k+"]", bad)
			}
		}
	case reflect.Slice, reflect.Array:
		if s, ok := v.([]any); ok {
			for i, sv := range s {
				walkQuantities(t.Elem(), sv, path+"["+strconv.Itoa(i)+"]", bad)
			}
		}
	}
}

// validQuantity is what Quantity.UnmarshalJSON accepts: a string or a number that parses.
func validQuantity(v any) bool {
	var s string
	switch x := v.(type) {
	case string:
		s = strings.TrimSpace(x)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return false
	}
	_, err := resource.ParseQuantity(s)
	return err == nil
}
