//go:build integration

package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFairShareEngineAcquire: the engine's own acquire, without running anything: one
// namespace asks for more slots than exist; an operation of the platform (and of another
// namespace) still starts at once, and a freed slot goes back to the namespace.
func TestFairShareEngineAcquire(t *testing.T) {
	e := newEngine(t, Options{MaxConcurrent: 4})
	require.Equal(t, 3, e.opts.MaxPerNamespace)
	ctx := context.Background()
	var releases []func()
	for i := range 3 {
		_, _, rel, err := e.acquire(ctx, OpUp, fmt.Sprintf("tenant.team-a.s%d", i), false)
		require.NoError(t, err)
		releases = append(releases, rel)
	}
	waiting := make(chan func(), 2)
	for i := 3; i < 5; i++ {
		go func() {
			_, _, rel, err := e.acquire(ctx, OpUp, fmt.Sprintf("tenant.team-a.s%d", i), false)
			if err == nil {
				waiting <- rel
			}
		}()
	}
	require.Eventually(t, func() bool { return e.fair.snapshot()["team-a"].waiting == 2 }, 5*time.Second, time.Millisecond)

	start := time.Now()
	_, _, admin, err := e.acquire(ctx, OpUp, "cluster.main", false)
	require.NoError(t, err)
	require.Less(t, time.Since(start), time.Second, "the admin's operation starts at once")

	// Every slot is taken now; a waiting mutation is bounded by its context, as before.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, _, _, err = e.acquire(short, OpUp, "tenant.team-b.x", false)
	require.ErrorIs(t, err, ErrCanceled)
	require.Contains(t, err.Error(), "share team-b")
	// Its stack slot was given back: the stack is not busy.
	_, _, _, err = e.acquire(short, OpUp, "tenant.team-b.x", false)
	require.ErrorIs(t, err, ErrCanceled, "not ErrConflict")

	// The admin's slot frees: team-a is at its cap, so it stays free (for anyone else).
	admin()
	require.Equal(t, shareLoad{running: 3, waiting: 2}, e.fair.snapshot()["team-a"])
	// One of team-a's own ends: its next waiting operation takes the slot.
	releases[0]()
	rel := <-waiting
	require.Equal(t, shareLoad{running: 3, waiting: 1}, e.fair.snapshot()["team-a"], "team-a gets its freed slot back, within its cap")
	for _, r := range append(releases[1:], rel) {
		r()
	}
	(<-waiting)()
	require.Empty(t, e.fair.snapshot())
}

// TestFairShareIssueExample reproduces issue 45's example with the real CLI: one namespace
// starts more never-finishing operations than the engine has slots; an operation of the
// platform still starts and finishes promptly, and the waiting ones show on the metrics.
func TestFairShareIssueExample(t *testing.T) {
	e := newEngine(t, Options{MaxConcurrent: 4})
	dir := t.TempDir()
	release := dir + "/release"
	t.Cleanup(func() { _ = writeEmpty(release) })
	var holds []string
	errs := make(chan error, 5)
	for i := range 5 {
		hold := fmt.Sprintf("%s/hold%d", dir, i)
		holds = append(holds, hold)
		go func() {
			_, err := e.Up(tctx(t, 5*time.Minute), Request{Stack: fmt.Sprintf("tenant.team-a.never%d", i), Program: holdProgram(hold, release)})
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return countFiles(holds) == 3 }, 2*time.Minute, 50*time.Millisecond, "team-a runs its cap")
	require.Equal(t, shareLoad{running: 3, waiting: 2}, e.fair.snapshot()["team-a"])
	gathered := gatherShares(t, e)
	require.Equal(t, 2.0, gathered["waiting/team-a"], "waiting operations by share on /metrics")
	require.Equal(t, 3.0, gathered["running/team-a"])

	start := time.Now()
	_, err := e.Up(tctx(t, 2*time.Minute), Request{Stack: "cluster.main", Program: emptyProgram})
	require.NoError(t, err)
	took := time.Since(start)
	t.Logf("the admin's up took %s while team-a held 3 slots and waited for 2 more", took)
	require.Less(t, took, time.Minute, "the admin's operation did not wait for team-a")
	require.Equal(t, 3, countFiles(holds), "team-a never exceeded its cap")

	require.NoError(t, writeEmpty(release))
	for range 5 {
		require.NoError(t, <-errs)
	}
	require.Empty(t, e.fair.snapshot())
}
