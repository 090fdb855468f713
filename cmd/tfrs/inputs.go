package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/confine"
	"github.com/tfrs-io/tfrs-operator/internal/manifest"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// inputFlags say where a command's CRs come from, the way kubectl apply takes them: files,
// directories (-R: recursively), "-" for stdin, and kustomizations (-k).
type inputFlags struct {
	files     []string
	recursive bool
	kustomize []string

	// conf reads every input under its mode's rules (internal/confine); nil is the trusted
	// mode rooted at the working directory. remote decides on a kustomization's remote bases
	// in the trusted mode (the source policy's URL check); nil refuses them.
	conf   *confine.Confiner
	remote confine.Remote
}

// manifestExts are the file names a directory contributes (kubectl's).
var manifestExts = []string{".yaml", ".yml", ".json"}

func (f *inputFlags) bind(cmd *cobra.Command, fs *pflag.FlagSet) {
	fs.StringArrayVarP(&f.files, "filename", "f", nil, `file or directory of TFRS CRs (the YAML kubectl apply takes), "-" for stdin; repeatable`)
	fs.BoolVarP(&f.recursive, "recursive", "R", false, "read the directories given to -f recursively")
	fs.StringArrayVarP(&f.kustomize, "kustomize", "k", nil, "kustomization directory: its build output is read like a file; repeatable")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagDirname("kustomize")
}

// given is whether any input was named.
func (f *inputFlags) given() bool { return len(f.files) > 0 || len(f.kustomize) > 0 }

// errNoInput is the usage error of a command run without -f or -k.
var errNoInput = fmt.Errorf("%w: -f FILE|DIR|- or -k DIR is required", errUsage)

// source is one stream of YAML documents and the name errors give it.
type source struct {
	name string
	data []byte
}

// read returns every source the flags name, in order: the -f files (a directory's files in
// lexical order), then the -k builds. stdin is read at most once.
func (f *inputFlags) read(stdin io.Reader) ([]source, error) {
	conf := f.conf
	if conf == nil {
		var err error
		if conf, err = confine.New(confine.Trusted, "", ""); err != nil {
			return nil, err
		}
	}
	var out []source
	usedStdin := false
	for _, path := range f.files {
		if path == "-" {
			if usedStdin {
				return nil, fmt.Errorf(`%w: -f - (stdin) is given twice`, errUsage)
			}
			usedStdin = true
			b, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("stdin: %w", err)
			}
			out = append(out, source{name: "stdin", data: b})
			continue
		}
		abs, err := conf.Resolve(path)
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			b, err := conf.ReadFile(path)
			if err != nil {
				return nil, err
			}
			out = append(out, source{name: path, data: b})
			continue
		}
		files, err := manifestFiles(path, f.recursive, conf.Untrusted())
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			hint := ""
			if !f.recursive {
				hint = " (-R reads its subdirectories)"
			}
			return nil, fmt.Errorf("%s: no %s files in the directory%s", path, strings.Join(manifestExts, ", "), hint)
		}
		for _, p := range files {
			b, err := conf.ReadFile(p)
			if err != nil {
				return nil, err
			}
			out = append(out, source{name: p, data: b})
		}
	}
	for _, dir := range f.kustomize {
		b, err := kustomizeBuild(conf, dir, f.remote)
		if err != nil {
			return nil, err
		}
		out = append(out, source{name: "kustomization " + dir, data: b})
	}
	return out, nil
}

// manifestFiles lists dir's manifest files, lexically, descending into subdirectories only
// when recursive. noLinks refuses a symlink anywhere in the walk (the untrusted mode), naming
// it; otherwise a linked file is read through its link, as before.
func manifestFiles(dir string, recursive, noLinks bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if noLinks && d.Type()&fs.ModeSymlink != 0 {
			return &confine.Error{Path: p, Rule: "is a symlink (untrusted inputs may hold none: a link can lead anywhere on this machine)"}
		}
		if d.IsDir() {
			if p != dir && !recursive {
				return fs.SkipDir
			}
			return nil
		}
		if slices.Contains(manifestExts, strings.ToLower(filepath.Ext(p))) {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// kustomizeBuild is `kustomize build DIR` on a tree tfrs read and checked first
// (confine.Confiner.ReadKustomization: every field known, every reference local and inside
// the rules of the mode, remote bases only where remote allows them, never a plugin, KRM
// function or Helm chart), with root-only load restrictions and no plugins. In the untrusted
// mode the build reads an in-memory copy of exactly the checked files.
func kustomizeBuild(conf *confine.Confiner, dir string, remote confine.Remote) ([]byte, error) {
	k, err := conf.ReadKustomization(dir, remote)
	if err != nil {
		return nil, fmt.Errorf("-k %s: %w", dir, err)
	}
	b, err := k.Build()
	if err != nil {
		return nil, fmt.Errorf("-k %s: %w", dir, err)
	}
	return b, nil
}

// load reads, decodes and prepares the objects the flags name (see loadObjects).
func (f *inputFlags) load(stdin io.Reader, reverse bool) ([]prepared, error) {
	if !f.given() {
		return nil, errNoInput
	}
	srcs, err := f.read(stdin)
	if err != nil {
		return nil, err
	}
	return loadObjects(srcs, reverse)
}

// prepared is one object of a run, defaulted and validated.
type prepared struct {
	obj    v1alpha1.Object
	target kinds.Target
}

// loadObjects decodes every source, validates every object (so a typo in the last document
// fails before the first one runs) and orders them by level: clusters, tenants, servers, each
// in input order; reversed for a destroy, so children go before their parents.
func loadObjects(srcs []source, reverse bool) ([]prepared, error) {
	var out []prepared
	seen := map[string]string{}
	for _, src := range srcs {
		objs, err := manifest.Decode(bytes.NewReader(src.data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.name, err)
		}
		for _, o := range objs {
			t, obj, err := kinds.Prepare(o)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", src.name, o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
			}
			if prev, dup := seen[t.Stack]; dup {
				return nil, fmt.Errorf("%s: %s is also in %s (stack %s)", src.name, t, prev, t.Stack)
			}
			seen[t.Stack] = src.name
			out = append(out, prepared{obj: obj, target: t})
		}
	}
	if len(out) == 0 {
		names := make([]string, len(srcs))
		for i, s := range srcs {
			names[i] = s.name
		}
		return nil, fmt.Errorf("%s: no TFRS objects found", strings.Join(names, ", "))
	}
	sort.SliceStable(out, func(i, j int) bool { return level(out[i].target.Kind) < level(out[j].target.Kind) })
	if reverse {
		slices.Reverse(out)
	}
	return out, nil
}

// level orders kinds parents first (v1alpha1.Kinds).
func level(k v1alpha1.Kind) int { return slices.Index(v1alpha1.Kinds, k) }
