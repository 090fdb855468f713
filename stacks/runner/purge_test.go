package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// robotTenant puts the tenant stack tenant.team.acme with outputs of typ and policy, and the
// server stack of s1 under it.
func robotTenant(f fakeEngine, typ v1alpha1.TenantType, policy string) {
	outs := program.Outputs{
		stacks.TenantOutputTenantType: program.NewOutput(string(typ), false),
		stacks.TenantOutputNamespace:  program.NewOutput("personal-chat", false),
	}
	if policy != "" {
		outs[stacks.TenantOutputDeletionPolicy] = program.NewOutput(policy, false)
	}
	f.Put("tenant.team.acme", enginetest.Stack{Ready: true, Outputs: enginetest.TenantOutputs(outs)})
	f.put("server.team.s1", true, map[string]string{engine.TagParent: "tenant.team.acme"})
}

// Destroying a personal robot of a job type whose deletionPolicy is Delete removes its data
// first, at every door: two ups of its own stack (stop, then the purge Job), each admitted
// as any up, then the destroy. Under Retain, for an enterprise robot, for a tenant stack made
// before the policy output and once the tenant stack is gone, the destroy runs alone.
func TestDestroyRemovesPersonalRobotData(t *testing.T) {
	ctx := context.Background()
	for _, door := range []engine.ManagedBy{engine.ManagedByOperator, engine.ManagedByAPI, engine.ManagedByCLI} {
		f := newFake()
		robotTenant(f, v1alpha1.TenantPersonal, "Delete")
		r := New(f, Options{Namespaces: absentNamespaces{}})
		purges, err := r.PurgesRobotData(ctx, server("s1"))
		require.NoError(t, err)
		assert.True(t, purges)
		f.Reset()
		out, err := r.Destroy(ctx, server("s1"), Op{Door: door})
		require.NoError(t, err, door)
		assert.Equal(t, []string{"up server.team.s1", "up server.team.s1", "destroy server.team.s1", "remove server.team.s1"}, f.Ops(), door)
		require.Len(t, out.Stacks, 3)
		assert.Contains(t, out.Own().Changes, engine.StepDelete, "Own is the destroy")
		for _, c := range f.Log() {
			if c.Op == engine.OpUp {
				assert.NotNil(t, c.Request.Admit, "a purge up is admitted as every up")
				assert.Equal(t, door, c.Request.ManagedBy)
			}
		}
		// The two programs: the first keeps no worker and runs no Job, the second adds only
		// the purge Job.
		var built [][]string
		for _, c := range f.Log() {
			if c.Op != engine.OpUp {
				continue
			}
			m := &pt.Mocks{}
			m.Run(t, program.WithCredentials(c.Request.Program, map[string]string{stacks.CredentialContentHashKey: "k"}, nil, nil))
			var jobs []string
			for _, reg := range m.Regs() {
				if reg.Type == "kubernetes:batch/v1:Job" || reg.Type == "kubernetes:apps/v1:Deployment" {
					jobs = append(jobs, reg.Type+"::"+reg.Name)
				}
			}
			built = append(built, jobs)
		}
		assert.Equal(t, [][]string{nil, {"kubernetes:batch/v1:Job::" + stacks.ServerDataPurge + "-job"}}, built)
	}

	for what, setup := range map[string]func(f fakeEngine){
		"retain":            func(f fakeEngine) { robotTenant(f, v1alpha1.TenantPersonal, "Retain") },
		"enterprise delete": func(f fakeEngine) { robotTenant(f, v1alpha1.TenantEnterprise, "Delete") },
		"no policy output":  func(f fakeEngine) { robotTenant(f, v1alpha1.TenantPersonal, "") },
		"tenant stack gone": func(f fakeEngine) {
			robotTenant(f, v1alpha1.TenantPersonal, "Delete")
			f.Drop("tenant.team.acme")
		},
	} {
		f := newFake()
		setup(f)
		f.Reset()
		r := New(f, Options{Namespaces: absentNamespaces{}})
		_, err := r.Destroy(ctx, server("s1"), operatorOp)
		require.NoError(t, err, what)
		assert.Equal(t, []string{"destroy server.team.s1", "remove server.team.s1"}, f.Ops(), what)
	}

	// A robot whose stack is already gone: nothing to purge, and no stack is made for it.
	f := newFake()
	robotTenant(f, v1alpha1.TenantPersonal, "Delete")
	f.Drop("server.team.s1")
	f.Reset()
	_, err := New(f, Options{Namespaces: absentNamespaces{}}).Destroy(ctx, server("s1"), operatorOp)
	require.NoError(t, err)
	assert.Equal(t, []string{"destroy server.team.s1"}, f.Ops())
}

// A purge that fails leaves the stack in place (nothing destroyed), and the next destroy
// runs every stage again: the stages converge.
func TestFailedPurgeIsRetried(t *testing.T) {
	ctx := context.Background()
	f := newFake()
	robotTenant(f, v1alpha1.TenantPersonal, "Delete")
	f.Reset()
	f.Fail("up server.team.s1", nil, &engine.OpError{Op: engine.OpUp, Stack: "server.team.s1", Kind: engine.ErrConflict})
	r := New(f, Options{Namespaces: absentNamespaces{}})
	_, err := r.Destroy(ctx, server("s1"), operatorOp)
	require.ErrorIs(t, err, engine.ErrConflict)
	assert.Contains(t, err.Error(), "removing the data of robot")
	assert.Equal(t, []string{"up server.team.s1", "up server.team.s1"}, f.Ops())
	_, ok := f.Stack("server.team.s1")
	assert.True(t, ok, "the stack stays while its data is not removed")

	f.Reset()
	_, err = r.Destroy(ctx, server("s1"), operatorOp)
	require.NoError(t, err)
	assert.Equal(t, []string{"up server.team.s1", "up server.team.s1", "destroy server.team.s1", "remove server.team.s1"}, f.Ops())
}

// A spec whose immutable fields changed (another tenantRef would name another owner's data)
// is refused before any purge runs.
func TestPurgeRefusesAChangedOwner(t *testing.T) {
	ctx := context.Background()
	f := newFake()
	robotTenant(f, v1alpha1.TenantPersonal, "Delete")
	r := New(f, Options{Namespaces: absentNamespaces{}})
	// The stack records its immutable fields on its ups.
	f.Edit("server.team.s1", func(s *enginetest.Stack) {
		tgt, _, err := kinds.Prepare(server("s1"))
		require.NoError(t, err)
		s.Tags[engine.TagImmutable] = tgt.Immutable
	})
	moved := server("s1")
	moved.Spec.RobotType = "other"
	f.Reset()
	_, err := r.Destroy(ctx, moved, operatorOp)
	var inv *kinds.InvalidError
	require.ErrorAs(t, err, &inv)
	assert.Contains(t, err.Error(), "spec.robotType")
	assert.NotContains(t, f.Ops(), "destroy server.team.s1")
}
