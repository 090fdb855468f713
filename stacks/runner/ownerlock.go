package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// One owner's robots come up one at a time. The owner share (stacks/ownershare.go) counts
// the Deployments an owner runs, then the up creates the robot's: two ups of one owner's
// robots that ran at once would each count without the other and could both pass the share.
// So an up that reads an owner's robots (the share check, kinds.Owners) holds that owner's
// lock until the up has finished, whichever door asked; previews take none. The lock has two
// parts:
//
//   - in the process, a lock per owner (ownerLocks), so one process's ups wait for each other
//     without asking the API server;
//   - in the cluster, a coordination.k8s.io Lease per owner in the robot's namespace
//     (OwnerLeaser), so ups in other TFRS processes (API replicas, the operator, a CLI) wait
//     too. A holder that dies stops renewing it, and it expires after ownerLeaseSeconds.

// ownerLeaseSeconds is how long an owner's Lease outlives its last renewal (a crashed
// holder); it is renewed every third of it.
const ownerLeaseSeconds = 30

// OwnerLeasePrefix starts the name of an owner's Lease: "tfrs-owner-<owner label>".
const OwnerLeasePrefix = "tfrs-owner-"

// OwnerLeaser holds an owner's Lease in a namespace until release is called. A
// NamespaceGetter given in Options.Namespaces that implements it is used; one that does not
// (a test fake) holds only the process's lock.
type OwnerLeaser interface {
	AcquireOwnerLease(ctx context.Context, namespace, name string) (release func(), err error)
}

// ownerLocks are the runner's per-owner locks, one buffered channel each (so a wait can end
// with its context).
type ownerLocks struct {
	mu    sync.Mutex
	locks map[string]chan struct{}
}

func (l *ownerLocks) of(key string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.locks == nil {
		l.locks = map[string]chan struct{}{}
	}
	c, ok := l.locks[key]
	if !ok {
		c = make(chan struct{}, 1)
		l.locks[key] = c
	}
	return c
}

// ownerHold is what one up holds: the owners whose locks it took, released when it ends.
type ownerHold struct {
	locks   *ownerLocks
	mu      sync.Mutex
	release map[string]func()
}

type ownerHoldKey struct{}

// withOwnerHold makes the share checks under ctx take their owner's lock into h.
func withOwnerHold(ctx context.Context, h *ownerHold) context.Context {
	return context.WithValue(ctx, ownerHoldKey{}, h)
}

// holdOwner takes the lock of the owner ownerLabel in namespace for the up running under
// ctx, once per up; it does nothing outside an up. It waits for the owner's other up to
// finish, here or in another process, or for ctx.
func (r *Runner) holdOwner(ctx context.Context, namespace, ownerLabel string) error {
	h, _ := ctx.Value(ownerHoldKey{}).(*ownerHold)
	if h == nil {
		return nil
	}
	key := namespace + "/" + ownerLabel
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.release[key]; ok {
		return nil
	}
	c := h.locks.of(key)
	select {
	case c <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	release := func() { <-c }
	if get, err := r.namespaceGetter(); err == nil {
		if l, ok := get.(OwnerLeaser); ok {
			lease, err := l.AcquireOwnerLease(ctx, namespace, OwnerLeasePrefix+ownerLabel)
			if err != nil {
				release()
				return err
			}
			local := release
			release = func() { lease(); local() }
		}
	}
	if h.release == nil {
		h.release = map[string]func(){}
	}
	h.release[key] = release
	return nil
}

// done frees every lock the up took.
func (h *ownerHold) done() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, release := range h.release {
		release()
		delete(h.release, k)
	}
}

// AcquireOwnerLease creates the Lease name in namespace, or takes it over once it expired,
// polling while another holder renews it. It is renewed until release, which deletes it if
// it is still ours.
func (k *kubeNamespaces) AcquireOwnerLease(ctx context.Context, namespace, name string) (func(), error) {
	leases := k.c.CoordinationV1().Leases(namespace)
	holder := leaseHolder()
	fail := func(err error) error {
		return fmt.Errorf("spec.tenantRef: the owner's lock, Lease %s/%s: %w", namespace, name, err)
	}
	for {
		now := metav1.NewMicroTime(time.Now())
		spec := coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptr.To[int32](ownerLeaseSeconds), AcquireTime: &now, RenewTime: &now}
		_, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "tfrs"}},
			Spec:       spec,
		}, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fail(err)
		}
		cur, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // released in between
		}
		if err != nil {
			return nil, fail(err)
		}
		if leaseExpired(cur, now.Time) {
			cur.Spec = spec
			if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err == nil {
				break
			} else if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return nil, fail(err)
			}
			continue // someone else was faster: look again
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(ownerLeaseSeconds * time.Second / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				renewOwnerLease(leases, name, holder)
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cur, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil || cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != holder {
			return // gone, or taken over after it expired: not ours to delete
		}
		// Only this version: a takeover in between keeps its Lease. A Lease left behind
		// (the delete failed) expires.
		_ = leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &cur.ResourceVersion}})
	}, nil
}

// leasesClient is the part of the Leases client renewOwnerLease uses.
type leasesClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// renewOwnerLease moves the Lease's renew time on while holder holds it. A failed renewal is
// tried again at the next tick; the Lease's duration covers two missed ones.
func renewOwnerLease(leases leasesClient, name, holder string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cur, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil || cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != holder {
		return
	}
	now := metav1.NewMicroTime(time.Now())
	cur.Spec.RenewTime = &now
	_, _ = leases.Update(ctx, cur, metav1.UpdateOptions{})
}

// leaseExpired reports whether l's holder stopped renewing it more than its duration ago.
func leaseExpired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// leaseHolder names one acquisition: the host and a random part, so two ups in one process
// are two holders.
func leaseHolder() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	host, _ := os.Hostname()
	return host + "-" + hex.EncodeToString(b)
}
