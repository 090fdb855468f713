package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
)

// pulumiCLI runs the Pulumi CLI for the Automation API. It replaces auto's default command so
// the engine owns three things: the environment (inherited Pulumi variables are dropped), the
// cancel path (SIGINT, then CancelGrace for Pulumi to finish in-flight steps and save state,
// instead of auto's 10 s before SIGKILL), and accounting (time spent in the CLI, for the
// benchmarks' engine-overhead numbers).
type pulumiCLI struct {
	bin     string
	version semver.Version
	grace   time.Duration
	env     func() map[string]string

	calls atomic.Int64
	nanos atomic.Int64

	// onLockingStart is called with the pid of every started CLI process that may take the
	// backend lock; the func it returns runs when that process exited by itself (not by a
	// signal). The engine records lock owners with it (lockowners.go).
	onLockingStart func(pid int) (exited func())
	// fence is Options.Fence: asked before such a process starts.
	fence func(ctx context.Context) error
}

var _ auto.PulumiCommand = (*pulumiCLI)(nil)

// newPulumiCLI checks the CLI's version. `pulumi version` costs a process on every engine start
// (every tfrs invocation), so the answer is cached in cacheDir, keyed by the binary's path, size
// and mtime: a rebuilt or replaced binary is asked again. cacheDir "" disables the cache.
func newPulumiCLI(ctx context.Context, bin string, grace time.Duration, env func() map[string]string, cacheDir string) (*pulumiCLI, error) {
	c := &pulumiCLI{bin: bin, grace: grace, env: env}
	var cachePath string
	key, keyErr := binaryKey(bin)
	if cacheDir != "" && keyErr == nil {
		cachePath = filepath.Join(cacheDir, versionCacheFile)
		if v, ok := readVersionCache(cachePath, key); ok {
			c.version = v
			return c, nil
		}
	}
	out, _, _, err := c.Run(ctx, os.TempDir(), nil, nil, nil, nil, "version")
	if err != nil {
		return nil, fmt.Errorf("%w: `%s version` failed: %v; run `make tools`", ErrToolsMissing, bin, err)
	}
	v, err := semver.ParseTolerant(strings.TrimSpace(out))
	if err != nil {
		// A CLI built without the version ldflag reports "v0.0.0-dev" or garbage; the
		// Automation API then refuses features it cannot prove the CLI has.
		return nil, fmt.Errorf("%w: %s reports version %q: build it with `make tools`", ErrToolsMissing, bin, strings.TrimSpace(out))
	}
	c.version = v
	if cachePath != "" {
		key.Version = strings.TrimSpace(out)
		// Best effort: without a cache the next start just asks again.
		_ = writeVersionCache(cachePath, key)
	}
	return c, nil
}

// versionCacheFile (in the state dir) holds the last `pulumi version` answer.
const versionCacheFile = "pulumi-version.json"

// versionCache is the cached answer and the binary it is valid for.
type versionCache struct {
	Path    string `json:"path"`   // absolute path as configured
	Target  string `json:"target"` // after symlinks: the tools build links binaries from PATH
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime"` // Unix nanoseconds
	Version string `json:"version,omitempty"`
}

func binaryKey(bin string) (versionCache, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return versionCache{}, err
	}
	target, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return versionCache{}, err
	}
	fi, err := os.Stat(target)
	if err != nil {
		return versionCache{}, err
	}
	return versionCache{Path: abs, Target: target, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, nil
}

// readVersionCache returns the cached version when the cache is for this very binary; a
// missing, corrupt or stale cache is a miss.
func readVersionCache(path string, key versionCache) (semver.Version, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return semver.Version{}, false
	}
	var got versionCache
	if json.Unmarshal(b, &got) != nil || got.Version == "" {
		return semver.Version{}, false
	}
	v := got.Version
	got.Version = ""
	if got != key {
		return semver.Version{}, false
	}
	sv, err := semver.ParseTolerant(v)
	if err != nil {
		return semver.Version{}, false
	}
	return sv, true
}

// writeVersionCache replaces the cache atomically (temp file + rename), so concurrent engine
// starts never read a half-written file.
func writeVersionCache(path string, entry versionCache) error {
	b, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), versionCacheFile+".*.tmp") // mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

func (c *pulumiCLI) Version() semver.Version { return c.version }

// Run mirrors auto's command (non-interactive, PULUMI_AUTOMATION_API) with the engine's env.
func (c *pulumiCLI) Run(ctx context.Context, workdir string, stdin io.Reader,
	additionalOutput, additionalErrorOutput []io.Writer, additionalEnv []string, args ...string,
) (string, string, int, error) {
	if !slices.Contains(args, "--non-interactive") {
		args = append([]string{"--non-interactive"}, args...)
	}
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = workdir
	cmd.Env = c.environ(additionalEnv)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = io.MultiWriter(append(additionalOutput, &stdout)...)
	cmd.Stderr = io.MultiWriter(append(additionalErrorOutput, &stderr)...)
	cmd.Stdin = stdin
	// Pulumi's cancel path: the first SIGINT makes it stop scheduling steps, let in-flight ones
	// finish, write the checkpoint and release the lock. Only after the grace period is it
	// killed (which leaves pending operations that the next run recovers).
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = c.grace

	start := time.Now()
	err := c.run(ctx, cmd, args)
	c.calls.Add(1)
	c.nanos.Add(int64(time.Since(start)))
	code := -2
	if err == nil {
		code = 0
	} else if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code, err
}

// run starts and waits for cmd, recording the owner of any lock it may take.
func (c *pulumiCLI) run(ctx context.Context, cmd *exec.Cmd, args []string) error {
	if !takesLock(args) {
		return cmd.Run()
	}
	if c.fence != nil {
		if err := c.fence(ctx); err != nil {
			return fmt.Errorf("%w: %w", ErrFenced, err)
		}
	}
	if c.onLockingStart == nil {
		return cmd.Run()
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := c.onLockingStart(cmd.Process.Pid)
	err := cmd.Wait()
	var ee *exec.ExitError
	if err == nil || (errors.As(err, &ee) && !signaled(ee)) {
		exited()
	}
	return err
}

func signaled(ee *exec.ExitError) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// takesLock: the CLI commands whose DIY backend operation locks the stack (pkg/backend/diy:
// Update, Refresh, Destroy, Import, stack import/rm/rename). Previews and reads do not lock.
func takesLock(args []string) bool {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
			if len(words) == 2 {
				break
			}
		}
	}
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "up", "update", "refresh", "destroy", "import":
		return true
	case "stack":
		return len(words) > 1 && (words[1] == "import" || words[1] == "rm" || words[1] == "rename")
	}
	return false
}

// environ is the process env minus the variables the engine controls, plus the engine's env,
// plus per-call additions (auto's PULUMI_DEBUG_COMMANDS and workspace env vars) — later wins.
func (c *pulumiCLI) environ(additional []string) []string {
	drop := map[string]bool{}
	for _, k := range controlledEnv {
		drop[k] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	if c.env != nil {
		for k, v := range c.env() {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, additional...)
	env = append(env, "PULUMI_AUTOMATION_API=true")
	return dedupEnv(env)
}

// dedupEnv keeps the last value of each key, so appended settings override inherited ones
// regardless of how the child's libc resolves duplicates.
func dedupEnv(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	out := make([]string, 0, len(last))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if last[k] == i {
			out = append(out, kv)
		}
	}
	return out
}

// Stats report CLI usage since the engine started.
type Stats struct {
	CLICalls int64         // CLI processes run
	CLITime  time.Duration // wall time spent waiting on them
}
