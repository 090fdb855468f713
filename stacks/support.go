package stacks

// The support matrix: for each upstream project the cluster stack installs, the release lines
// TFRS knows, the Kubernetes minor versions upstream supports them on and the day upstream
// support ends, each fact with where it comes from. The pins (sources.go) must each have a row:
// TestSupportMatrixCoversThePins fails a bump that forgets one.
//
// Before a cluster's program runs, the runner reads the cluster's Kubernetes version and
// stacks/kinds checks every enabled component's effective version (the pin, or spec.<component>.
// version) against the matrix and today's date (SupportFindings):
//
//   - refused, unless spec.allowUnsupported names the project: the cluster's Kubernetes is
//     older than the line supports, or the line is past its end of support;
//   - warned (a Supported=False condition on the TFRCluster, a line in every preview and up):
//     the cluster's Kubernetes is newer than upstream has tested, the end of support is less
//     than SupportEndingSoon away, or the version is one the matrix has no row for (a
//     spec.version outside the known lines). A localPath holds the pinned version unless
//     spec.<component>.version says otherwise.
//
// Nothing is checked without a cluster (tfrs render, the stock-CLI entry).

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Support is what upstream says about one release line of one project.
type Support struct {
	// Project is the upstream project: the Artifact.CRDs name of the artifact whose version
	// the row covers (the folder name under ../shared/upstream/crds).
	Project string `json:"project"`
	// Line is the release line, major.minor without a "v": "1.21" covers v1.21.0 to v1.21.x.
	Line string `json:"line"`
	// KubeMin and KubeMax are the oldest and newest Kubernetes minor versions upstream
	// supports the line on ("1.32"). KubeMax empty: no newest stated.
	KubeMin string `json:"kubernetesMin,omitempty"`
	KubeMax string `json:"kubernetesMax,omitempty"`
	// Released is the day the line's first release came out; EndOfLife the day upstream
	// support ends (no more fixes after it). Dates are YYYY-MM-DD, UTC; EndOfLife empty: not
	// announced.
	Released  string `json:"released,omitempty"`
	EndOfLife string `json:"endOfLife,omitempty"`
	// Source says where the facts come from: pages or repository paths at a commit.
	Source string `json:"source"`
}

// supportMatrix is THE table of support facts. Add a row with every pin bump.
//
// A fact the sources give only as a rule or a month is turned into a date as written on its
// row; an empty EndOfLife is one upstream has not dated yet (nothing is refused for it).
var supportMatrix = []Support{
	{Project: "cert-manager", Line: "1.21", KubeMin: "1.33", KubeMax: "1.36", Released: "2026-07-08",
		// Supported "until the release of 1.23" (at least two later minors); 1.22 was planned
		// for about November 2026, so about March 2027: not dated yet.
		Source: "cert-manager/website@776e5dba:content/docs/releases/README.md (supported releases table)"},
	{Project: "istio", Line: "1.24", KubeMin: "1.28", KubeMax: "1.31", Released: "2024-11-07", EndOfLife: "2025-06-24",
		Source: "istio.io/latest/docs/releases/supported-releases (as endoflife-date/endoflife.date@0118c303:products/istio.md records it)"},
	{Project: "istio", Line: "1.30", KubeMin: "1.32", KubeMax: "1.36", Released: "2026-05-18", EndOfLife: "2026-11-30",
		// Six weeks after 1.32.0; the support table said "~Nov 2026", recorded as its last day.
		Source: "istio/istio.io:content/en/news/releases/1.30.x/announcing-1.30 (Kubernetes 1.32 to 1.36); end of life: endoflife-date/endoflife.date@a70eca33:products/istio.md"},
	{Project: "istio", Line: "1.31", KubeMin: "1.32", KubeMax: "1.36", Released: "2026-08-20",
		// Six weeks after 1.33.0: not dated yet.
		Source: "istio/istio.io:content/en/news/releases/1.31.x/announcing-1.31 (Kubernetes 1.32 to 1.36)"},
	{Project: "istio", Line: "1.32", KubeMin: "1.33", KubeMax: "1.37", Released: "2026-10-21",
		// No announcement of 1.32 is readable here: the released day is istio.io/api v1.32.0's
		// module time, and the Kubernetes range is inferred from Istio's rule of the five
		// newest Kubernetes minors at release (1.30 and 1.31: 1.32-1.36; Kubernetes 1.37 came
		// out 2026-08-26). Six weeks after 1.34.0: not dated yet.
		Source: "istio.io/api@v1.32.0 (module time); range inferred from istio.io/latest/docs/releases/supported-releases"},
	{Project: "cnpg", Line: "1.30", KubeMin: "1.34", KubeMax: "1.36", Released: "2026-06-29", EndOfLife: "2026-12-31",
		// The table says "~ Dec 2026" (three months after 1.31.0), recorded as its last day.
		// 1.31's CRDs are not in ../shared/upstream, so the pin stays on 1.30.
		Source: "cloudnative-pg/cloudnative-pg@a95a534d:docs/src/supported_releases.md; docs/src/release_notes/v1.30.md (Kubernetes 1.34 to 1.36)"},
	{Project: "minio-operator", Line: "7.1", KubeMin: "1.30", Released: "2025-04-23",
		// No newest Kubernetes and no end of support stated: 7.1.1 is the operator's last
		// release, and the MinIO community server is archived (docs/cluster.md).
		Source: "minio/operator@v7.1.1:README.md (\"requires Kubernetes version 1.30.0 or later\")"},
	{Project: "rabbitmq-cluster-operator", Line: "2.22", KubeMin: "1.19", Released: "2026-07-01",
		// "Should work with any supported Kubernetes version": no newest stated; its CI tests
		// 1.31 to 1.35.
		Source: "rabbitmq/cluster-operator@v2.22.3:README.md; rabbitmq.com/kubernetes/operator/install-operator (1.19 or later)"},
	{Project: "rabbitmq-messaging-topology-operator", Line: "1.20", KubeMin: "1.31", Released: "2026-07-13",
		// No range stated: the oldest Kubernetes of its CI (1.31 to 1.35).
		Source: "rabbitmq/messaging-topology-operator@v1.20.1:.github/workflows/pr.yml, build-test-publish.yml (CI matrix)"},
}

// SupportMatrix returns the rows, sorted by project and line (tfrs version, the docs).
func SupportMatrix() []Support {
	out := append([]Support(nil), supportMatrix...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Project != out[j].Project {
			return out[i].Project < out[j].Project
		}
		return compareMinor(out[i].Line, out[j].Line) < 0
	})
	return out
}

// PinnedSupport is one pinned project with its support row (`tfrs version`, the docs).
type PinnedSupport struct {
	Project string `json:"project"`
	Pinned  string `json:"pinned"`
	// Support is the row of the pinned line; zero when the matrix has none (a test fails).
	Support Support `json:"support"`
}

// PinnedSupports are the pinned projects, sorted, each with its row.
func PinnedSupports() []PinnedSupport {
	var out []PinnedSupport
	for _, u := range UpstreamCRDs() {
		row, _ := supportRow(u.Project, u.Version)
		out = append(out, PinnedSupport{Project: u.Project, Pinned: u.Version, Support: row})
	}
	return out
}

// SupportEndingSoon is how close an end of support must be to be warned about.
const SupportEndingSoon = 30 * 24 * time.Hour

// Support finding reasons: the Supported condition's reason when one applies, most severe first.
const (
	SupportPastEndOfLife   = "PastEndOfLife"
	SupportKubeTooOld      = "KubernetesTooOld"
	SupportKubeTooNew      = "KubernetesTooNew"
	SupportEndOfLifeSoon   = "EndOfLifeSoon"
	SupportVersionUnknown  = "VersionNotInMatrix"
	SupportAllowedByPolicy = "AllowedUnsupported"
)

// SupportFinding is one component outside its support, or unknown to the matrix.
type SupportFinding struct {
	Project string `json:"project"`
	Version string `json:"version"` // the effective version
	Reason  string `json:"reason"`
	// Refused: the run stops here (a refusal spec.allowUnsupported has not lifted).
	Refused bool   `json:"refused"`
	Message string `json:"message"`
	// Field is the component's spec field ("spec.istio").
	Field string `json:"field"`
}

// clusterProjects are the projects each enabled component installs, with their effective
// version and how the spec names the component. Istio's ingress gateway follows istiod's
// line and installs no project of its own.
func clusterProjects(s *v1alpha1.TFRClusterSpec) []projectVersion {
	comps := []struct {
		id, field string
		src       v1alpha1.ComponentSource
	}{
		{ClusterCertManager, "certManager", s.CertManager},
		{ClusterIstio, "istio", s.Istio},
		{ClusterCNPGOperator, "cnpgOperator", s.CNPGOperator},
		{ClusterMinIOOperator, "minioOperator", s.MinIOOperator},
		{ClusterRabbitMQOperator, "rabbitmqOperator", s.RabbitMQOperator},
	}
	var out []projectVersion
	for _, c := range comps {
		if !c.src.IsEnabled() {
			continue
		}
		pin := pinnedSources[c.id]
		for _, a := range pin.Artifacts {
			if a.CRDs == "" {
				continue
			}
			// A localPath holds the pinned version unless spec.<component>.version says which it
			// is: an air-gapped cluster's copies of what TFRS pins.
			out = append(out, projectVersion{project: a.CRDs, field: "spec." + c.field, version: pin.version(a, c.src)})
		}
	}
	return out
}

type projectVersion struct {
	project, version, field string
}

// SupportFindings checks the cluster's components against the matrix for a cluster running
// Kubernetes kube ("v1.37.2", "1.37", or a provider's "v1.37.2-gke.100") on the day now.
func SupportFindings(x *v1alpha1.TFRCluster, kube string, now time.Time) []SupportFinding {
	kubeMinor := minorOf(kube)
	allowed := map[string]bool{}
	for _, p := range x.Spec.AllowUnsupported {
		allowed[p] = true
	}
	var out []SupportFinding
	for _, pv := range clusterProjects(&x.Spec) {
		f := checkSupport(pv, kubeMinor, now)
		if f == nil {
			continue
		}
		if f.Refused && allowed[pv.project] {
			f.Refused = false
			f.Message += "; allowed by spec.allowUnsupported"
		}
		out = append(out, *f)
	}
	return out
}

// checkSupport is one project's finding, nil when it is inside its support.
func checkSupport(pv projectVersion, kube string, now time.Time) *SupportFinding {
	f := &SupportFinding{Project: pv.project, Version: pv.version, Field: pv.field}
	row, ok := supportRow(pv.project, pv.version)
	if !ok {
		f.Reason = SupportVersionUnknown
		f.Message = fmt.Sprintf("%s %s (%s.version) is not in TFRS's support matrix: its support is not checked", pv.project, pv.version, pv.field)
		return f
	}
	eol, _ := time.Parse(time.DateOnly, row.EndOfLife)
	switch {
	case row.EndOfLife != "" && !now.Before(eol):
		f.Reason, f.Refused = SupportPastEndOfLife, true
		f.Message = fmt.Sprintf("%s %s reached its end of support on %s (%s): move %s.version to a supported release, or name %s in spec.allowUnsupported",
			pv.project, pv.version, row.EndOfLife, row.Source, pv.field, pv.project)
	case kube != "" && row.KubeMin != "" && compareMinor(kube, row.KubeMin) < 0:
		f.Reason, f.Refused = SupportKubeTooOld, true
		f.Message = fmt.Sprintf("%s %s supports Kubernetes %s, and the cluster runs %s: upgrade the cluster, pin an older %s in %s.version, or name %s in spec.allowUnsupported",
			pv.project, pv.version, row.kubeRange(), kube, pv.project, pv.field, pv.project)
	case kube != "" && row.KubeMax != "" && compareMinor(kube, row.KubeMax) > 0:
		f.Reason = SupportKubeTooNew
		f.Message = fmt.Sprintf("%s %s supports Kubernetes %s, and the cluster runs %s: upstream has not tested this pair (%s)",
			pv.project, pv.version, row.kubeRange(), kube, row.Source)
	case row.EndOfLife != "" && eol.Sub(now) < SupportEndingSoon:
		f.Reason = SupportEndOfLifeSoon
		f.Message = fmt.Sprintf("%s %s reaches its end of support on %s, in %d days (%s)",
			pv.project, pv.version, row.EndOfLife, int(eol.Sub(now).Hours()/24)+1, row.Source)
	default:
		return nil
	}
	return f
}

func (s Support) kubeRange() string {
	if s.KubeMax == "" {
		return s.KubeMin + " and newer"
	}
	return s.KubeMin + " to " + s.KubeMax
}

// supportRow is the row of project's line of version.
func supportRow(project, version string) (Support, bool) {
	line := minorOf(version)
	for _, s := range supportMatrix {
		if s.Project == project && s.Line == line {
			return s, true
		}
	}
	return Support{}, false
}

// minorOf is the "major.minor" of a version ("v1.37.2-gke.100" → "1.37"), "" when it has none.
func minorOf(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".", 3)
	if len(parts) < 2 {
		return ""
	}
	minor := parts[1]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i] // "37+" (EKS, GKE report a "+")
	}
	if _, err := strconv.Atoi(parts[0]); err != nil || minor == "" {
		return ""
	}
	return parts[0] + "." + minor
}

// compareMinor orders "major.minor" versions numerically.
func compareMinor(a, b string) int {
	pa, pb := strings.SplitN(a, ".", 2), strings.SplitN(b, ".", 2)
	for i := range 2 {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// SupportErrors are the refusals of findings, as the validation errors the doors show: at
// the component's version field, which is what changes to fix it.
func SupportErrors(findings []SupportFinding) field.ErrorList {
	var out field.ErrorList
	for _, f := range findings {
		if f.Refused {
			out = append(out, field.Forbidden(field.NewPath(f.Field, "version"), f.Message))
		}
	}
	return out
}
