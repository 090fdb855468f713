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

// Package v1alpha1 holds the TFRS custom resources (API group tfrs.io, version v1alpha1):
// TFRCluster (cluster-scoped), TFRTenant and TFRServer (namespaced).
//
// Defaulting (Default) and validation (Validate, ValidateUpdate) are pure functions shared by
// the operator, the HTTP API and the CLI. They mirror the OpenAPI/CEL rules of the generated
// CRDs in config/crd/bases: an object the API server would reject is rejected by Validate with
// the same field path, and Validate adds the checks a schema cannot express (Confz TOML).
//
// +kubebuilder:object:generate=true
// +groupName=tfrs.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of these objects.
	GroupVersion = schema.GroupVersion{Group: "tfrs.io", Version: "v1alpha1"}

	// SchemeBuilder registers the Go types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
