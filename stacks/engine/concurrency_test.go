package engine

import (
	"bufio"
	"bytes"
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
}

// lockDir is where the file backend keeps a stack's lock files.
func lockDir(e *Engine, stack string) string {
	dir, _ := fileBackendDir(e.opts.BackendURL)
	return filepath.Join(dir, ".pulumi", "locks", "organization", ProjectName, stack)
}

func writeLock(t *testing.T, e *Engine, stack string, pid int, host string, at time.Time) {
	t.Helper()
	dir := lockDir(e, stack)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	b, _ := json.Marshal(map[string]any{"pid": pid, "username": "someone", "hostname": host, "timestamp": at})
	require.NoError(t, os.WriteFile(filepath.Join(dir, uuid.NewString()+".json"), b, 0o600))
}

// TestStaleLocks: a lock whose owner is gone is broken; a live owner's lock is a conflict; a
// foreign host's lock is only broken past ForeignLockTimeout.
func TestStaleLocks(t *testing.T) {
	e := newEngine(t, Options{})
	const stack = "cluster.locks"
	req := Request{Stack: stack, Program: emptyProgram}
	_, err := e.Up(tctx(t, time.Minute), req)
	require.NoError(t, err)

	// Dead owner on this host.
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	writeLock(t, e, stack, dead.Process.Pid, hostname(), time.Now())
	res, err := e.Up(tctx(t, time.Minute), req)
	require.NoError(t, err)
	require.NotNil(t, res.Recovery)
	require.Len(t, res.Recovery.BrokenLocks, 1)
	assert.Equal(t, dead.Process.Pid, res.Recovery.BrokenLocks[0].PID)

	// A live process that looks like the Pulumi CLI and predates the lock.
	fake := filepath.Join(t.TempDir(), "pulumi")
	sleepBin, err := exec.LookPath("sleep")
	require.NoError(t, err)
	b, err := os.ReadFile(sleepBin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(fake, b, 0o700))
	live := exec.Command(fake, "120")
	require.NoError(t, live.Start())
	time.Sleep(1100 * time.Millisecond)
	writeLock(t, e, stack, live.Process.Pid, hostname(), time.Now())
	_, err = e.Up(tctx(t, time.Minute), req)
	require.ErrorIs(t, err, ErrConflict)
	assert.Contains(t, err.Error(), fmt.Sprintf("pid %d", live.Process.Pid))
	require.NoError(t, live.Process.Kill())
	_ = live.Wait()
	_, err = e.Up(tctx(t, time.Minute), req)
	require.NoError(t, err, "once the owner is gone the lock is broken")

	// A lock from another host is respected…
	writeLock(t, e, stack, 1, "some-other-host", time.Now().Add(-time.Hour))
	_, err = e.Up(tctx(t, time.Minute), req)
	require.ErrorIs(t, err, ErrConflict)
	// …unless the caller opted into a timeout and it is older.
	e2 := newEngine(t, Options{StateDir: e.opts.StateDir, ForeignLockTimeout: 30 * time.Minute})
	res, err = e2.Up(tctx(t, time.Minute), req)
	require.NoError(t, err)
	require.NotNil(t, res.Recovery)
	assert.Equal(t, "some-other-host", res.Recovery.BrokenLocks[0].Host)
}
