//go:build integration

package engine

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

// errOtherDoor is what the test's admission returns for a stack another door owns (the
// runner's is runner.ManagedElsewhereError; the engine only passes its error through).
var errOtherDoor = errors.New("managed by another door")

func doorAdmit(door ManagedBy) func(map[string]string) error {
	return func(tags map[string]string) error {
		if by := ManagedBy(tags[TagManagedBy]); by != door {
			return fmt.Errorf("%w: %s", errOtherDoor, by)
		}
		return nil
	}
}

// TestOneOwnerWhenTwoDoorsCreateAtOnce: two engines sharing one backend (the HTTP API's and
// the operator's) bring up the same new stack at the same moment. Exactly one wins: its door
// is the stack's owner and its program ran; the other is refused by its admission (the
// managed-elsewhere rule) before it ran or wrote a tag. Run on a file backend and on S3, with
// the CLI's `stack init` and with the engine's own.
func TestOneOwnerWhenTwoDoorsCreateAtOnce(t *testing.T) {
	backends := map[string]func(t *testing.T) Options{
		"file": func(t *testing.T) Options { return Options{BackendURL: "file://" + t.TempDir()} },
		"s3": func(t *testing.T) Options {
			srv := s3(t)
			return Options{BackendURL: srv.backendURL(), Env: srv.env()}
		},
	}
	for name, mk := range backends {
		t.Run(name, func(t *testing.T) {
			opts := mk(t)
			api, op := newEngine(t, opts), newEngine(t, opts)
			// The first round is two `stack init` processes racing (a backend no CLI has used
			// has no meta.yaml yet); the later ones are the engines' in-process creates racing
			// on the same lock protocol (stackinit.go).
			rounds := 3
			if name == "s3" {
				rounds = 2
			}
			for i := range rounds {
				stack := fmt.Sprintf("tenant.race%s.t%d", name, i)
				var wg sync.WaitGroup
				errs := map[ManagedBy]error{}
				var mu sync.Mutex
				start := make(chan struct{})
				for door, e := range map[ManagedBy]*Engine{ManagedByAPI: api, ManagedByOperator: op} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						_, err := e.Up(tctx(t, 3*time.Minute), Request{Stack: stack, Program: outputsProgram(string(door)),
							ManagedBy: door, Tags: map[string]string{TagObject: "by-" + string(door)}, Admit: doorAdmit(door)})
						mu.Lock()
						errs[door] = err
						mu.Unlock()
					}()
				}
				close(start)
				wg.Wait()
				var winners []ManagedBy
				for door, err := range errs {
					if err == nil {
						winners = append(winners, door)
						continue
					}
					require.ErrorIs(t, err, errOtherDoor, "the loser (%s) is refused as managed elsewhere, not failed otherwise", door)
				}
				require.Len(t, winners, 1, "exactly one door owns %s: %v", stack, errs)
				won := winners[0]
				st, err := api.Status(tctx(t, time.Minute), stack)
				require.NoError(t, err)
				assert.Equal(t, won, st.ManagedBy)
				assert.Equal(t, "by-"+string(won), st.Tags[TagObject], "the loser wrote no tag")
				out, err := op.Outputs(tctx(t, time.Minute), stack)
				require.NoError(t, err)
				assert.Equal(t, string(won), out.String("plain"), "only the winner's program ran")
				t.Logf("%s: %s won", stack, won)
			}
		})
	}
}

// TestPreviewNeverCreatesAStack: a preview of a stack that does not exist shows the creates
// and leaves no stack behind, in the default mode too.
func TestPreviewNeverCreatesAStack(t *testing.T) {
	e := newEngine(t, Options{})
	rec := &recorder{}
	res, err := e.Preview(tctx(t, 2*time.Minute), Request{Stack: "tenant.preview.fresh", Program: outputsProgram("x"), ManagedBy: ManagedByCLI, Sink: rec.sink})
	require.NoError(t, err)
	assert.Positive(t, res.Changes[StepCreate], "everything is a create: %v", res.Changes)
	assert.Contains(t, rec.text(), "does not exist yet")
	_, err = e.Tags(tctx(t, time.Minute), "tenant.preview.fresh")
	require.ErrorIs(t, err, ErrNotFound, "the preview created no stack")
	list, err := e.List(tctx(t, time.Minute), "")
	require.NoError(t, err)
	assert.Empty(t, list)
	// An up afterwards creates it as usual, owned by its door.
	_, err = e.Up(tctx(t, 2*time.Minute), Request{Stack: "tenant.preview.fresh", Program: outputsProgram("x"), ManagedBy: ManagedByCLI})
	require.NoError(t, err)
	st, err := e.Status(tctx(t, time.Minute), "tenant.preview.fresh")
	require.NoError(t, err)
	assert.Equal(t, ManagedByCLI, st.ManagedBy)
}

// TestReadOnlyPreview: with the backend directory made read-only (and the Pulumi CLI run
// without the capabilities that let root ignore file modes), a read-only engine previews an
// existing stack and a new one; the backend's bytes are identical before and after, no stack
// appeared, and every mutation is refused with ErrReadOnly. A control run shows the setup
// really forbids writes: an up through the same CLI fails.
func TestReadOnlyPreview(t *testing.T) {
	dir := t.TempDir()
	backend := "file://" + dir
	w := newEngine(t, Options{BackendURL: backend})
	const existing, fresh = "tenant.ro.existing", "tenant.ro.fresh"
	_, err := w.Up(tctx(t, 2*time.Minute), Request{Stack: existing, Program: outputsProgram("v1"), ManagedBy: ManagedByOperator})
	require.NoError(t, err)
	require.NoError(t, w.Close())

	makeReadOnly(t, dir)
	before := treeDigest(t, dir)
	pulumi := readOnlyPulumi(t)

	ro := newEngine(t, Options{BackendURL: backend, ReadOnly: true, PulumiPath: pulumi})
	res, err := ro.Preview(tctx(t, 2*time.Minute), Request{Stack: existing, Program: outputsProgram("v2"), ManagedBy: ManagedByCLI})
	require.NoError(t, err, "preview of an existing stack")
	assert.Zero(t, res.Changes[StepCreate], "the existing stack's state was read: %v", res.Changes)
	res, err = ro.Preview(tctx(t, 2*time.Minute), Request{Stack: fresh, Program: outputsProgram("v1"), ManagedBy: ManagedByCLI})
	require.NoError(t, err, "preview of a new stack")
	assert.Positive(t, res.Changes[StepCreate], "%v", res.Changes)

	for name, call := range map[string]func() error{
		"up": func() error {
			_, err := ro.Up(tctx(t, time.Minute), Request{Stack: existing, Program: outputsProgram("v2")})
			return err
		},
		"refresh": func() error { _, err := ro.Refresh(tctx(t, time.Minute), Request{Stack: existing}); return err },
		"destroy": func() error { _, err := ro.Destroy(tctx(t, time.Minute), Request{Stack: existing}); return err },
		"remove":  func() error { return ro.Remove(tctx(t, time.Minute), existing, true) },
	} {
		require.ErrorIs(t, call(), ErrReadOnly, name)
	}
	list, err := ro.List(tctx(t, time.Minute), "")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, existing, list[0].Name)
	assert.Equal(t, before, treeDigest(t, dir), "the backend's bytes are unchanged")

	// Control: the same CLI cannot write this backend, so the preview above could not have.
	rw := newEngine(t, Options{BackendURL: backend, PulumiPath: pulumi})
	_, err = rw.Up(tctx(t, 2*time.Minute), Request{Stack: existing, Program: outputsProgram("v3")})
	require.Error(t, err, "an up through a CLI without write permission fails")
	// The control engine itself runs as root in this process and records its CLI as a lock
	// owner (tfrs/lockowners, lockowners.go); what the CLI may write is everything else.
	assert.Equal(t, withoutOwnerRecords(before), withoutOwnerRecords(treeDigest(t, dir)))
}

// withoutOwnerRecords drops the engine's own lock-owner records from a treeDigest.
func withoutOwnerRecords(digest string) string {
	var keep []string
	for _, l := range strings.Split(digest, "\n") {
		if !strings.HasPrefix(l, "tfrs ") && !strings.HasPrefix(l, "tfrs/") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// makeReadOnly strips every write bit under dir (restored at cleanup so it can be removed).
func makeReadOnly(t *testing.T, dir string) {
	t.Helper()
	var dirs []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		return os.Chmod(p, 0o444)
	}))
	for _, d := range dirs {
		require.NoError(t, os.Chmod(d, 0o555))
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			_ = os.Chmod(d, 0o755)
		}
	})
}

// readOnlyPulumi returns the Pulumi CLI to run against the read-only backend. Root ignores
// file modes (CAP_DAC_OVERRIDE, CAP_FOWNER); as root the CLI is wrapped to run without them.
func readOnlyPulumi(t *testing.T) string {
	t.Helper()
	bin, err := tools.Bin("pulumi")
	require.NoError(t, err)
	if os.Geteuid() != 0 {
		return bin
	}
	capsh, err := exec.LookPath("capsh")
	require.NoError(t, err, "running as root: capsh is needed to drop CAP_DAC_OVERRIDE for the read-only backend test")
	wrapper := filepath.Join(t.TempDir(), "pulumi")
	script := fmt.Sprintf("#!/bin/sh\nexec %s --drop=cap_dac_override,cap_dac_read_search,cap_fowner,cap_linux_immutable -- -c 'exec %s \"$@\"' pulumi \"$@\"\n", capsh, bin)
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
	return wrapper
}

// treeDigest lists every file and directory under dir with its mode, size, modification
// time and content hash.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := fmt.Sprintf("%s %v %d %d", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	}))
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
