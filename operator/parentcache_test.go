package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine/enginetest"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

const cliCluster = "cluster.main"

// cliTenants is a harness with n TFRTenants under a cluster stack made by the CLI (no
// TFRCluster), each settled (Ready).
func cliTenants(t *testing.T, n int, wrap func(*enginetest.Engine) runner.Engine) (*harness, []client.Object) {
	t.Helper()
	var objs []client.Object
	for i := range n {
		objs = append(objs, newTenant(fmt.Sprintf("t%d", i), fmt.Sprintf("t%d", i), "main"))
	}
	h := newHarness(t, objs...)
	if wrap != nil {
		h.useEngine(wrap(h.eng))
	}
	h.put(cliCluster, engine.ManagedByCLI, nil, program.Outputs{"host": program.NewOutput("a", false)})
	for _, o := range objs {
		h.settle(o)
	}
	require.Len(t, h.eng.Ops(), n, "every tenant ran its first up")
	return h, objs
}

func resyncAll(h *harness, objs []client.Object) {
	for _, o := range objs {
		h.reconcile(o)
	}
}

func TestParentDigestIsReadOncePerVersion(t *testing.T) {
	const n = 5
	h, tenants := cliTenants(t, n, nil)
	reads := func() int { return h.eng.Count("outputs " + cliCluster) }
	assert.Equal(t, 1, reads(), "the children of one parent share its read")

	for range 3 {
		h.advance(10 * time.Minute)
		resyncAll(h, tenants)
	}
	assert.Equal(t, 1, reads(), "an unchanged version: no read, however old the digest")
	assert.Len(t, h.eng.Ops(), n, "and nothing runs")

	h.put(cliCluster, engine.ManagedByCLI, nil, program.Outputs{"host": program.NewOutput("b", false)})
	for _, o := range tenants {
		h.settle(o)
	}
	assert.Equal(t, 2, reads(), "a new version: one more read for all the children")
	assert.Len(t, h.eng.Ops(), 2*n, "the parent's outputs changed: every tenant runs again")
	resyncAll(h, tenants)
	assert.Equal(t, 2, reads())
	assert.Len(t, h.eng.Ops(), 2*n)
}

func TestParentDigestWithoutVersionLastsTheTTL(t *testing.T) {
	const n = 3
	h, tenants := cliTenants(t, n, func(f *enginetest.Engine) runner.Engine { return unversioned{f} })
	reads := func() int { return h.eng.Count("outputs " + cliCluster) }
	ttl := h.recs["TFRTenant"].digests.ttl
	require.Equal(t, 5*time.Minute, ttl, "half the default resync period")
	assert.Equal(t, 1, reads())

	h.advance(ttl - time.Second)
	resyncAll(h, tenants)
	assert.Equal(t, 1, reads(), "within the TTL the cached digest serves")

	// A change made outside the operator is seen once the TTL has passed.
	h.put(cliCluster, engine.ManagedByCLI, nil, program.Outputs{"host": program.NewOutput("b", false)})
	resyncAll(h, tenants)
	assert.Equal(t, 1, reads())
	assert.Len(t, h.eng.Ops(), n, "not seen yet")
	h.advance(2 * time.Second)
	for _, o := range tenants {
		h.settle(o)
	}
	assert.Equal(t, 2, reads(), "past the TTL: one read for all the children")
	assert.Len(t, h.eng.Ops(), 2*n, "the tenants run against the new outputs")
}

func TestMissingParentIsNotCached(t *testing.T) {
	s := newServer("acme", "robot", "acme") // its tenant would be made over HTTP; not yet
	h := newHarness(t, s)
	h.settle(s) // its up finds no parent: WaitingForParent
	reads := h.eng.Count("outputs tenant.acme.acme")
	require.Positive(t, reads)
	h.reconcile(s)
	assert.Equal(t, reads+1, h.eng.Count("outputs tenant.acme.acme"), "a parent appearing is noticed at the next poll")
}

func TestOperatorJobOnParentStackDropsItsDigest(t *testing.T) {
	h, tenants := cliTenants(t, 1, func(f *enginetest.Engine) runner.Engine { return unversioned{f} })
	reads := func() int { return h.eng.Count("outputs " + cliCluster) }
	require.Equal(t, 1, reads())

	// An operation of this operator on the parent's stack (its outputs change) ends...
	j := &job{kind: jobUp}
	h.recs["TFRCluster"].start(kinds.Target{Stack: cliCluster}, j, func(context.Context, *job) {
		h.put(cliCluster, engine.ManagedByCLI, nil, program.Outputs{"host": program.NewOutput("c", false)})
	}, newCluster("main"))
	<-j.done
	h.jobs.take(cliCluster)

	// ...so the next reconcile of a child reads the parent again, well within the TTL.
	h.settle(tenants[0])
	assert.Equal(t, 2, reads())
	assert.Len(t, h.eng.Ops(), 2, "the tenant runs against the new outputs")
}

func TestParentCacheDropsAReadOverlappingAForget(t *testing.T) {
	c := newParentCache(time.Minute)
	now := time.Now()
	epoch, _, hit := c.lookup("s", cachedDigest{read: now})
	require.False(t, hit)
	c.forget("s") // an operation on s ended while s was being read
	c.store("s", cachedDigest{digest: "old", read: now}, epoch)
	_, _, hit = c.lookup("s", cachedDigest{read: now})
	assert.False(t, hit, "the read may predate the operation's change")

	epoch, _, _ = c.lookup("s", cachedDigest{read: now})
	c.store("s", cachedDigest{digest: "new", read: now}, epoch)
	_, d, hit := c.lookup("s", cachedDigest{read: now})
	assert.True(t, hit)
	assert.Equal(t, "new", d)
	_, _, hit = c.lookup("s", cachedDigest{versioned: true, version: "1", read: now})
	assert.False(t, hit, "an entry read without a version is not trusted under one")
}
