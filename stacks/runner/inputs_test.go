package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// cluster reads, as a real cluster answers them; each may change under a test.
type clusterReads struct {
	ns      map[string]map[string]string // existing namespaces and their annotations
	version string
	api     stacks.APIServer
}

func (c *clusterReads) GetNamespace(_ context.Context, name string) (bool, map[string]string, error) {
	a, ok := c.ns[name]
	return ok, a, nil
}
func (c *clusterReads) GetKubeVersion(context.Context) (string, error) { return c.version, nil }
func (c *clusterReads) GetAPIServer(context.Context) (stacks.APIServer, error) {
	return c.api, nil
}

// fleet is a cluster and a tenant brought up by a runner of build rev.
type fleet struct {
	f    fakeEngine
	kube *clusterReads
	rev  v1alpha1.Revision
}

func (fl *fleet) runner() *Runner {
	return New(fl.f, Options{Namespaces: fl.kube, Revision: func() *v1alpha1.Revision { r := fl.rev; return &r }})
}

func newFleet(t *testing.T) *fleet {
	fl := &fleet{f: newFake(), kube: &clusterReads{ns: map[string]map[string]string{}, version: "v1.37.2"},
		rev: v1alpha1.Revision{ID: "aaaaaaaaaaaa", Version: "v1.0.0"}}
	r := fl.runner()
	ctx := context.Background()
	_, err := r.Up(ctx, cluster(), operatorOp)
	require.NoError(t, err)
	_, err = r.Up(ctx, tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	require.NoError(t, err)
	return fl
}

func unchanged(t *testing.T, r *Runner, obj v1alpha1.Object) bool {
	t.Helper()
	ok, err := r.Unchanged(context.Background(), obj)
	require.NoError(t, err)
	return ok
}

// Right after its up a stack is proven unchanged; each input the programs read, changed on
// its own, takes the proof away.
func TestUnchangedFollowsEveryInput(t *testing.T) {
	fl := newFleet(t)
	r := fl.runner()
	require.True(t, unchanged(t, r, cluster()), "the cluster, just brought up")
	require.True(t, unchanged(t, r, tenant("acme", v1alpha1.TenantEnterprise)), "the tenant, just brought up")

	changes := map[string]struct {
		obj    func() v1alpha1.Object
		change func(fl *fleet)
	}{
		"spec": {func() v1alpha1.Object {
			tn := tenant("acme", v1alpha1.TenantEnterprise)
			tn.Spec.DeletionPolicy = v1alpha1.DeletionDelete
			return tn
		}, func(*fleet) {}},
		"revision (another build)": {func() v1alpha1.Object { return tenant("acme", v1alpha1.TenantEnterprise) },
			func(fl *fleet) { fl.rev.ID = "bbbbbbbbbbbb" }},
		"a parent output": {func() v1alpha1.Object { return tenant("acme", v1alpha1.TenantEnterprise) },
			func(fl *fleet) {
				fl.f.Edit("cluster.main", func(s *enginetest.Stack) { s.Outputs["imageRegistry"] = program.NewOutput("mirror.example.com", false) })
			}},
		"a secret parent output (a rotated credential)": {func() v1alpha1.Object { return tenant("acme", v1alpha1.TenantEnterprise) },
			func(fl *fleet) {
				fl.f.Edit("cluster.main", func(s *enginetest.Stack) {
					s.Outputs["dockerConfigJSON"] = program.NewOutput(`{"auths":{"r":{"auth":"rotated"}}}`, true)
				})
			}},
		"the Kubernetes version": {func() v1alpha1.Object { return tenant("acme", v1alpha1.TenantEnterprise) },
			func(fl *fleet) { fl.kube.version = "v1.38.0" }},
		"the API server's addresses (a cluster input)": {func() v1alpha1.Object { return cluster() },
			func(fl *fleet) { fl.kube.api = stacks.APIServer{Ports: []int32{6443}} }},
		"a failed up since": {func() v1alpha1.Object { return tenant("acme", v1alpha1.TenantEnterprise) },
			func(fl *fleet) {
				fl.f.Edit("tenant.team.acme", func(s *enginetest.Stack) {
					s.Ready, s.Last = false, &engine.HistoryEntry{Kind: "update", Result: "failed"}
				})
			}},
		"a refresh that changed the state (stock Pulumi CLI)": {func() v1alpha1.Object { return tenant("acme", v1alpha1.TenantEnterprise) },
			func(fl *fleet) {
				fl.f.Edit("tenant.team.acme", func(s *enginetest.Stack) {
					s.Last = &engine.HistoryEntry{Kind: "refresh", Result: "succeeded", Changes: map[string]int{"same": 3, "update": 1}}
				})
			}},
		"a tfrs refresh that voided the proof": {func() v1alpha1.Object { return tenant("acme", v1alpha1.TenantEnterprise) },
			func(fl *fleet) { fl.f.Edit("tenant.team.acme", func(s *enginetest.Stack) { s.Tags[TagInputs] = "" }) }},
	}
	for name, c := range changes {
		t.Run(name, func(t *testing.T) {
			fl := newFleet(t)
			c.change(fl)
			assert.False(t, unchanged(t, fl.runner(), c.obj()), "%s must take the proof away", name)
		})
	}

	// A refresh that changed nothing keeps it.
	fl.f.Edit("tenant.team.acme", func(s *enginetest.Stack) {
		s.Last = &engine.HistoryEntry{Kind: "refresh", Result: "succeeded", Changes: map[string]int{"same": 3}}
	})
	assert.True(t, unchanged(t, r, tenant("acme", v1alpha1.TenantEnterprise)))
}

func TestUnchangedNeverProvesWhatItCannot(t *testing.T) {
	fl := newFleet(t)
	ctx := context.Background()
	r := fl.runner()

	// A personal tenant's shared stack is another object's.
	_, err := r.Up(ctx, tenant("solo", v1alpha1.TenantPersonal), operatorOp)
	require.NoError(t, err)
	assert.False(t, unchanged(t, r, tenant("solo", v1alpha1.TenantPersonal)))

	// A stack that does not exist, and a build that records no revision.
	assert.False(t, unchanged(t, r, tenant("new", v1alpha1.TenantEnterprise)))
	assert.False(t, unchanged(t, New(fl.f, Options{Namespaces: fl.kube}), cluster()))

	// A suspended object is refused as every operation refuses it.
	tn := tenant("acme", v1alpha1.TenantEnterprise)
	tn.Spec.Suspend = true
	_, err = r.Unchanged(ctx, tn)
	require.ErrorIs(t, err, ErrSuspended)

	// What a preview checks first is checked: another object's stack is refused.
	other := tenant("acme", v1alpha1.TenantEnterprise)
	fl.f.Edit("tenant.team.acme", func(s *enginetest.Stack) { s.Tags[engine.TagObject] = "TFRTenant/team/someone-else" })
	_, err = r.Unchanged(ctx, other)
	require.ErrorIs(t, err, ErrStackClaimed)

	// Nothing ran: the proof reads, it never operates.
	for _, c := range fl.f.Calls() {
		assert.NotRegexp(t, `^(preview|refresh|destroy) `, c)
	}
}

// A local chart's files are inputs too: an edit takes the proof away. A manifest URL's
// content is not known without fetching it, so its object is never proven.
func TestUnchangedFollowsLocalSources(t *testing.T) {
	dir := t.TempDir()
	chart := filepath.Join(dir, "Chart.yaml")
	require.NoError(t, os.WriteFile(chart, []byte("name: jaeger\nversion: 1.0.0\n"), 0o600))
	withChart := func() *v1alpha1.TFRTenant {
		tn := tenant("acme", v1alpha1.TenantEnterprise)
		tn.Spec.Jaeger.LocalPath = dir
		return tn
	}
	fl := newFleet(t)
	r := fl.runner()
	_, err := r.Up(context.Background(), withChart(), operatorOp)
	require.NoError(t, err)
	require.True(t, unchanged(t, r, withChart()))
	require.NoError(t, os.WriteFile(chart, []byte("name: jaeger\nversion: 1.0.1\n"), 0o600))
	assert.False(t, unchanged(t, r, withChart()), "the chart's files changed")

	c := cluster()
	c.Spec.CNPGOperator = v1alpha1.ComponentSource{ManifestURL: "https://mirror.example.com/cnpg.yaml"}
	_, err = r.Up(context.Background(), c, operatorOp)
	require.NoError(t, err)
	st, _ := fl.f.Stack("cluster.main")
	assert.Empty(t, st.Tags[TagInputs], "no proof recorded")
	assert.False(t, unchanged(t, r, c))

	// The files as they were: proven again. Then a local source that cannot be read here
	// proves nothing (the preview says why).
	require.NoError(t, os.WriteFile(chart, []byte("name: jaeger\nversion: 1.0.0\n"), 0o600))
	require.True(t, unchanged(t, r, withChart()))
	require.NoError(t, os.RemoveAll(dir))
	assert.False(t, unchanged(t, r, withChart()))
}

// Under a read memo a parent stack is read once for many proofs, and the answers are the same.
func TestReadMemoReadsEachParentOnce(t *testing.T) {
	fl := newFleet(t)
	r := fl.runner()
	ctx := context.Background()
	for _, n := range []string{"b", "c"} {
		_, err := r.Up(ctx, tenant(n, v1alpha1.TenantEnterprise), operatorOp)
		require.NoError(t, err)
	}
	fl.f.Reset()
	memo := WithReadMemo(ctx)
	for _, n := range []string{"acme", "b", "c"} {
		ok, err := r.Unchanged(memo, tenant(n, v1alpha1.TenantEnterprise))
		require.NoError(t, err)
		assert.True(t, ok, n)
	}
	assert.Equal(t, []string{"outputs cluster.main"}, fl.f.CallsOf(engine.OpOutputs), "the cluster's outputs, once")
	fl.f.Reset()
	for _, n := range []string{"acme", "b"} {
		assert.True(t, unchanged(t, r, tenant(n, v1alpha1.TenantEnterprise)))
	}
	assert.Len(t, fl.f.CallsOf(engine.OpOutputs), 2, "without the memo, once per proof")
}

// The namespace counts by the decision on it: absent before the first up and marked as the
// stack's after it make the same resources, so the first up proves; taken by another stack,
// the proof is refused as the preview would be.
func TestUnchangedFollowsTheNamespaceDecision(t *testing.T) {
	fl := newFleet(t)
	ctx := context.Background()
	fl.kube.ns["acme"] = map[string]string{stacks.AnnotationOwner: "tenant.team.acme"} // the up made it
	assert.True(t, unchanged(t, fl.runner(), tenant("acme", v1alpha1.TenantEnterprise)))
	fl.kube.ns["acme"] = map[string]string{stacks.AnnotationOwner: "tenant.other.x"}
	_, err := fl.runner().Unchanged(ctx, tenant("acme", v1alpha1.TenantEnterprise))
	require.ErrorIs(t, err, kinds.ErrInvalid)
	assert.Contains(t, err.Error(), "belongs to tenant stack tenant.other.x")
}
