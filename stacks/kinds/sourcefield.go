package kinds

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// SetSourceField sets the string at path (a field path of v1alpha1.Object.Sources: field
// names, map keys as "[key]", list indexes as "[n]") in obj, through its unstructured form,
// so no per-kind code names the fields.
func SetSourceField(obj v1alpha1.Object, path *field.Path, value string) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	steps, err := pathSteps(path.String())
	if err != nil {
		return err
	}
	var cur any = u
	for i, st := range steps {
		last := i == len(steps)-1
		switch c := cur.(type) {
		case map[string]any: // a field, or a map's key in brackets
			if last {
				c[st.name] = value
				break
			}
			cur = c[st.name]
		case []any:
			n, err := strconv.Atoi(st.name)
			if !st.index || err != nil || n < 0 || n >= len(c) {
				return fmt.Errorf("%s: %q is not an index of its list", path, st.name)
			}
			if last {
				c[n] = value
				break
			}
			cur = c[n]
		default:
			return fmt.Errorf("%s: %s is not an object or a list", path, st.name)
		}
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
}

// pathStep is one step of a field path: a name (a field, or a map key in brackets) or a list
// index (in brackets).
type pathStep struct {
	name  string
	index bool // in brackets: a map key or a list index, decided by what it steps into
}

// pathSteps splits a field.Path's string ("spec.personal.jobTypes[chat].grafana.localPath")
// into its steps. A key in brackets may hold any character but "]".
func pathSteps(s string) ([]pathStep, error) {
	var out []pathStep
	for s != "" {
		switch {
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("field path %q: unclosed [", s)
			}
			out = append(out, pathStep{name: s[1:end], index: true})
			s = strings.TrimPrefix(s[end+1:], ".")
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			if end == 0 {
				return nil, fmt.Errorf("field path %q: empty name", s)
			}
			out = append(out, pathStep{name: s[:end]})
			s = strings.TrimPrefix(s[end:], ".")
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty field path")
	}
	return out, nil
}
