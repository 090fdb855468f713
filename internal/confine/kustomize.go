package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// A kustomization is a program: it names files to read (resources, patches, generator
// files and env files), other kustomizations (resources, components), remote bases it makes
// kustomize fetch (https, git, ssh URLs), and plugins, KRM functions and Helm charts it makes
// kustomize run. TFRS therefore reads a -k tree itself, following every reference from the
// kustomization files, and decides on each:
//
//   - every field of a kustomization must be one TFRS knows (kustomizationFields): a field
//     added by a later kustomize, or a misspelt one, is refused rather than let through;
//   - fields that run something (helmCharts, helmChartInflationGenerator, helmGlobals,
//     generators, transformers, validators) are refused in every mode;
//   - a reference is a local path that exists, or a remote one: remote ones are refused in
//     Untrusted mode, and allowed in Trusted mode only when Remote (the source policy)
//     allows their host. A local path that does not exist is refused too, because kustomize
//     would try it as a remote git repository ("github.com/org/repo").
//
// In Untrusted mode the build then runs on an in-memory file system holding exactly the
// files that were checked, with kustomize's root-only load restrictions and no plugins, so
// kustomize cannot read anything else even if a reference was missed here.

// Remote decides on a remote reference's URL (the source policy's URL check); nil refuses
// every remote reference.
type Remote func(rawURL string) error

// kustomizationFields are the fields of a kustomization and how their values are checked.
// Every field not listed is refused.
var kustomizationFields = map[string]refKind{
	"apiVersion": refNone, "kind": refNone, "metadata": refNone,
	"namespace": refNone, "namePrefix": refNone, "nameSuffix": refNone,
	"commonLabels": refNone, "labels": refNone, "commonAnnotations": refNone,
	"images": refNone, "imageTags": refNone, "replicas": refNone, "vars": refNone,
	"sortOptions": refNone, "generatorOptions": refNone, "buildMetadata": refNone,
	"resources": refResources, "bases": refResources, "components": refResources,
	"crds": refFiles, "configurations": refFiles,
	"patchesStrategicMerge": refPatchesSM,
	"patches":               refPathField, "patchesJson6902": refPathField, "replacements": refPathField,
	"openapi":            refOpenAPI,
	"configMapGenerator": refGenerator, "secretGenerator": refGenerator,
	"helmCharts": refRuns, "helmChartInflationGenerator": refRuns, "helmGlobals": refRuns,
	"generators": refRuns, "transformers": refRuns, "validators": refRuns,
}

type refKind int

const (
	refNone      refKind = iota
	refResources         // list: files or kustomization directories, or remote bases
	refFiles             // list of files
	refPatchesSM         // list: inline patches or files
	refPathField         // list of objects whose "path" is a file
	refOpenAPI           // object whose "path" is a file
	refGenerator         // list of generator args: files ([key=]path), envs, env
	refRuns              // runs a plugin, a KRM function or Helm
)

// Kustomization is a -k tree read and checked.
type Kustomization struct {
	// FS holds the files to build from: in Untrusted mode an in-memory copy of exactly the
	// checked files (at their absolute paths), else the disk.
	FS filesys.FileSystem
	// Dir is the kustomization directory to build.
	Dir string
	// Files are the files read, relative to Root when inside it (for messages and tests).
	Files []string
}

// ReadKustomization reads the kustomization tree at dir and checks every reference (see
// above). remote decides on remote references in Trusted mode.
func (c *Confiner) ReadKustomization(dir string, remote Remote) (*Kustomization, error) {
	abs, err := c.Resolve(dir)
	if err != nil {
		return nil, err
	}
	k := &kwalk{c: c, remote: remote, files: map[string][]byte{}, dirs: map[string]bool{}}
	if err := k.kustomization(abs, dir); err != nil {
		return nil, err
	}
	out := &Kustomization{Dir: abs}
	for p := range k.files {
		out.Files = append(out.Files, c.show(p))
	}
	sort.Strings(out.Files)
	if !c.Untrusted() {
		out.FS = filesys.MakeFsOnDisk()
		return out, nil
	}
	mem := filesys.MakeFsInMemory()
	for d := range k.dirs {
		if err := mem.MkdirAll(d); err != nil {
			return nil, err
		}
	}
	for p, b := range k.files {
		if err := mem.WriteFile(p, b); err != nil {
			return nil, err
		}
	}
	out.FS = mem
	return out, nil
}

// Build runs kustomize on the checked tree: root-only load restrictions, no plugins, no Helm.
func (k *Kustomization) Build() ([]byte, error) {
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(k.FS, k.Dir)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

type kwalk struct {
	c      *Confiner
	remote Remote
	files  map[string][]byte // absolute path → content
	dirs   map[string]bool   // kustomization directories visited
}

// kustomization reads the kustomization file of dir and follows its references. shown is
// how errors name dir.
func (k *kwalk) kustomization(dir, shown string) error {
	if k.dirs[dir] {
		return nil // a diamond (two overlays of one base); kustomize itself refuses cycles
	}
	k.dirs[dir] = true
	var (
		file string
		data []byte
	)
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if file != "" {
			return refuse(k.c.show(dir), "holds more than one kustomization file")
		}
		b, err := k.read(p)
		if err != nil {
			return err
		}
		file, data = p, b
	}
	if file != "" {
		k.files[file] = data
	}
	if file == "" {
		names := konfig.RecognizedKustomizationFileNames()
		return refuse(shown, "has no kustomization file: unable to find one of '%s'", strings.Join(names, "', '"))
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return refuse(k.c.show(file), "is not a kustomization: %v", err)
	}
	fields := make([]string, 0, len(doc))
	for f := range doc {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		kind, known := kustomizationFields[f]
		at := k.c.show(file) + ": " + f
		switch {
		case !known:
			return refuse(at, "is not a kustomization field TFRS reads (refused rather than passed to kustomize unchecked)")
		case kind == refRuns:
			return refuse(at, "runs a plugin, a KRM function or Helm, which tfrs never lets kustomize do")
		}
		if err := k.field(dir, at, kind, doc[f]); err != nil {
			return err
		}
	}
	return nil
}

// field checks one field's references.
func (k *kwalk) field(dir, at string, kind refKind, v any) error {
	switch kind {
	case refNone:
		return nil
	case refOpenAPI:
		m, _ := v.(map[string]any)
		if p, ok := m["path"].(string); ok {
			return k.file(dir, at+".path", p)
		}
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		if v == nil {
			return nil
		}
		return refuse(at, "must be a list")
	}
	for i, item := range list {
		iat := fmt.Sprintf("%s[%d]", at, i)
		var err error
		switch kind {
		case refResources:
			err = k.resource(dir, iat, item)
		case refFiles:
			s, ok := item.(string)
			if !ok {
				return refuse(iat, "must be a path")
			}
			err = k.file(dir, iat, s)
		case refPatchesSM:
			s, ok := item.(string)
			if !ok {
				return refuse(iat, "must be a path or an inline patch")
			}
			if isRemote(s) || !isInlinePatch(s) {
				err = k.file(dir, iat, s)
			}
		case refPathField:
			m, ok := item.(map[string]any)
			if !ok {
				return refuse(iat, "must be an object")
			}
			if p, ok := m["path"].(string); ok {
				err = k.file(dir, iat+".path", p)
			}
		case refGenerator:
			err = k.generator(dir, iat, item)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// generator checks a configMapGenerator/secretGenerator entry's files, envs and env.
func (k *kwalk) generator(dir, at string, item any) error {
	m, ok := item.(map[string]any)
	if !ok {
		return refuse(at, "must be an object")
	}
	if env, ok := m["env"].(string); ok {
		if err := k.file(dir, at+".env", env); err != nil {
			return err
		}
	}
	for _, key := range []string{"files", "envs"} {
		list, _ := m[key].([]any)
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				return refuse(fmt.Sprintf("%s.%s[%d]", at, key, i), "must be a path")
			}
			if key == "files" {
				if _, p, found := strings.Cut(s, "="); found {
					s = p // key=path
				}
			}
			if err := k.file(dir, fmt.Sprintf("%s.%s[%d]", at, key, i), s); err != nil {
				return err
			}
		}
	}
	return nil
}

// resource checks a resources/bases/components entry: a file, a kustomization directory,
// or a remote base.
func (k *kwalk) resource(dir, at string, item any) error {
	s, ok := item.(string)
	if !ok {
		return refuse(at, "must be a path or URL")
	}
	if isRemote(s) {
		return k.remoteRef(at, s)
	}
	if !filepath.IsAbs(s) {
		if _, err := os.Lstat(filepath.Join(dir, s)); errors.Is(err, fs.ErrNotExist) {
			return refuse(at, "%q does not exist here (kustomize would try it as a remote git repository)", s)
		}
	}
	p, err := k.local(dir, at, s)
	if err != nil {
		return err
	}
	fi, err := k.c.stat(p)
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	if fi.IsDir() {
		return k.kustomization(p, at)
	}
	return k.file(dir, at, s)
}

// file reads a file reference (it must be local and exist).
func (k *kwalk) file(dir, at, ref string) error {
	if isRemote(ref) {
		// kustomize's loader fetches any http(s) path it is given, patches and generator
		// files included.
		return k.remoteRef(at, ref)
	}
	p, err := k.local(dir, at, ref)
	if err != nil {
		return err
	}
	if _, done := k.files[p]; done {
		return nil
	}
	b, err := k.read(p)
	if err != nil {
		return err
	}
	k.files[p] = b
	return nil
}

// local resolves a local reference relative to dir and checks it under c's rules.
func (k *kwalk) local(dir, at, ref string) (string, error) {
	if strings.ContainsRune(ref, 0) {
		return "", refuse(at, "contains a NUL byte")
	}
	p := ref
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	} else if k.c.Untrusted() {
		return "", refuse(at, "%q is an absolute path (untrusted kustomizations name files relative to themselves)", ref)
	}
	abs, err := k.c.Resolve(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", at, err)
	}
	return abs, nil
}

// read reads one file under c's rules; a missing file is a refusal naming it.
func (k *kwalk) read(p string) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if k.c.Untrusted() {
		b, err = readRegular(p, k.c.show(p))
	} else {
		b, err = os.ReadFile(p)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, refuse(k.c.show(p), "does not exist")
	}
	return b, err
}

// isInlinePatch: a patchesStrategicMerge entry holding the patch itself (YAML or JSON)
// rather than a file name.
func isInlinePatch(s string) bool {
	return strings.Contains(s, "\n") || strings.Contains(s, ": ") || strings.HasPrefix(strings.TrimSpace(s), "{")
}

// remoteRef decides on a remote reference: refused in Untrusted mode, else by the policy.
func (k *kwalk) remoteRef(at, ref string) error {
	if k.c.Untrusted() {
		return refuse(at, "%q is remote: untrusted kustomizations are built from local files only", redactURL(ref))
	}
	if k.remote == nil {
		return refuse(at, "%q is remote and no source policy allows remote bases", redactURL(ref))
	}
	u := remoteURL(ref)
	if err := k.remote(u); err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	return nil
}

// isRemote: what kustomize would fetch rather than read: any URL (https, http, git, ssh,
// file …) or scp-like git address (git@host:org/repo).
func isRemote(ref string) bool {
	if strings.Contains(ref, "://") {
		return true
	}
	if strings.HasPrefix(ref, "git@") || strings.HasPrefix(ref, "git::") || strings.HasPrefix(ref, "gh:") {
		return true
	}
	return false
}

// remoteURL is the URL the source policy decides on: git and ssh addresses are decided as
// https on the same host (the policy allows hosts, and has no git scheme).
func remoteURL(ref string) string {
	r := strings.TrimPrefix(ref, "git::")
	if strings.HasPrefix(r, "git@") {
		host, _, _ := strings.Cut(strings.TrimPrefix(r, "git@"), ":")
		return "https://" + host + "/"
	}
	if u, err := url.Parse(r); err == nil && u.Host != "" && u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file" {
		return "https://" + u.Host + "/"
	}
	return r
}

// redactURL drops a URL's user info from messages.
func redactURL(ref string) string {
	if u, err := url.Parse(ref); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	return ref
}
