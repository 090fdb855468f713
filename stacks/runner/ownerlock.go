package runner

import (
	"context"
	"sync"
)

// One owner's robots come up one at a time in a TFRS process. The owner share
// (stacks/ownershare.go) counts the Deployments an owner runs, then the up creates the
// robot's: two ups of one owner's robots that ran at once would each count without the
// other and could both pass the share. So an up that reads an owner's robots (the share
// check, kinds.Owners) holds that owner's lock until the up has finished, whichever door
// asked; previews take no lock. Separate TFRS processes (API replicas beside the operator)
// do not share it: docs/security/trust-and-personal.md says what closes that.

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
	locks *ownerLocks
	mu    sync.Mutex
	held  map[string]chan struct{}
}

type ownerHoldKey struct{}

// withOwnerHold makes the share checks under ctx take their owner's lock into h.
func withOwnerHold(ctx context.Context, h *ownerHold) context.Context {
	return context.WithValue(ctx, ownerHoldKey{}, h)
}

// acquireOwner takes the lock of owner key for the up running under ctx, once per up; it
// does nothing outside an up. It waits for the owner's other up to finish, or for ctx.
func acquireOwner(ctx context.Context, key string) error {
	h, _ := ctx.Value(ownerHoldKey{}).(*ownerHold)
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.held[key]; ok {
		return nil
	}
	c := h.locks.of(key)
	select {
	case c <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if h.held == nil {
		h.held = map[string]chan struct{}{}
	}
	h.held[key] = c
	return nil
}

// release frees every lock the up took.
func (h *ownerHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, c := range h.held {
		<-c
		delete(h.held, k)
	}
}
