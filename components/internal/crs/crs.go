// Package crs builds the custom resources TFRS creates (cert-manager, Istio, CloudNativePG,
// the MinIO operator, the RabbitMQ operators) as typed specs: one small Go struct per kind
// with json tags for exactly the fields TFRS sets, made by pure functions of plain Go values,
// in the manner of CloudNativePG's pkg/specs. One file per upstream project.
//
// Plain structs rather than the upstream Go API types: only cert-manager and Istio publish
// importable ones, each a large dependency tree pinned to its own k8s.io versions, and
// typed Quantity fields would rewrite the user's quantities ("0.5" → "500m"). A struct that
// names only what TFRS sets is also the list a reviewer checks against the CRD.
//
// The specs are checked against the real upstream CRD schemas in crs_test.go, in-process;
// New is the one edge where a spec becomes the provider's input.
package crs

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TypeMeta is the apiVersion and kind of a custom resource.
type TypeMeta struct {
	APIVersion, Kind string
}

// Spec is the typed spec of one kind of custom resource.
type Spec interface {
	TypeMeta() TypeMeta
}

// Flowing is the value a builder is given for a field whose real value is a Pulumi output
// (a name or a user another resource gives): the caller passes it and names the field in a
// Flow. New refuses a spec that still holds it, so a forgotten Flow cannot reach a cluster.
const Flowing = "$(flows from another resource)"

// Flow sets one field of a spec to an output of another resource (which also orders the
// custom resource after it, and keeps the field secret when the output is).
//
// Why a path and not Input-typed struct fields: the structs stay plain data, so the spec the
// schema test validates is the very spec New sends, leaf for leaf, with the flowing leaves
// holding realistic values in the test and Flowing here. Only four leaves in all of TFRS
// flow (the CNPG owner and its Secret, the MinIO configuration Secret, the RabbitMQ User's
// credentials Secret and the Permission's User), so a path per leaf is the smaller design.
type Flow struct {
	// Path is the JSON path of the field in the spec ("bootstrap", "initdb", "owner").
	Path []string
	// Value replaces the field's placeholder.
	Value pulumi.Input
}

// At is the Flow of value into the spec field at path.
func At(value pulumi.Input, path ...string) Flow { return Flow{Path: path, Value: value} }

// Args are a custom resource to create.
type Args struct {
	// Metadata names the resource (and its namespace, often an output).
	Metadata *metav1.ObjectMetaArgs
	Spec     Spec
	// Flows are the spec fields set from outputs.
	Flows []Flow
}

// New creates a.Spec as the custom resource `name`: the one place a typed spec becomes the
// provider's untyped input.
func New(ctx *pulumi.Context, name string, a Args, opts ...pulumi.ResourceOption) (*apiextensions.CustomResource, error) {
	if a.Spec == nil {
		return nil, fmt.Errorf("%s: no spec", name)
	}
	spec, err := Map(a.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, f := range a.Flows {
		if err := set(spec, f.Path, f.Value); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if p := find(spec, Flowing, nil); p != nil {
		return nil, fmt.Errorf("%s: spec field %s is Flowing but no Flow sets it", name, strings.Join(p, "."))
	}
	tm := a.Spec.TypeMeta()
	return apiextensions.NewCustomResource(ctx, name, &apiextensions.CustomResourceArgs{
		ApiVersion:  pulumi.String(tm.APIVersion),
		Kind:        pulumi.String(tm.Kind),
		Metadata:    a.Metadata,
		OtherFields: map[string]any{"spec": spec},
	}, opts...)
}

// Map is spec as the JSON object the API server receives (numbers as float64, as the
// provider's property values carry them anyway).
func Map(spec Spec) (map[string]any, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Object is spec as a whole custom resource named name in namespace ("" for cluster-scoped
// kinds): what a schema check validates.
func Object(spec Spec, name, namespace string) (map[string]any, error) {
	s, err := Map(spec)
	if err != nil {
		return nil, err
	}
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	tm := spec.TypeMeta()
	return map[string]any{"apiVersion": tm.APIVersion, "kind": tm.Kind, "metadata": meta, "spec": s}, nil
}

// set replaces the existing leaf at path: a Flow may only fill a field the builder wrote, so
// it cannot add one the schema test never saw.
func set(m map[string]any, path []string, v pulumi.Input) error {
	if len(path) == 0 {
		return fmt.Errorf("flow without a path")
	}
	for i, k := range path {
		cur, ok := m[k]
		if !ok {
			return fmt.Errorf("flow to %s: the spec has no such field", strings.Join(path[:i+1], "."))
		}
		if i == len(path)-1 {
			m[k] = v
			return nil
		}
		if m, ok = cur.(map[string]any); !ok {
			return fmt.Errorf("flow to %s: %s is not an object", strings.Join(path, "."), strings.Join(path[:i+1], "."))
		}
	}
	return nil
}

// find is the path of the first string leaf equal to s, nil when there is none.
func find(v any, s string, at []string) []string {
	switch x := v.(type) {
	case string:
		if x == s {
			return append([]string{}, at...)
		}
	case map[string]any:
		for k, e := range x {
			if p := find(e, s, append(at, k)); p != nil {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := find(e, s, append(at, fmt.Sprint(i))); p != nil {
				return p
			}
		}
	}
	return nil
}

// Resources are a container's requests and limits as quantity strings, sent as written.
type Resources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// orNil is nil for empty requirements, so an unset field stays unset.
func (r Resources) orNil() *Resources {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return nil
	}
	return &Resources{Requests: nonEmpty(r.Requests), Limits: nonEmpty(r.Limits)}
}

func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// LocalObjectReference names an object in the resource's namespace.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// pullSecrets is the imagePullSecrets list of a pull Secret (nil without one).
func pullSecrets(name string) []LocalObjectReference {
	if name == "" {
		return nil
	}
	return []LocalObjectReference{{Name: name}}
}

// Metadata is the labels and annotations an operator copies onto the pods it creates.
type Metadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}
