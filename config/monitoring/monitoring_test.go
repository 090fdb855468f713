// Package monitoring_test checks the dashboard and the alerts of config/monitoring against the
// metrics TFRS really registers: every PromQL expression parses, every metric it names is
// registered by the operator, the HTTP API or the engine, and every label it selects, groups
// or matches on (and every label a legend or an alert annotation prints) exists on them.
package monitoring_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/operator"
	"github.com/tfrs-io/tfrs-operator/server"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// targetLabels are the labels Prometheus adds to every scraped series (job, instance) and
// that prometheus-operator's ServiceMonitors add (namespace, pod, service, container,
// endpoint). Grouping by them is fine; they are never a TFRS metric's own label.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "container", "endpoint"}

// metric is one registered metric family: its labels, and whether it is a histogram (whose
// series are NAME_bucket{le}, NAME_sum and NAME_count).
type metric struct {
	labels    map[string]bool
	histogram bool
}

var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)

// registered is every metric TFRS registers: the operator's (on controller-runtime's registry),
// the HTTP API's and the engine's, described by the collectors themselves.
func registered(t *testing.T) map[string]metric {
	t.Helper()
	// A zero engine: Describe only reads the metric descriptions, never the counters.
	cs := append(operator.Collectors(), server.Collectors(&engine.Engine{})...)
	out := map[string]metric{}
	for _, c := range cs {
		_, hist := c.(*prometheus.HistogramVec)
		if _, ok := c.(prometheus.Histogram); ok {
			hist = true
		}
		ch := make(chan *prometheus.Desc, 256)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			m := descRE.FindStringSubmatch(d.String())
			require.NotNil(t, m, "cannot read the description %s (client_golang changed Desc.String?)", d)
			labels := map[string]bool{}
			for _, part := range strings.Split(m[2], ",") {
				if name, _, ok := strings.Cut(part, "="); ok {
					labels[name] = true
				}
			}
			for _, l := range strings.Split(m[3], ",") {
				if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
					labels[l] = true
				}
			}
			out[m[1]] = metric{labels: labels, histogram: hist}
		}
	}
	return out
}

// query is one PromQL expression and what it prints: a legend format or annotations.
type query struct {
	where, expr string
	printed     []string // {{label}} of legends, $labels.label of annotations
}

var (
	legendRE = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	annotRE  = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
)

func dashboardQueries(t *testing.T, path string) []query {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr   string `json:"expr"`
				Legend string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &d))
	require.NotEmpty(t, d.Title)
	var qs []query
	for _, p := range d.Panels {
		if p.Type != "row" {
			require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			q := query{where: fmt.Sprintf("dashboard panel %q target %d", p.Title, i), expr: tg.Expr}
			for _, m := range legendRE.FindAllStringSubmatch(tg.Legend, -1) {
				q.printed = append(q.printed, m[1])
			}
			qs = append(qs, q)
		}
	}
	return qs
}

func ruleQueries(t *testing.T, path string) []query {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var r struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert       string            `json:"alert"`
					Expr        string            `json:"expr"`
					For         string            `json:"for"`
					Labels      map[string]string `json:"labels"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.UnmarshalStrict(b, &r))
	require.Equal(t, "PrometheusRule", r.Kind)
	require.Equal(t, "monitoring.coreos.com/v1", r.APIVersion)
	var qs []query
	for _, g := range r.Spec.Groups {
		for _, rule := range g.Rules {
			require.NotEmpty(t, rule.Alert, "group %s: a rule without a name", g.Name)
			require.NotEmpty(t, rule.Labels["severity"], "alert %s: no severity label", rule.Alert)
			require.NotEmpty(t, rule.Annotations["summary"], "alert %s: no summary", rule.Alert)
			q := query{where: "alert " + rule.Alert, expr: rule.Expr}
			for _, a := range rule.Annotations {
				for _, m := range annotRE.FindAllStringSubmatch(a, -1) {
					q.printed = append(q.printed, m[1])
				}
			}
			qs = append(qs, q)
		}
	}
	return qs
}

// check returns every problem of one query against the registered metrics.
func check(q query, reg map[string]metric) []string {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(q.expr)
	if err != nil {
		return []string{fmt.Sprintf("%s: %q does not parse: %v", q.where, q.expr, err)}
	}
	var problems []string
	allowed := map[string]bool{}
	for _, l := range targetLabels {
		allowed[l] = true
	}
	var grouping []string
	selectors := 0
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			selectors++
			name, own := lookup(n, reg)
			if own == nil {
				problems = append(problems, fmt.Sprintf("%s: metric %q is not registered by TFRS", q.where, name))
				return nil
			}
			for l := range own {
				allowed[l] = true
			}
			for _, m := range n.LabelMatchers {
				if m.Name != "__name__" && !own[m.Name] && !contains(targetLabels, m.Name) {
					problems = append(problems, fmt.Sprintf("%s: %s has no label %q", q.where, name, m.Name))
				}
			}
		case *parser.AggregateExpr:
			grouping = append(grouping, n.Grouping...)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				grouping = append(grouping, n.VectorMatching.MatchingLabels...)
				grouping = append(grouping, n.VectorMatching.Include...)
			}
		}
		return nil
	})
	if selectors == 0 {
		problems = append(problems, fmt.Sprintf("%s: %q reads no metric", q.where, q.expr))
	}
	for _, l := range append(grouping, q.printed...) {
		if !allowed[l] {
			problems = append(problems, fmt.Sprintf("%s: label %q is on none of the metrics it reads", q.where, l))
		}
	}
	return problems
}

// lookup finds a selector's metric: by name, or a histogram's _bucket (with le), _sum, _count.
func lookup(vs *parser.VectorSelector, reg map[string]metric) (string, map[string]bool) {
	name := vs.Name
	if m, ok := reg[name]; ok {
		return name, m.labels
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if m, found := reg[base]; ok && found && m.histogram {
			labels := map[string]bool{}
			for l := range m.labels {
				labels[l] = true
			}
			if suffix == "_bucket" {
				labels["le"] = true
			}
			return name, labels
		}
	}
	return name, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDashboardAndAlertsUseRegisteredMetrics(t *testing.T) {
	reg := registered(t)
	// The collectors really were read: the operator's, the API's and the engine's.
	for _, name := range []string{"tfrs_operator_operations_total", "tfrs_http_requests_total", "tfrs_engine_cli_processes_total"} {
		require.Contains(t, reg, name)
	}
	require.True(t, reg["tfrs_operator_operation_duration_seconds"].histogram)
	require.True(t, reg["tfrs_operator_operations_total"].labels["result"])

	qs := append(dashboardQueries(t, "tfrs-dashboard.json"), ruleQueries(t, "prometheusrule.yaml")...)
	require.Greater(t, len(qs), 15)
	var problems []string
	used := map[string]bool{}
	for _, q := range qs {
		problems = append(problems, check(q, reg)...)
		for name := range reg {
			if strings.Contains(q.expr, name) {
				used[name] = true
			}
		}
	}
	require.Empty(t, problems)

	// Every TFRS metric appears on the dashboard or in an alert.
	var unused []string
	for name := range reg {
		if strings.HasPrefix(name, "tfrs_") && !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	require.Empty(t, unused, "TFRS metrics neither the dashboard nor the alerts show")
}

// TestCheckFindsMistakes: the checker itself refuses what a careless edit would bring.
func TestCheckFindsMistakes(t *testing.T) {
	reg := registered(t)
	for _, tc := range []struct {
		expr, legend, want string
	}{
		{`sum(rate(tfrs_operator_operation_total[5m]))`, "", `metric "tfrs_operator_operation_total" is not registered`},
		{`tfrs_operator_stacks_failing{phase="x"}`, "", `has no label "phase"`},
		{`sum by (result) (tfrs_operator_stacks_failing)`, "", `label "result" is on none`},
		{`sum(tfrs_operations_total)`, "{{ route }}", `label "route" is on none`},
		{`tfrs_http_requests_total_bucket`, "", `not registered`},
		{`histogram_quantile(0.9, sum by (le) (rate(tfrs_operation_duration_seconds_bucket[5m]))`, "", `does not parse`},
		{`vector(1)`, "", `reads no metric`},
	} {
		q := query{where: "test", expr: tc.expr}
		for _, m := range legendRE.FindAllStringSubmatch(tc.legend, -1) {
			q.printed = append(q.printed, m[1])
		}
		problems := check(q, reg)
		require.NotEmpty(t, problems, tc.expr)
		require.Contains(t, strings.Join(problems, "\n"), tc.want, tc.expr)
	}
	require.Empty(t, check(query{where: "ok", expr: `histogram_quantile(0.9, sum by (le, kind) (rate(tfrs_operation_duration_seconds_bucket[5m])))`, printed: []string{"kind"}}, reg))
}
