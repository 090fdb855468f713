package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
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
// Beyond the stack slot, every operation takes one of the engine's global slots, shared fairly
// between namespaces (fairshare.go), and holds it at most its kind's deadline (deadline.go).
//
// Across processes and hosts, Pulumi's backend lock (a lock file in the state bucket) decides.
// A lock held by a live process is ErrConflict. A lock whose owner is provably gone is broken,
// that one lock and no other: see lockowners.go.

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

// acquire takes the stack slot (failing fast or waiting, see above), then a global slot
// through the fair queue (fairshare.go), and starts the operation's deadline (deadline.go).
// The operation runs under the returned context; release ends it and frees both slots.
//
// The stack slot comes first, as before: a conflict on the stack fails fast without queueing,
// and a waiting preview holds only its own stack. The global slot is waited for without taking
// anything, so a share at its cap holds up no other share.
func (e *Engine) acquire(ctx context.Context, op OpKind, stack string, wait bool) (context.Context, *slot, func(), error) {
	s := e.slotFor(stack)
	if wait {
		select {
		case s.busy <- struct{}{}:
		case <-ctx.Done():
			return nil, nil, nil, &OpError{Op: op, Stack: stack, Kind: ErrCanceled, ctxErr: ctx.Err(), Detail: "waiting for the stack"}
		case <-e.closed:
			return nil, nil, nil, opErr(op, stack, ErrClosed, "")
		}
	} else {
		select {
		case s.busy <- struct{}{}:
		default:
			return nil, nil, nil, opErr(op, stack, ErrConflict, "another operation on this stack is running in this process")
		}
	}
	opCtx, release, err := e.admit(ctx, op, stack)
	if err != nil {
		<-s.busy
		return nil, nil, nil, err
	}
	return opCtx, s, func() {
		release()
		<-s.busy
	}, nil
}

// admit waits for a global slot in the fair queue under stack's share, then bounds the
// operation by its kind's deadline. Reads that need no stack slot (readOp) come here directly.
func (e *Engine) admit(ctx context.Context, op OpKind, stack string) (context.Context, func(), error) {
	share := ShareOf(stack)
	done, err := e.fair.wait(ctx, e.closed, share)
	if errors.Is(err, errQueueClosed) {
		return nil, nil, opErr(op, stack, ErrClosed, "")
	}
	if err != nil {
		return nil, nil, &OpError{Op: op, Stack: stack, Kind: ErrCanceled, ctxErr: err,
			Detail: fmt.Sprintf("waiting for a free operation slot (share %s: at most %d of %d at once)", share, e.fair.perShare, e.fair.global)}
	}
	e.running.Add(1)
	opCtx, stop := e.withDeadline(ctx, op)
	return opCtx, func() {
		stop()
		e.running.Done()
		done()
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
	alive      bool
	startTicks uint64 // start in clock ticks after boot; 0 when unknown
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
		pi.startTicks = procStartTicks(b)
		// A zombie holds its pid but will never release a lock.
		if st := procState(b); st == "Z" || st == "X" {
			pi.alive = false
		}
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

// procStartTicks reads field 22 (start time in clock ticks after boot) of /proc/<pid>/stat.
// The command name (field 2) may hold spaces, so fields are counted after its closing paren.
// Ticks since boot do not move when the wall clock is stepped.
func procStartTicks(stat []byte) uint64 {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return 0
	}
	ticks, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0
	}
	return ticks
}

var hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})
