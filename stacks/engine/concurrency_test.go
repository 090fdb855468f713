//go:build integration

package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// child is a re-executed test binary running one engine operation (see runChild).
type child struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr bytes.Buffer
	exited chan struct{}
	err    error
}

func startChild(t *testing.T, spec childSpec) *child {
	t.Helper()
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	c := &child{lines: make(chan string, 10000), exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), childEnv+"="+string(b))
	// Its own process group: killing the group kills the engine, the Pulumi CLI and the
	// provider plugins at once, like a pod that dies.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
		c.err = c.cmd.Wait()
		close(c.lines)
		close(c.exited)
	}()
	t.Cleanup(c.kill)
	return c
}

// kill SIGKILLs the child and every process below it at once, like a pod that dies. The
// process group is not enough: Pulumi starts provider plugins in groups of their own.
func (c *child) kill() {
	if c.cmd.Process != nil {
		pids := descendants(c.cmd.Process.Pid)
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
	}
}

// result waits for the child's RESULT line and returns the lines before it.
func (c *child) result(t *testing.T, timeout time.Duration) ([]string, string) {
	t.Helper()
	var lines []string
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("child exited without a result: %v\n%s", c.err, c.stderr.String())
			}
			if r, found := strings.CutPrefix(l, "RESULT "); found {
				return lines, r
			}
			lines = append(lines, l)
		case <-deadline:
			t.Fatalf("child timed out\n%s", c.stderr.String())
		}
	}
}

// descendants lists every process below pid, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, en := range entries {
		p, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

func waitFile(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
}

// TestConflictInProcess: two concurrent Ups on one stack in one engine. The first runs; the
// second fails at once with ErrConflict (it does not queue: see locks.go for why). A Preview
// waits for the stack instead, bounded by its context.
func TestConflictInProcess(t *testing.T) {
	e := newEngine(t, Options{})
	dir := t.TempDir()
	hold, release := filepath.Join(dir, "hold"), filepath.Join(dir, "release")
	const stack = "tenant.conflict.inproc"
	var wg sync.WaitGroup
	var firstErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, firstErr = e.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: holdProgram(hold, release)})
	}()
	waitFile(t, hold, time.Minute)

	start := time.Now()
	_, err := e.Up(tctx(t, time.Minute), Request{Stack: stack, Program: emptyProgram})
	require.ErrorIs(t, err, ErrConflict)
	assert.Less(t, time.Since(start), 2*time.Second, "fails fast")

	_, err = e.Preview(tctx(t, 500*time.Millisecond), Request{Stack: stack, Program: emptyProgram})
	assert.ErrorIs(t, err, ErrCanceled, "a preview waits for the stack, up to its deadline")

	// Another stack is not blocked.
	_, err = e.Up(tctx(t, time.Minute), Request{Stack: "tenant.conflict.other", Program: emptyProgram})
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(release, nil, 0o600))
	wg.Wait()
	require.NoError(t, firstErr)
	_, err = e.Up(tctx(t, time.Minute), Request{Stack: stack, Program: emptyProgram})
	require.NoError(t, err, "usable again")
}

// TestS3SharedBackendTwoProcesses: two engines in two processes on one real S3 server see the
// same stacks and outputs and respect the same lock.
func TestS3SharedBackendTwoProcesses(t *testing.T) {
	srv := s3(t)
	opts := Options{BackendURL: srv.backendURL(), Env: srv.env()}
	e := newEngine(t, opts)
	const stack = "tenant.s3.shared"
	res, err := e.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: outputsProgram("from-parent"), ManagedBy: ManagedByAPI})
	require.NoError(t, err)
	assert.Equal(t, "from-parent", res.Outputs.String("plain"))

	spec := childSpec{StateDir: t.TempDir(), BackendURL: srv.backendURL(), Env: srv.env(), Stack: stack}
	spec.Mode = "list"
	lines, r := startChild(t, spec).result(t, 2*time.Minute)
	require.Equal(t, "ok", r)
	assert.Contains(t, lines, "STACK "+stack, "the other process sees the stack")

	spec.Mode = "outputs"
	lines, r = startChild(t, spec).result(t, 2*time.Minute)
	require.Equal(t, "ok", r)
	assert.Contains(t, lines, "OUTPUT plain from-parent")

	// The child holds the backend lock; this process gets ErrConflict naming it.
	dir := t.TempDir()
	spec.Mode, spec.Program = "up", "hold"
	spec.HoldFile, spec.ReleaseFile = filepath.Join(dir, "hold"), filepath.Join(dir, "release")
	holder := startChild(t, spec)
	waitFile(t, spec.HoldFile, 2*time.Minute)
	_, err = e.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: outputsProgram("from-parent")})
	require.ErrorIs(t, err, ErrConflict)
	var oe *OpError
	require.True(t, errors.As(err, &oe))
	require.NotEmpty(t, oe.Owners, "%v", err)
	assert.Equal(t, hostname(), oe.Owners[0].Host)
	assert.Contains(t, err.Error(), "locked by")

	// A second engine in this process on the same bucket sees the same thing.
	e2 := newEngine(t, opts)
	st, err := e2.Status(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	assert.Equal(t, ManagedByAPI, st.ManagedBy, "the first door's tag is kept")

	require.NoError(t, os.WriteFile(spec.ReleaseFile, nil, 0o600))
	_, r = holder.result(t, 2*time.Minute)
	require.Equal(t, "ok", r)
	res, err = e2.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: outputsProgram("from-e2")})
	require.NoError(t, err)
	assert.Equal(t, "from-e2", res.Outputs.String("plain"))

	// A holder killed outright leaves its lock in the bucket; its owner record (also in the
	// bucket) proves it gone, and exactly that lock is deleted through S3.
	spec.HoldFile, spec.ReleaseFile = filepath.Join(dir, "hold2"), filepath.Join(dir, "release2")
	holder = startChild(t, spec)
	waitFile(t, spec.HoldFile, 2*time.Minute)
	holder.kill()
	res, err = e2.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: outputsProgram("after-kill")})
	require.NoError(t, err)
	require.NotNil(t, res.Recovery)
	require.Len(t, res.Recovery.BrokenLocks, 1)
	assert.Contains(t, res.Recovery.BrokenLocks[0].Location, "s3://")
	assert.Equal(t, "after-kill", res.Outputs.String("plain"))
}

// lockDir is where the file backend keeps a stack's lock files.
func lockDir(e *Engine, stack string) string {
	dir, _ := fileBackendDir(e.opts.BackendURL)
	return filepath.Join(dir, ".pulumi", "locks", "organization", ProjectName, stack)
}

// writeLock plants a Pulumi lock file as the CLI writes it and returns its path.
func writeLock(t *testing.T, e *Engine, stack string, pid int, host string, at time.Time) string {
	t.Helper()
	dir := lockDir(e, stack)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	b, _ := json.Marshal(map[string]any{"pid": pid, "username": "someone", "hostname": host, "timestamp": at})
	p := filepath.Join(dir, uuid.NewString()+".json")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// writeRecord plants an owner record as the engine writes it for a CLI it started.
func writeRecord(t *testing.T, e *Engine, r ownerRecord) {
	t.Helper()
	b, err := e.bucket(context.Background())
	require.NoError(t, err)
	body, _ := json.Marshal(r)
	require.NoError(t, b.WriteAll(context.Background(), ownerRecordKey(r), body, nil))
}

// localRecord is the record of a process of this machine and pid namespace.
func localRecord(pid int) ownerRecord {
	me := selfIdentity()
	return ownerRecord{Host: me.Host, PID: pid, BootID: me.BootID, PIDNS: me.PIDNS, StartTicks: lookupProc(pid).startTicks}
}

// TestStaleLocks: a lock is broken only when its owner is provably gone, and then only that
// lock; everything else is a conflict that says why.
func TestStaleLocks(t *testing.T) {
	e := newEngine(t, Options{})
	const stack = "cluster.locks"
	req := Request{Stack: stack, Program: emptyProgram}
	_, err := e.Up(tctx(t, time.Minute), req)
	require.NoError(t, err)

	// A dead TFRS-run CLI of this machine: broken, with its record.
	dead := exec.Command("true")
	require.NoError(t, dead.Start())
	rec := localRecord(dead.Process.Pid)
	require.NoError(t, dead.Wait())
	writeRecord(t, e, rec)
	writeLock(t, e, stack, dead.Process.Pid, hostname(), time.Now())
	res, err := e.Up(tctx(t, time.Minute), req)
	require.NoError(t, err)
	require.NotNil(t, res.Recovery)
	require.Len(t, res.Recovery.BrokenLocks, 1)
	assert.Equal(t, dead.Process.Pid, res.Recovery.BrokenLocks[0].PID)
	recs, _, err := e.ownerRecords(context.Background(), res.Recovery.BrokenLocks[0])
	require.NoError(t, err)
	assert.Empty(t, recs, "the broken lock's record goes with it")

	// The same dead pid without a record (a stock CLI, or a process killed before it recorded
	// itself): reported, never guessed.
	p := writeLock(t, e, stack, dead.Process.Pid, hostname(), time.Now())
	_, err = e.Up(tctx(t, time.Minute), req)
	require.ErrorIs(t, err, ErrConflict)
	assert.Contains(t, err.Error(), "no TFRS owner record")
	require.NoError(t, os.Remove(p))

	// A live process with a matching record: a conflict until it is gone.
	live := exec.Command("sleep", "120")
	require.NoError(t, live.Start())
	writeRecord(t, e, localRecord(live.Process.Pid))
	writeLock(t, e, stack, live.Process.Pid, hostname(), time.Now().Add(-time.Hour)) // a clock step changes nothing
	_, err = e.Up(tctx(t, time.Minute), req)
	require.ErrorIs(t, err, ErrConflict)
	assert.Contains(t, err.Error(), fmt.Sprintf("pid %d on this machine is still running", live.Process.Pid))
	require.NoError(t, live.Process.Kill())
	_ = live.Wait()
	res, err = e.Up(tctx(t, time.Minute), req)
	require.NoError(t, err, "once the owner is gone the lock is broken")
	require.Len(t, res.Recovery.BrokenLocks, 1)

	// A container that shares this hostname but not the pid namespace: its pid means nothing
	// here, so even a pid that is dead here is not proof.
	other := localRecord(dead.Process.Pid)
	other.PIDNS = "pid:[4026530000]"
	writeRecord(t, e, other)
	p = writeLock(t, e, stack, dead.Process.Pid, hostname(), time.Now())
	_, err = e.Up(tctx(t, time.Minute), req)
	require.ErrorIs(t, err, ErrConflict)
	assert.Contains(t, err.Error(), "cannot be proven")
	require.NoError(t, os.Remove(p))

	// A pod on another machine: only the leader, and only once the Pod is gone.
	pod := ownerRecord{Host: "tfrs-operator-5d8", PID: 17, BootID: "another-kernel", PIDNS: "pid:[1]",
		Pod: &PodRef{Namespace: "tfrs-system", Name: "tfrs-operator-5d8", UID: "uid-1"}}
	writeRecord(t, e, pod)
	writeLock(t, e, stack, 17, "tfrs-operator-5d8", time.Now())
	_, err = e.Up(tctx(t, time.Minute), req)
	require.ErrorIs(t, err, ErrConflict)
	assert.Contains(t, err.Error(), "leader Lease")
	pods := &fakePods{leading: true, gone: false}
	leader := newEngine(t, Options{StateDir: e.opts.StateDir, Pods: pods})
	_, err = leader.Up(tctx(t, time.Minute), req)
	require.ErrorIs(t, err, ErrConflict)
	assert.Contains(t, err.Error(), "which still exists")
	pods.gone = true
	res, err = leader.Up(tctx(t, time.Minute), req)
	require.NoError(t, err)
	require.Len(t, res.Recovery.BrokenLocks, 1)
	assert.Equal(t, "tfrs-operator-5d8", res.Recovery.BrokenLocks[0].Host)
	assert.Contains(t, pods.asked, *pod.Pod)
	entries, err := os.ReadDir(lockDir(e, stack))
	require.NoError(t, err)
	assert.Empty(t, entries, "no lock left behind")
}

// TestBreakOnlyTheStaleLock: two breakers judged the same dead lock stale; the first deletes
// it and takes the stack, the second must not delete the first one's live lock.
func TestBreakOnlyTheStaleLock(t *testing.T) {
	e := newEngine(t, Options{})
	const stack = "cluster.breakers"
	deadCmd := exec.Command("true")
	require.NoError(t, deadCmd.Run())
	stale := writeLock(t, e, stack, deadCmd.Process.Pid, hostname(), time.Now().Truncate(time.Second))
	owner := LockOwner{Host: hostname(), PID: deadCmd.Process.Pid, Time: time.Now().Truncate(time.Second),
		Location: "file://" + stale + "?metadata=skip"}
	b, _ := os.ReadFile(stale)
	var content struct {
		Time time.Time `json:"timestamp"`
	}
	require.NoError(t, json.Unmarshal(b, &content))
	owner.Time = content.Time

	deleted, err := e.breakLock(context.Background(), stack, owner)
	require.NoError(t, err)
	assert.True(t, deleted, "the first breaker removes the stale lock")
	// The first breaker's run now holds its own lock.
	liveLock := writeLock(t, e, stack, osGetpid(), hostname(), time.Now())
	deleted, err = e.breakLock(context.Background(), stack, owner)
	require.NoError(t, err)
	assert.False(t, deleted, "the second breaker finds its stale lock gone")
	assert.FileExists(t, liveLock, "and leaves the live lock alone")

	// A lock file that now says something else is not the one judged: left alone.
	forged := owner
	forged.Location = "file://" + liveLock
	deleted, err = e.breakLock(context.Background(), stack, forged)
	require.NoError(t, err)
	assert.False(t, deleted)
	assert.FileExists(t, liveLock)
	require.NoError(t, os.Remove(liveLock))
}

// TestTwoEnginesBreakOneDeadLock: two engines on one backend meet the same dead lock at once:
// it is broken exactly once, and the stack is never run by both at the same time.
func TestTwoEnginesBreakOneDeadLock(t *testing.T) {
	e1 := newEngine(t, Options{})
	e2 := newEngine(t, Options{StateDir: e1.opts.StateDir})
	const stack = "cluster.twobreakers"
	_, err := e1.Up(tctx(t, time.Minute), Request{Stack: stack, Program: emptyProgram})
	require.NoError(t, err)
	dead := exec.Command("true")
	require.NoError(t, dead.Start())
	rec := localRecord(dead.Process.Pid)
	require.NoError(t, dead.Wait())
	writeRecord(t, e1, rec)
	writeLock(t, e1, stack, dead.Process.Pid, hostname(), time.Now())

	type result struct {
		res *Result
		err error
	}
	out := make(chan result, 2)
	for _, e := range []*Engine{e1, e2} {
		go func() {
			r, err := e.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: emptyProgram})
			out <- result{r, err}
		}()
	}
	broken, ok := 0, 0
	for range 2 {
		r := <-out
		if r.err != nil {
			require.ErrorIs(t, r.err, ErrConflict, "the loser meets the winner's live lock")
			continue
		}
		ok++
		if r.res.Recovery != nil {
			broken += len(r.res.Recovery.BrokenLocks)
		}
	}
	assert.GreaterOrEqual(t, ok, 1, "one of them proceeds")
	assert.Equal(t, 1, broken, "the dead lock is broken exactly once")
	_, err = e1.Up(tctx(t, time.Minute), Request{Stack: stack, Program: emptyProgram})
	require.NoError(t, err, "the stack is consistent and unlocked afterwards")
}
