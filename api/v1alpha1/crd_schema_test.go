/*
Copyright 2026 The TFRS Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// crdDir is where controller-gen writes the CRDs (`make manifests`).
var crdDir = filepath.Join("..", "..", "config", "crd", "bases")

func loadCRD(t *testing.T, kind Kind) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	file := filepath.Join(crdDir, "tfrs.io_"+strings.ToLower(string(kind))+"s.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read CRD (run `make manifests`): %v", err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	if crd.Spec.Names.Kind != string(kind) || len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != GroupVersion.Version {
		t.Fatalf("%s: unexpected names/versions %+v", file, crd.Spec.Names)
	}
	return &crd
}

func toJSONMap(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// compareDefaults walks the schema s alongside the JSON of an object before (in) and after
// (out) Go's Default(). Every schema default whose parent object exists must be present in out
// with the same value (object defaults only need presence: their children are checked in turn),
// and every field Default() added must carry a schema default.
func compareDefaults(t *testing.T, path string, s *apiextensionsv1.JSONSchemaProps, in, out map[string]any, checked *int) {
	t.Helper()
	for name, prop := range s.Properties {
		p := path + "." + name
		got, inOut := out[name]
		_, inIn := in[name]
		if prop.Default != nil {
			*checked++
			var want any
			if err := json.Unmarshal(prop.Default.Raw, &want); err != nil {
				t.Fatalf("%s: bad default: %v", p, err)
			}
			switch {
			case !inOut:
				t.Errorf("%s: CRD defaults it to %s, Default() leaves it unset", p, prop.Default.Raw)
			case !inIn && prop.Type != "object" && !reflect.DeepEqual(got, want) && !sameDuration(got, want):
				t.Errorf("%s: CRD default %v, Default() sets %v", p, want, got)
			}
		} else if inOut && !inIn && !isEmptyObject(got) {
			t.Errorf("%s: Default() sets %v but the CRD has no default", p, got)
		}
		if sub, ok := got.(map[string]any); ok && len(prop.Properties) > 0 {
			subIn, _ := in[name].(map[string]any)
			compareDefaults(t, p, &prop, subIn, sub, checked)
		}
	}
}

// sameDuration accepts a metav1.Duration default written short in the marker ("1h") that Go
// marshals in full ("1h0m0s"): the API server keeps what the marker says, and both decode alike.
func sameDuration(got, want any) bool {
	g, ok1 := got.(string)
	w, ok2 := want.(string)
	if !ok1 || !ok2 {
		return false
	}
	gd, err1 := time.ParseDuration(g)
	wd, err2 := time.ParseDuration(w)
	return err1 == nil && err2 == nil && gd == wd
}

func isEmptyObject(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

func TestCRDDefaultsMatchGo(t *testing.T) {
	emptyTLS := func(c *TFRCluster) {
		c.Spec.ImageRegistry = &ImageRegistrySpec{Credentials: &RegistryCredentials{Server: "r", Username: "u",
			PasswordSecretRef: &SecretKeyRef{Name: "s", Namespace: "n"}}}
	}
	objs := map[Kind][]defaulted{
		KindTFRCluster: {newCluster(), newCluster(emptyTLS)},
		KindTFRTenant:  {newTenant(), newTenant(func(t *TFRTenant) { t.Spec.Jaeger.Enabled = ptr.To(false) })},
		KindTFRServer:  {newServer()},
	}
	for kind, list := range objs {
		crd := loadCRD(t, kind)
		spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		checked := 0
		for _, obj := range list {
			in := toJSONMap(t, obj)["spec"].(map[string]any)
			d := obj.DeepCopyObject().(defaulted)
			d.Default()
			out := toJSONMap(t, d)["spec"].(map[string]any)
			compareDefaults(t, string(kind)+".spec", &spec, in, out, &checked)
		}
		if checked == 0 {
			t.Errorf("%s: no defaults found in the CRD", kind)
		}
		t.Logf("%s: %d schema defaults compared", kind, checked)
	}
}

// TestCRDPatternsMatchGo checks that every pattern in the CRDs is one of the Go pattern
// constants Validate uses, and that each of those is used by some CRD.
func TestCRDPatternsMatchGo(t *testing.T) {
	goPatterns := []string{PatternDNSLabel, PatternDNSSubdomain, PatternRoutingName, PatternEnvVarName, PatternVersion,
		PatternChartRepo, PatternManifestURL, PatternEmail, PatternACMEServer, PatternRegistry, PatternSecretKey,
		PatternDatabase, PatternPGRole, PatternGrafanaUser, PatternDuration, PatternAbsolutePath, PatternRobotType, PatternKeyTemplate, PatternBucket}
	used := map[string]bool{}
	var walk func(kind, path string, s *apiextensionsv1.JSONSchemaProps)
	walk = func(kind, path string, s *apiextensionsv1.JSONSchemaProps) {
		if path == ".status" || strings.HasSuffix(path, ".resources") {
			return // upstream types
		}
		if s.Pattern != "" && !s.XIntOrString { // int-or-string: resource.Quantity's own grammar
			used[s.Pattern] = true
			if !slices.Contains(goPatterns, s.Pattern) {
				t.Errorf("%s%s: pattern %q is not a Go Pattern constant", kind, path, s.Pattern)
			}
		}
		for _, r := range s.XValidations {
			for _, p := range goPatterns {
				if strings.Contains(r.Rule, "'"+p+"'") {
					used[p] = true
				}
			}
		}
		for name, prop := range s.Properties {
			walk(kind, path+"."+name, &prop)
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			walk(kind, path+"[*]", s.AdditionalProperties.Schema)
		}
	}
	for _, kind := range Kinds {
		walk(string(kind), "", loadCRD(t, kind).Spec.Versions[0].Schema.OpenAPIV3Schema)
	}
	for _, p := range goPatterns {
		if !used[p] {
			t.Errorf("Go pattern %q is used by no CRD", p)
		}
	}
}

func TestCRDNames(t *testing.T) {
	for _, tc := range []struct {
		kind  Kind
		short string
		scope apiextensionsv1.ResourceScope
	}{
		{KindTFRCluster, "tfrc", apiextensionsv1.ClusterScoped},
		{KindTFRTenant, "tfrt", apiextensionsv1.NamespaceScoped},
		{KindTFRServer, "tfrsv", apiextensionsv1.NamespaceScoped},
	} {
		crd := loadCRD(t, tc.kind)
		if crd.Spec.Group != GroupVersion.Group || crd.Spec.Scope != tc.scope ||
			!slices.Equal(crd.Spec.Names.ShortNames, []string{tc.short}) || !slices.Equal(crd.Spec.Names.Categories, []string{"tfrs"}) {
			t.Errorf("%s: group %q scope %q short %v categories %v", tc.kind, crd.Spec.Group, crd.Spec.Scope, crd.Spec.Names.ShortNames, crd.Spec.Names.Categories)
		}
		v := crd.Spec.Versions[0]
		if v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("%s: no status subresource", tc.kind)
		}
		var ready bool
		for _, c := range v.AdditionalPrinterColumns {
			ready = ready || (c.Name == "Ready" && c.JSONPath == `.status.conditions[?(@.type=="Ready")].status`)
		}
		if !ready {
			t.Errorf("%s: no Ready printer column", tc.kind)
		}
	}
}
