package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// The race the engine's admission closes: the runner's own check found no stack, and the
// HTTP API created and claimed it before the operator's up reached the engine. The up is
// refused as managed elsewhere by the tags the engine holds at that moment, and writes none
// of its own.
func TestUpLosingTheCreateRaceIsManagedElsewhere(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	r := New(f, Options{Namespaces: absentNamespaces{}})
	const stack = "tenant.team.acme"
	f.Hook = func(_ context.Context, c enginetest.Call) error {
		if c.Op == engine.OpUp && c.Stack == stack {
			f.Put(stack, enginetest.Stack{Tags: enginetest.Tags(engine.ManagedByAPI, map[string]string{engine.TagObject: "TFRTenant/team/acme"})})
		}
		return nil
	}
	_, err := r.Up(context.Background(), tenant("acme", v1alpha1.TenantEnterprise), operatorOp)
	require.ErrorIs(t, err, ErrManagedElsewhere)
	tags, err := f.Tags(context.Background(), stack)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{engine.TagManagedBy: "api", engine.TagObject: "TFRTenant/team/acme"}, tags, "the loser wrote nothing")
}

// Immutable fields are recorded on the stack by the first up and refused, naming the
// field, by every later up or preview through any door; nothing runs then.
func TestImmutableFieldsAtEveryDoor(t *testing.T) {
	f := newFake()
	f.put("cluster.main", true, nil)
	r := New(f, Options{Namespaces: absentNamespaces{}})
	ten := tenant("acme", v1alpha1.TenantEnterprise)
	_, err := r.Up(context.Background(), ten, Op{Door: engine.ManagedByCLI})
	require.NoError(t, err)
	srv := server("web")
	_, err = r.Up(context.Background(), srv, Op{Door: engine.ManagedByCLI})
	require.NoError(t, err)
	f.Reset()

	cases := map[string]v1alpha1.Object{}
	c := ten.DeepCopy()
	c.Spec.Namespace = "elsewhere"
	cases["spec.namespace"] = c
	c = ten.DeepCopy()
	c.Spec.Type, c.Spec.JobType = v1alpha1.TenantPersonal, "chat"
	cases["spec.type"] = c
	c = ten.DeepCopy()
	c.Spec.ClusterRef = "other"
	cases["spec.clusterRef"] = c
	s := srv.DeepCopy()
	s.Spec.RobotID = "r-other"
	cases["spec.robotId"] = s
	s = srv.DeepCopy()
	s.Spec.RobotType = "voice"
	cases["spec.robotType"] = s
	for fieldPath, obj := range cases {
		for _, door := range []engine.ManagedBy{engine.ManagedByCLI, engine.ManagedByAPI} {
			for name, call := range map[string]func() error{
				"up":      func() error { _, err := r.Up(context.Background(), obj, Op{Door: door}); return err },
				"preview": func() error { _, err := r.Preview(context.Background(), obj, Op{Door: door}); return err },
				"admit":   func() error { return r.Admit(context.Background(), obj, Op{Door: door}) },
			} {
				err := call()
				require.ErrorIs(t, err, kinds.ErrInvalid, "%s %s via %s", name, fieldPath, door)
				var ie *kinds.InvalidError
				require.ErrorAs(t, err, &ie)
				var fields []string
				for _, fe := range ie.Errors {
					fields = append(fields, fe.Field)
				}
				assert.Contains(t, fields, fieldPath, name)
				assert.Contains(t, err.Error(), "is immutable")
			}
		}
	}
	assert.Empty(t, f.CallsOf(engine.OpUp, engine.OpPreview), "nothing ran")
	// An unchanged object (and a change of a mutable field) still comes up.
	c = ten.DeepCopy()
	c.Spec.DeletionPolicy = v1alpha1.DeletionDelete
	_, err = r.Up(context.Background(), c, Op{Door: engine.ManagedByCLI})
	require.NoError(t, err)
}
