package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

var _ Engine = (*enginetest.Engine)(nil)

// fakeEngine keeps stacks in memory and logs every call (see package enginetest). Programs
// are not run (the programs have their own mock tests); an up marks the stack ready with
// canned outputs.
type fakeEngine struct{ *enginetest.Engine }

func newFake() fakeEngine { return fakeEngine{enginetest.New()} }

// put adds a stack with tags and canned outputs.
func (f fakeEngine) put(stack string, ready bool, tags map[string]string) {
	f.Put(stack, enginetest.Stack{Tags: tags, Ready: ready, Outputs: enginetest.DefaultOutputs(stack)})
}

func cluster() *v1alpha1.TFRCluster {
	return &v1alpha1.TFRCluster{ObjectMeta: metav1.ObjectMeta{Name: "main"}, Spec: v1alpha1.TFRClusterSpec{Domain: "tfrobot.example.com"}}
}

func tenant(name string, typ v1alpha1.TenantType) *v1alpha1.TFRTenant {
	t := &v1alpha1.TFRTenant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
		Spec: v1alpha1.TFRTenantSpec{ClusterRef: "main", Type: typ}}
	if typ == v1alpha1.TenantPersonal {
		t.Spec.JobType = "chat"
	}
	return t
}

func server(name string) *v1alpha1.TFRServer {
	return &v1alpha1.TFRServer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
		Spec: v1alpha1.TFRServerSpec{TenantRef: "acme", RobotID: "r-" + name, RobotType: "chat", Image: "registry.example.com/tfrobot/server:1"}}
}

var operatorOp = Op{Door: engine.ManagedByOperator}

func TestInvalidSpecRunsNothing(t *testing.T) {
	f := newFake()
	r := New(f, Options{Namespaces: absentNamespaces{}})
	bad := tenant("acme", v1alpha1.TenantEnterprise)
	bad.Spec.ClusterRef = ""
	bad.Spec.DeletionPolicy = "Orphan"
	for name, call := range map[string]func() (*Outcome, error){
		"up":      func() (*Outcome, error) { return r.Up(context.Background(), bad, operatorOp) },
		"preview": func() (*Outcome, error) { return r.Preview(context.Background(), bad, operatorOp) },
		"destroy": func() (*Outcome, error) { return r.Destroy(context.Background(), bad, operatorOp) },
	} {
		_, err := call()
		require.ErrorIs(t, err, kinds.ErrInvalid, name)
		var ie *kinds.InvalidError
		require.ErrorAs(t, err, &ie)
		assert.Contains(t, err.Error(), "spec.clusterRef", name)
		assert.Contains(t, err.Error(), "spec.deletionPolicy", name)
	}
	assert.Empty(t, f.Ops())
}

func TestTenantWaitsForCluster(t *testing.T) {
	f := newFake()
	r := New(f, Options{Namespaces: absentNamespaces{}})
	_, err := r.Up(context.Background(), tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	var pe *kinds.ParentError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, kinds.ErrParentNotReady)
	assert.Equal(t, v1alpha1.KindTFRCluster, pe.Kind)
	assert.Equal(t, "main", pe.Name)
	assert.Contains(t, err.Error(), "does not exist")

	f.put("cluster.main", false, nil)
	_, err = r.Up(context.Background(), tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	require.ErrorIs(t, err, kinds.ErrParentNotReady)

	f.put("cluster.main", true, nil)
	f.Edit("cluster.main", func(s *enginetest.Stack) {
		s.Outputs[stacks.ClusterOutputRabbitMQOperatorReady] = program.NewOutput(false, false)
	})
	_, err = r.Up(context.Background(), tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	require.ErrorIs(t, err, kinds.ErrParentNotReady)
	assert.Contains(t, err.Error(), "RabbitMQ operator")
	assert.Empty(t, f.Ops(), "nothing runs while the parent is not ready")
}

func TestEnterpriseTenantUp(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	r := New(f, Options{Namespaces: absentNamespaces{}, Kubeconfig: testKubeconfig, KubeContext: "dev"})
	out, err := r.Up(context.Background(), tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	require.NoError(t, err)
	assert.Equal(t, []string{"up tenant.team.acme"}, f.Ops())
	req := f.Request("up tenant.team.acme")
	assert.Equal(t, map[string]string{engine.TagParent: "cluster.main", engine.TagObject: "TFRTenant/team/acme",
		engine.TagImmutable: `{"spec.clusterRef":"main","spec.jobType":"","spec.namespace":"acme","spec.type":"enterprise"}`}, req.Tags)
	assert.Equal(t, engine.ManagedByOperator, req.ManagedBy)
	assert.True(t, req.Config[ConfigKubeconfig].Secret, "the kubeconfig is secret config")
	assert.Equal(t, "dev", req.Config[ConfigKubeContext].Value)
	assert.Equal(t, "tenant.team.acme", out.Target.Stack)
	assert.NotNil(t, out.Own())
	assert.Equal(t, 1, out.Changes()[engine.StepCreate])
}

func TestDoors(t *testing.T) {
	cases := []struct {
		owner, door engine.ManagedBy
		refused     bool
	}{
		{engine.ManagedByOperator, engine.ManagedByAPI, true},
		{engine.ManagedByOperator, engine.ManagedByCLI, true},
		{engine.ManagedByAPI, engine.ManagedByOperator, true},
		{engine.ManagedByCLI, engine.ManagedByOperator, true},
		{engine.ManagedByAPI, engine.ManagedByCLI, false},
		{engine.ManagedByCLI, engine.ManagedByAPI, false},
		{engine.ManagedByOperator, engine.ManagedByOperator, false},
	}
	for _, c := range cases {
		f := newFake()
		f.put("cluster.main", true, map[string]string{engine.TagManagedBy: string(c.owner)})
		r := New(f, Options{Namespaces: absentNamespaces{}})
		_, err := r.Up(context.Background(), cluster(), Op{Door: c.door})
		if c.refused {
			var me *ManagedElsewhereError
			require.ErrorAs(t, err, &me, "%s on a %s stack", c.door, c.owner)
			assert.Equal(t, c.owner, me.ManagedBy)
			assert.Empty(t, f.Ops())
			if c.owner == engine.ManagedByOperator {
				assert.Contains(t, err.Error(), "edit the custom resource")
			}
			// Preview is read-only and always allowed.
			_, err = r.Preview(context.Background(), cluster(), Op{Door: c.door})
			require.NoError(t, err)
		} else {
			require.NoError(t, err, "%s on a %s stack", c.door, c.owner)
		}
	}
}

func TestPersonalTenantsShareOneStack(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	r := New(f, Options{Namespaces: absentNamespaces{}})
	ctx := context.Background()

	_, err := r.Up(ctx, tenant("alice", v1alpha1.TenantPersonal), Op{Door: engine.ManagedByAPI})
	require.NoError(t, err)
	shared := "tenant.personal-chat._shared"
	assert.Equal(t, []string{"up " + shared, "up tenant.team.alice"}, f.Ops(), "the first tenant brings the shared stack up")
	assert.Equal(t, shared, f.Request("up tenant.team.alice").Tags[engine.TagShared])
	assert.Equal(t, "cluster.main", f.Request("up " + shared).Tags[engine.TagParent])

	f.Reset()
	_, err = r.Up(ctx, tenant("bob", v1alpha1.TenantPersonal), Op{Door: engine.ManagedByAPI})
	require.NoError(t, err)
	assert.Equal(t, []string{"up tenant.team.bob"}, f.Ops(), "a ready shared stack is reused")

	// Destroying one member keeps the shared middleware; the last one takes it along.
	f.Reset()
	_, err = r.Destroy(ctx, tenant("alice", v1alpha1.TenantPersonal), Op{Door: engine.ManagedByAPI})
	require.NoError(t, err)
	assert.Equal(t, []string{"destroy tenant.team.alice", "remove tenant.team.alice"}, f.Ops())
	f.Reset()
	out, err := r.Destroy(ctx, tenant("bob", v1alpha1.TenantPersonal), Op{Door: engine.ManagedByAPI})
	require.NoError(t, err)
	assert.Equal(t, []string{"destroy tenant.team.bob", "remove tenant.team.bob", "destroy " + shared, "remove " + shared}, f.Ops())
	assert.Len(t, out.Stacks, 2)
}

func TestSharedOwnerDrivesTheSharedStack(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	alice := tenant("alice", v1alpha1.TenantPersonal)
	owner := func(context.Context, string) (v1alpha1.Object, error) { return alice, nil }
	r := New(f, Options{Namespaces: absentNamespaces{}, SharedOwner: owner})
	ctx := context.Background()

	// Bob is not the owner: he waits for the shared stack instead of creating it.
	_, err := r.Up(ctx, tenant("bob", v1alpha1.TenantPersonal), operatorOp)
	var pe *kinds.ParentError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Name, "alice")
	assert.Empty(t, f.Ops())

	// The owner runs the shared stack every time (its spec changes reach the middleware).
	_, err = r.Up(ctx, alice, operatorOp)
	require.NoError(t, err)
	_, err = r.Up(ctx, alice, operatorOp)
	require.NoError(t, err)
	shared := "tenant.personal-chat._shared"
	assert.Equal(t, []string{"up " + shared, "up tenant.team.alice", "up " + shared, "up tenant.team.alice"}, f.Ops())

	f.Reset()
	_, err = r.Up(ctx, tenant("bob", v1alpha1.TenantPersonal), operatorOp)
	require.NoError(t, err)
	assert.Equal(t, []string{"up tenant.team.bob"}, f.Ops())
}

func TestPreviewOfNewPersonalTenant(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	r := New(f, Options{Namespaces: absentNamespaces{}})
	out, err := r.Preview(context.Background(), tenant("alice", v1alpha1.TenantPersonal), Op{Door: engine.ManagedByCLI})
	require.NoError(t, err)
	assert.Equal(t, []string{"preview tenant.personal-chat._shared"}, f.Ops(),
		"without shared outputs there is nothing to preview the member with; the shared preview shows everything")
	assert.Len(t, out.Stacks, 1)
}

func TestServerWaitsForTenant(t *testing.T) {
	f := newFake()
	r := New(f, Options{Namespaces: absentNamespaces{}})
	_, err := r.Up(context.Background(), server("s1"), operatorOp)
	var pe *kinds.ParentError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, v1alpha1.KindTFRTenant, pe.Kind)
	assert.Equal(t, "acme", pe.Name)
	assert.Equal(t, "tenant.team.acme", pe.Stack)
	assert.Empty(t, f.Ops())

	// A tenant made over HTTP parents a server CR just the same.
	f.put("tenant.team.acme", true, map[string]string{engine.TagManagedBy: string(engine.ManagedByAPI)})
	_, err = r.Up(context.Background(), server("s1"), operatorOp)
	if err != nil {
		// Until the server program lands its error surfaces here; the runner's part (the
		// request) is what this test checks.
		require.NotErrorIs(t, err, kinds.ErrParentNotReady)
	}
	assert.Equal(t, []string{"up server.team.s1"}, f.Ops())
	assert.Equal(t, "tenant.team.acme", f.Request("up server.team.s1").Tags[engine.TagParent])
}

func TestParentWithDependentsIsNotDestroyed(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	f.put("tenant.team.acme", true, map[string]string{engine.TagParent: "cluster.main"})
	f.put("server.team.s1", true, map[string]string{engine.TagParent: "tenant.team.acme"})
	f.put("server.team.other", true, map[string]string{engine.TagParent: "tenant.team.zeta"})
	r := New(f, Options{Namespaces: absentNamespaces{}})
	ctx := context.Background()

	_, err := r.Destroy(ctx, tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	var de *DependentsError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, []string{"server.team.s1"}, de.Dependents)
	_, err = r.Destroy(ctx, cluster(), operatorOp)
	require.ErrorIs(t, err, ErrDependentsExist)
	assert.Empty(t, f.Ops(), "nothing is destroyed while dependents exist")

	_, err = r.Destroy(ctx, server("s1"), operatorOp)
	require.NoError(t, err)
	_, err = r.Destroy(ctx, tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	require.NoError(t, err)
	_, err = r.Destroy(ctx, cluster(), operatorOp)
	require.NoError(t, err)
	assert.Equal(t, []string{"destroy server.team.s1", "remove server.team.s1", "destroy tenant.team.acme",
		"remove tenant.team.acme", "destroy cluster.main", "remove cluster.main"}, f.Ops())

	// Destroying what is already gone succeeds without touching anything.
	f.Reset()
	_, err = r.Destroy(ctx, cluster(), operatorOp)
	require.NoError(t, err)
	assert.Equal(t, []string{"destroy cluster.main"}, f.Ops())
}

func TestFailedUpIsReturned(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	boom := &engine.OpError{Op: engine.OpUp, Stack: "tenant.team.acme", Kind: engine.ErrConflict}
	f.Hook = enginetest.FailOn(boom, "tenant.team.acme", engine.OpUp)
	r := New(f, Options{Namespaces: absentNamespaces{}})
	_, err := r.Up(context.Background(), tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	require.True(t, errors.Is(err, engine.ErrConflict))
}

// Stack names are shortened with a hash (stackname), so two objects' names can be forged to
// share one stack. A real sha256 collision cannot be found, so the situation is built: the
// long-named tenant's stack already exists, tagged with another object's identity. Every
// operation of the tenant is refused before anything runs, naming metadata.name; an untagged
// stack (made before the tag existed) is taken and tagged on the next up.
func TestStackOfAnotherObjectIsRefused(t *testing.T) {
	long, ns := strings.Repeat("a", 30)+"-"+strings.Repeat("b", 30), "team-"+strings.Repeat("n", 55)
	obj := tenant(long, v1alpha1.TenantEnterprise)
	obj.Namespace = ns
	target, _, err := kinds.Prepare(obj)
	require.NoError(t, err)
	require.Less(t, len(target.Stack), len("tenant."+ns+"."+long), "the stack name is shortened")
	self := "TFRTenant/" + ns + "/" + long
	ctx := context.Background()

	for _, door := range []engine.ManagedBy{engine.ManagedByOperator, engine.ManagedByAPI, engine.ManagedByCLI} {
		f := newFake()
		f.put("cluster.main", true, nil)
		f.put(target.Stack, true, map[string]string{engine.TagManagedBy: string(door), engine.TagObject: "TFRTenant/" + ns + "/the-forger"})
		r := New(f, Options{Namespaces: absentNamespaces{}})
		op := Op{Door: door}
		for name, call := range map[string]func() error{
			"up":      func() error { _, err := r.Up(ctx, obj, op); return err },
			"preview": func() error { _, err := r.Preview(ctx, obj, op); return err },
			"refresh": func() error { _, err := r.Refresh(ctx, obj, op); return err },
			"destroy": func() error { _, err := r.Destroy(ctx, obj, op); return err },
		} {
			err := call()
			var ce *StackClaimedError
			require.ErrorAs(t, err, &ce, "%s %s", door, name)
			require.ErrorIs(t, err, ErrStackClaimed)
			require.ErrorIs(t, err, ErrManagedElsewhere, "the doors' conflict mapping applies")
			assert.Contains(t, err.Error(), `metadata.name "`+long+`"`)
			assert.Contains(t, err.Error(), "TFRTenant/"+ns+"/the-forger")
			assert.Equal(t, self, ce.Object)
		}
		assert.Empty(t, f.Ops(), "%s: nothing ran on the other object's stack", door)
		st, _ := f.Stack(target.Stack)
		assert.Equal(t, "TFRTenant/"+ns+"/the-forger", st.Tags[engine.TagObject], "the owner's tag is untouched")
	}

	// A stack from before the tag: taken over by the next up, which records the object.
	f := newFake()
	f.put("cluster.main", true, nil)
	f.put(target.Stack, true, map[string]string{engine.TagManagedBy: string(engine.ManagedByOperator)})
	r := New(f, Options{Namespaces: absentNamespaces{}})
	_, err = r.Up(ctx, obj, operatorOp)
	require.NoError(t, err)
	st, _ := f.Stack(target.Stack)
	assert.Equal(t, self, st.Tags[engine.TagObject])
	// The same object again: accepted.
	_, err = r.Up(ctx, obj, operatorOp)
	require.NoError(t, err)
}

// absentNamespaces finds no namespace: every tenant creates its own.
type absentNamespaces struct{}

func (absentNamespaces) GetNamespace(context.Context, string) (bool, map[string]string, error) {
	return false, nil, nil
}

// TestUpRecordsTheRevision: an up asks for the build's revision and hands it to the engine as
// the tags a successful up writes; a preview asks nothing and records nothing.
func TestUpRecordsTheRevision(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	rev := v1alpha1.Revision{ID: "0123456789ab", Version: "v1.0.0", Commit: "c0ffee"}
	asked := 0
	r := New(f, Options{Namespaces: absentNamespaces{}, Revision: func() *v1alpha1.Revision { asked++; return &rev }})
	_, err := r.Preview(context.Background(), tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	require.NoError(t, err)
	assert.Zero(t, asked, "a preview does not name the build")
	assert.Nil(t, f.Request("preview tenant.team.acme").AppliedTags)
	_, err = r.Up(context.Background(), tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	require.NoError(t, err)
	applied := f.Request("up tenant.team.acme").AppliedTags
	assert.NotEmpty(t, applied[TagInputs], "and the digest of its inputs")
	delete(applied, TagInputs)
	assert.Equal(t, stacks.RevisionTags(&rev), applied)
	st, ok := f.Stack("tenant.team.acme")
	require.True(t, ok)
	assert.Equal(t, &rev, stacks.RevisionFromTags(st.Tags))
}
