package sourcepolicy

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Check decides on every source field of obj (v1alpha1.Object.Sources) and returns one
// Forbidden error per refused field, at its path. Local paths that exist are also resolved
// through their symlinks and decided on again (ResolveLocal), so a link under an allowed root
// cannot lead out of it. Nothing is opened or fetched.
func (p *Policy) Check(obj v1alpha1.Object) field.ErrorList {
	var errs field.ErrorList
	for _, s := range obj.Sources() {
		if err := p.decide(s, obj.GetNamespace()); err != nil {
			errs = append(errs, field.Forbidden(s.Path, err.Error()))
		}
	}
	return errs
}

func (p *Policy) decide(s v1alpha1.SourceField, own string) error {
	switch s.Kind {
	case v1alpha1.SourceLocalPath:
		return p.ResolveLocal(s.Value)
	case v1alpha1.SourceChartRepo, v1alpha1.SourceManifestURL:
		if err := p.URL(s.Value); err != nil {
			return err
		}
		if u, err := url.Parse(s.Value); err == nil && u.Scheme == "file" {
			return p.ResolveLocal(u.Path)
		}
		return nil
	case v1alpha1.SourceSecretRef:
		return p.SecretNamespace(s.Value, own)
	case v1alpha1.SourceObjectStorage:
		return p.Endpoint(s.Value)
	}
	return refuse("source "+string(s.Kind), "unknown kind of source")
}

// ResolveLocal is LocalPath, then, when the path exists, LocalPath again on the path with its
// symlinks resolved (the roots resolved too, so a root that is itself a link still works).
func (p *Policy) ResolveLocal(path string) error {
	if err := p.LocalPath(path); err != nil || p.AnyLocalPath {
		return err
	}
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // nothing there to escape through; the run reports the missing file
	}
	if err != nil {
		return refuse("local path "+path, "cannot be resolved")
	}
	resolved := *p
	resolved.LocalRoots = nil
	for _, r := range p.LocalRoots {
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			resolved.LocalRoots = append(resolved.LocalRoots, rr)
		} else {
			resolved.LocalRoots = append(resolved.LocalRoots, r)
		}
	}
	if err := resolved.LocalPath(real); err != nil {
		return refuse("local path "+path, "leads out of the allowed roots through a symlink")
	}
	return nil
}

// MirrorHosts are the hosts an object's own overrides name: for a cluster, its chart and
// manifest mirrors, which its tenants' chart overrides may use besides the policy's hosts.
func MirrorHosts(c v1alpha1.Object) []string {
	var out []string
	for _, s := range c.Sources() {
		if s.Kind == v1alpha1.SourceChartRepo || s.Kind == v1alpha1.SourceManifestURL {
			if h := HostOf(s.Value); h != "" {
				out = append(out, h)
			}
		}
	}
	return out
}
