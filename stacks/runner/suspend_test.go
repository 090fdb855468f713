package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// Every operation of the Runner, through every door, refuses a suspended object of every
// kind before it reaches the engine; the same object not suspended is not refused for it.
func TestSuspendedObjectsReachNoStack(t *testing.T) {
	ctx := context.Background()
	objs := func() []v1alpha1.Object {
		return []v1alpha1.Object{cluster(), tenant("acme", v1alpha1.TenantEnterprise),
			tenant("solo", v1alpha1.TenantPersonal), server("web")}
	}
	ops := map[string]func(r *Runner, o v1alpha1.Object, op Op) (*Outcome, error){
		"up":      func(r *Runner, o v1alpha1.Object, op Op) (*Outcome, error) { return r.Up(ctx, o, op) },
		"preview": func(r *Runner, o v1alpha1.Object, op Op) (*Outcome, error) { return r.Preview(ctx, o, op) },
		"refresh": func(r *Runner, o v1alpha1.Object, op Op) (*Outcome, error) { return r.Refresh(ctx, o, op) },
		"destroy": func(r *Runner, o v1alpha1.Object, op Op) (*Outcome, error) { return r.Destroy(ctx, o, op) },
	}
	doors := []engine.ManagedBy{engine.ManagedByOperator, engine.ManagedByAPI, engine.ManagedByCLI, ""}
	for _, obj := range objs() {
		for name, call := range ops {
			for _, door := range doors {
				f := newFake()
				r := New(f, Options{Namespaces: absentNamespaces{}})
				o := obj.DeepCopyObject().(v1alpha1.Object)
				setSuspend(o, true)
				require.True(t, o.Suspended())
				_, err := call(r, o, Op{Door: door})
				require.ErrorIs(t, err, ErrSuspended, "%s %s via %q", o.KindName(), name, door)
				var se *SuspendedError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, o.KindName(), se.Object.Kind)
				assert.Contains(t, err.Error(), "spec.suspend")
				assert.Empty(t, f.Calls(), "%s %s via %q reached the engine", o.KindName(), name, door)

				setSuspend(o, false)
				_, err = call(r, o, Op{Door: door})
				assert.NotErrorIs(t, err, ErrSuspended)
			}
		}
	}
}

func setSuspend(o v1alpha1.Object, on bool) {
	switch x := o.(type) {
	case *v1alpha1.TFRCluster:
		x.Spec.Suspend = on
	case *v1alpha1.TFRTenant:
		x.Spec.Suspend = on
	case *v1alpha1.TFRServer:
		x.Spec.Suspend = on
	}
}

func TestSkipReportsTheReason(t *testing.T) {
	o := server("web")
	o.Spec.Suspend = true
	err := CheckSuspended(o)
	require.Error(t, err)
	assert.Equal(t, "TFRServer team/web is suspended (spec.suspend: true): no operation runs on it until spec.suspend is cleared", err.Error())
	tg, err2 := kinds.TargetOf(o)
	require.NoError(t, err2)
	out := Skip(tg, err)
	assert.Empty(t, out.Stacks)
	assert.Equal(t, err.Error(), out.Skipped)
	assert.Equal(t, "server.team.web", out.Target.Stack)
}
