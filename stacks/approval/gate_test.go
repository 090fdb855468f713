package approval

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

func change(op engine.StepOp, typ string) diff.Change {
	c := diff.Change{Stack: "tenant.default.acme", Op: op, Type: typ, Name: "x"}
	c.DataLoss = diff.IsDataLoss(c)
	return c
}

func report(cs ...diff.Change) *diff.Report {
	r := &diff.Report{Changes: cs}
	for _, c := range cs {
		if c.DataLoss {
			r.DataLoss = append(r.DataLoss, c)
		}
	}
	return r
}

var (
	harmless   = change(engine.StepUpdate, "kubernetes:apps/v1:Deployment")
	replacePVC = change(engine.StepReplace, diff.TypePVC)
	deletePG   = change(engine.StepDelete, diff.TypeCNPGCluster)
)

// Gate: which previewed changes wait.
func TestGate(t *testing.T) {
	cases := []struct {
		mode v1alpha1.ApprovalMode
		rep  *diff.Report
		want Reason
	}{
		{v1alpha1.ApprovalAuto, report(replacePVC), ""},
		{v1alpha1.ApprovalManual, report(harmless), ReasonManual},
		{v1alpha1.ApprovalManual, report(), ""}, // nothing to review
		{v1alpha1.ApprovalOnDataLoss, report(harmless), ""},
		{v1alpha1.ApprovalOnDataLoss, report(harmless, replacePVC), ReasonDataLoss},
		{v1alpha1.ApprovalOnDataLoss, report(deletePG), ReasonDataLoss},
		{v1alpha1.ApprovalOnDataLoss, report(change(engine.StepReplace, "kubernetes:core/v1:Secret")), ""},
		{"", report(deletePG), ReasonDataLoss},                                                     // the default is OnDataLoss
		{v1alpha1.ApprovalManual, &diff.Report{Skipped: "waits for TFRTenant acme"}, ReasonManual}, // not fully previewed: review it
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, Gate(tc.mode, tc.rep), "%q over %v", tc.mode, tc.rep.Changes)
	}
}

// The gate's rule of which ups plan, as every door applies it: OnDataLoss plans only once a
// stack holds something, Manual always, Auto never.
func TestNeedsPlan(t *testing.T) {
	for _, c := range []struct {
		mode   v1alpha1.ApprovalMode
		upDone bool
		want   bool
	}{
		{v1alpha1.ApprovalAuto, false, false},
		{v1alpha1.ApprovalAuto, true, false},
		{v1alpha1.ApprovalManual, false, true},
		{v1alpha1.ApprovalManual, true, true},
		{v1alpha1.ApprovalOnDataLoss, false, false},
		{v1alpha1.ApprovalOnDataLoss, true, true},
		{"", true, true}, // the default is OnDataLoss
	} {
		assert.Equal(t, c.want, NeedsPlan(c.mode, c.upDone), "%q, up done %v", c.mode, c.upDone)
	}
}

// apiModes are the ApprovalMode constants declared in api/v1alpha1, read from its source so
// that a new constant is seen without editing this test.
func apiModes(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join("..", "..", "api", "v1alpha1")
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return filepath.Ext(fi.Name()) == ".go" }, 0)
	require.NoError(t, err)
	var modes []string
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "ApprovalMode" {
						continue
					}
					for _, v := range vs.Values {
						lit, ok := v.(*ast.BasicLit)
						require.True(t, ok, "an ApprovalMode constant that is not a literal")
						s, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						modes = append(modes, s)
					}
				}
			}
		}
	}
	sort.Strings(modes)
	return modes
}

// crdModes are the enums of every spec.approval.mode (and spec.personal.approval.mode) in the
// generated CRDs: what the API server admits.
func crdModes(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	found := map[string][]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			if l, ok := v.([]any); ok {
				for _, x := range l {
					walk(path, x)
				}
			}
			return
		}
		if props, ok := m["properties"].(map[string]any); ok {
			a, _ := props["approval"].(map[string]any)
			if ap, ok := a["properties"].(map[string]any); ok {
				if mode, ok := ap["mode"].(map[string]any); ok {
					var enum []string
					for _, e := range mode["enum"].([]any) {
						enum = append(enum, e.(string))
					}
					sort.Strings(enum)
					found[path+".approval.mode"] = enum
				}
			}
		}
		for k, x := range m {
			walk(path+"."+k, x)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var doc any
		require.NoError(t, yaml.Unmarshal(b, &doc))
		walk(filepath.Base(f), doc)
	}
	return found
}

// Every approval mode the API declares and admits has its rule here, and the rule holds
// together across the doors: adding a mode means adding its row to modes (and the API enum),
// nothing in the doors.
func TestEveryApprovalMode(t *testing.T) {
	declared := apiModes(t)
	require.NotEmpty(t, declared)
	enums := crdModes(t)
	require.NotEmpty(t, enums, "no approval.mode in the CRDs")
	t.Logf("%d modes declared, %d approval.mode enums in the CRDs", len(declared), len(enums))
	for where, enum := range enums {
		assert.Equal(t, declared, enum, "%s admits other modes than api/v1alpha1 declares", where)
	}
	assert.Contains(t, declared, string(v1alpha1.ApprovalSpec{}.Effective()), "the default mode is declared")
	var known []string
	for m := range modes {
		known = append(known, string(m))
	}
	sort.Strings(known)
	assert.Equal(t, declared, known, "the gate's table has a row for exactly the declared modes")

	for _, name := range declared {
		mode := v1alpha1.ApprovalMode(name)
		t.Run(name, func(t *testing.T) {
			require.True(t, Known(mode))
			holdsLoss := Gate(mode, report(harmless, deletePG)) != ""
			holdsAny := Gate(mode, report(harmless)) != ""
			// Nothing to review never waits.
			assert.Empty(t, Gate(mode, report()), "a preview without changes waits")
			// A mode that holds a harmless change holds a data-losing one too.
			assert.False(t, holdsAny && !holdsLoss, "holds a harmless change but not data loss")
			// The doors plan exactly the ups the gate may hold: a stack with resources plans
			// iff some change can wait; a first up (nothing to lose) iff every change waits.
			assert.Equal(t, holdsLoss, NeedsPlan(mode, true), "NeedsPlan on a stack with resources")
			assert.Equal(t, holdsAny, NeedsPlan(mode, false), "NeedsPlan on a first up")
			// The CLI, which cannot hold a change, refuses a plain up exactly when every change waits.
			assert.Equal(t, holdsAny, ReviewsEveryChange(mode), "ReviewsEveryChange")
			// A reason a door shows comes with its explanation.
			for _, rep := range []*diff.Report{report(harmless), report(deletePG)} {
				if why := Gate(mode, rep); why != "" {
					assert.NotEqual(t, string(why), Explain(why), "%s has no explanation", why)
				}
			}
		})
	}
}

func TestExplain(t *testing.T) {
	assert.Equal(t, "spec.approval.mode Manual", Explain(ReasonManual))
	assert.Equal(t, "spec.approval.mode OnDataLoss: stateful data would be replaced or deleted", Explain(ReasonDataLoss))
	assert.Equal(t, "a saved preview", Explain(ReasonRequested))
	assert.Equal(t, "Other", Explain("Other"))
}
