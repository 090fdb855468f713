package stacks

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Every pin has its row, and every row is whole: a pin bump that forgets the matrix fails here.
func TestSupportMatrixCoversThePins(t *testing.T) {
	pinned := PinnedSupports()
	require.NotEmpty(t, pinned)
	for _, p := range pinned {
		s := p.Support
		require.NotEmpty(t, s.Line, "%s %s has no row in supportMatrix (stacks/support.go)", p.Project, p.Pinned)
		assert.Equal(t, minorOf(p.Pinned), s.Line)
		assert.NotEmpty(t, s.KubeMin, "%s %s: the oldest Kubernetes it supports", p.Project, s.Line)
		assert.NotEmpty(t, s.Source, "%s %s: where the facts come from", p.Project, s.Line)
	}
	seen := map[string]bool{}
	for _, s := range supportMatrix {
		key := s.Project + " " + s.Line
		assert.False(t, seen[key], "two rows for %s", key)
		seen[key] = true
		for _, d := range []string{s.Released, s.EndOfLife} {
			if d != "" {
				_, err := time.Parse(time.DateOnly, d)
				assert.NoError(t, err, "%s: dates are YYYY-MM-DD", key)
			}
		}
		for _, v := range []string{s.KubeMin, s.KubeMax, s.Line} {
			if v != "" {
				assert.Equal(t, v, minorOf(v), "%s: %q is major.minor", key, v)
			}
		}
		if s.KubeMax != "" {
			assert.LessOrEqual(t, compareMinor(s.KubeMin, s.KubeMax), 0, key)
		}
	}
}

func TestMinorOf(t *testing.T) {
	for in, want := range map[string]string{
		"v1.37.2": "1.37", "1.37": "1.37", "v1.37.2-gke.100": "1.37", "v1.37+": "1.37", "1.30.3": "1.30",
		"v1.21.2": "1.21", " v1.9.0 ": "1.9", "": "", "v1": "", "x.y": "", "1.": "", "latest": "",
	} {
		assert.Equal(t, want, minorOf(in), "minorOf(%q)", in)
	}
	assert.Negative(t, compareMinor("1.9", "1.10"), "numeric, not lexical")
	assert.Zero(t, compareMinor("1.36", "1.36"))
	assert.Positive(t, compareMinor("2.0", "1.99"))
}

// The rule, over generated clusters: a component is refused exactly when it is past its end of
// support or the cluster's Kubernetes is older than it supports, and spec.allowUnsupported
// does not name it; warned about when the cluster is newer than it supports, its end is near,
// or its version is unknown to the matrix; silent otherwise. Every refusal names the
// component's version field.
func TestSupportFindingsGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 40))
	projects := []string{"cert-manager", "istio", "cnpg", "minio-operator", "rabbitmq-cluster-operator", "rabbitmq-messaging-topology-operator"}
	counts := map[string]int{}
	const n = 5000
	for i := range n {
		c := &v1alpha1.TFRCluster{}
		c.Spec.Domain = "example.com"
		srcs := []*v1alpha1.ComponentSource{&c.Spec.CertManager, &c.Spec.Istio, &c.Spec.CNPGOperator, &c.Spec.MinIOOperator, &c.Spec.RabbitMQOperator}
		for _, src := range srcs {
			switch rng.IntN(6) {
			case 0:
				src.Enabled = new(bool) // disabled: never checked
			case 1:
				src.LocalPath = "/charts/x"
			case 2:
				src.Version = fmt.Sprintf("%d.%d.%d", 1, rng.IntN(40), rng.IntN(5))
			case 3:
				if len(supportMatrix) > 0 {
					src.Version = supportMatrix[rng.IntN(len(supportMatrix))].Line + ".1"
				}
			}
		}
		for _, p := range projects {
			if rng.IntN(4) == 0 {
				c.Spec.AllowUnsupported = append(c.Spec.AllowUnsupported, p)
			}
		}
		kube := fmt.Sprintf("v1.%d.%d", 25+rng.IntN(16), rng.IntN(10))
		if rng.IntN(10) == 0 {
			kube += "-eks-1234"
		}
		now := time.Date(2025+rng.IntN(3), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), 0, 0, 0, 0, time.UTC)

		findings := SupportFindings(c, kube, now)
		got := map[string]SupportFinding{}
		for _, f := range findings {
			got[f.Project] = f
		}
		for _, pv := range clusterProjects(&c.Spec) {
			want := oracle(pv, minorOf(kube), now, slices.Contains(c.Spec.AllowUnsupported, pv.project))
			f, ok := got[pv.project]
			if want == "" {
				assert.False(t, ok, "case %d: %s %s on %s at %s: no finding, got %+v", i, pv.project, pv.version, kube, now, f)
				counts["silent"]++
				continue
			}
			require.True(t, ok, "case %d: %s %s on %s at %s: want %s", i, pv.project, pv.version, kube, now, want)
			wantReason, refused := strings.CutSuffix(want, "!")
			assert.Equal(t, wantReason, f.Reason, "case %d: %s", i, pv.project)
			assert.Equal(t, refused, f.Refused, "case %d: %s %s", i, pv.project, f.Message)
			assert.Contains(t, f.Message, pv.project)
			counts[want]++
			delete(got, pv.project)
		}
		assert.Empty(t, got, "case %d: findings for disabled components", i)
		for _, e := range SupportErrors(findings) {
			assert.Regexp(t, `^spec\.[a-zA-Z]+\.version$`, e.Field)
		}
	}
	t.Logf("%d clusters: %v", n, counts)
	for _, want := range []string{SupportPastEndOfLife + "!", SupportKubeTooOld + "!", SupportKubeTooNew, SupportVersionUnknown, "silent"} {
		assert.Positive(t, counts[want], "the generator reached %s", want)
	}
}

// oracle is the rule written out once more: the finding's reason, with "!" when refused.
func oracle(pv projectVersion, kube string, now time.Time, allowed bool) string {
	var row *Support
	for i := range supportMatrix {
		if supportMatrix[i].Project == pv.project && supportMatrix[i].Line == minorOf(pv.version) {
			row = &supportMatrix[i]
		}
	}
	if row == nil {
		return SupportVersionUnknown
	}
	refuse := func(r string) string {
		if allowed {
			return r
		}
		return r + "!"
	}
	eol, _ := time.Parse(time.DateOnly, row.EndOfLife)
	switch {
	case row.EndOfLife != "" && !now.Before(eol):
		return refuse(SupportPastEndOfLife)
	case row.KubeMin != "" && compareMinor(kube, row.KubeMin) < 0:
		return refuse(SupportKubeTooOld)
	case row.KubeMax != "" && compareMinor(kube, row.KubeMax) > 0:
		return SupportKubeTooNew
	case row.EndOfLife != "" && eol.Sub(now) < SupportEndingSoon:
		return SupportEndOfLifeSoon
	}
	return ""
}

var updateDocs = flag.Bool("update", false, "rewrite the support table in docs/cluster.md")

// The docs' support table is the matrix's, for the pinned versions: regenerate it with
// go test ./stacks -run TestSupportMatrixDocs -update.
func TestSupportMatrixDocs(t *testing.T) {
	var b strings.Builder
	b.WriteString("| project | pinned | Kubernetes | released | end of upstream support | source |\n|---|---|---|---|---|---|\n")
	for _, p := range PinnedSupports() {
		s := p.Support
		kube := s.KubeMin + " to " + s.KubeMax
		if s.KubeMax == "" {
			kube = s.KubeMin + " and newer (no newest stated)"
		}
		eol := s.EndOfLife
		if eol == "" {
			eol = "not dated yet"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", p.Project, p.Pinned, kube, s.Released, eol, strings.ReplaceAll(s.Source, "|", "\\|"))
	}
	path := filepath.Join("..", "docs", "cluster.md")
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	const open, close = "<!-- support-matrix: generated from stacks.PinnedSupports; TestSupportMatrixDocs checks it -->\n", "<!-- /support-matrix -->"
	start, end := strings.Index(string(doc), open), strings.Index(string(doc), close)
	require.True(t, start >= 0 && end > start, "docs/cluster.md keeps the support-matrix markers")
	got := string(doc[start+len(open) : end])
	if *updateDocs {
		out := string(doc[:start+len(open)]) + b.String() + string(doc[end:])
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
		return
	}
	assert.Equal(t, b.String(), got, "docs/cluster.md's support table: go test ./stacks -run TestSupportMatrixDocs -update")
}
