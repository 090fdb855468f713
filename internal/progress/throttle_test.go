package progress

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestThrottleLeadingAndTrailingEdge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	th := Throttle{Interval: 5 * time.Second}
	require.True(t, th.Allow(t0), "the first one at once")
	require.False(t, th.Due(t0.Add(10*time.Second)), "nothing refused, nothing due")
	require.False(t, th.Allow(t0.Add(time.Second)))
	require.False(t, th.Allow(t0.Add(4999*time.Millisecond)))
	require.True(t, th.Pending())
	require.False(t, th.Due(t0.Add(4*time.Second)), "the period has not passed")
	require.True(t, th.Due(t0.Add(5*time.Second)), "the refused one is let through when its period ends")
	require.False(t, th.Pending())
	require.False(t, th.Allow(t0.Add(6*time.Second)), "a new period started at the trailing edge")
	require.True(t, th.Allow(t0.Add(10*time.Second)))
}

// Events every 10ms for a minute pass at most once per interval, and the last change is let
// through by Due within one interval after the burst.
func TestThrottleBoundsABurst(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	th := Throttle{Interval: 5 * time.Second}
	passed := 0
	var now time.Time
	for i := range 6000 {
		now = t0.Add(time.Duration(i) * 10 * time.Millisecond)
		if th.Allow(now) {
			passed++
		}
	}
	require.Equal(t, 12, passed, "60s / 5s")
	require.True(t, th.Pending())
	require.False(t, th.Due(now), "the last period is still running")
	require.True(t, th.Due(now.Add(5*time.Second)))
}

func TestThrottleZeroIntervalLetsAllThrough(t *testing.T) {
	var th Throttle
	now := time.Now()
	for range 3 {
		require.True(t, th.Allow(now))
	}
}
