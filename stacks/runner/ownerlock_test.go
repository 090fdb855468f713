package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// countingOwners is a namespace reader that counts the owner-share reads.
type countingOwners struct {
	absentNamespaces
	mu    sync.Mutex
	reads int
}

func (c *countingOwners) OwnerWorkloads(context.Context, string, string) ([]stacks.Workload, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return nil, nil
}

func (c *countingOwners) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// Two ups of one owner's robots, through any doors of one TFRS process, run one after the
// other: the second counts the owner's robots only once the first up has finished, so both
// cannot pass the share on the same count. Another owner's robot is not held up, and a
// preview takes no lock.
func TestOneOwnersRobotsComeUpOneAtATime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := newFake()
	for _, owner := range []string{"acme", "zeta"} {
		f.Put("tenant.team."+owner, enginetest.Stack{Ready: true, Outputs: enginetest.TenantOutputs(program.Outputs{
			stacks.TenantOutputTenantType: program.NewOutput(string(v1alpha1.TenantPersonal), false),
			stacks.TenantOutputNamespace:  program.NewOutput("personal-chat", false),
			stacks.TenantOutputOwnerShare: program.NewOutput(`{"robots":5}`, false),
		})})
	}
	owners := &countingOwners{}
	r := New(f, Options{Namespaces: owners})
	gate := f.Hold(engine.OpUp)
	first := make(chan error, 1)
	go func() { _, err := r.Up(ctx, server("s1"), Op{Door: engine.ManagedByOperator}); first <- err }()
	require.Equal(t, "up server.team.s1", <-gate.Entered)
	require.Equal(t, 1, owners.count())

	second := make(chan error, 1)
	go func() { _, err := r.Up(ctx, server("s2"), Op{Door: engine.ManagedByAPI}); second <- err }()
	other := server("z1")
	other.Spec.TenantRef = "zeta"
	third := make(chan error, 1)
	go func() { _, err := r.Up(ctx, other, Op{Door: engine.ManagedByAPI}); third <- err }()
	require.Equal(t, "up server.team.z1", <-gate.Entered, "another owner's robot is not held up")
	_, err := r.Preview(ctx, server("s3"), Op{Door: engine.ManagedByCLI})
	require.NoError(t, err, "a preview takes no lock")
	select {
	case c := <-gate.Entered:
		t.Fatalf("%s started while the owner's first up runs", c)
	case <-time.After(300 * time.Millisecond):
	}
	assert.Equal(t, 3, owners.count(), "the second up has not counted the owner's robots yet")

	gate.Open()
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	require.NoError(t, <-third)
	assert.Equal(t, 4, owners.count())

	// A wait ends with its context.
	gate = f.Hold(engine.OpUp)
	go func() { _, err := r.Up(ctx, server("s1"), Op{Door: engine.ManagedByOperator}); first <- err }()
	<-gate.Entered
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	_, err = r.Up(short, server("s2"), Op{Door: engine.ManagedByAPI})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	gate.Open()
	require.NoError(t, <-first)
}

// The owner's Lease excludes other processes: a second holder waits until the first
// releases it, an expired Lease (its holder died) is taken over at once, and a release never
// deletes a Lease another holder took over.
func TestOwnerLeaseAcrossProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs := fake.NewClientset()
	a, b := &kubeNamespaces{c: cs}, &kubeNamespaces{c: cs}
	const ns, name = "personal-chat", OwnerLeasePrefix + "abc"

	releaseA, err := a.AcquireOwnerLease(ctx, ns, name)
	require.NoError(t, err)
	got := make(chan func(), 1)
	go func() {
		release, err := b.AcquireOwnerLease(ctx, ns, name)
		assert.NoError(t, err)
		got <- release
	}()
	select {
	case <-got:
		t.Fatal("a second process took the owner's Lease while it is held")
	case <-time.After(800 * time.Millisecond):
	}
	releaseA()
	var releaseB func()
	select {
	case releaseB = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the Lease was not taken after its release")
	}
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	holderB := *l.Spec.HolderIdentity

	// B dies: its Lease stops being renewed. Once expired, C takes it over; B's late release
	// leaves C's Lease alone.
	old := metav1.NewMicroTime(time.Now().Add(-2 * ownerLeaseSeconds * time.Second))
	l.Spec.RenewTime = &old
	_, err = cs.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
	require.NoError(t, err)
	releaseC, err := (&kubeNamespaces{c: cs}).AcquireOwnerLease(ctx, ns, name)
	require.NoError(t, err)
	releaseB()
	l, err = cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err, "the takeover's Lease stays")
	assert.NotEqual(t, holderB, *l.Spec.HolderIdentity)
	releaseC()
	_, err = cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "released: %v", err)

	// A wait ends with its context.
	releaseA, err = a.AcquireOwnerLease(ctx, ns, name)
	require.NoError(t, err)
	defer releaseA()
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	_, err = b.AcquireOwnerLease(short, ns, name)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
