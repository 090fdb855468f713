package server

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

var updateOpenAPI = flag.Bool("update", false, "rewrite openapi.json's spec schemas from config/crd/bases")

var reOpenAPIParam = regexp.MustCompile(`\{([^}]+)\}`)

// TestOpenAPIMatchesRoutes: every echo route is in the document and every documented
// operation is a route, with the same path parameters.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	h := newHarness(t)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapiJSON, &doc))
	var documented, routes []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+reOpenAPIParam.ReplaceAllString(path, ":$1"))
		}
	}
	for _, r := range h.s.e.Routes() {
		routes = append(routes, r.Method+" "+r.Path)
	}
	sort.Strings(documented)
	sort.Strings(routes)
	require.Equal(t, routes, documented)
}

// TestOpenAPIRefsResolve: every $ref points at a component that exists, and every path
// parameter is declared.
func TestOpenAPIRefsResolve(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal(openapiJSON, &doc))
	require.Equal(t, "3.0.3", doc["openapi"])
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
				var cur any = doc
				for _, p := range parts {
					m, ok := cur.(map[string]any)
					require.True(t, ok, "bad $ref %s", ref)
					cur, ok = m[p]
					require.True(t, ok, "unresolved $ref %s", ref)
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
	params := doc["components"].(map[string]any)["parameters"].(map[string]any)
	for path, item := range doc["paths"].(map[string]any) {
		declared := map[string]bool{}
		ps, _ := item.(map[string]any)["parameters"].([]any)
		for _, p := range ps {
			name := strings.TrimPrefix(p.(map[string]any)["$ref"].(string), "#/components/parameters/")
			declared[params[name].(map[string]any)["name"].(string)] = true
		}
		for _, m := range reOpenAPIParam.FindAllStringSubmatch(path, -1) {
			require.True(t, declared[m[1]], "%s: parameter %s is not declared", path, m[1])
		}
	}
}

// TestOpenAPISpecSchemasMatchCRDs: the spec schemas are the CRDs' (the same rules the API
// applies through Validate). `go test ./server -run OpenAPISpec -update` refreshes them.
func TestOpenAPISpecSchemasMatchCRDs(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal(openapiJSON, &doc))
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, k := range resourceKinds {
		b, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "tfrs.io_tfr"+k.plural+".yaml"))
		require.NoError(t, err)
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.Unmarshal(b, &crd))
		require.NotEmpty(t, crd.Spec.Versions)
		spec, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		require.True(t, ok, "%s CRD has no spec schema", k.kind)
		raw, err := json.Marshal(spec)
		require.NoError(t, err)
		var want any
		require.NoError(t, json.Unmarshal(raw, &want))
		name := string(k.kind) + "Spec"
		if *updateOpenAPI {
			schemas[name] = want
			continue
		}
		require.Equal(t, want, schemas[name], "%s differs from the CRD: run go test ./server -run OpenAPISpec -update", name)
	}
	if *updateOpenAPI {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		require.NoError(t, enc.Encode(doc))
		require.NoError(t, os.WriteFile("openapi.json", buf.Bytes(), 0o644))
	}
}
