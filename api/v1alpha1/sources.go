package v1alpha1

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SourceKind is what a source field makes tfrs read or fetch.
type SourceKind string

// Source kinds.
const (
	// SourceChartRepo is a Helm repository (http, https) or OCI registry (oci) URL.
	SourceChartRepo SourceKind = "chartRepo"
	// SourceManifestURL is a YAML manifest URL (http, https, file).
	SourceManifestURL SourceKind = "manifestURL"
	// SourceLocalPath is a chart or manifest on the disk of the process that runs the stack.
	SourceLocalPath SourceKind = "localPath"
	// SourceSecretRef is a Secret read from a namespace (passwordSecretRef).
	SourceSecretRef SourceKind = "secretRef"
	// SourceObjectStorage is an external object storage endpoint (http, https) the tenant
	// program connects to, to check or create the tenant's bucket.
	SourceObjectStorage SourceKind = "objectStorage"
)

// SourceField is one place of a spec that names something tfrs reads or fetches on the
// object's behalf: what the source policy (internal/sourcepolicy) decides on. Not part of
// the API's schema, so it gets no generated deep copy.
// +kubebuilder:object:generate=false
type SourceField struct {
	Path  *field.Path
	Kind  SourceKind
	Value string // the URL or path; for a SecretRef, the Secret's namespace
}

// componentSources lists the set source fields of one ComponentSource at p.
func componentSources(p *field.Path, c *ComponentSource) []SourceField {
	var out []SourceField
	if c.ChartRepo != "" {
		out = append(out, SourceField{Path: p.Child("chartRepo"), Kind: SourceChartRepo, Value: c.ChartRepo})
	}
	if c.ManifestURL != "" {
		out = append(out, SourceField{Path: p.Child("manifestURL"), Kind: SourceManifestURL, Value: c.ManifestURL})
	}
	if c.LocalPath != "" {
		out = append(out, SourceField{Path: p.Child("localPath"), Kind: SourceLocalPath, Value: c.LocalPath})
	}
	return out
}

// namedSource is one of a cluster's component sources, by its spec field name.
type namedSource struct {
	name string
	src  *ComponentSource
}

// components are the cluster's component sources, in spec order.
func (s *TFRClusterSpec) components() []namedSource {
	return []namedSource{
		{"certManager", &s.CertManager},
		{"istio", &s.Istio},
		{"istioIngress", &s.IstioIngress},
		{"cnpgOperator", &s.CNPGOperator},
		{"minioOperator", &s.MinIOOperator},
		{"rabbitmqOperator", &s.RabbitMQOperator},
	}
}

// Sources lists the component overrides, the personal job types' middleware sources (the
// shared stacks fetch and read them on the cluster's behalf) and the registry password Secret.
func (x *TFRCluster) Sources() []SourceField {
	s, p := &x.Spec, field.NewPath("spec")
	var out []SourceField
	for _, cs := range s.components() {
		out = append(out, componentSources(p.Child(cs.name), cs.src)...)
	}
	pp := p.Child("personal")
	out = append(out, middlewareSources(pp.Child("middleware"), &s.Personal.Middleware)...)
	for _, jt := range slices.Sorted(maps.Keys(s.Personal.JobTypes)) {
		m := s.Personal.JobTypes[jt]
		out = append(out, middlewareSources(pp.Child("jobTypes").Key(jt), &m)...)
	}
	if r := s.ImageRegistry; r != nil && r.Credentials != nil && r.Credentials.PasswordSecretRef != nil {
		out = append(out, SourceField{Path: p.Child("imageRegistry", "credentials", "passwordSecretRef", "namespace"),
			Kind: SourceSecretRef, Value: r.Credentials.PasswordSecretRef.Namespace})
	}
	return out
}

// Sources lists the tenant's middleware sources (middlewareSources). A tenant's credentials
// name Secrets of its own namespace only.
func (x *TFRTenant) Sources() []SourceField {
	return middlewareSources(field.NewPath("spec"), &x.Spec.TenantMiddleware)
}

// middlewareSources lists the source fields of a tenant's middleware at p (a tenant's spec,
// or a personal job type's middleware in a cluster's spec): the Jaeger and Grafana chart
// overrides and the external object storage endpoint.
func middlewareSources(p *field.Path, m *TenantMiddleware) []SourceField {
	out := componentSources(p.Child("jaeger"), &m.Jaeger.ComponentSource)
	out = append(out, componentSources(p.Child("grafana"), &m.Grafana.ComponentSource)...)
	if e := m.ObjectStorage.External; e != nil && e.Endpoint != "" {
		// Listed whatever the provider says: a door decides on every endpoint a spec names.
		out = append(out, SourceField{Path: p.Child("objectStorage", "external", "endpoint"), Kind: SourceObjectStorage, Value: e.Endpoint})
	}
	return out
}

// Sources is empty: a server reads only its tenant's outputs.
func (*TFRServer) Sources() []SourceField { return nil }
