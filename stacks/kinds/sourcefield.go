package kinds

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// SetSourceField sets the string at path (a field path of v1alpha1.Object.Sources: names only, no
// indexes) in obj, through its unstructured form, so no per-kind code names the fields.
func SetSourceField(obj v1alpha1.Object, path *field.Path, value string) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	parts := strings.Split(path.String(), ".")
	m := u
	for _, k := range parts[:len(parts)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: not an object in %s", k, path)
		}
		m = next
	}
	m[parts[len(parts)-1]] = value
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
}
