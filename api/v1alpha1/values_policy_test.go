package v1alpha1

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The chart values allowlist is tested by generators, not by a list of attacks: every
// allowlisted path gets valid and hostile values from its rule, and every other path (the
// stand-in charts' keys and random key paths) must be refused naming it.

// valuesTenant is an enterprise tenant with values raw on chart.
func valuesTenant(chart string, raw []byte) *TFRTenant {
	t := &TFRTenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", Namespace: "tfrs-system"},
		Spec: TFRTenantSpec{ClusterRef: "dev", Type: TenantEnterprise}}
	src := &t.Spec.Grafana.ComponentSource
	if chart == ChartJaeger {
		src = &t.Spec.Jaeger.ComponentSource
	}
	src.Values = &apiextensionsv1.JSON{Raw: raw}
	return t
}

// nested is {segs[0]: {segs[1]: … leaf}} as JSON.
func nested(t *testing.T, segs []string, leaf any) []byte {
	t.Helper()
	v := leaf
	for i := len(segs) - 1; i >= 0; i-- {
		v = map[string]any{segs[i]: v}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fieldOf is the field path an error names for segs under spec.<chart>.values.
func fieldOf(chart string, segs []string) string {
	p := field.NewPath("spec", chart, "values")
	for _, s := range segs {
		p = p.Child(keyName(s))
	}
	return p.String()
}

// valuesErrors are the errors of tenant t under spec.<chart>.values (the rest of the spec is
// valid, so there should be no others: they are returned too, to fail the caller).
func valuesErrors(t *TFRTenant) field.ErrorList { return t.Validate() }

// refusedAt checks that errs is exactly one error at want, and that it is readable: short,
// with no raw control characters (a tenant's bytes end up in a CR's status and a terminal).
func refusedAt(errs field.ErrorList, want string) string {
	if len(errs) != 1 || errs[0].Field != want {
		return fmt.Sprintf("refused at %v, want exactly %s: %v", fields(errs), want, errs)
	}
	msg := errs[0].Error()
	if len(msg) > 1024 {
		return fmt.Sprintf("error of %d bytes", len(msg))
	}
	if i := strings.IndexFunc(msg, func(r rune) bool { return unicode.IsControl(r) }); i >= 0 {
		return fmt.Sprintf("raw control character in %q", msg)
	}
	return ""
}

func fields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

// hostileStrings are strings no allowlisted path takes: templates (the chart's `tpl` would
// run them), control characters, paths, references into other namespaces, huge text.
var hostileStrings = []string{
	`{{ .Files.Get "/etc/passwd" }}`,
	`{{ lookup "v1" "Secret" "kube-system" "" }}`,
	`{{- include "grafana.fullname" . -}}`,
	`10Gi{{ "" }}`,
	"{{",
	"1\x00", "fast\n", "\x1b[31m1", "1\u202e", "\t1",
	"/", "/var/run/docker.sock", "../../etc",
	"kube-system/grafana", "team-b:default", "grafana.kube-system.svc:80",
	strings.Repeat("a", 254), strings.Repeat("9", 100000),
	"", " ", "NaN", "Infinity",
}

// wrongTypes are values of the wrong JSON type for a scalar rule of another kind.
var wrongTypes = []any{map[string]any{"hostPath": map[string]any{"path": "/"}}, []any{"a"}, []any{}, map[string]any{}, nil}

// validFor and hostileFor generate a rule's values from its type and bounds.
func validFor(t *testing.T, r valueRule) []any {
	switch r := r.(type) {
	case boolRule:
		return []any{true, false}
	case intRule:
		return []any{json.Number(fmt.Sprint(r.min)), json.Number(fmt.Sprint(r.max)), json.Number(fmt.Sprint((r.min + r.max) / 2))}
	case quantityRule:
		return []any{r.min.String(), r.max.String(), json.Number(fmt.Sprint(r.min.Value() + 1)), quantityBetween(r)}
	case stringRule:
		return []any{"standard", "fast-ssd", "ebs.csi.aws.com", strings.Repeat("a", r.maxLen), "kube-system"}
	}
	t.Fatalf("no generator for rule %T", r)
	return nil
}

// quantityBetween is a quantity between r's bounds, spelled in another unit.
func quantityBetween(r quantityRule) string {
	half := r.max.MilliValue() / 2
	if half < r.min.MilliValue() {
		half = r.min.MilliValue()
	}
	return fmt.Sprintf("%dm", half)
}

func hostileFor(t *testing.T, r valueRule) []any {
	var out []any
	for _, s := range hostileStrings {
		out = append(out, s)
	}
	out = append(out, wrongTypes...)
	switch r := r.(type) {
	case boolRule:
		out = append(out, "true", "false", json.Number("1"), json.Number("0"))
	case intRule:
		out = append(out, json.Number(fmt.Sprint(r.min-1)), json.Number(fmt.Sprint(r.max+1)), json.Number("-1"),
			json.Number("1.5"), json.Number("1e3"), json.Number("9223372036854775808"), json.Number("1e308"),
			fmt.Sprint(r.max), "1.2.3", true)
	case quantityRule:
		over := r.max.DeepCopy()
		over.Add(r.max)
		under := r.min.DeepCopy()
		under.Sub(r.min)
		out = append(out, over.String(), under.String(), "-"+r.max.String(), json.Number("-1"), "1Ei", "8Ei", "1e100",
			"99999999999999999999999999Pi", "0.000000001", json.Number("1e308"), "1 Gi", "1GB", "Gi", "1.2.3", true)
	case stringRule:
		out = append(out, "UPPER", "a_b", "-leading", "a..b", "ä", json.Number("1"), true)
	default:
		t.Fatalf("no generator for rule %T", r)
	}
	return out
}

// TestTenantValuesAllowlisted: for every allowlisted path of every chart, generated valid
// values pass and generated hostile values are refused at that path.
func TestTenantValuesAllowlisted(t *testing.T) {
	valid, hostile := 0, 0
	for chart, values := range tenantValueAllowlist {
		for _, a := range values {
			segs := strings.Split(a.path, ".")
			for _, v := range validFor(t, a.rule) {
				valid++
				if errs := valuesErrors(valuesTenant(chart, nested(t, segs, v))); len(errs) > 0 {
					t.Errorf("%s %s = %#v refused: %v", chart, a.path, v, errs)
				}
			}
			for _, v := range hostileFor(t, a.rule) {
				hostile++
				errs := valuesErrors(valuesTenant(chart, nested(t, segs, v)))
				if bad := refusedAt(errs, fieldOf(chart, segs)); bad != "" {
					t.Errorf("%s %s = %.80q: %s", chart, a.path, fmt.Sprint(v), bad)
				} else if isTemplate(v) && !strings.Contains(errs[0].Detail, "never a template") {
					t.Errorf("%s %s = %q: %v, want the template named", chart, a.path, v, errs[0])
				}
			}
		}
		// Every object on the way to a path takes nothing but an object.
		for obj := range tenantAllowlists[chart].objects {
			segs := strings.Split(obj, ".")
			for _, v := range []any{"x", json.Number("1"), true, []any{map[string]any{}}, nil, hostileStrings[0], hostileStrings[1]} {
				hostile++
				if bad := refusedAt(valuesErrors(valuesTenant(chart, nested(t, segs, v))), fieldOf(chart, segs)); bad != "" {
					t.Errorf("%s %s = %.80q: %s", chart, obj, fmt.Sprint(v), bad)
				}
			}
		}
	}
	t.Logf("allowlisted paths: %d valid values accepted, %d hostile values refused at their path", valid, hostile)
	if valid < 40 || hostile < 500 {
		t.Errorf("generated only %d valid and %d hostile values", valid, hostile)
	}
}

// TestTenantValuesRequestsWithinLimits: a request above its limit is refused at the request.
func TestTenantValuesRequestsWithinLimits(t *testing.T) {
	for chart, prefix := range map[string]string{ChartGrafana: "resources", ChartJaeger: "jaeger.resources"} {
		for _, r := range []string{"cpu", "memory"} {
			raw := fmt.Sprintf(`{"requests":{%q:"2Gi"},"limits":{%q:"1Gi"}}`, r, r)
			if r == "cpu" {
				raw = `{"requests":{"cpu":"2"},"limits":{"cpu":"1"}}`
			}
			var v any
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				t.Fatal(err)
			}
			segs := strings.Split(prefix, ".")
			want := fieldOf(chart, append(segs, "requests", r))
			if bad := refusedAt(valuesErrors(valuesTenant(chart, nested(t, segs, v))), want); bad != "" {
				t.Errorf("%s %s: %s", chart, r, bad)
			}
			ok := strings.NewReplacer(`"2"`, `"1"`, `"2Gi"`, `"1Gi"`).Replace(raw)
			if err := json.Unmarshal([]byte(ok), &v); err != nil {
				t.Fatal(err)
			}
			if errs := valuesErrors(valuesTenant(chart, nested(t, segs, v))); len(errs) > 0 {
				t.Errorf("%s %s: request equal to limit refused: %v", chart, r, errs)
			}
		}
	}
}

// firstUnknown is where a value at segs is refused: the shortest prefix of segs that is not
// on chart's allowlist tree or is a leaf of it (the rest of segs makes its value an object),
// or all of segs when every prefix is an object of the tree.
func firstUnknown(chart string, segs []string) []string {
	a := tenantAllowlists[chart]
	for i := range segs {
		path := strings.Join(segs[:i+1], ".")
		if strings.Contains(segs[i], ".") || a.leaves[path] != nil || !a.objects[path] {
			return segs[:i+1]
		}
	}
	return segs
}

// leafPaths lists the paths to every scalar, list and empty object of v, with their value.
func leafPaths(prefix []string, v any, out func([]string, any)) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		out(prefix, v)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		leafPaths(append(append([]string(nil), prefix...), k), m[k], out)
	}
}

// TestTenantValuesStandInKeysRefused: every key path of the stand-in charts' values.yaml
// (upstream's keys for what TFRS sets: images, rbac, admin, fullnameOverride …) is refused,
// alone, at its first prefix off the allowlist. TFRS_UPSTREAM_CHART_VALUES=<dir> adds
// <dir>/<chart>/values.yaml, the upstream charts' own at the pins (read, never committed).
func TestTenantValuesStandInKeysRefused(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "stacks", "testdata", "tenant", "charts", "*", "values.yaml"))
	if err != nil || len(files) != 2 {
		t.Fatalf("stand-in values: %v %v", files, err)
	}
	if dir := os.Getenv("TFRS_UPSTREAM_CHART_VALUES"); dir != "" {
		up, _ := filepath.Glob(filepath.Join(dir, "*", "values.yaml"))
		if len(up) == 0 {
			t.Fatalf("no <chart>/values.yaml under %s", dir)
		}
		files = append(files, up...)
	}
	n := 0
	for _, f := range files {
		chart := filepath.Base(filepath.Dir(f))
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		a := tenantAllowlists[chart]
		leafPaths(nil, v, func(segs []string, leaf any) {
			path := strings.Join(segs, ".")
			if empty, ok := leaf.(map[string]any); a.leaves[path] != nil || (a.objects[path] && ok && len(empty) == 0) {
				return // on the allowlist: TestTenantValuesAllowlisted's
			}
			n++
			if leaf == nil {
				leaf = "x"
			}
			want := fieldOf(chart, firstUnknown(chart, segs))
			errs := valuesErrors(valuesTenant(chart, nested(t, segs, leaf)))
			if bad := refusedAt(errs, want); bad != "" {
				t.Errorf("%s %s: %s", chart, strings.Join(segs, "."), bad)
			} else if !strings.Contains(errs[0].Detail, "not a value path tenants may set (allowed: ") {
				t.Errorf("%s %s: %v", chart, strings.Join(segs, "."), errs[0])
			}
		})
	}
	t.Logf("chart key paths refused (%d values files): %d", len(files), n)
	if n < 20 {
		t.Errorf("only %d stand-in key paths", n)
	}
}

// keyPool mixes the allowlist's own segments (so random paths reach deep into it), upstream
// keys that lead out of the namespace, and hostile key text.
func keyPool() []string {
	seen := map[string]bool{}
	for _, values := range tenantValueAllowlist {
		for _, a := range values {
			for _, s := range strings.Split(a.path, ".") {
				seen[s] = true
			}
		}
	}
	pool := []string{
		"extraVolumes", "extraContainers", "extraInitContainers", "extraObjects", "hostPath", "image", "sidecar",
		"securityContext", "podSecurityContext", "env", "envFromSecret", "grafana.ini", "userconfig", "args",
		"serviceAccount", "rbac", "global", "namespaceOverride", "existingClaim", "ephemeral-storage", "nvidia.com/gpu",
		"persistence.size", "resources.limits", "jaeger.replicas", "Replicas", "REPLICAS", "replicas ", " replicas",
		"{{ .Files }}", "{{", "", " ", "\x00", "a\nb", "..", "ä", strings.Repeat("k", 300), "0", "-1",
	}
	for s := range seen {
		pool = append(pool, s)
	}
	sort.Strings(pool)
	return pool
}

// TestTenantValuesRandomPathsRefused: random key paths of depth 1 to 5, each set alone to a
// template, are refused exactly once, at the first prefix off the allowlist (or, for a path on
// it, at the path itself: a template is never a value).
func TestTenantValuesRandomPathsRefused(t *testing.T) {
	pool := keyPool()
	rng := rand.New(rand.NewPCG(38, 2))
	const cases = 4000
	offList, onList := 0, 0
	for i := range cases {
		chart := []string{ChartGrafana, ChartJaeger}[i%2]
		segs := make([]string, 1+rng.IntN(5))
		for j := range segs {
			segs[j] = pool[rng.IntN(len(pool))]
		}
		want := firstUnknown(chart, segs)
		if len(want) == len(segs) && tenantAllowlists[chart].leaves[strings.Join(segs, ".")] != nil {
			onList++
		} else {
			offList++
		}
		leaf := hostileStrings[rng.IntN(5)] // a template
		if bad := refusedAt(valuesErrors(valuesTenant(chart, nested(t, segs, leaf))), fieldOf(chart, want)); bad != "" {
			t.Errorf("%s %q: %s", chart, segs, bad)
		}
	}
	t.Logf("random key paths refused: %d (%d off the allowlist, %d allowlisted paths holding a template)", cases, offList, onList)
	if onList == 0 || offList < cases/2 {
		t.Errorf("the generator reached %d allowlisted and %d other paths", onList, offList)
	}
}

// TestTenantValuesRedTeamPayload: the node escape of issue 38 — a hostPath of the node's root
// and a privileged container whose command the chart renders through `tpl` — is refused at
// both keys, and so are the old denylist's cases, each at its first key off the allowlist.
func TestTenantValuesRedTeamPayload(t *testing.T) {
	for _, tc := range []struct {
		chart, values string
		want          []string
	}{
		{ChartGrafana, `{
			"extraVolumes": [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}],
			"extraContainers": "- name: pwn\n  image: alpine\n  command: [\"sh\", \"-c\", \"{{ .Values.cmd }}\"]\n  securityContext: {privileged: true}\n  volumeMounts: [{name: host, mountPath: /host}]\n",
			"replicas": 1}`,
			[]string{"spec.grafana.values.extraContainers", "spec.grafana.values.extraVolumes"}},
		{ChartGrafana, `{"persistence": {"enabled": true, "existingClaim": "{{ .Release.Namespace }}-data", "size": "10Gi"}}`,
			[]string{"spec.grafana.values.persistence.existingClaim"}},
		{ChartGrafana, `{"grafana.ini": {"server": {"root_url": "{{ .Files.Get \"x\" }}"}}}`, []string{"spec.grafana.values.grafana.ini"}},
		{ChartGrafana, `{"sidecar": {"image": {"registry": "evil.example.com"}}}`, []string{"spec.grafana.values.sidecar"}},
		{ChartGrafana, `{"rbac": {"namespaced": false}}`, []string{"spec.grafana.values.rbac"}},
		{ChartGrafana, `{"global": {"imageRegistry": "evil.example.com"}, "namespaceOverride": "kube-system"}`,
			[]string{"spec.grafana.values.global", "spec.grafana.values.namespaceOverride"}},
		{ChartGrafana, `{"resources": {"limits": {"nvidia.com/gpu": 8, "cpu": "1"}}}`, []string{"spec.grafana.values.resources.limits.nvidia.com/gpu"}},
		{ChartJaeger, `{"jaeger": {"args": ["--set={{ lookup \"v1\" \"Secret\" \"kube-system\" \"\" }}"], "replicas": 1}}`, []string{"spec.jaeger.values.jaeger.args"}},
		{ChartJaeger, `{"hostNetwork": true, "jaeger": {"podSecurityContext": {"runAsUser": 0}, "image": {"repository": "evil"}}}`,
			[]string{"spec.jaeger.values.hostNetwork", "spec.jaeger.values.jaeger.image", "spec.jaeger.values.jaeger.podSecurityContext"}},
		{ChartJaeger, `{"userconfig": {"extensions": {}}}`, []string{"spec.jaeger.values.userconfig"}},
	} {
		errs := valuesErrors(valuesTenant(tc.chart, []byte(tc.values)))
		if got := fields(errs); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: refused %v, want %v", tc.values, got, tc.want)
		}
		for _, e := range errs {
			if e.Type != field.ErrorTypeForbidden || !strings.Contains(e.Error(), "not a value path tenants may set (allowed: ") {
				t.Errorf("%v: want Forbidden, not a value path", e)
			}
		}
	}
}

// TestTenantValuesManyKeys: thousands of unknown keys get a bounded refusal.
func TestTenantValuesManyKeys(t *testing.T) {
	m := map[string]any{}
	for i := range 5000 {
		m[fmt.Sprintf("k%04d", i)] = i
	}
	b, _ := json.Marshal(m)
	errs := valuesErrors(valuesTenant(ChartGrafana, b))
	if len(errs) != maxValueErrors+1 || !strings.Contains(errs[maxValueErrors].Detail, fmt.Sprintf("%d more", 5000-maxValueErrors)) {
		t.Errorf("%d errors, last %v", len(errs), errs[len(errs)-1])
	}
}

// TestAdminValuesFreeForm: the values the cluster's admin writes (the personal middleware of
// a TFRCluster) are free-form; the same values in a TFRTenant are refused.
func TestAdminValuesFreeForm(t *testing.T) {
	payload := &apiextensionsv1.JSON{Raw: []byte(`{"extraVolumes": [{"name": "x", "emptyDir": {}}], "grafana.ini": {"server": {"root_url": "{{ .Values.x }}"}}}`)}
	c := &TFRCluster{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: TFRClusterSpec{Domain: "example.com"}}
	c.Spec.Personal.Middleware.Grafana.Values = payload
	c.Spec.Personal.JobTypes = map[string]TenantMiddleware{"chat": {}}
	jt := c.Spec.Personal.JobTypes["chat"]
	jt.Jaeger.Values = &apiextensionsv1.JSON{Raw: []byte(`{"jaeger": {"extraEnv": [{"name": "A", "value": "b"}]}}`)}
	c.Spec.Personal.JobTypes["chat"] = jt
	for _, e := range c.Validate() {
		if strings.Contains(e.Field, ".values") {
			t.Errorf("the admin's values refused: %v", e)
		}
	}
	tt := valuesTenant(ChartGrafana, payload.Raw)
	if errs := tt.ValidateWithAdminValues(); len(errs) > 0 {
		t.Errorf("ValidateWithAdminValues: %v", errs)
	}
	if got := fields(tt.Validate()); strings.Join(got, " ") != "spec.grafana.values.extraVolumes spec.grafana.values.grafana.ini" {
		t.Errorf("a tenant's Validate refused %v", got)
	}
}

// docRow is a row of an allowlist table in docs/security/chart-values.md.
var docRow = regexp.MustCompile("^\\| `([^`]+)` \\| `([^`]+)` \\|")

// TestChartValuesDocs: the published tables (docs/security/chart-values.md, one "### <chart>"
// section each) list exactly the allowlist, with the rules as the code states them.
func TestChartValuesDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "security", "chart-values.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]TenantValuePath{}
	chart := ""
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			chart = strings.Fields(h + " ")[0]
			continue
		}
		if m := docRow.FindStringSubmatch(line); m != nil && (chart == ChartGrafana || chart == ChartJaeger) {
			got[chart] = append(got[chart], TenantValuePath{Path: m[1], Rule: m[2]})
		}
	}
	for _, chart := range []string{ChartGrafana, ChartJaeger} {
		want := TenantValuePaths(chart)
		if fmt.Sprint(got[chart]) != fmt.Sprint(want) {
			t.Errorf("docs table for %s:\n got %v\nwant %v", chart, got[chart], want)
		}
	}
}

// TestTenantValuesOneObject: values that are not one JSON object (a second document after
// an allowed one, a list) are refused at spec.<chart>.values, never half read.
func TestTenantValuesOneObject(t *testing.T) {
	for _, raw := range []string{`{"replicas": 1} {"extraVolumes": []}`, `{"replicas": 1}}`, `[{"extraVolumes": []}]`, `"{{ .Files }}"`} {
		if got := fields(valuesErrors(valuesTenant(ChartGrafana, []byte(raw)))); !slices.Contains(got, "spec.grafana.values") {
			t.Errorf("%s: refused at %v", raw, got)
		}
	}
}
