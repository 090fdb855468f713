package stacks

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// upstreamPodSecurity is one pod-security default of an upstream chart at its pin, recorded
// from the upstream values.yaml (read with the fetch tool at the tag the pins name), that the
// stand-in must carry with the same key and value: TFRS's values are merged over these
// defaults on the real chart, so a stand-in with other defaults would let a test pass that
// the real chart fails under Pod Security restricted.
type upstreamPodSecurity struct {
	standIn  string // values.yaml under testdata/
	upstream string // owner/repo@tag:path, the file the fact was read from
	path     string // dotted key
	want     string // the upstream value, as YAML
}

var upstreamPodSecurityFacts = func() []upstreamPodSecurity {
	const (
		grafana    = "tenant/charts/grafana/values.yaml"
		grafanaSrc = "grafana-community/helm-charts@grafana-12.11.1:charts/grafana/values.yaml"
		jaeger     = "tenant/charts/jaeger/values.yaml"
		jaegerSrc  = "jaegertracing/helm-charts@jaeger-4.11.1:charts/jaeger/values.yaml"
	)
	dropAllRuntimeDefault := `{allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}`
	return []upstreamPodSecurity{
		{grafana, grafanaSrc, "securityContext", `{runAsNonRoot: true, runAsUser: 472, runAsGroup: 472, fsGroup: 472}`},
		{grafana, grafanaSrc, "containerSecurityContext", `{allowPrivilegeEscalation: false, privileged: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}`},
		{grafana, grafanaSrc, "persistence.enabled", `false`},
		{grafana, grafanaSrc, "initChownData.enabled", `true`},
		{grafana, grafanaSrc, "initChownData.securityContext", `{readOnlyRootFilesystem: false, runAsNonRoot: false, runAsUser: 0, seccompProfile: {type: RuntimeDefault}, capabilities: {add: [CHOWN, DAC_OVERRIDE], drop: [ALL]}}`},
		{grafana, grafanaSrc, "downloadDashboards.securityContext", dropAllRuntimeDefault},
		{grafana, grafanaSrc, "sidecar.securityContext", dropAllRuntimeDefault},
		{jaeger, jaegerSrc, "jaeger.podSecurityContext", `{runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001}`},
		{jaeger, jaegerSrc, "jaeger.securityContext", `{}`},
	}
}()

// TestStandInPodSecurityDefaults checks every recorded upstream pod-security default against
// the stand-in's values.yaml, and that the upstream file named is the one the stand-in says
// it mirrors (its Chart.yaml "# mirrors:" line, at the pinned tag).
func TestStandInPodSecurityDefaults(t *testing.T) {
	for _, f := range upstreamPodSecurityFacts {
		b, err := os.ReadFile(filepath.Join("testdata", f.standIn))
		if err != nil {
			t.Fatal(err)
		}
		var values map[string]any
		if err := yaml.Unmarshal(b, &values); err != nil {
			t.Fatalf("%s: %v", f.standIn, err)
		}
		var want any
		if err := yaml.Unmarshal([]byte(f.want), &want); err != nil {
			t.Fatalf("fact %s: %v", f.path, err)
		}
		got, ok := any(values), true
		for _, k := range strings.Split(f.path, ".") {
			m, isMap := got.(map[string]any)
			if got, ok = m[k]; !isMap || !ok {
				break
			}
		}
		if !ok {
			t.Errorf("%s: no %s (upstream %s has %s)", f.standIn, f.path, f.upstream, f.want)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s = %v, upstream %s has %v", f.standIn, f.path, got, f.upstream, want)
		}

		chart, err := os.ReadFile(filepath.Join("testdata", filepath.Dir(f.standIn), "Chart.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		mirrored := strings.TrimSuffix(f.upstream, "/values.yaml")
		if !strings.Contains(string(chart), "# mirrors: "+mirrored+"\n") {
			t.Errorf("%s: the fact's source %s is not the chart the stand-in mirrors", f.standIn, mirrored)
		}
	}
}
