package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const lockStderr = `error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with ` + "`pulumi cancel`" + `.
  file:///tmp/x/.pulumi/locks/organization/tfrs/tenant.a.b/6c2a.json: created by root@host-1 (pid 4242) at 2026-03-01T10:00:00Z
  s3://b/.pulumi/locks/organization/tfrs/tenant.a.b/77.json: created by svc@acct@host-2 (pid 7) at 2026-03-01T10:00:05+01:00
`

func TestParseLockOwners(t *testing.T) {
	o := parseLockOwners(lockStderr)
	require.Len(t, o, 2)
	assert.Equal(t, LockOwner{User: "root", Host: "host-1", PID: 4242, Time: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		Location: "file:///tmp/x/.pulumi/locks/organization/tfrs/tenant.a.b/6c2a.json"}, o[0])
	assert.Equal(t, "svc@acct", o[1].User)
	assert.Equal(t, "host-2", o[1].Host)
	assert.Equal(t, 7, o[1].PID)
}

func TestLockStaleness(t *testing.T) {
	orig := lookupProc
	t.Cleanup(func() { lookupProc = orig })
	lockTime := time.Now().Add(-time.Minute).Truncate(time.Second)
	me := hostname()
	cases := []struct {
		name  string
		host  string
		proc  procInfo
		stale bool
	}{
		{"dead pid", me, procInfo{}, true},
		{"live pulumi, started before lock", me, procInfo{alive: true, exe: "pulumi", start: lockTime.Add(-time.Second)}, false},
		{"pid reused by another program", me, procInfo{alive: true, exe: "bash", start: lockTime.Add(-time.Hour)}, true},
		{"pid reused by a later pulumi", me, procInfo{alive: true, exe: "pulumi", start: lockTime.Add(time.Minute)}, true},
		{"live, nothing known", me, procInfo{alive: true}, false},
		{"other host", "elsewhere", procInfo{}, false},
	}
	for _, c := range cases {
		lookupProc = func(int) procInfo { return c.proc }
		got, why := LockOwner{Host: c.host, PID: 99, Time: lockTime}.stale(time.Now(), 0)
		assert.Equal(t, c.stale, got, "%s: %s", c.name, why)
	}
	// A foreign lock past the configured timeout is stale; under it, it is not.
	lookupProc = func(int) procInfo { return procInfo{} }
	old := LockOwner{Host: "elsewhere", PID: 1, Time: time.Now().Add(-2 * time.Hour)}
	got, _ := old.stale(time.Now(), time.Hour)
	assert.True(t, got)
	got, _ = old.stale(time.Now(), 3*time.Hour)
	assert.False(t, got)
}

func TestLookupProcSelf(t *testing.T) {
	pi := lookupProc(osGetpid())
	assert.True(t, pi.alive)
	assert.False(t, pi.start.IsZero(), "start time read from /proc")
	assert.WithinDuration(t, time.Now(), pi.start, 24*time.Hour)
	assert.False(t, lookupProc(1<<22+12345).alive)
}
