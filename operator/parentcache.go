package operator

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// stackVersioner is an engine that can tell cheaply, without a CLI process, whether a stack
// changed: *engine.Engine on a file:// backend. ok is false when it cannot tell this time.
// The fakes of the tests may not implement it.
type stackVersioner interface {
	StackVersion(ctx context.Context, stack string) (version string, ok bool)
}

// minDigestTTL bounds how often a parent stack is read when the engine gives no version, however
// short the resync period (tests run with seconds).
const minDigestTTL = 5 * time.Second

// digestTTL is how long a digest read without a version is trusted: half the resync period, so
// that the resync of many children of one parent reads it about once, and a change made outside
// the operator is seen within one and a half periods.
func digestTTL(resync time.Duration) time.Duration {
	return max(resync/2, minDigestTTL)
}

// parentCache keeps the outputs digests of parent stacks made outside the operator (over HTTP
// or by the CLI: no custom resource carries their digest). Reading them costs Pulumi CLI
// processes, and every child reads its parent on every resync; one cache serves the three
// reconcilers of an operator.
//
// A digest stays valid while the engine reports the stack's version unchanged; when the engine
// gives no version, for the TTL. The operator's own operations drop the digests of the stacks
// they touched (forget), so it never trusts a digest from before its own change.
//
// Concurrent misses of one stack both read: a miss happens only when the parent changed, and
// MaxConcurrentReconciles bounds the readers, so single-flighting them is not worth its code.
type parentCache struct {
	ttl   time.Duration
	mu    sync.Mutex
	byKey map[string]cachedDigest // by stack name; bounded by the parent stacks ever read
	// epoch counts forgets: a read that overlapped one is not stored, as it may predate the
	// change that caused it.
	epoch uint64
}

type cachedDigest struct {
	digest    string
	versioned bool   // stored under version, else under the TTL from read
	version   string // the engine's version of the stack when it was read
	read      time.Time
}

func newParentCache(ttl time.Duration) *parentCache {
	return &parentCache{ttl: ttl, byKey: map[string]cachedDigest{}}
}

// digest returns stack's outputs digest ("" when the stack does not exist), from the cache when
// still valid, else read from eng.
func (c *parentCache) digest(ctx context.Context, eng runner.Engine, stack string, now time.Time) (string, error) {
	// The version is taken before the outputs: a change in between makes the stored version
	// older than the digest, which costs one more read, never a stale digest.
	cur := cachedDigest{read: now}
	if v, ok := eng.(stackVersioner); ok {
		cur.version, cur.versioned = v.StackVersion(ctx, stack)
	}
	epoch, d, hit := c.lookup(stack, cur)
	if hit {
		return d, nil
	}
	outs, err := eng.Outputs(ctx, stack)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		// No parent yet: the up reports WaitingForParent. Not cached: the parent must be
		// noticed at the next poll, not a TTL later, and the engine has no version for a
		// missing stack anyway.
		return "", nil
	case err != nil:
		return "", err // failures are not cached: the next reconcile tries again
	}
	cur.digest = digestOf(stack, outs)
	c.store(stack, cur, epoch)
	return cur.digest, nil
}

// lookup returns the cached digest when it is valid for cur (same version, or young enough
// when there is none), and the epoch a store after a read must match.
func (c *parentCache) lookup(stack string, cur cachedDigest) (epoch uint64, digest string, hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[stack]
	switch {
	case !ok || e.versioned != cur.versioned:
		// An entry is trusted only under the rule it was stored under.
	case e.versioned:
		hit = e.version == cur.version
	default:
		hit = cur.read.Sub(e.read) < c.ttl
	}
	if !hit {
		return c.epoch, "", false
	}
	return c.epoch, e.digest, true
}

// store keeps a read unless a forget happened since the read began.
func (c *parentCache) store(stack string, e cachedDigest, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch == epoch {
		c.byKey[stack] = e
	}
}

// forget drops the digests of stacks: the operator just ran an operation on them.
func (c *parentCache) forget(stacks ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for _, s := range stacks {
		delete(c.byKey, s)
	}
}
