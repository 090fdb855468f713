package server

import (
	"crypto/sha256"
	"sync"
	"time"
)

// reviewCache keeps review results for a short TTL, keyed by a SHA-256 digest (of a token, or
// of a user and the attributes asked): a token itself is never a key. It holds at most max
// entries; a full cache first drops what expired, then an arbitrary entry.
type reviewCache[V any] struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu      sync.Mutex
	entries map[[sha256.Size]byte]cacheEntry[V]
}

type cacheEntry[V any] struct {
	v       V
	expires time.Time
}

func newReviewCache[V any](ttl time.Duration, maxEntries int, now func() time.Time) *reviewCache[V] {
	return &reviewCache[V]{ttl: ttl, max: maxEntries, now: now, entries: map[[sha256.Size]byte]cacheEntry[V]{}}
}

func (c *reviewCache[V]) get(key [sha256.Size]byte) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.now().Before(e.expires) {
		if ok {
			delete(c.entries, key)
		}
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *reviewCache[V]) put(key [sha256.Size]byte, v V) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = cacheEntry[V]{v: v, expires: now.Add(c.ttl)}
}

func (c *reviewCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
