package engine

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
)

// TestFairShareOf: every stack name a door can build maps to its namespace's share, or to the
// platform's; generated over namespaces and names, long ones (shortened) included.
func TestFairShareOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 5))
	label := func(n int) string {
		const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		b[0] = 'a' + byte(rng.IntN(26))
		b[n-1] = 'z'
		return string(b)
	}
	cases := 0
	for range 500 {
		ns, name := label(1+rng.IntN(63)), label(1+rng.IntN(200))
		if rng.IntN(4) == 0 {
			ns = "admin" // a valid namespace name: still a tenant's share
		}
		for _, mk := range []func(string, string) (string, error){stackname.Tenant, stackname.Server} {
			stack, err := mk(ns, name)
			require.NoError(t, err)
			require.Equal(t, ns, ShareOf(stack), stack)
			require.NotEqual(t, ShareAdmin, ShareOf(stack), stack)
			cases++
		}
		stack, err := stackname.Cluster(name)
		require.NoError(t, err)
		require.Equal(t, ShareAdmin, ShareOf(stack), stack)
		jobType := label(1 + rng.IntN(40))
		shared, err := stackname.PersonalShared(jobType)
		require.NoError(t, err)
		require.Equal(t, ShareAdmin, ShareOf(shared), shared)
		own, err := stackname.Tenant(stackname.PersonalNamespacePrefix+jobType, name)
		require.NoError(t, err)
		require.Equal(t, stackname.PersonalNamespacePrefix+jobType, ShareOf(own), "a personal tenant's own stack counts with its namespace")
		cases += 3
	}
	// Names outside the tenant levels are the platform's; a server stack never named "_shared"
	// is the platform's either (only PersonalShared names end so, and only tenant ones).
	for _, s := range []string{"dev", "", "cluster.x", "server.personal-chat._shared", "tenant", "tenant."} {
		want := ShareAdmin
		if s == "server.personal-chat._shared" {
			want = "personal-chat"
		}
		assert.Equal(t, want, ShareOf(s), s)
		cases++
	}
	t.Logf("%d generated stack names mapped", cases)
}

// TestFairNextAdmitGenerated drives nextAdmit with random arrivals and finishes over several
// shares and checks every decision: the global cap and every share's cap hold; a share at its
// cap is never admitted, so it never takes a slot from a waiting operation of a share under
// its cap; a free slot is never left idle while an eligible operation waits; the admitted
// operation's share runs the fewest among the eligible, the earliest arrival among equals;
// and once everything running finishes, every operation has run.
func TestFairNextAdmitGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 55))
	scenarios, decisions, bypassed := 0, 0, 0
	for range 2000 {
		scenarios++
		global := 1 + rng.IntN(6)
		perShare := 1 + rng.IntN(global)
		if rng.IntN(2) == 0 {
			perShare = DefaultMaxPerNamespace(global)
		}
		shares := []string{ShareAdmin, "team-a", "team-b", "team-c", "admin"}[:2+rng.IntN(4)]
		running := map[string]int{}
		var live []string    // shares of the running operations
		var waiting []string // shares of the waiting ones, in arrival order
		total, arrivals, admitted := 0, 0, 0
		dispatch := func() {
			for {
				i := nextAdmit(waiting, running, total, global, perShare)
				// Work conserving: nothing chosen only when no slot is free or nobody eligible waits.
				if i < 0 {
					if total < global {
						for _, w := range waiting {
							require.GreaterOrEqual(t, running[w], perShare, "an eligible operation of %s waits while a slot is free", w)
						}
					}
					return
				}
				decisions++
				w := waiting[i]
				for _, o := range waiting[:i] {
					if running[o] >= perShare {
						bypassed++ // an earlier arrival of a share at its cap did not hold it up
						break
					}
				}
				require.Less(t, total, global, "the global cap")
				require.Less(t, running[w], perShare, "a share at its cap is never admitted")
				for j, o := range waiting {
					if running[o] >= perShare {
						continue
					}
					require.LessOrEqual(t, running[w], running[o], "fewest running first")
					if running[o] == running[w] {
						require.LessOrEqual(t, i, j, "earliest among equals")
					}
				}
				waiting = append(waiting[:i], waiting[i+1:]...)
				running[w]++
				total++
				admitted++
				live = append(live, w)
				require.LessOrEqual(t, running[w], perShare)
				require.LessOrEqual(t, total, global)
			}
		}
		for range 40 + rng.IntN(60) {
			if len(live) > 0 && rng.IntN(3) == 0 {
				k := rng.IntN(len(live))
				running[live[k]]--
				total--
				live = append(live[:k], live[k+1:]...)
			} else {
				// Skewed arrivals: the first share is the noisy one.
				s := shares[0]
				if rng.IntN(3) == 0 {
					s = shares[rng.IntN(len(shares))]
				}
				waiting = append(waiting, s)
				arrivals++
			}
			dispatch()
		}
		// Drain: as operations finish, every waiting one runs.
		for len(live) > 0 {
			running[live[0]]--
			total--
			live = live[1:]
			dispatch()
		}
		require.Empty(t, waiting, "every operation ran once the running ones finished")
		require.Equal(t, arrivals, admitted)
	}
	t.Logf("%d generated scenarios, %d admissions checked; in %d of them an earlier waiting operation of a share at its cap was passed over", scenarios, decisions, bypassed)
}

// TestFairQueueWaits: the waiting machinery. A share at its cap waits without a slot while
// another share's operation starts at once; a canceled waiter leaves nothing behind; a freed
// slot goes to the share running the fewest.
func TestFairQueueWaits(t *testing.T) {
	q := newFairQueue(4, 3)
	ctx := context.Background()
	closed := make(chan struct{})
	var held []func()
	for range 3 {
		rel, err := q.wait(ctx, closed, "team-a")
		require.NoError(t, err)
		held = append(held, rel)
	}
	fourth := make(chan func(), 1)
	go func() {
		rel, err := q.wait(ctx, closed, "team-a")
		if err == nil {
			fourth <- rel
		}
	}()
	require.Eventually(t, func() bool { return q.snapshot()["team-a"].waiting == 1 }, time.Second, time.Millisecond)

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := q.wait(short, closed, "team-a")
	require.ErrorIs(t, err, context.DeadlineExceeded, "a waiter bounded by its context")
	require.Equal(t, shareLoad{running: 3, waiting: 1}, q.snapshot()["team-a"], "the canceled waiter left")

	start := time.Now()
	admin, err := q.wait(ctx, closed, ShareAdmin)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 100*time.Millisecond, "another share starts at once")

	// Full now (4). team-b arrives after team-a's fourth; a team-a slot frees: team-b runs
	// nothing, team-a 2, so team-b goes first although it came later.
	second := make(chan func(), 1)
	go func() {
		rel, err := q.wait(ctx, closed, "team-b")
		if err == nil {
			second <- rel
		}
	}()
	require.Eventually(t, func() bool { return q.snapshot()["team-b"].waiting == 1 }, time.Second, time.Millisecond)
	held[0]()
	held[0]() // a second release is a no-op
	b := <-second
	require.Equal(t, shareLoad{running: 2, waiting: 1}, q.snapshot()["team-a"])
	admin()
	a := <-fourth
	require.Equal(t, shareLoad{running: 3}, q.snapshot()["team-a"])

	close(closed)
	_, err = q.wait(ctx, closed, "team-c")
	if err != nil {
		require.ErrorIs(t, err, errQueueClosed)
	}
	for _, rel := range append(held[1:], a, b) {
		rel()
	}
	require.Empty(t, q.snapshot(), "all slots back")
}

// TestFairQueueConcurrent: many goroutines over several shares; the caps hold at every
// moment and everyone runs.
func TestFairQueueConcurrent(t *testing.T) {
	const global, perShare = 4, 2
	q := newFairQueue(global, perShare)
	shares := []string{ShareAdmin, "team-a", "team-b", "team-c"}
	var total atomic.Int32
	per := make([]atomic.Int32, len(shares))
	var wg sync.WaitGroup
	var ran atomic.Int32
	for i := range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := i % len(shares)
			if i%2 == 0 {
				k = 1 // team-a is noisy
			}
			rel, err := q.wait(context.Background(), nil, shares[k])
			if !assert.NoError(t, err) {
				return
			}
			if n := total.Add(1); n > global {
				t.Errorf("%d running, global cap %d", n, global)
			}
			if n := per[k].Add(1); n > perShare {
				t.Errorf("%s runs %d, cap %d", shares[k], n, perShare)
			}
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			per[k].Add(-1)
			total.Add(-1)
			ran.Add(1)
			rel()
		}()
	}
	wg.Wait()
	require.EqualValues(t, 400, ran.Load())
	require.Empty(t, q.snapshot())
}

// TestFairShareDefaults: the default per-share cap leaves one slot no single share can take.
func TestFairShareDefaults(t *testing.T) {
	for parallel := 1; parallel <= 64; parallel++ {
		c := DefaultMaxPerNamespace(parallel)
		require.GreaterOrEqual(t, c, 1)
		if parallel >= 2 {
			require.Less(t, c, parallel, "parallel %d: one share must never hold every slot", parallel)
		}
	}
	require.Equal(t, 3, DefaultMaxPerNamespace(4))
}

// countFiles counts the paths that exist.
func countFiles(paths []string) int {
	n := 0
	for _, p := range paths {
		if fileExists(p) {
			n++
		}
	}
	return n
}

// gatherShares reads the engine's share gauges as /metrics would: "waiting/<share>" → value.
func gatherShares(t *testing.T, e *Engine) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.Collectors()...)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		kind, ok := strings.CutPrefix(mf.GetName(), "tfrs_engine_operations_")
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "share" {
					out[kind+"/"+l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func writeEmpty(p string) error { return os.WriteFile(p, nil, 0o600) }
