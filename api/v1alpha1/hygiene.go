package v1alpha1

import (
	"encoding/json"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Input hygiene: no string an object carries may hold control characters. A NUL is refused
// everywhere; tab, newline and carriage return only where a value is multi-line text (see
// multiLine). Every refusal is Forbidden at the value's own path and never repeats the value
// (it may be a secret).

// multiLine reports whether the value at path may span lines: environment values (a PEM key
// in secretData), the Confz TOML, chart values and annotation values.
func multiLine(path string) bool {
	switch {
	case strings.HasPrefix(path, "spec.configData["), strings.HasPrefix(path, "spec.secretData["),
		path == "spec.confzData", strings.HasPrefix(path, "metadata.annotations["):
		return true
	}
	return strings.Contains(path, ".values")
}

// controlChar returns a description of the first forbidden character of s, "" for none.
func controlChar(s string, multi bool) string {
	for _, r := range s {
		switch {
		case r == 0:
			return "a value must not contain a NUL byte"
		case multi && (r == '\t' || r == '\n' || r == '\r'):
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == '\u2028' || r == '\u2029':
			if multi {
				return "a value must not contain control characters other than tab and newline"
			}
			return "a value must not contain control characters (tabs and newlines included)"
		}
	}
	return ""
}

// ControlCharErrors names every string of obj's metadata and spec that holds a forbidden
// control character: values at their path, map keys at the map's path.
func ControlCharErrors(obj Object) field.ErrorList {
	var errs field.ErrorList
	check := func(p *field.Path, s string, isKey bool) {
		multi := !isKey && multiLine(p.String())
		if msg := controlChar(s, multi); msg != "" {
			if isKey {
				msg = "a key must not contain control characters"
			}
			errs = append(errs, field.Forbidden(p, msg))
		}
	}
	mp := field.NewPath("metadata")
	check(mp.Child("name"), obj.GetName(), false)
	check(mp.Child("namespace"), obj.GetNamespace(), false)
	for _, m := range []struct {
		name string
		kv   map[string]string
	}{{"labels", obj.GetLabels()}, {"annotations", obj.GetAnnotations()}} {
		walkStrings(mp.Child(m.name), reflect.ValueOf(m.kv), check)
	}
	walkStrings(field.NewPath("spec"), reflect.ValueOf(obj.GetSpec()), check)
	return errs
}

var jsonType = reflect.TypeOf(apiextensionsv1.JSON{})

// walkStrings calls check with every string under v (JSON field names as the path).
func walkStrings(p *field.Path, v reflect.Value, check func(p *field.Path, s string, isKey bool)) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Type() == jsonType {
		var doc any
		if json.Unmarshal(v.Interface().(apiextensionsv1.JSON).Raw, &doc) == nil {
			walkStrings(p, reflect.ValueOf(&doc), check)
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		check(p, v.String(), false)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
			case name == "" && f.Anonymous:
				walkStrings(p, v.Field(i), check)
			case name != "":
				walkStrings(p.Child(name), v.Field(i), check)
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			if k.Kind() != reflect.String {
				continue
			}
			if controlChar(k.String(), false) != "" {
				check(p, k.String(), true)
				continue
			}
			walkStrings(p.Key(k.String()), iter.Value(), check)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes, not text
		}
		for i := range v.Len() {
			walkStrings(p.Index(i), v.Index(i), check)
		}
	}
}
