package kinds

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Immutable fields are recorded on the object's own stack the first time it comes up (the
// runner writes Target.Immutable as a stack tag) and checked before every later up or preview
// (CheckImmutable), whichever door it comes through. The CRD's CEL rules and the HTTP API's
// stored spec guard their own doors; the stack is what every door shares, so the CLI, which
// has nothing else to compare with, is held to the same rules, and a CR recreated with a
// changed field cannot rewrite a stack either.

// Immutable returns obj's immutable fields (path → effective value) encoded for a stack tag:
// compact JSON with sorted keys; "" for a kind without any (a cluster) or an unknown type.
// obj is expected defaulted (Prepare).
func Immutable(obj v1alpha1.Object) string {
	k, err := programOf(obj)
	if err != nil {
		return ""
	}
	m := k.immutable()
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m) // map keys are sorted by encoding/json
	return string(b)
}

// CheckImmutable compares the immutable fields of a prepared object (want, from Immutable)
// with those a stack recorded (have, its tag; "" when the stack has none yet: nothing to
// compare). Every field that changed is an *InvalidError entry naming it and the recorded
// value. A recorded value that cannot be read is an error too: the stack is not the object's.
func CheckImmutable(want, have string) error {
	if have == "" || want == have {
		return nil
	}
	var w, h map[string]string
	if err := json.Unmarshal([]byte(have), &h); err != nil {
		return &InvalidError{Errors: field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), nil,
			fmt.Sprintf("the stack records immutable fields this version cannot read (%v)", err))}}
	}
	if want != "" {
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs field.ErrorList
	for _, k := range keys {
		if w[k] == h[k] {
			continue
		}
		p := field.NewPath(strings.Split(k, ".")[0], strings.Split(k, ".")[1:]...)
		errs = append(errs, field.Invalid(p, w[k], fmt.Sprintf("%s is immutable: the stack was created with %q; delete and recreate the object to change it", k, h[k])))
	}
	if len(errs) == 0 {
		return nil
	}
	return &InvalidError{Errors: errs}
}
