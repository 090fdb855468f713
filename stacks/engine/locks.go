package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Concurrency has two layers.
//
// In this process, each stack has a slot: one operation at a time. A second mutating
// operation (Up, Refresh, Destroy, Remove) on a busy stack fails at once with ErrConflict
// rather than queueing behind it, because every caller has a better answer than a hidden
// wait: the operator requeues with backoff, the HTTP API answers 409, the CLI tells the user.
// It is also exactly what another process gets from the backend lock, so callers handle one
// outcome whatever path the conflict took. Preview waits for the slot (bounded by ctx): it
// changes nothing, and a CI diff should not fail because the operator happens to be
// reconciling.
//
// Across processes and hosts, Pulumi's backend lock (a lock file in the state bucket) decides.
// A lock held by a live process is ErrConflict. A lock whose owner is provably gone is broken:
// see (LockOwner).stale.

// slot serialises operations on one stack in this process and caches its workspace.
type slot struct {
	busy chan struct{} // capacity 1: holding a token means owning the stack
	ws   *stackWorkspace
}

func (e *Engine) slotFor(stack string) *slot {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.slots[stack]
	if !ok {
		s = &slot{busy: make(chan struct{}, 1)}
		e.slots[stack] = s
	}
	return s
}

// acquire takes the stack slot (failing fast or waiting, see above) and then a global slot.
func (e *Engine) acquire(ctx context.Context, op OpKind, stack string, wait bool) (*slot, func(), error) {
	s := e.slotFor(stack)
	if wait {
		select {
		case s.busy <- struct{}{}:
		case <-ctx.Done():
			return nil, nil, &OpError{Op: op, Stack: stack, Kind: ErrCanceled, ctxErr: ctx.Err(), Detail: "waiting for the stack"}
		case <-e.closed:
			return nil, nil, opErr(op, stack, ErrClosed, "")
		}
	} else {
		select {
		case s.busy <- struct{}{}:
		default:
			return nil, nil, opErr(op, stack, ErrConflict, "another operation on this stack is running in this process")
		}
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		<-s.busy
		return nil, nil, &OpError{Op: op, Stack: stack, Kind: ErrCanceled, ctxErr: ctx.Err(), Detail: "waiting for a free operation slot"}
	case <-e.closed:
		<-s.busy
		return nil, nil, opErr(op, stack, ErrClosed, "")
	}
	e.running.Add(1)
	return s, func() {
		e.running.Done()
		<-e.sem
		<-s.busy
	}, nil
}

// LockOwner is the holder of a backend lock as Pulumi records it: the CLI process's pid, user,
// host and the lock time.
type LockOwner struct {
	User     string    `json:"user"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Time     time.Time `json:"time"`
	Location string    `json:"location,omitempty"`
}

func (o LockOwner) String() string {
	return fmt.Sprintf("%s@%s pid %d since %s", o.User, o.Host, o.PID, o.Time.Format(time.RFC3339))
}

// Pulumi's DIY backend describes each foreign lock as
// "  <url>: created by <user>@<host> (pid <n>) at <RFC3339>".
var reLockLine = regexp.MustCompile(`(?m)^\s*(\S+): created by (.*)@([^@\s]+) \(pid (\d+)\) at (\S+)\s*$`)

func parseLockOwners(stderr string) []LockOwner {
	var out []LockOwner
	for _, m := range reLockLine.FindAllStringSubmatch(stderr, -1) {
		pid, _ := strconv.Atoi(m[4])
		t, _ := time.Parse(time.RFC3339, m[5])
		out = append(out, LockOwner{Location: m[1], User: m[2], Host: m[3], PID: pid, Time: t})
	}
	return out
}

// procInfo is what the engine can learn about a local pid.
type procInfo struct {
	alive bool
	start time.Time // zero when unknown
	exe   string    // base name of the executable, "" when unknown
}

// lookupProc is a variable so tests can fake process tables.
var lookupProc = func(pid int) procInfo {
	if pid <= 0 {
		return procInfo{}
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return procInfo{}
	}
	pi := procInfo{alive: true}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		pi.start = procStart(b)
		// A zombie holds its pid but will never release a lock.
		if st := procState(b); st == "Z" || st == "X" {
			pi.alive = false
		}
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		pi.exe = filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	} else if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		arg0, _, _ := bytes.Cut(b, []byte{0})
		pi.exe = filepath.Base(string(arg0))
	}
	return pi
}

// procState returns the state letter from /proc/<pid>/stat.
func procState(stat []byte) string {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+3 > len(stat) {
		return ""
	}
	return string(stat[i+2 : i+3])
}

// procStart reads field 22 (start time in clock ticks after boot) of /proc/<pid>/stat. The
// command name (field 2) may hold spaces, so fields are counted after its closing paren.
func procStart(stat []byte) time.Time {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return time.Time{}
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return time.Time{}
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return time.Time{}
	}
	boot := bootTime()
	if boot.IsZero() {
		return time.Time{}
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return boot.Add(time.Duration(ticks) * (time.Second / 100))
}

var bootOnce = sync.OnceValue(func() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return time.Unix(n, 0)
			}
		}
	}
	return time.Time{}
})

func bootTime() time.Time { return bootOnce() }

var hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})

// stale reports whether the lock's owner is provably gone, and why. The proof is local: the
// lock names this host, and its pid is dead, a zombie, not a pulumi process, or a process that
// started after the lock was taken (the pid was reused). A lock from another host is only
// stale past foreignTimeout (when set), because a remote process's liveness cannot be seen.
func (o LockOwner) stale(now time.Time, foreignTimeout time.Duration) (bool, string) {
	if o.Host != hostname() {
		if foreignTimeout > 0 && !o.Time.IsZero() && now.Sub(o.Time) > foreignTimeout {
			return true, fmt.Sprintf("lock from host %s is older than %s", o.Host, foreignTimeout)
		}
		return false, ""
	}
	pi := lookupProc(o.PID)
	switch {
	case !pi.alive:
		return true, fmt.Sprintf("pid %d is gone", o.PID)
	case pi.exe != "" && !strings.HasPrefix(pi.exe, "pulumi"):
		return true, fmt.Sprintf("pid %d is now %s, not pulumi", o.PID, pi.exe)
	case !pi.start.IsZero() && !o.Time.IsZero() && pi.start.After(o.Time.Add(2*time.Second)):
		// The lock time has second precision and ticks are 10 ms: 2 s of slack.
		return true, fmt.Sprintf("pid %d was reused (started %s, after the lock)", o.PID, pi.start.Format(time.RFC3339))
	}
	return false, ""
}
