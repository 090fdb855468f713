package engine

import (
	"encoding/json"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
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

// repairFileSidecars removes "*.attrs" sidecars under a file:// backend that are not valid
// JSON. They only carry a content type and checksum, which fileblob treats as optional, so
// removing a broken one loses nothing; it returns the paths removed.
func repairFileSidecars(backendURL string) []string {
	dir, ok := fileBackendDir(backendURL)
	if !ok {
		return nil
	}
	root := filepath.Join(dir, ".pulumi")
	var removed []string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".attrs") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var v map[string]any
		if json.Unmarshal(b, &v) != nil {
			if os.Remove(path) == nil {
				removed = append(removed, path)
			}
		}
		return nil
	})
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
