package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// fakePods is a PodProbe with a fixed answer.
type fakePods struct {
	leading bool
	gone    bool
	err     error
	asked   []PodRef
}

func (f *fakePods) Leading(context.Context) bool { return f.leading }
func (f *fakePods) PodGone(_ context.Context, p PodRef) (bool, error) {
	f.asked = append(f.asked, p)
	return f.gone, f.err
}

// TestJudgeLock: a lock is broken only when every owner record for its host and pid is
// provably gone; anything unknown is reported.
func TestJudgeLock(t *testing.T) {
	me := identity{Host: "node-a", BootID: "boot-1", PIDNS: "pid:[1]"}
	local := ownerRecord{Host: "node-a", PID: 42, BootID: "boot-1", PIDNS: "pid:[1]", StartTicks: 1000}
	otherNS := local
	otherNS.PIDNS = "pid:[2]" // a container that shares the hostname, not the pids
	otherBoot := local
	otherBoot.BootID = "boot-0" // this machine before a reboot, or another machine
	pod := ownerRecord{Host: "tfrs-7c9", PID: 42, BootID: "boot-9", PIDNS: "pid:[9]", StartTicks: 5,
		Pod: &PodRef{Namespace: "tfrs-system", Name: "tfrs-7c9", UID: "u-1"}}
	dead := func(int) procInfo { return procInfo{} }
	alive := func(ticks uint64) func(int) procInfo {
		return func(int) procInfo { return procInfo{alive: true, startTicks: ticks} }
	}
	lock := LockOwner{Host: "node-a", PID: 42, Time: time.Now()}
	cases := []struct {
		name  string
		recs  []ownerRecord
		proc  func(int) procInfo
		pods  PodProbe
		stale bool
		why   string
	}{
		{"no record: a process outside TFRS", nil, dead, nil, false, "no TFRS owner record"},
		{"local, pid gone", []ownerRecord{local}, dead, nil, true, "pid 42 is gone"},
		{"local, same process running", []ownerRecord{local}, alive(1000), nil, false, "still running"},
		{"local, pid reused", []ownerRecord{local}, alive(2000), nil, true, "reused"},
		{"local, start unknown", []ownerRecord{local}, alive(0), nil, false, "still running"},
		{"same hostname, other pid namespace", []ownerRecord{otherNS}, dead, nil, false, "cannot be proven"},
		{"other boot", []ownerRecord{otherBoot}, dead, nil, false, "cannot be proven"},
		{"two records, one running", []ownerRecord{otherNS, local}, alive(1000), nil, false, ""},
		{"two local records, both gone", []ownerRecord{local, {Host: "node-a", PID: 42, BootID: "boot-1", PIDNS: "pid:[1]", StartTicks: 7}}, alive(3000), nil, true, "reused"},
		{"pod, no probe", []ownerRecord{pod}, dead, nil, false, "leader Lease"},
		{"pod, not the leader", []ownerRecord{pod}, dead, &fakePods{leading: false, gone: true}, false, "leader Lease"},
		{"pod gone, leader", []ownerRecord{pod}, dead, &fakePods{leading: true, gone: true}, true, "no longer exists"},
		{"pod exists, leader", []ownerRecord{pod}, dead, &fakePods{leading: true}, false, "still exists"},
		{"pod check failed", []ownerRecord{pod}, dead, &fakePods{leading: true, gone: true, err: errors.New("forbidden")}, false, "could not be checked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stale, why := judgeLock(context.Background(), lock, c.recs, liveness{me: me, proc: c.proc, pods: c.pods})
			assert.Equal(t, c.stale, stale, why)
			assert.Contains(t, why, c.why)
		})
	}
	// The probe is asked about the recorded Pod, UID included.
	p := &fakePods{leading: true, gone: true}
	_, _ = judgeLock(context.Background(), lock, []ownerRecord{pod}, liveness{me: me, proc: dead, pods: p})
	assert.Equal(t, []PodRef{*pod.Pod}, p.asked)
}

func TestLockKey(t *testing.T) {
	const stack = "tenant.a.b"
	k, err := lockKey("file:///tmp/x/.pulumi/locks/organization/tfrs/tenant.a.b/6c2a.json?metadata=skip", stack)
	require.NoError(t, err)
	assert.Equal(t, ".pulumi/locks/organization/tfrs/tenant.a.b/6c2a.json", k)
	k, err = lockKey("s3://b/prefix/.pulumi/locks/organization/tfrs/tenant.a.b/77.json?region=x", stack)
	require.NoError(t, err)
	assert.Equal(t, ".pulumi/locks/organization/tfrs/tenant.a.b/77.json", k, "relative to the prefixed bucket")
	for _, bad := range []string{
		"file:///tmp/x/.pulumi/locks/organization/tfrs/tenant.a.c/6c2a.json",      // another stack
		"file:///tmp/x/.pulumi/locks/organization/tfrs/tenant.a.b/../../x/1.json", // traversal
		"file:///tmp/x/.pulumi/stacks/tfrs/tenant.a.b.json",                       // not a lock
		"file:///tmp/x/.pulumi/locks/organization/tfrs/tenant.a.b/sub/1.json",     // nested
		"file:///tmp/x/.pulumi/locks/organization/tfrs/tenant.a.b/1.txt",
	} {
		_, err := lockKey(bad, stack)
		assert.Error(t, err, bad)
	}
}

func TestTakesLock(t *testing.T) {
	for args, want := range map[string]bool{
		"--non-interactive up --yes":         true,
		"refresh --yes":                      true,
		"destroy --yes":                      true,
		"stack import --file x":              true,
		"stack rm --yes":                     true,
		"--non-interactive preview":          false,
		"stack export --stack s":             false,
		"stack output --json":                false,
		"config set --secret k":              false,
		"--non-interactive stack select foo": false,
		"version":                            false,
	} {
		assert.Equal(t, want, takesLock(strings.Fields(args)), args)
	}
}

func TestLookupProcSelf(t *testing.T) {
	pi := lookupProc(osGetpid())
	assert.True(t, pi.alive)
	assert.NotZero(t, pi.startTicks, "start read from /proc")
	assert.Equal(t, pi, lookupProc(osGetpid()), "stable for one process")
	assert.False(t, lookupProc(1<<22+12345).alive)
	id := selfIdentity()
	assert.NotEmpty(t, id.BootID)
	assert.NotEmpty(t, id.PIDNS)
}

// TestFenceRefusesLockingRuns: with a fence that refuses, no process that may take the backend
// lock starts (the operator's fence: this replica lost its Lease); reads and previews still run.
func TestFenceRefusesLockingRuns(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	bin := filepath.Join(t.TempDir(), "pulumi")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\n"), 0o755))
	lost := errors.New("this replica does not hold the leader Lease")
	c := &pulumiCLI{bin: bin, env: func() map[string]string { return nil },
		fence: func(context.Context) error { return lost }}
	ctx := context.Background()
	_, _, _, err := c.Run(ctx, t.TempDir(), nil, nil, nil, nil, "up", "--yes", "--stack", "tenant.ns.a")
	require.ErrorIs(t, err, ErrFenced)
	require.ErrorIs(t, err, lost)
	_, err = os.Stat(marker)
	require.True(t, errors.Is(err, os.ErrNotExist), "the fenced CLI never started")
	_, _, _, err = c.Run(ctx, t.TempDir(), nil, nil, nil, nil, "preview", "--stack", "tenant.ns.a")
	require.NoError(t, err)
	b, err := os.ReadFile(marker)
	require.NoError(t, err)
	require.Contains(t, string(b), "preview")
}
