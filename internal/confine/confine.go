// Package confine loads the trees a user hands TFRS (-f files and directories, local Helm
// charts and manifests named by localPath, kustomize trees given with -k) and checks every
// path of them before anything that evaluates their content sees them.
//
// Why: a chart template, a kustomization or a manifest is evaluated by processes that hold
// secrets (the Pulumi CLI and the Kubernetes provider hold the state passphrase and the
// cluster credentials). Helm's templates cannot read the environment or the disk, except
// through the chart's own files (.Files): a symlink in a chart turns .Files.Get into "read
// any file", /proc/self/environ included. Kustomize fetches remote bases and reads generator
// files by itself. So TFRS reads these trees first, under one rule per mode, and hands the
// evaluators only what it read:
//
//   - Untrusted (pull-request previews): every path must be inside Root, no path component may
//     be a symlink, only regular files and directories are read, and nothing remote is
//     followed. Refusals name the path and the rule.
//   - Trusted (the user's own disk): symlinks are followed, as Helm and kustomize would;
//     paths may be anywhere.
//
// In both modes a local chart or manifest is snapshotted into a private, content-addressed
// directory (Copy), and that copy is what the provider reads: the tree cannot change between
// the check and the render, and the path the spec records changes exactly when the content
// does (so a plan saved for one chart cannot be applied to another).
package confine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Mode says how much the inputs are trusted.
type Mode int

const (
	// Trusted follows symlinks and accepts any path (the CLI's default).
	Trusted Mode = iota
	// Untrusted refuses symlinks, special files, paths outside Root and remote references.
	Untrusted
)

// Limits of a tree TFRS reads (a chart is a few hundred files and a few MiB).
const (
	MaxFiles = 20000
	MaxBytes = 256 << 20
)

// ErrRefused is the sentinel of every refusal; *Error matches it with errors.Is.
var ErrRefused = errors.New("refused")

// Error is one refusal: the path (as the user wrote it, or the file inside the tree) and the
// rule it breaks.
type Error struct {
	Path string
	Rule string
}

func (e *Error) Error() string { return e.Path + ": " + e.Rule }

// Is makes errors.Is(err, ErrRefused) true.
func (e *Error) Is(target error) bool { return target == ErrRefused }

func refuse(path, format string, args ...any) error {
	return &Error{Path: path, Rule: fmt.Sprintf(format, args...)}
}

// Confiner applies one mode's rules.
type Confiner struct {
	Mode Mode
	// Root is the directory every input must be inside (Untrusted). Absolute; New resolves
	// its symlinks once, since the root itself is chosen by whoever runs tfrs, not by the
	// inputs.
	Root string
	// Dir holds the snapshots (Copy); private (0700).
	Dir string
}

// New returns a Confiner; root "" is the working directory.
func New(mode Mode, root, dir string) (*Confiner, error) {
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		root = wd
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("input root %s: %w", root, err)
	}
	return &Confiner{Mode: mode, Root: real, Dir: dir}, nil
}

// Untrusted reports whether c refuses what the untrusted mode refuses.
func (c *Confiner) Untrusted() bool { return c != nil && c.Mode == Untrusted }

// Resolve makes path absolute (relative paths are relative to the working directory, as on
// a command line) and, in Untrusted mode, checks it: inside Root and no component from Root
// down is a symlink. It returns the absolute path, on which nothing was resolved.
func (c *Confiner) Resolve(path string) (string, error) {
	if strings.ContainsRune(path, 0) {
		return "", refuse("path", "contains a NUL byte")
	}
	abs, err := c.Abs(path)
	if err != nil {
		return "", err
	}
	if !c.Untrusted() {
		return abs, nil
	}
	rel, err := filepath.Rel(c.Root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", refuse(path, "is outside the input root %s (untrusted inputs are read only from inside it)", c.Root)
	}
	cur := c.Root
	if rel == "." {
		return abs, nil
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return "", refuse(c.show(cur), "does not exist")
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", refuse(c.show(cur), "is a symlink (untrusted inputs may hold none: a link can lead anywhere on this machine)")
		}
	}
	return abs, nil
}

// Abs is path made absolute and clean. Relative paths are taken from the working directory
// (the checkout, in CI); Root itself has its symlinks resolved, so a working directory
// reached through a link is translated onto it.
func (c *Confiner) Abs(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if c.Untrusted() && !filepath.IsAbs(path) {
		// The working directory may be reached through a link (macOS /tmp, a symlinked home):
		// translate it onto the resolved root so the lexical check compares like with like.
		if wd, err := os.Getwd(); err == nil {
			if rwd, err := filepath.EvalSymlinks(wd); err == nil {
				abs = filepath.Join(rwd, path)
			}
		}
	}
	return filepath.Clean(abs), nil
}

// show is how an error names a path: relative to Root when inside it.
func (c *Confiner) show(abs string) string {
	if rel, err := filepath.Rel(c.Root, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return abs
}

// ReadFile reads one file named on the command line (-f FILE) under c's rules: a regular
// file, opened without following a symlink in its last component (Untrusted).
func (c *Confiner) ReadFile(path string) ([]byte, error) {
	abs, err := c.Resolve(path)
	if err != nil {
		return nil, err
	}
	if !c.Untrusted() {
		return os.ReadFile(abs)
	}
	return readRegular(abs, c.show(abs))
}

// readRegular opens path with O_NOFOLLOW (a link swapped in after the check is refused by the
// kernel) and reads it only when it is a regular file.
func readRegular(abs, name string) ([]byte, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, refuse(name, "is a symlink (untrusted inputs may hold none)")
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, refuse(name, "is not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > MaxBytes {
		return nil, refuse(name, "is larger than %d bytes", MaxBytes)
	}
	return io.ReadAll(io.LimitReader(f, MaxBytes+1))
}

// File is one regular file of a snapshot.
type File struct {
	Rel  string // slash-separated, relative to the snapshot's top
	Mode fs.FileMode
	Data []byte
}

// Snapshot is a tree read into memory: a single file (Dir false, one File with Rel the
// base name) or a directory.
type Snapshot struct {
	Dir   bool
	Base  string // the base name of what was read
	Files []File
	Dirs  []string // every directory, slash-separated, "" excluded
}

// Read reads path (a file or a directory) into memory under c's rules: in Untrusted mode
// every entry must be a regular file or a directory (a symlink anywhere is refused, named),
// in Trusted mode symlinks are followed (a loop is refused).
func (c *Confiner) Read(path string) (*Snapshot, error) {
	abs, err := c.Resolve(path)
	if err != nil {
		return nil, err
	}
	fi, err := c.stat(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Snapshot{Base: filepath.Base(abs)}
	r := &reader{c: c, s: s, seen: map[fileID]bool{}}
	if !fi.IsDir() {
		f, err := r.file(abs, fi, filepath.Base(abs))
		if err != nil {
			return nil, err
		}
		s.Files = []File{f}
		return s, nil
	}
	s.Dir = true
	if err := r.dir(abs, ""); err != nil {
		return nil, err
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Rel < s.Files[j].Rel })
	sort.Strings(s.Dirs)
	return s, nil
}

// stat is Lstat in Untrusted mode (a link is itself refused), Stat otherwise.
func (c *Confiner) stat(abs string) (fs.FileInfo, error) {
	if c.Untrusted() {
		fi, err := os.Lstat(abs)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, refuse(c.show(abs), "is a symlink (untrusted inputs may hold none: a link can lead anywhere on this machine)")
		}
		return fi, err
	}
	return os.Stat(abs)
}

type fileID struct{ dev, ino uint64 }

type reader struct {
	c     *Confiner
	s     *Snapshot
	seen  map[fileID]bool // directories on the current path (Trusted: link loops)
	bytes int64
}

func (r *reader) dir(abs, rel string) error {
	fi, err := os.Stat(abs)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id := fileID{uint64(st.Dev), uint64(st.Ino)} //nolint:unconvert // Dev is uint32 on some platforms
		if r.seen[id] {
			return refuse(r.c.show(abs), "is a directory link loop")
		}
		r.seen[id] = true
		defer delete(r.seen, id)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(abs, e.Name())
		erel := e.Name()
		if rel != "" {
			erel = rel + "/" + e.Name()
		}
		fi, err := r.c.stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			r.s.Dirs = append(r.s.Dirs, erel)
			if err := r.dir(p, erel); err != nil {
				return err
			}
			continue
		}
		f, err := r.file(p, fi, erel)
		if err != nil {
			return err
		}
		r.s.Files = append(r.s.Files, f)
	}
	return nil
}

func (r *reader) file(abs string, fi fs.FileInfo, rel string) (File, error) {
	name := r.c.show(abs)
	if !fi.Mode().IsRegular() {
		return File{}, refuse(name, "is not a regular file or directory (%s)", fi.Mode().Type())
	}
	if len(r.s.Files) >= MaxFiles {
		return File{}, refuse(name, "the tree has more than %d files", MaxFiles)
	}
	var (
		b   []byte
		err error
	)
	if r.c.Untrusted() {
		b, err = readRegular(abs, name)
	} else {
		b, err = os.ReadFile(abs)
	}
	if err != nil {
		return File{}, err
	}
	r.bytes += int64(len(b))
	if r.bytes > MaxBytes {
		return File{}, refuse(name, "the tree is larger than %d bytes", MaxBytes)
	}
	return File{Rel: rel, Mode: fi.Mode().Perm(), Data: b}, nil
}

// Digest is the SHA-256 of the snapshot's names, kinds and contents.
func (s *Snapshot) Digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "dir=%t base=%q\n", s.Dir, s.Base)
	for _, d := range s.Dirs {
		fmt.Fprintf(h, "d %q\n", d)
	}
	for _, f := range s.Files {
		fmt.Fprintf(h, "f %q %o %d\n", f.Rel, f.Mode&0o111, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Copy reads path (Read) and writes the snapshot under Dir/<digest>/<base name>, returning
// that path: what the provider is given instead of path. An existing copy of the same
// digest is reused (it was written by this user into a private directory).
func (c *Confiner) Copy(path string) (string, *Snapshot, error) {
	s, err := c.Read(path)
	if err != nil {
		return "", nil, err
	}
	out, err := c.write(s)
	return out, s, err
}

func (c *Confiner) write(s *Snapshot) (string, error) {
	if c.Dir == "" {
		return "", errors.New("confine: no directory for copies")
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return "", err
	}
	final := filepath.Join(c.Dir, s.Digest()[:32])
	target := filepath.Join(final, s.Base)
	if _, err := os.Lstat(target); err == nil {
		return target, nil
	}
	tmp, err := os.MkdirTemp(c.Dir, ".copy-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	top := filepath.Join(tmp, s.Base)
	if s.Dir {
		if err := os.Mkdir(top, 0o700); err != nil {
			return "", err
		}
	}
	for _, d := range s.Dirs {
		if err := os.MkdirAll(filepath.Join(top, filepath.FromSlash(d)), 0o700); err != nil {
			return "", err
		}
	}
	for _, f := range s.Files {
		p := top
		if s.Dir {
			p = filepath.Join(top, filepath.FromSlash(f.Rel))
		}
		if err := os.WriteFile(p, f.Data, 0o600|(f.Mode&0o100)); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Lstat(target); serr == nil {
			return target, nil // a concurrent run wrote the same content
		}
		return "", err
	}
	return target, nil
}
