//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// TestClusterSupportMatrix: before a cluster's program runs, the runner reads the cluster's
// Kubernetes version from the API server (here the local control plane's) and checks every
// component against the support matrix. A preview carries the
// warnings; a component on a line past its end of support is refused at its version field
// before any stack exists, and runs (with the warning) once spec.allowUnsupported names it.
func TestClusterSupportMatrix(t *testing.T) {
	// As the cluster's admin: a preview of a new cluster as the least-privileged operator
	// fails the server-side dry run of the ownership policy's binding (its policy does not
	// exist yet), which is not what this test is about.
	e := newEnv(t, 10*time.Minute)
	kc, err := e.cp.Kubeconfig()
	require.NoError(t, err)
	run, op := runner.New(e.eng, runner.Options{Kubeconfig: kc}), runner.Op{Door: engine.ManagedByCLI}
	admin, err := e.cp.Client()
	require.NoError(t, err)
	v, err := admin.Discovery().ServerVersion()
	require.NoError(t, err)
	tc := standInCluster(t)

	out, err := run.Preview(e.ctx, tc, op)
	require.NoError(t, err)
	want := stacks.SupportFindings(tc, v.GitVersion, time.Now())
	require.Equal(t, want, out.Support, "the findings for Kubernetes %s", v.GitVersion)
	rep := diff.FromOutcome(out)
	require.Len(t, rep.Warnings, len(want))
	t.Logf("Kubernetes %s: %d warnings %v", v.GitVersion, len(want), rep.Warnings)

	// A line past its end of support: refused before anything runs.
	var eol stacks.Support
	for _, s := range stacks.SupportMatrix() {
		if s.Project == "istio" && s.EndOfLife != "" && s.EndOfLife < time.Now().Format(time.DateOnly) {
			eol = s
		}
	}
	require.NotEmpty(t, eol.Line, "the matrix keeps an Istio line past its end of support")
	old := tc.DeepCopy()
	old.Name = "e2e-eol"
	old.Spec.Istio.Version = eol.Line + ".0"
	// The fixture allows every project (it must not stop working on a calendar date): all but
	// Istio here.
	old.Spec.AllowUnsupported = slices.DeleteFunc(slices.Clone(tc.Spec.AllowUnsupported), func(p string) bool { return p == "istio" })
	_, err = run.Preview(e.ctx, old, op)
	require.ErrorIs(t, err, kinds.ErrInvalid)
	require.ErrorContains(t, err, "spec.istio.version")
	require.ErrorContains(t, err, "end of support")
	_, err = e.eng.Status(e.ctx, "cluster."+old.Name)
	require.ErrorIs(t, err, engine.ErrNotFound, "nothing ran: no stack")

	old.Spec.AllowUnsupported = tc.Spec.AllowUnsupported
	out, err = run.Preview(e.ctx, old, op)
	require.NoError(t, err)
	var found bool
	for _, f := range out.Support {
		if f.Project == "istio" {
			found = true
			require.Equal(t, stacks.SupportPastEndOfLife, f.Reason)
			require.False(t, f.Refused)
		}
	}
	require.True(t, found, "the allowed component is still warned about: %+v", out.Support)
}
