package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/confine"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// The untrusted-inputs mode (`tfrs preview --untrusted`, `tfrs render --untrusted`, or
// TFRS_UNTRUSTED_INPUTS=1): the inputs come from a pull request, so everything they name is
// read by tfrs under internal/confine's untrusted rules before anything evaluates it, and
// the processes that do evaluate it hold no secret they could leak. See
// docs/security/untrusted-inputs.md for what it guarantees and what CI must still do.
//
//   - -f, -k and every localPath / file:// source must be inside the input root (--input-root,
//     default the working directory: the checkout), with no symlink on the way or inside;
//     kustomize builds from an in-memory copy of exactly the files checked, with no remote
//     base, plugin, KRM function or Helm chart; local charts are copied into a private
//     content-addressed directory (also outside this mode) and lose their lock files' power
//     to download.
//   - the Kubernetes provider, which renders the charts, runs with an allowlisted environment
//     (providershim.go): no passphrase, no backend credentials, no cloud or proxy variables.
//   - Helm's `lookup` sees an empty cluster: Helm's API server is a loopback stub that answers
//     discovery and "not found" (helmstub.go), while the provider itself still previews
//     against the real cluster.
//   - the preview is read-only (--read-only is implied) and the report carries only its
//     fields (stacks/diff.Report), every string scrubbed of the known secrets (redact.go).

// untrustedFlags are the flags of the mode.
type untrustedFlags struct {
	on    bool
	root  string
	bound bool // the command has the mode (preview, render)
}

// envUntrusted: TFRS_UNTRUSTED_INPUTS asks for the mode.
func envUntrusted() bool {
	on := os.Getenv("TFRS_UNTRUSTED_INPUTS")
	return on == "1" || strings.EqualFold(on, "true")
}

func (f *untrustedFlags) bind(fs *pflag.FlagSet) {
	f.bound = true
	fs.BoolVar(&f.on, "untrusted", envUntrusted(), "the inputs come from a pull request: read them confined to --input-root (no symlinks, no remote kustomize bases, no chart lock files), run the provider without secrets in its environment and with Helm's lookup disabled, imply --read-only, and scrub known secrets from the report (env TFRS_UNTRUSTED_INPUTS=1)")
	fs.StringVar(&f.root, "input-root", os.Getenv("TFRS_INPUT_ROOT"), "with --untrusted: the directory every input and local source must be inside (env TFRS_INPUT_ROOT; default: the working directory)")
}

// confiner is the Confiner of the mode (Trusted when off), keeping its copies under
// <state-dir>/sources/local.
func (f *untrustedFlags) confiner(stateDir string) (*confine.Confiner, error) {
	if !f.bound && envUntrusted() {
		// A job marked as running on untrusted inputs must never apply, refresh or destroy.
		return nil, fmt.Errorf("%w: TFRS_UNTRUSTED_INPUTS is set: only preview and render run on untrusted inputs", errUsage)
	}
	if f.root != "" && !f.on {
		return nil, fmt.Errorf("%w: --input-root applies only with --untrusted", errUsage)
	}
	dir, err := stateDirOr(stateDir)
	if err != nil {
		return nil, err
	}
	mode := confine.Trusted
	if f.on {
		mode = confine.Untrusted
	}
	return confine.New(mode, f.root, filepath.Join(dir, "sources", "local"))
}

// untrustedPolicy narrows p for untrusted inputs: local sources only under the input root,
// whatever --source-allow-any-local-path says.
func untrustedPolicy(p *sourcepolicy.Policy, c *confine.Confiner) *sourcepolicy.Policy {
	if !c.Untrusted() {
		return p
	}
	n := *p
	n.AnyLocalPath = false
	n.LocalRoots = []string{c.Root}
	return &n
}

// absLocalSources makes every relative localPath absolute (relative to the working
// directory, like every path on the command line), so the source policy decides on where it
// really points. The provider would otherwise resolve it against its own scratch directory.
func absLocalSources(c *confine.Confiner, objs []prepared) error {
	for _, p := range objs {
		for _, s := range p.obj.Sources() {
			if s.Kind != v1alpha1.SourceLocalPath || filepath.IsAbs(s.Value) {
				continue
			}
			abs, err := c.Abs(s.Value)
			if err != nil {
				return err
			}
			if err := kinds.SetSourceField(p.obj, s.Path, abs); err != nil {
				return err
			}
		}
	}
	return nil
}

// confineSources replaces every local source of objs (localPath, file:// manifestURL) with
// its checked, content-addressed copy (confine.Confiner.CheckedCopy): the provider then reads
// what tfrs checked and nothing else, and the spec (hence a saved plan's digest) names the
// content. Errors name the object, the field and the refused path.
func confineSources(c *confine.Confiner, objs []prepared) error {
	for _, p := range objs {
		var errs field.ErrorList
		for _, s := range p.obj.Sources() {
			var (
				out string
				err error
			)
			switch s.Kind {
			case v1alpha1.SourceLocalPath:
				out, err = c.CheckedCopy(s.Value)
			case v1alpha1.SourceManifestURL:
				u, perr := url.Parse(s.Value)
				if perr != nil || u.Scheme != "file" {
					continue
				}
				if out, err = c.CheckedCopy(u.Path); err == nil {
					out = (&url.URL{Scheme: "file", Path: out}).String()
				}
			default:
				continue
			}
			if err != nil {
				errs = append(errs, field.Forbidden(s.Path, err.Error()))
				continue
			}
			if err := kinds.SetSourceField(p.obj, s.Path, out); err != nil {
				return err
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s %s: refused: %w", p.target.Kind, p.target.Name, errs.ToAggregate())
		}
	}
	return nil
}

// inputRun is what a stack command's inputs became: the prepared objects, and in the
// untrusted mode the scrubber of its output; close releases what the mode started.
type inputRun struct {
	objs  []prepared
	scrub *scrubber // nil outside the untrusted mode
	close func()
}

// loadInputs reads the inputs under the mode's rules, applies the source policy, confines
// every local source and, in the untrusted mode, sets up the engine (read-only, provider
// shim, Helm stub).
func (f *stackCmdFlags) loadInputs(stdin io.Reader, reverse bool) (*inputRun, error) {
	conf, err := f.untrusted.confiner(f.stack.stateDir)
	if err != nil {
		return nil, err
	}
	pol, err := f.sources.policy()
	if err != nil {
		return nil, err
	}
	pol = untrustedPolicy(pol, conf)
	f.inputs.conf, f.inputs.remote = conf, pol.URL
	objs, err := f.inputs.load(stdin, reverse)
	if err != nil {
		return nil, err
	}
	if err := absLocalSources(conf, objs); err != nil {
		return nil, err
	}
	pol = withClusterMirrors(pol, objs)
	if err := checkSources(pol, objs); err != nil {
		return nil, err
	}
	if err := confineSources(conf, objs); err != nil {
		return nil, err
	}
	if err := installFetcher(pol, f.stack.stateDir); err != nil {
		return nil, err
	}
	run := &inputRun{objs: objs, close: func() {}}
	if !conf.Untrusted() {
		return run, nil
	}
	run.scrub = knownSecrets(f.stack.passphraseFile, f.stack.backend, f.stack.kubeconfig)
	f.stack.readOnly = true
	stub, err := startHelmStub()
	if err != nil {
		return nil, err
	}
	dir, err := stateDirOr(f.stack.stateDir)
	if err != nil {
		stub.Close()
		return nil, err
	}
	opt, cleanup, err := providerShim(filepath.Join(dir, "work"), stub.env())
	if err != nil {
		stub.Close()
		return nil, err
	}
	f.stack.extra = append(f.stack.extra, opt)
	run.close = func() { cleanup(); stub.Close() }
	return run, nil
}
