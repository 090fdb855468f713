package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsjson "sigs.k8s.io/json"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// objectMeta is the part of Kubernetes metadata a body may carry. Anything else (uid,
// resourceVersion, generateName …) is an unknown field: the API names every object itself and
// keeps no Kubernetes bookkeeping, so such a field would be silently meaningless.
type objectMeta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func metaOf(o v1alpha1.Object) objectMeta {
	return objectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), Labels: o.GetLabels(), Annotations: o.GetAnnotations()}
}

// document is a request body: the CR document kubectl takes (apiVersion, kind, metadata,
// spec) or just {metadata, spec}. There is no status: the server owns it. Spec is the kind's
// spec: a pointer to it to encode (documentOf), a specSlot to decode into.
type document struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   objectMeta `json:"metadata"`
	Spec       any        `json:"spec"`
}

// documentOf is the response (and record) form of an object: the CR document without status.
func documentOf(obj v1alpha1.Object) document {
	return document{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(obj.KindName()), Metadata: metaOf(obj), Spec: obj.GetSpec()}
}

// specSlot is where a document's spec decodes for obj's kind: a pointer to a nil *S, S being
// the kind's spec type, so that the decoders allocate the spec only when the body has one (a
// missing or null spec leaves it nil, as a typed *S field would) and report type errors
// against S with their full paths. fill copies a decoded spec into obj; false: there was none.
func specSlot(obj v1alpha1.Object) (slot any, fill func() bool) {
	spec := reflect.ValueOf(obj.GetSpec()) // *S
	p := reflect.New(spec.Type())          // **S, pointing at a nil *S
	return p.Interface(), func() bool {
		if p.Elem().IsNil() {
			return false
		}
		spec.Elem().Set(p.Elem().Elem())
		return true
	}
}

// isJSON accepts application/json and the structured +json types, with parameters.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == echo.MIMEApplicationJSON || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// hasBody reports a request body without reading it (chunked bodies have length -1).
func hasBody(c echo.Context) bool {
	r := c.Request()
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// readBody checks the media type before reading anything, then reads the body under the body
// limit (the limit's error passes through as is, for the 413).
func readBody(c echo.Context) ([]byte, error) {
	if !isJSON(c.Request().Header.Get(echo.HeaderContentType)) {
		return nil, ErrUnsupportedMedia
	}
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// decodeDocument decodes a body strictly into a new object of the kind newObj makes.
// Malformed JSON, a value of the wrong type (the decoder stops there) and a missing spec are
// fatal: the error is returned. Unknown and duplicate fields (case-sensitive, with their full
// paths) and a wrong apiVersion or kind are returned as field problems next to the decoded
// object, so that the spec's own validation can still report every other invalid field in the
// same 400.
func decodeDocument(body []byte, newObj func() v1alpha1.Object) (v1alpha1.Object, []FieldProblem, error) {
	obj := newObj()
	kind := obj.KindName()
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, invalid("a request body is required", FieldProblem{Reason: "required", Detail: "send the " + string(kind) + " document"})
	}
	if !utf8.Valid(body) {
		return nil, nil, invalid("the body is not valid UTF-8", FieldProblem{Reason: "invalid", Detail: "not UTF-8"})
	}
	// The standard decoder first: it reports syntax errors with their offset and type errors
	// with the full field path.
	looseSpec, _ := specSlot(newObj())
	loose := document{Spec: looseSpec}
	if err := json.Unmarshal(body, &loose); err != nil {
		if isQuantityError(err) {
			if fields := quantityProblems(body, reflect.TypeOf(obj.GetSpec())); len(fields) > 0 {
				return nil, nil, invalid(fmt.Sprintf("%d invalid field(s)", len(fields)), fields...)
			}
		}
		return nil, nil, decodeError(err, kind)
	}
	// Then the Kubernetes decoder, case-sensitive like the API server, for unknown and
	// duplicate fields; its result is the one used.
	spec, fill := specSlot(obj)
	d := document{Spec: spec}
	strict, err := sigsjson.UnmarshalStrict(body, &d)
	if err != nil {
		return nil, nil, decodeError(err, kind)
	}
	var fields []FieldProblem
	for _, se := range strict {
		fp := FieldProblem{Reason: "invalid", Detail: "not allowed"}
		var fe sigsjson.FieldError
		if errors.As(se, &fe) {
			fp.Field = fe.FieldPath()
		}
		switch msg := se.Error(); {
		case strings.HasPrefix(msg, "unknown field"):
			fp.Reason, fp.Detail = "unknown", "unknown field"
		case strings.HasPrefix(msg, "duplicate field"):
			fp.Reason, fp.Detail = "duplicate", "the field is given twice"
		}
		fields = append(fields, fp)
	}
	want := v1alpha1.GroupVersion.String()
	if d.APIVersion != "" && d.APIVersion != want {
		fields = append(fields, FieldProblem{Field: "apiVersion", Reason: "notSupported", Detail: "must be " + want})
	}
	if d.Kind != "" && d.Kind != string(kind) {
		fields = append(fields, FieldProblem{Field: "kind", Reason: "notSupported", Detail: "must be " + string(kind) + " on this route"})
	}
	if !fill() {
		fields = append(fields, FieldProblem{Field: "spec", Reason: "required", Detail: "spec is required"})
		return nil, nil, invalid(fmt.Sprintf("%d invalid field(s)", len(fields)), fields...)
	}
	obj.GetObjectKind().SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(string(kind)))
	obj.SetName(d.Metadata.Name)
	obj.SetNamespace(d.Metadata.Namespace)
	obj.SetLabels(d.Metadata.Labels)
	obj.SetAnnotations(d.Metadata.Annotations)
	return obj, fields, nil
}

// decodeError describes a decode failure in terms of the request, never with the decoder's
// own message (it names Go types).
func decodeError(err error, kind v1alpha1.Kind) error {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		return invalid(fmt.Sprintf("malformed JSON at byte %d", se.Offset), FieldProblem{Reason: "syntax", Detail: "malformed JSON"})
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("malformed JSON: the body ends early", FieldProblem{Reason: "syntax", Detail: "truncated JSON"})
	case errors.As(err, &te):
		if te.Field == "" {
			return invalid("the body must be a JSON object", FieldProblem{Reason: "type", Detail: "expected object, got " + te.Value})
		}
		return invalid("", FieldProblem{Field: jsonPath(te.Field), Reason: "type", Detail: fmt.Sprintf("expected %s, got %s", jsonTypeName(te.Type), te.Value)})
	case isQuantityError(err):
		return invalid("", FieldProblem{Field: "spec", Reason: "invalid", Detail: "a quantity is malformed (write e.g. 10Gi or 500m)"})
	}
	if isSyntax, _ := sigsjson.SyntaxErrorOffset(err); isSyntax {
		return invalid("malformed JSON", FieldProblem{Reason: "syntax", Detail: "malformed JSON"})
	}
	return invalid("the body is not a valid "+string(kind)+" document", FieldProblem{Reason: "invalid", Detail: "cannot be decoded"})
}

// isQuantityError: a resource.Quantity refused its value.
func isQuantityError(err error) bool {
	return errors.Is(err, resource.ErrFormatWrong) || errors.Is(err, resource.ErrSuffix) || errors.Is(err, resource.ErrNumeric)
}

func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("integer (%s)", t.Kind())
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return "a value"
}

// jsonPath is a json.UnmarshalTypeError field path as the JSON document spells it:
// encoding/json names a field promoted from an embedded (inline) struct with the struct's Go
// name too ("spec.TenantMiddleware.postgresql.instances"), which no body contains.
func jsonPath(goPath string) string {
	parts := strings.Split(goPath, ".")
	out := parts[:0]
	for _, p := range parts {
		if !inlineStructs[p] {
			out = append(out, p)
		}
	}
	return strings.Join(out, ".")
}

// inlineStructs are the Go names of the structs the API types embed inline.
var inlineStructs = func() map[string]bool {
	names := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				names[f.Name] = true
			}
			walk(f.Type)
		}
	}
	for _, obj := range []any{v1alpha1.TFRCluster{}, v1alpha1.TFRTenant{}, v1alpha1.TFRServer{}} {
		walk(reflect.TypeOf(obj))
	}
	return names
}()
