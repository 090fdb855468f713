package progress

import "time"

// Throttle lets something happen at most once per Interval: the first time at once (leading
// edge), then only once Interval has passed since the last time it was let through. A caller
// that also flushes on a ticker (Due) gets the trailing edge too: a change made during the quiet
// period is written when the period ends, never lost and never more often. The zero Interval
// lets everything through. Not safe for concurrent use.
type Throttle struct {
	Interval time.Duration
	last     time.Time
	pending  bool
}

// Allow reports whether the event at now may happen, and if so records it. A refused event is
// remembered as pending for Due.
func (t *Throttle) Allow(now time.Time) bool {
	if t.last.IsZero() || now.Sub(t.last) >= t.Interval {
		t.last, t.pending = now, false
		return true
	}
	t.pending = true
	return false
}

// Due reports whether a refused event is pending and its period has passed; if so it records
// it as let through now.
func (t *Throttle) Due(now time.Time) bool {
	if !t.pending || now.Sub(t.last) < t.Interval {
		return false
	}
	t.last, t.pending = now, false
	return true
}

// Pending reports whether an event was refused since the last one let through.
func (t *Throttle) Pending() bool { return t.pending }
