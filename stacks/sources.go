package stacks

// Every chart and manifest the cluster stack installs, pinned here and nowhere else, and the
// rules by which a TFRCluster overrides them (air-gapped and mainland-China clusters point
// them at mirrors or local copies).
//
// Override rules, per component (TFRCluster spec.<component>, a v1alpha1.ComponentSource):
//
//   - version: replaces the pinned version of the component's artifacts, except those pinned
//     on their own (the RabbitMQ topology operator, released on its own schedule). Ignored with
//     localPath: the chart or file on disk is what it is. istioIngress without a version follows
//     istio's, so the gateway proxy matches istiod.
//   - chartRepo (Helm components): an http(s) repository holding the same chart names
//     (repo + chart + version), or an oci:// registry path under which each chart is
//     <chartRepo>/<chart> (as Helm addresses OCI charts).
//   - manifestURL (manifest components): the manifest's URL, http(s) or file://. A component
//     with several manifests (RabbitMQ) takes a base URL instead; each manifest is then
//     <manifestURL>/<upstream file name>.
//   - localPath: a chart directory or archive, or a manifest file. A component with several
//     charts or manifests (Istio: base, istiod; RabbitMQ) takes a directory holding each under
//     its upstream name (<localPath>/base, <localPath>/istiod, <localPath>/cluster-operator.yml …).
//   - values (Helm components): merged over the operator's own values and the mirror values.
//     Istio's go to istiod (the chart with the mesh settings). Ignored for manifests, as the CRD
//     says.
//   - chartRepo on a manifest component and manifestURL on a Helm component are errors.
//   - With a SourceFetcher installed (fetch.go; every door installs one with its source
//     policy), an http(s) manifestURL and the charts of an http(s) chartRepo are downloaded
//     by tfrs under that policy and given to the provider as local files.
//
// Images: spec.imageRegistry.registry is a prefix that replaces the registry host of every image
// (MirrorImage). Charts get it as values (mirrorValues below; Istio's hub also covers the
// injected sidecars and the gateway); manifests get it by rewriting the pod templates they
// contain (a cluster.ImageRewriter in the manifest components' args, applied by a transform).

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
)

// SourceKind is how a component is delivered.
type SourceKind string

// Source kinds.
const (
	SourceHelm     SourceKind = "helm"
	SourceManifest SourceKind = "manifest"
)

// Artifact is one chart or manifest of a component.
type Artifact struct {
	// Name is the chart name, or the manifest's upstream file name (its name under a
	// multi-manifest localPath or manifestURL).
	Name string
	// URL is the upstream manifest URL; "{version}" is replaced by the version.
	URL string
	// Version pins this artifact on its own; empty means the component's (overridable) version.
	Version string
	// TakesValues marks the chart that receives the spec's values.
	TakesValues bool
	// CRDs names the upstream project whose CustomResourceDefinitions this artifact installs:
	// the folder under ../shared/upstream/crds/ (see UpstreamCRDs). Empty: it installs none.
	CRDs string
}

// PinnedSource is the built-in source of a cluster component.
type PinnedSource struct {
	// Component is the node id (ClusterCertManager …).
	Component string
	Kind      SourceKind
	// Repo is the upstream chart repository (Helm).
	Repo string
	// Version is the pinned version of the artifacts that have none of their own.
	Version   string
	Artifacts []Artifact
	// Images are the upstream images the component runs (what a mirror must hold).
	Images []string
	// mirrorValues are the Helm values that move the chart's images to the mirror, by chart.
	mirrorValues func(mirror func(string) string) map[string]map[string]any
}

const istioChartRepo = "https://istio-release.storage.googleapis.com/charts"

// minIOSidecarTag is the sidecar image tag MinIO operator 7.1.1 uses when none is set
// (DefaultSidecarImage in its pkg/resources/statefulsets/minio-sidecar.go): mirroring the image
// must not change its version. Bump it with the operator.
const minIOSidecarTag = "v7.0.1"

// pinnedSources is THE table of versions. Bump a version here; nothing else names one.
var pinnedSources = map[string]PinnedSource{
	ClusterCertManager: {
		Component: ClusterCertManager, Kind: SourceHelm,
		Repo: "https://charts.jetstack.io", Version: "v1.21.2",
		Artifacts: []Artifact{{Name: "cert-manager", TakesValues: true, CRDs: "cert-manager"}},
		Images: []string{
			"quay.io/jetstack/cert-manager-controller", "quay.io/jetstack/cert-manager-webhook",
			"quay.io/jetstack/cert-manager-cainjector", "quay.io/jetstack/cert-manager-acmesolver",
			"quay.io/jetstack/cert-manager-startupapicheck",
		},
		mirrorValues: func(m func(string) string) map[string]map[string]any {
			repo := func(img string) map[string]any {
				return map[string]any{"image": map[string]any{"repository": m("quay.io/jetstack/" + img)}}
			}
			v := repo("cert-manager-controller")
			v["webhook"] = repo("cert-manager-webhook")
			v["cainjector"] = repo("cert-manager-cainjector")
			v["acmesolver"] = repo("cert-manager-acmesolver")
			v["startupapicheck"] = repo("cert-manager-startupapicheck")
			return map[string]map[string]any{"cert-manager": v}
		},
	},
	ClusterIstio: {
		Component: ClusterIstio, Kind: SourceHelm,
		// 1.30 reached its end of support (stacks/support.go); 1.32.0 is the newest line whose
		// CRDs are in ../shared/upstream.
		Repo: istioChartRepo, Version: "1.32.0",
		// cni: the node agent that replaces the injected istio-init (NET_ADMIN, NET_RAW), which
		// Pod Security restricted in tenant namespaces refuses (components/cluster/istio.go).
		Artifacts: []Artifact{{Name: "base", CRDs: "istio"}, {Name: "istiod", TakesValues: true}, {Name: "cni"}},
		Images:    []string{"docker.io/istio/pilot", "docker.io/istio/proxyv2", "docker.io/istio/install-cni"},
		mirrorValues: func(m func(string) string) map[string]map[string]any {
			// The hub also names the proxy image injected into sidecars and gateways. The chart
			// sources default it to a placeholder (registry.istio.io/testing) that the release
			// build replaces: with registry.istio.io/release for the 1.30 charts, and with
			// docker.io/istio again from 1.31 (istio/release-builder#2367). The mirror maps
			// docker.io/istio, where the images of every release are.
			hub := map[string]any{"global": map[string]any{"hub": m("docker.io/istio")}}
			return map[string]map[string]any{"istiod": hub, "cni": hub}
		},
	},
	ClusterIstioIngress: {
		Component: ClusterIstioIngress, Kind: SourceHelm,
		Repo: istioChartRepo, Version: "1.32.0",
		// The gateway's image is "auto": istiod injects proxyv2 from its hub.
		Artifacts: []Artifact{{Name: "gateway", TakesValues: true}},
	},
	ClusterCNPGOperator: {
		Component: ClusterCNPGOperator, Kind: SourceManifest, Version: "1.30.0",
		Artifacts: []Artifact{{
			Name: "cnpg.yaml", CRDs: "cnpg",
			URL: "https://github.com/cloudnative-pg/cloudnative-pg/releases/download/v{version}/cnpg-{version}.yaml",
		}},
		Images: []string{"ghcr.io/cloudnative-pg/cloudnative-pg"},
	},
	ClusterMinIOOperator: {
		Component: ClusterMinIOOperator, Kind: SourceHelm,
		Repo: "https://operator.min.io", Version: "7.1.1",
		Artifacts: []Artifact{{Name: "operator", TakesValues: true, CRDs: "minio-operator"}},
		Images:    []string{"quay.io/minio/operator", "quay.io/minio/operator-sidecar"},
		mirrorValues: func(m func(string) string) map[string]map[string]any {
			return map[string]map[string]any{"operator": {"operator": map[string]any{
				"image": map[string]any{"repository": m("quay.io/minio/operator")},
				// The operator puts this image (init container and sidecar) into every tenant
				// pod. Left unset it is a default compiled into the operator, never mirrored.
				// The chart renders repository:tag, so the tag is the operator's own default.
				"sidecarImage": map[string]any{"repository": m("quay.io/minio/operator-sidecar"), "tag": minIOSidecarTag},
			}}}
		},
	},
	ClusterRabbitMQOperator: {
		Component: ClusterRabbitMQOperator, Kind: SourceManifest, Version: "2.22.3",
		Artifacts: []Artifact{
			{Name: "cluster-operator.yml", CRDs: "rabbitmq-cluster-operator", URL: "https://github.com/rabbitmq/cluster-operator/releases/download/v{version}/cluster-operator.yml"},
			// The variant whose webhook certificate cert-manager issues (the plain one expects
			// a hand-made Secret).
			{Name: "messaging-topology-operator-with-certmanager.yaml", Version: "1.20.1", CRDs: "rabbitmq-messaging-topology-operator",
				URL: "https://github.com/rabbitmq/messaging-topology-operator/releases/download/v{version}/messaging-topology-operator-with-certmanager.yaml"},
		},
		Images: []string{"docker.io/rabbitmqoperator/cluster-operator", "docker.io/rabbitmqoperator/messaging-topology-operator"},
	},
}

// tenantPinnedSources are the tenant stack's charts, under the same override rules (TFRTenant
// spec.jaeger and spec.grafana are ComponentSources). The tenant's other images are API
// defaults (v1alpha1.Default*Image), overridable per TFRTenant. Chart workloads get the
// image mirror and the pull Secret by transforms (components/tenant), so no mirror values
// are needed here.
var tenantPinnedSources = map[string]PinnedSource{
	TenantJaeger: {
		Component: TenantJaeger, Kind: SourceHelm,
		Repo: "https://jaegertracing.github.io/helm-charts", Version: "4.11.1",
		Artifacts: []Artifact{{Name: "jaeger", TakesValues: true}},
		// Jaeger v2: one binary (an OpenTelemetry Collector distribution) replaces v1's
		// all-in-one, agent, collector and query images.
		Images: []string{"docker.io/jaegertracing/jaeger"},
	},
	TenantGrafana: {
		Component: TenantGrafana, Kind: SourceHelm,
		// The chart moved to the community organisation; grafana/helm-charts stopped at
		// 10.5.15, its deprecation release.
		Repo: "https://grafana-community.github.io/helm-charts", Version: "12.11.1",
		Artifacts: []Artifact{{Name: "grafana", TakesValues: true}},
		Images:    []string{"docker.io/grafana/grafana"},
	},
}

func init() {
	// pinned looks in both tables by id; an id in both would be ambiguous.
	for id := range tenantPinnedSources {
		if _, dup := pinnedSources[id]; dup {
			panic("stacks: component id " + id + " is pinned for both the cluster and the tenant stack")
		}
	}
}

// PinnedTenantSources lists the tenant stack's built-in chart sources, by component id.
func PinnedTenantSources() []PinnedSource {
	out := make([]PinnedSource, 0, len(tenantPinnedSources))
	for _, s := range tenantPinnedSources {
		s.Artifacts = append([]Artifact(nil), s.Artifacts...)
		s.Images = append([]string(nil), s.Images...)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out
}

// PinnedClusterSources lists the built-in sources, by component id (for docs and `tfrs`).
func PinnedClusterSources() []PinnedSource {
	out := make([]PinnedSource, 0, len(pinnedSources))
	for _, s := range pinnedSources {
		s.Artifacts = append([]Artifact(nil), s.Artifacts...)
		s.Images = append([]string(nil), s.Images...)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out
}

// UpstreamCRD is one upstream project's CRDs at the version the pins install.
type UpstreamCRD struct {
	// Project is the folder name under ../shared/upstream/crds/ ("cert-manager", "istio" …).
	Project string
	// Version is the pinned version, spelled as the pin spells it (cert-manager with a "v").
	Version string
}

// UpstreamCRDs lists, sorted by project, the CRDs the pinned cluster sources install: what
// tests load into a local control plane instead of the stand-ins' accept-anything CRDs.
func UpstreamCRDs() []UpstreamCRD {
	var out []UpstreamCRD
	for _, s := range pinnedSources {
		for _, a := range s.Artifacts {
			if a.CRDs != "" {
				out = append(out, UpstreamCRD{Project: a.CRDs, Version: s.version(a, v1alpha1.ComponentSource{})})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Project < out[j].Project })
	return out
}

// MirrorImage moves an image under a mirror prefix: the registry host is replaced by prefix,
// Docker Hub's implicit "library/" is made explicit. "quay.io/jetstack/x:v1" with
// "mirror.example.cn/tfrs" gives "mirror.example.cn/tfrs/jetstack/x:v1"; "rabbitmq:3" gives
// "mirror.example.cn/tfrs/library/rabbitmq:3". An empty prefix, or an image already under it,
// is returned unchanged.
func MirrorImage(prefix, image string) string {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" || image == "" || strings.HasPrefix(image, prefix+"/") {
		return image
	}
	path := image
	first, rest, found := strings.Cut(image, "/")
	switch {
	case !found:
		path = "library/" + image
	case strings.ContainsAny(first, ".:") || first == "localhost":
		path = rest
	}
	return prefix + "/" + path
}

// resolveCharts turns a component's pinned source and its spec override into chart
// references, one per artifact, in the table's order.
func resolveCharts(id string, spec v1alpha1.ComponentSource, imageMirror string) ([]cluster.ChartRef, error) {
	src, err := pinned(id, SourceHelm)
	if err != nil {
		return nil, err
	}
	if spec.ManifestURL != "" {
		return nil, fmt.Errorf("%s: manifestURL does not apply to a Helm component; use chartRepo or localPath", id)
	}
	userValues, err := specValues(id, spec)
	if err != nil {
		return nil, err
	}
	var mirrorValues map[string]map[string]any
	if imageMirror != "" && src.mirrorValues != nil {
		mirrorValues = src.mirrorValues(func(img string) string { return MirrorImage(imageMirror, img) })
	}
	refs := make([]cluster.ChartRef, 0, len(src.Artifacts))
	for _, a := range src.Artifacts {
		ref := cluster.ChartRef{Version: src.version(a, spec)}
		switch repo := strings.TrimSuffix(spec.ChartRepo, "/"); {
		case spec.LocalPath != "":
			ref.Chart, ref.Version = src.local(spec.LocalPath, a), ""
		case strings.HasPrefix(repo, "oci://"):
			ref.Chart = repo + "/" + a.Name
		case repo != "":
			ref.Repo, ref.Chart = repo, a.Name
			local, err := fetchedChart(id, repo, a.Name, ref.Version)
			if err != nil {
				return nil, err
			}
			if local != "" {
				ref.Repo, ref.Chart, ref.Version = "", local, ""
			}
		case strings.HasPrefix(src.Repo, "oci://"):
			ref.Chart = src.Repo + "/" + a.Name
		default:
			ref.Repo, ref.Chart = src.Repo, a.Name
		}
		ref.Values = mirrorValues[a.Name]
		if a.TakesValues {
			ref.Values = cluster.MergeValues(ref.Values, userValues)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// resolveManifests turns a component's pinned source and its spec override into manifest
// references, one per artifact, in the table's order.
func resolveManifests(id string, spec v1alpha1.ComponentSource) ([]cluster.ManifestRef, error) {
	src, err := pinned(id, SourceManifest)
	if err != nil {
		return nil, err
	}
	if spec.ChartRepo != "" {
		return nil, fmt.Errorf("%s: chartRepo does not apply to a manifest component; use manifestURL or localPath", id)
	}
	refs := make([]cluster.ManifestRef, 0, len(src.Artifacts))
	for _, a := range src.Artifacts {
		var file string
		switch {
		case spec.LocalPath != "":
			file = src.local(spec.LocalPath, a)
		case spec.ManifestURL != "":
			file = spec.ManifestURL
			if len(src.Artifacts) > 1 {
				file = strings.TrimSuffix(file, "/") + "/" + a.Name
			}
			if file, err = localFileURL(file); err != nil {
				return nil, fmt.Errorf("%s: manifestURL: %w", id, err)
			}
			if file, err = fetchedManifest(id, file); err != nil {
				return nil, err
			}
		default:
			file = strings.ReplaceAll(a.URL, "{version}", strings.TrimPrefix(src.version(a, spec), "v"))
		}
		refs = append(refs, cluster.ManifestRef{File: file})
	}
	return refs, nil
}

func pinned(id string, kind SourceKind) (PinnedSource, error) {
	src, ok := pinnedSources[id]
	if !ok {
		src, ok = tenantPinnedSources[id]
	}
	if !ok || src.Kind != kind {
		return PinnedSource{}, fmt.Errorf("no pinned %s source for component %q", kind, id)
	}
	return src, nil
}

func (s PinnedSource) version(a Artifact, spec v1alpha1.ComponentSource) string {
	switch {
	case a.Version != "":
		return a.Version
	case spec.Version != "":
		return spec.Version
	default:
		return s.Version
	}
}

// local is where an artifact sits under a localPath: the path itself for a one-artifact
// component, <localPath>/<name> otherwise.
func (s PinnedSource) local(localPath string, a Artifact) string {
	if len(s.Artifacts) == 1 {
		return localPath
	}
	return filepath.Join(localPath, a.Name)
}

// localFileURL turns a file:// URL into a path (the provider reads paths and http(s) URLs).
func localFileURL(raw string) (string, error) {
	if !strings.HasPrefix(raw, "file://") {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("file URL %q names a remote host", raw)
	}
	return u.Path, nil
}

// specValues decodes spec.values, which must be an object.
func specValues(id string, spec v1alpha1.ComponentSource) (map[string]any, error) {
	if spec.Values == nil || len(spec.Values.Raw) == 0 {
		return nil, nil
	}
	var v map[string]any
	if err := json.Unmarshal(spec.Values.Raw, &v); err != nil {
		return nil, fmt.Errorf("%s: values must be an object: %w", id, err)
	}
	return v, nil
}
