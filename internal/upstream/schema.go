package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// Validate checks obj, a custom resource as it would be sent to the API server (apiVersion,
// kind, metadata, spec), against the CRD among crds that serves its apiVersion and kind, the
// way kube-apiserver checks a create with strict field validation, in-process:
//
//   - a field the schema does not declare is an error ("unknown field", what the server
//     answers with fieldValidation=Strict, the default of kubectl and of server-side apply,
//     instead of silently pruning it);
//   - then the OpenAPI v3 value validation (types, enums, required, patterns, formats,
//     bounds), the embedded ObjectMeta checks, list-type invariants and the CRD's CEL rules
//     (x-kubernetes-validations), on the object after the schema's defaults are applied.
//
// It returns every problem found (nil: the server would accept the object). obj is not
// modified.
func Validate(crds []*apiextensionsv1.CustomResourceDefinition, apiVersion, kind string, obj map[string]any) []error {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return []error{err}
	}
	crd := find(crds, gv.Group, kind)
	if crd == nil {
		return []error{fmt.Errorf("no CRD serves %s %s", apiVersion, kind)}
	}
	if !apihelpers.HasServedCRDVersion(crd, gv.Version) {
		return []error{fmt.Errorf("%s does not serve version %s", crd.Name, gv.Version)}
	}
	s, internal, err := schemas(crd, gv.Version)
	if err != nil {
		return []error{err}
	}
	// The object as the server decodes it: a JSON document, integers as int64. This is
	// also a deep copy, which pruning and defaulting then modify.
	u, err := decode(obj)
	if err != nil {
		return []error{err}
	}

	var errs []error
	// Strict field validation: pruning reports what it would drop.
	unknown := structuralpruning.PruneWithOptions(u, s, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, s)
	if ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u, s, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true}); ferr != nil {
		errs = append(errs, ferr)
	} else {
		unknown = append(unknown, paths...)
	}
	for _, p := range unknown {
		errs = append(errs, fmt.Errorf("unknown field %q (field not declared in schema)", p))
	}
	structuraldefaulting.Default(u, s)

	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return append(errs, fmt.Errorf("%s %s: schema validator: %w", crd.Name, gv.Version, err))
	}
	ctx := context.Background()
	fieldErrs := apiservervalidation.ValidateCustomResource(nil, u, validator)
	fieldErrs = append(fieldErrs, schemaobjectmeta.Validate(ctx, nil, u, s, false)...)
	fieldErrs = append(fieldErrs, structurallisttype.ValidateListSetsAndMaps(nil, s, u)...)
	if len(fieldErrs) == 0 { // the server, too, runs CEL only on an object that passed the rest
		celErrs, _ := cel.NewValidator(s, true, celconfig.PerCallLimit).Validate(ctx, nil, s, u, nil, celconfig.RuntimeCELCostBudget)
		fieldErrs = append(fieldErrs, celErrs...)
	}
	for _, e := range fieldErrs {
		errs = append(errs, e)
	}
	return errs
}

func find(crds []*apiextensionsv1.CustomResourceDefinition, group, kind string) *apiextensionsv1.CustomResourceDefinition {
	for _, c := range crds {
		if c.Spec.Group == group && c.Spec.Names.Kind == kind {
			return c
		}
	}
	return nil
}

// schemas converts one version's v1 schema as the API server does: to the internal type, then
// to a structural schema (the form pruning, defaulting and CEL walk).
func schemas(crd *apiextensionsv1.CustomResourceDefinition, version string) (*structuralschema.Structural, *apiextensionsinternal.JSONSchemaProps, error) {
	v1, err := apihelpers.GetSchemaForVersion(crd, version)
	if err != nil {
		return nil, nil, err
	}
	if v1 == nil || v1.OpenAPIV3Schema == nil {
		return nil, nil, fmt.Errorf("%s %s has no schema", crd.Name, version)
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v1, internal, nil); err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", crd.Name, version, err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: not a structural schema: %w", crd.Name, version, err)
	}
	return s, internal.OpenAPIV3Schema, nil
}

func decode(obj map[string]any) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var u map[string]any
	if err := utiljson.Unmarshal(b, &u); err != nil {
		return nil, err
	}
	return u, nil
}
