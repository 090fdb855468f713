package v1alpha1

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// sourceNames are the JSON names of the fields that make tfrs read or fetch something: a
// chart repository, a manifest URL, a local path, an object storage endpoint. A SecretKeyRef
// (a Secret read from another namespace) is one too, by its type.
var sourceNames = map[string]SourceKind{
	"chartRepo": SourceChartRepo, "manifestURL": SourceManifestURL, "localPath": SourceLocalPath, "endpoint": SourceObjectStorage,
}

// fillSources sets every string field named in sourceNames reachable from v (through
// structs, pointers and maps, a map getting one key) to a value naming its path, and records
// path → kind in want.
func fillSources(v reflect.Value, p *field.Path, want map[string]SourceKind, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type().Elem().Kind() != reflect.Struct {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillSources(v.Elem(), p, want, depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(SecretKeyRef{}) {
			// A Secret read from another namespace: the namespace is the source.
			np := p.Child("namespace")
			v.FieldByName("Namespace").SetString("src:" + np.String())
			want[np.String()] = SourceSecretRef
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			fp := p
			if !strings.Contains(opts, "inline") && !f.Anonymous {
				fp = p.Child(name)
			}
			if kind, ok := sourceNames[name]; ok && f.Type.Kind() == reflect.String {
				v.Field(i).SetString("src:" + fp.String())
				want[fp.String()] = kind
				continue
			}
			fillSources(v.Field(i), fp, want, depth+1)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		key := fmt.Sprintf("k%d", depth)
		elem := reflect.New(v.Type().Elem()).Elem()
		fillSources(elem, p.Key(key), want, depth+1)
		v.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), elem)
	}
}

// Every field of the API that names something tfrs reads or fetches is a source field of its
// object, at its path, with its kind: the source policy, the untrusted CI mode's confinement
// and the inputs digest all see exactly what Sources lists, so a field missing from it would
// escape all three. The fields are found by walking the types, not listed: a new one is
// covered when it is added.
func TestEverySourceFieldIsListed(t *testing.T) {
	for _, obj := range []Object{&TFRCluster{}, &TFRTenant{}, &TFRServer{}} {
		want := map[string]SourceKind{}
		fillSources(reflect.ValueOf(obj).Elem().FieldByName("Spec"), field.NewPath("spec"), want, 0)
		got := map[string]SourceKind{}
		for _, s := range obj.Sources() {
			got[s.Path.String()] = s.Kind
			if s.Value != "src:"+s.Path.String() {
				t.Errorf("%s: %s carries %q", obj.KindName(), s.Path, s.Value)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Sources lists\n%v\nthe types have\n%v", obj.KindName(), got, want)
		}
		if obj.KindName() == KindTFRCluster && len(want) < 12 {
			t.Errorf("the walk found only %d source fields of a cluster", len(want))
		}
	}
}
