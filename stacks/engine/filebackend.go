package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
)

// The file:// backend stores blobs with gocloud's fileblob. Blobs themselves are written
// atomically (temp file + rename), but by default each also gets a "<blob>.attrs" sidecar
// (content type, MD5) written in place with os.Create. A process killed between the create and
// the write leaves an empty sidecar, and every later read of the stack fails with
// "failed to load checkpoint: EOF" — found by the crash-recovery test killing `up` mid-run.
// Two defences: never write sidecars (metadata=skip), and repair broken ones left by earlier
// runs or by a stock CLI before each operation.

// normalizeFileURL adds metadata=skip to a file:// backend URL that does not choose.
func normalizeFileURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "file" {
		return u
	}
	q := p.Query()
	if q.Has("metadata") {
		return u
	}
	q.Set("metadata", "skip")
	p.RawQuery = q.Encode()
	return p.String()
}

// repairFileSidecars removes "*.attrs" sidecars that are not valid JSON among the blobs an
// operation on stack can read: the backend's meta.yaml, the stack's checkpoint and tags file,
// and its history, backups and locks (the DIY backend's project layout, see history.go and lockKey).
// They only carry a content type and checksum, which fileblob treats as optional, so removing a
// broken one loses nothing; it returns the paths removed. It never walks the backend: the cost
// is that of one stack (its history is bounded by the history limit), however many stacks the
// backend holds. An empty stack (List) repairs meta.yaml and the checkpoints of every stack,
// which is what listing reads anyway.
func repairFileSidecars(backendURL, stack string) []string {
	dir, ok := fileBackendDir(backendURL)
	if !ok {
		return nil
	}
	root := filepath.Join(dir, ".pulumi")
	stacksDir := filepath.Join(root, "stacks", ProjectName)
	var removed []string
	check := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return // absent (the common case: the engine writes no sidecars)
		}
		var v map[string]any
		if json.Unmarshal(b, &v) != nil && os.Remove(path) == nil {
			removed = append(removed, path)
		}
	}
	// checkDir checks the sidecars directly in dir (the DIY backend's per-stack directories
	// are flat).
	checkDir := func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, en := range entries {
			if !en.IsDir() && strings.HasSuffix(en.Name(), ".attrs") {
				check(filepath.Join(dir, en.Name()))
			}
		}
	}
	check(filepath.Join(root, "meta.yaml.attrs"))
	if stack == "" {
		checkDir(stacksDir)
		return removed
	}
	for _, ext := range []string{".json", ".json.gz", ".json.zst", ".json.bak", ".pulumi-tags"} {
		check(filepath.Join(stacksDir, stack+ext+".attrs"))
	}
	checkDir(filepath.Join(root, "history", ProjectName, stack))
	checkDir(filepath.Join(root, "backups", ProjectName, stack))
	checkDir(filepath.Join(root, "locks", "organization", ProjectName, stack))
	return removed
}

// fileBackendDir is the directory of a file:// backend URL (query parameters stripped).
func fileBackendDir(backendURL string) (string, bool) {
	p, err := url.Parse(backendURL)
	if err != nil || p.Scheme != "file" {
		return "", false
	}
	return p.Path, true
}

// StackVersion is a cheap change token for a stack's state, for callers that poll (the operator
// watching parents): it changes whenever an up, refresh or destroy writes the stack, and costs
// no CLI process. Only file:// backends have one: it is read from the checkpoint file's
// metadata. ok is false for other backends, invalid names, missing stacks and any error; the
// caller then falls back to reading the stack.
func (e *Engine) StackVersion(_ context.Context, stack string) (version string, ok bool) {
	if stackname.Validate(stack) != nil {
		return "", false
	}
	dir, ok := fileBackendDir(e.opts.BackendURL)
	if !ok {
		return "", false
	}
	fi, ok := checkpointFile(dir, stack)
	if !ok {
		return "", false
	}
	v := fmt.Sprintf("%d-%d", fi.ModTime().UnixNano(), fi.Size())
	// Checkpoints are replaced by rename (fileblob writes a temp file), so the inode changes on
	// every write too: a second write within the clock's granularity is still seen.
	if st, isUnix := fi.Sys().(*syscall.Stat_t); isUnix {
		v += fmt.Sprintf("-%d", st.Ino)
	}
	return v, true
}

// checkpointFile finds a stack's checkpoint the way the CLI's diy backend does
// (stackPath): <dir>/.pulumi/stacks/<project>/<stack>.json, optionally compressed, and when
// more than one exists the most recently modified.
func checkpointFile(dir, stack string) (fs.FileInfo, bool) {
	base := filepath.Join(dir, ".pulumi", "stacks", ProjectName, stack+".json")
	var best fs.FileInfo
	for _, p := range []string{base, base + ".gz", base + ".zst"} {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if best == nil || !fi.ModTime().Before(best.ModTime()) {
			best = fi
		}
	}
	return best, best != nil
}
