package v1alpha1

// Chart values a tenant may set: an allowlist, owned and published by TFRS.
//
// A tenant's spec.jaeger.values and spec.grafana.values are merged over TFRS's own values and
// rendered (as the namespace's applier). The upstream charts turn many values into pod specs
// and objects, and render several of them through `tpl`, so a string there is a template that
// runs with the chart's whole context: a denylist of keys cannot know every way in (the red
// team mounted the node's root through Grafana's extraVolumes and extraContainers). So a
// tenant may set only the paths below, each with a typed rule, and anything else is refused at
// its own path before anything changes. The table was chosen by reading the charts at the pins
// of stacks/sources.go: no path on it is rendered through `tpl`, names an object, or is a list
// of objects; docs/security/chart-values.md publishes it (TestChartValuesDocs keeps them equal).
//
// Values the cluster's admin writes (the personal middleware of a TFRCluster) stay free-form:
// see ValidateWithAdminValues.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The tenant charts, as the TFRTenant spec names their fields.
const (
	ChartJaeger  = "jaeger"
	ChartGrafana = "grafana"
)

// maxValueErrors bounds the errors named per chart: a spec of thousands of unknown keys gets
// a readable refusal (and a status that fits in the object), not one line per key.
const maxValueErrors = 32

// valueRule is the typed rule of one allowlisted path.
type valueRule interface {
	// check returns "" for a good value, else the rule it breaks. v is decoded with UseNumber.
	check(v any) string
	// String is the rule as the docs and the errors state it.
	String() string
}

// Rules of the table. Bounds are sane for one tenant's Grafana or Jaeger; the tenant's
// ResourceQuota bounds the namespace as a whole.
var (
	ruleCPU     = quantityRule{min: resource.MustParse("1m"), max: resource.MustParse("16")}
	ruleMemory  = quantityRule{min: resource.MustParse("1Mi"), max: resource.MustParse("64Gi")}
	ruleStorage = quantityRule{min: resource.MustParse("1Gi"), max: resource.MustParse("100Gi")}
	ruleClass   = stringRule{re: reDNSSubdomain, maxLen: 253}
)

// resourcesRules are a container's requests and limits, cpu and memory only: extended
// resources (GPUs, hugepages) and ephemeral storage are the admin's to give.
func resourcesRules(prefix string) []allowedValue {
	var out []allowedValue
	for _, kind := range []string{"requests", "limits"} {
		out = append(out,
			allowedValue{prefix + "." + kind + ".cpu", ruleCPU},
			allowedValue{prefix + "." + kind + ".memory", ruleMemory})
	}
	return out
}

// allowedValue is one path a tenant may set, dotted from the chart's values root.
type allowedValue struct {
	path string
	rule valueRule
}

// tenantValueAllowlist is the table, by chart. Left out on purpose (each is rendered through
// `tpl`, names an object, or carries code): grafana.ini (its strings go through `tpl`),
// dashboards and dashboardProviders (their url/gnetId entries become a download script, and
// dashboard JSON legitimately holds `{{`; import dashboards through Grafana itself),
// persistence.existingClaim (`tpl`, and another claim of the namespace), env/envFrom*,
// extra*, sidecar.*, image*, rbac, serviceAccount, securityContext, and Jaeger's userconfig,
// uiconfig and args (`tpl`).
var tenantValueAllowlist = map[string][]allowedValue{
	ChartGrafana: append([]allowedValue{
		// More than one replica shares nothing but the PVC: each has its own sessions
		// unless the admin configures a shared database.
		{"replicas", intRule{min: 0, max: 5}},
		{"persistence.enabled", boolRule{}},
		{"persistence.size", ruleStorage},
		{"persistence.storageClassName", ruleClass},
	}, resourcesRules("resources")...),
	ChartJaeger: append([]allowedValue{
		// TFRS runs Jaeger with in-memory storage: a second replica would hold the other
		// half of the traces, so 0 (off) or 1.
		{"jaeger.replicas", intRule{min: 0, max: 1}},
	}, resourcesRules("jaeger.resources")...),
}

// TenantValuePath is one published allowlisted path with its rule, for docs and tools.
type TenantValuePath struct {
	Path string
	Rule string
}

// TenantValuePaths lists the value paths a tenant may set in chart (ChartJaeger,
// ChartGrafana), sorted; nil for any other chart.
func TenantValuePaths(chart string) []TenantValuePath {
	var out []TenantValuePath
	for _, a := range tenantValueAllowlist[chart] {
		out = append(out, TenantValuePath{Path: a.path, Rule: a.rule.String()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// allowlist is a chart's table as a tree: its leaves with their rules, and the objects on the
// way to them.
type allowlist struct {
	leaves  map[string]valueRule
	objects map[string]bool
	names   string // "a, b, c", for the errors
}

var tenantAllowlists = func() map[string]allowlist {
	out := map[string]allowlist{}
	for chart, values := range tenantValueAllowlist {
		a := allowlist{leaves: map[string]valueRule{}, objects: map[string]bool{}}
		var names []string
		for _, v := range values {
			a.leaves[v.path] = v.rule
			names = append(names, v.path)
			parts := strings.Split(v.path, ".")
			for i := 1; i < len(parts); i++ {
				a.objects[strings.Join(parts[:i], ".")] = true
			}
		}
		sort.Strings(names)
		a.names = strings.Join(names, ", ")
		out[chart] = a
	}
	return out
}()

// chartValuesRule checks the values of a tenant chart (ChartJaeger, ChartGrafana) whose
// ComponentSource is at p.
type chartValuesRule func(p *field.Path, chart string, c *ComponentSource) field.ErrorList

// validateTenantValues is the rule for a tenant's own values: only the chart's allowlisted
// paths, each by its rule, and no string holds a template.
func validateTenantValues(p *field.Path, chart string, c *ComponentSource) field.ErrorList {
	if c.Values == nil || len(bytes.TrimSpace(c.Values.Raw)) == 0 {
		return nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(c.Values.Raw))
	d.UseNumber() // integers and quantities keep their exact text
	if d.Decode(&v) != nil || d.More() {
		return nil // validateComponentSource reports the shape (trailing data too)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil // likewise
	}
	w := &valuesWalk{list: tenantAllowlists[chart], quantities: map[string]quantityAt{}}
	root := p.Child("values")
	w.object(root, "", obj)
	w.requestsWithinLimits()
	if w.dropped > 0 {
		w.errs = append(w.errs, field.Forbidden(root, fmt.Sprintf("%d more refused values not named (only the first %d are)", w.dropped, maxValueErrors)))
	}
	return w.errs
}

// adminChartValues is the rule for values the cluster's admin writes: free-form. The admin
// owns the cluster (a TFRCluster is cluster-scoped, admin-only by RBAC), so an escape hatch
// there gives nobody more than they have.
func adminChartValues(*field.Path, string, *ComponentSource) field.ErrorList { return nil }

// ValidateWithAdminValues is Validate for a tenant whose chart values the cluster's admin
// wrote, not a tenant: the shared middleware of a personal job type, which comes from the
// TFRCluster's spec.personal. Every other rule is Validate's.
func (x *TFRTenant) ValidateWithAdminValues() field.ErrorList {
	return x.validate(adminChartValues)
}

// valuesWalk walks a tenant's values against a chart's allowlist, collecting the errors.
type valuesWalk struct {
	list       allowlist
	errs       field.ErrorList
	dropped    int
	quantities map[string]quantityAt // good quantities by dotted path, for requests ≤ limits
}

type quantityAt struct {
	q  resource.Quantity
	fp *field.Path
}

func (w *valuesWalk) refuse(e *field.Error) {
	if len(w.errs) >= maxValueErrors {
		w.dropped++
		return
	}
	w.errs = append(w.errs, e)
}

// object checks the keys of m, an object at dotted path prefix ("" for the root) and field
// path fp, in sorted order so the errors are stable.
func (w *valuesWalk) object(fp *field.Path, prefix string, m map[string]any) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path, kp, v := k, fp.Child(keyName(k)), m[k]
		if prefix != "" {
			path = prefix + "." + k
		}
		rule, leaf := w.list.leaves[path]
		sub, isObject := v.(map[string]any)
		// A key with a dot is one literal key to Helm, not a path: "persistence.size" at
		// the root is not persistence.size.
		known := !strings.Contains(k, ".") && (leaf || w.list.objects[path])
		switch {
		case !known:
			w.refuse(field.Forbidden(kp, "not a value path tenants may set (allowed: "+w.list.names+")"))
		case isTemplate(v):
			w.refuse(field.Forbidden(kp, "a tenant's value is data, never a template: it may not contain \"{{\""))
		case v == nil:
			w.refuse(field.Invalid(kp, nil, "must be set: null would remove the chart's own value"))
		case !leaf && !isObject:
			w.refuse(field.TypeInvalid(kp, shown(v), "must be an object"))
		case !leaf:
			w.object(kp, path, sub)
		default:
			if why := rule.check(v); why != "" {
				w.refuse(field.Invalid(kp, shown(v), why))
			} else if _, ok := rule.(quantityRule); ok {
				s, _ := quantityText(v)
				w.quantities[path] = quantityAt{resource.MustParse(s), kp}
			}
		}
	}
}

// requestsWithinLimits refuses a request above its limit: the API server would refuse the
// pods, long after the spec was accepted.
func (w *valuesWalk) requestsWithinLimits() {
	paths := make([]string, 0, len(w.quantities))
	for p := range w.quantities {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		owner, name, ok := strings.Cut(p, ".requests.")
		if !ok {
			continue
		}
		limitPath := owner + ".limits." + name
		req := w.quantities[p]
		if limit, set := w.quantities[limitPath]; set && req.q.Cmp(limit.q) > 0 {
			w.refuse(field.Invalid(req.fp, req.q.String(), "must not exceed "+limitPath+" ("+limit.q.String()+")"))
		}
	}
}

// isTemplate is a string holding a Go template action.
func isTemplate(v any) bool {
	s, ok := v.(string)
	return ok && strings.Contains(s, "{{")
}

// plainKey is a key an error names as it is; any other is quoted (control characters,
// templates) and cut short.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_./-]{1,63}$`)

func keyName(k string) string {
	if plainKey.MatchString(k) {
		return k
	}
	if r := []rune(k); len(r) > 64 {
		return strconv.Quote(string(r[:64])) + "…"
	}
	return strconv.Quote(k)
}

// shown is the value an error repeats: a scalar, a short string; never an object or a long
// string (a tenant's megabyte would end up in the CR's status).
func shown(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > 64 {
			return field.OmitValueType{}
		}
		return x
	case json.Number:
		if len(x) > 64 {
			return field.OmitValueType{}
		}
		return string(x)
	case bool:
		return x
	}
	return field.OmitValueType{}
}

// boolRule: true or false.
type boolRule struct{}

func (r boolRule) check(v any) string {
	if _, ok := v.(bool); !ok {
		return r.String()
	}
	return ""
}

func (boolRule) String() string { return "must be a boolean" }

// intRule: an integer in [min, max].
type intRule struct{ min, max int64 }

func (r intRule) check(v any) string {
	n, ok := v.(json.Number)
	if !ok {
		return r.String()
	}
	if i, err := n.Int64(); err != nil || i < r.min || i > r.max {
		return r.String()
	}
	return ""
}

func (r intRule) String() string {
	return fmt.Sprintf("must be an integer from %d to %d", r.min, r.max)
}

// quantityRule: a Kubernetes quantity (a string, or a plain number) in [min, max].
type quantityRule struct{ min, max resource.Quantity }

// maxQuantityLen bounds the text parsed: no quantity in range needs more.
const maxQuantityLen = 32

// quantityText is the text of a quantity value: a string or a plain number.
func quantityText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return string(x), true
	}
	return "", false
}

func (r quantityRule) check(v any) string {
	s, ok := quantityText(v)
	if !ok || len(s) > maxQuantityLen {
		return r.String()
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Cmp(r.min) < 0 || q.Cmp(r.max) > 0 {
		return r.String()
	}
	return ""
}

func (r quantityRule) String() string {
	return fmt.Sprintf("must be a quantity from %s to %s", r.min.String(), r.max.String())
}

// stringRule: a string of a fixed shape (never free text) of at most maxLen bytes.
type stringRule struct {
	re     *regexp.Regexp
	maxLen int
}

func (r stringRule) check(v any) string {
	s, ok := v.(string)
	if !ok || s == "" || len(s) > r.maxLen || !r.re.MatchString(s) {
		return r.String()
	}
	return ""
}

func (r stringRule) String() string {
	return fmt.Sprintf("must match %s, at most %d characters", r.re.String(), r.maxLen)
}
