package confine

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// The rules of a local chart or manifest tree that an untrusted input may name (localPath).
// Once the tree is a snapshot without symlinks, a Helm template reads only the chart's own
// files (.Files), its values and, through `lookup`, the cluster (which the untrusted mode
// takes away from Helm, see cmd/tfrs). What is left are the two ways a chart makes Helm
// itself fetch or read something:
//
//   - a lock file (Chart.lock, requirements.lock) at the top of a chart: the provider then
//     builds missing dependencies, downloading them from the repositories Chart.yaml names
//     (any URL, outside the source policy), or reading file:// ones from anywhere on disk.
//     Lock files of vendored subcharts (charts/<sub>/) are inert and allowed.
//   - a values.schema.json whose $ref is not local to the document ("#/…"): the schema
//     library loads it, from a URL or a file.
//
// Archives (.tgz, .tar.gz) are read in memory by Helm, so links inside them cannot reach the
// disk; they get the same two rules, and their entries may not climb out ("..", absolute).

// maxArchiveDepth bounds archives inside archives (a chart's charts/*.tgz).
const maxArchiveDepth = 3

// CheckChartTree applies the chart rules to a snapshot (Untrusted mode only; a trusted tree
// is the user's own).
func (c *Confiner) CheckChartTree(s *Snapshot, shown string) error {
	if !c.Untrusted() {
		return nil
	}
	charts := map[string]bool{} // directories holding a Chart.yaml
	for _, f := range s.Files {
		if path.Base(f.Rel) == "Chart.yaml" {
			charts[path.Dir(f.Rel)] = true
		}
	}
	for _, f := range s.Files {
		name := shown
		if s.Dir {
			name = shown + "/" + f.Rel
		}
		if err := checkChartFile(name, f.Rel, f.Data, charts, 0); err != nil {
			return err
		}
	}
	return nil
}

// checkChartFile applies the rules to one file of a chart tree (rel inside it).
func checkChartFile(name, rel string, data []byte, charts map[string]bool, depth int) error {
	base := path.Base(rel)
	switch {
	case base == "Chart.lock" || base == "requirements.lock":
		if !isSubchart(path.Dir(rel), charts) {
			return refuse(name, "a chart's lock file makes Helm download its dependencies from the repositories Chart.yaml names; vendor them under charts/ and remove the lock file")
		}
	case base == "values.schema.json":
		if ref, ok := externalRef(data); ok {
			return refuse(name, "$ref %q is not local to the schema (#/…): Helm would load it from a URL or a file", ref)
		}
	case strings.HasSuffix(base, ".tgz") || strings.HasSuffix(base, ".tar.gz"):
		if err := checkArchive(name, data, isSubchart(path.Dir(rel), charts) || path.Base(path.Dir(rel)) == "charts", depth+1); err != nil {
			return err
		}
	}
	return nil
}

// isSubchart: dir is charts/<sub> of a chart (its lock file is never built).
func isSubchart(dir string, charts map[string]bool) bool {
	parent := path.Dir(dir)
	return path.Base(parent) == "charts" && charts[path.Dir(parent)]
}

// checkArchive applies the rules inside a chart archive. sub: the archive is a vendored
// subchart (its lock file is inert).
func checkArchive(name string, data []byte, sub bool, depth int) error {
	if depth > maxArchiveDepth {
		return refuse(name, "archives nested more than %d deep", maxArchiveDepth)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return refuse(name, "is not a gzip archive: %v", err)
	}
	tr := tar.NewReader(io.LimitReader(zr, MaxBytes))
	type entry struct {
		rel  string
		data []byte
	}
	var files []entry
	charts := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return refuse(name, "cannot be read: %v", err)
		}
		n := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if path.IsAbs(h.Name) || n == ".." || strings.HasPrefix(n, "../") {
			return refuse(name+"!"+h.Name, "climbs out of the archive")
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // TypeRegA is what old archives hold
		case tar.TypeDir, tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		default:
			return refuse(name+"!"+h.Name, "is not a regular file or directory (tar type %q)", h.Typeflag)
		}
		b, err := io.ReadAll(io.LimitReader(tr, MaxBytes))
		if err != nil {
			return refuse(name, "cannot be read: %v", err)
		}
		if path.Base(n) == "Chart.yaml" {
			charts[path.Dir(n)] = true
		}
		files = append(files, entry{n, b})
	}
	for _, f := range files {
		// The chart's top is the archive's first directory ("grafana/Chart.yaml").
		if (path.Base(f.rel) == "Chart.lock" || path.Base(f.rel) == "requirements.lock") && sub && !strings.Contains(path.Dir(f.rel), "/") {
			continue
		}
		if err := checkChartFile(name+"!"+f.rel, f.rel, f.data, charts, depth); err != nil {
			return err
		}
	}
	return nil
}

// externalRef finds a "$ref" anywhere in a JSON schema that does not start with "#".
func externalRef(data []byte) (string, bool) {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		// Not JSON: Helm refuses the chart by itself; nothing is loaded.
		return "", false
	}
	var walk func(v any) (string, bool)
	walk = func(v any) (string, bool) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if s, ok := x.(string); ok && (k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef") && !strings.HasPrefix(s, "#") {
					return s, true
				}
				if r, ok := walk(x); ok {
					return r, true
				}
			}
		case []any:
			for _, x := range t {
				if r, ok := walk(x); ok {
					return r, true
				}
			}
		}
		return "", false
	}
	return walk(doc)
}

// CheckedCopy is Copy plus, in Untrusted mode, the chart rules: what a localPath becomes.
func (c *Confiner) CheckedCopy(p string) (string, error) {
	s, err := c.Read(p)
	if err != nil {
		return "", err
	}
	if err := c.CheckChartTree(s, p); err != nil {
		return "", err
	}
	out, err := c.write(s)
	if err != nil {
		return "", fmt.Errorf("%s: copy: %w", p, err)
	}
	return out, nil
}
