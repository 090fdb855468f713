package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/confine"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// `tfrs render` runs every object's real program through the engine with the Kubernetes
// provider in render-to-directory mode (kubernetes:renderYamlToDirectory): the provider writes
// each object it would apply as YAML (CRDs under 0-crd/, the rest under 1-manifest/) instead of
// talking to a cluster. Helm v4 Charts are templated client-side, so they render too.
//
// The state lives in a throwaway file backend that is deleted afterwards: rendering must never
// touch the real stacks, and generated credentials are fresh on every render. Children get
// their parents' outputs from the same run: a tenant from the rendered cluster stack (its
// image mirror; the RabbitMQ operator counts as ready; no pull Secret, so no registry
// credentials end up in the files), a server from the rendered tenant stack.

// renderFlags are `tfrs render`'s flags.
type renderFlags struct {
	inputs      inputFlags
	untrusted   untrustedFlags
	out         string
	omitSecrets bool
	progress    bool
	kubeVersion string
}

func newRenderCmd(a *app) *cobra.Command {
	var f renderFlags
	cmd := &cobra.Command{
		Use:   "render (-f FILE|DIR|- | -k DIR)... -o DIR [flags]",
		Short: "Write the Kubernetes manifests of the CRs in the inputs into DIR/<stack>/, without a cluster",
		Long: `Render runs every object's real program with the Kubernetes provider in render-to-directory
mode and writes the manifests it would apply into DIR/<stack>/0-crd/ (CRDs) and
DIR/<stack>/1-manifest/, for GitOps and review. No cluster is read or changed; the state is a
throwaway one. Tenants take the rendered cluster's image mirror and servers the rendered
tenant's outputs, so put parents in the inputs too. Rendered Secrets hold freshly generated
credentials in plain text: --omit-secrets leaves them out.`,
		Example: `  tfrs render -f examples/cluster.yaml -f examples/tenant-enterprise.yaml -o rendered/
  tfrs render -k deploy/overlays/prod -o rendered/ --omit-secrets --kube-version v1.34.0`,
		GroupID: groupInspect,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.InOrStdin(), a.palette(os.Stderr))
		},
	}
	fs := cmd.Flags()
	f.inputs.bind(cmd, fs)
	f.untrusted.bind(fs)
	fs.StringVarP(&f.out, "output", "o", "", "output directory; each stack renders into DIR/<stack>/ (replaced)")
	_ = cmd.MarkFlagDirname("output")
	fs.BoolVar(&f.omitSecrets, "omit-secrets", false, "delete the rendered Secret manifests (they hold freshly generated credentials in plain text)")
	fs.BoolVar(&f.progress, "progress", false, "print progress on stderr even when it is not a terminal")
	fs.StringVar(&f.kubeVersion, "kube-version", defaultKubeVersion, "the Kubernetes version charts render for (a chart's kubeVersion constraint and .Capabilities see it)")
	return cmd
}

func (f *renderFlags) run(ctx context.Context, stdin io.Reader, pal palette) error {
	if !f.inputs.given() || f.out == "" {
		return fmt.Errorf("%w: -f FILE|DIR|- (or -k DIR) and -o DIR are required", errUsage)
	}
	dir, err := filepath.Abs(f.out)
	if err != nil {
		return err
	}
	objs, extra, closeInputs, err := f.loadInputs(stdin)
	if err != nil {
		return err
	}
	defer closeInputs()
	eng, cleanup, err := renderEngine(ctx, f.kubeVersion, extra...)
	if err != nil {
		return err
	}
	defer cleanup()
	parents := &renderParents{eng: eng, rendered: map[string]bool{}}
	prog := newProgress(os.Stderr, f.progress, pal)
	defer prog.close()
	sink := prog.sink()
	for _, p := range objs {
		stackDir := filepath.Join(dir, renderStack(p.target))
		// The throwaway state knows nothing of earlier renders, so stale files would stay. A
		// second personal tenant of a job type shares the first one's directory: keep it.
		shares := parents.rendered[renderStack(p.target)]
		if !shares {
			if err := os.RemoveAll(stackDir); err != nil {
				return err
			}
		}
		rn := runner.New(eng, runner.Options{RenderDir: stackDir, Parents: parents})
		if _, err := rn.Up(ctx, p.obj, runner.Op{Door: engine.ManagedByCLI, Sink: sink, Message: "tfrs render"}); err != nil {
			return fmt.Errorf("render %s: %w", p.target, err)
		}
		parents.rendered[p.target.Stack] = true
		if p.target.Shared != "" {
			parents.rendered[p.target.Shared] = true
		}
		if shares {
			fmt.Printf("%s: shares %s\n", p.target, stackDir)
			continue
		}
		n, removed, err := tidyRendered(stackDir, f.omitSecrets)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %d manifest(s) in %s", p.target, n, stackDir)
		if removed > 0 {
			fmt.Printf(" (%d Secret(s) omitted)", removed)
		}
		fmt.Println()
		if ref := passwordSecretRef(p.obj); ref != nil && !f.omitSecrets {
			fmt.Printf("%s: the pull Secret holds a placeholder password: with no cluster, Secret %s/%s key %s cannot be read (apply fills it in; --omit-secrets leaves the Secret out)\n",
				p.target, ref.Namespace, ref.Name, ref.Key)
		}
	}
	return nil
}

// renderStack is the stack whose objects an object renders: a personal tenant's own stack
// registers no Kubernetes object, its job type's shared stack does.
func renderStack(t kinds.Target) string {
	if t.Shared != "" {
		return t.Shared
	}
	return t.Stack
}

// renderEngine is an engine over a throwaway file backend in a temp dir, with a random
// passphrase (nothing needs to decrypt this state later) and no way to reach a cluster: its
// kubeconfig names only the loopback discovery server (render_discovery.go) and there is no
// in-cluster service account, so a render never reads or changes one.
func renderEngine(ctx context.Context, kubeVersion string, extra ...func(*engine.Options)) (*engine.Engine, func(), error) {
	tmp, err := os.MkdirTemp("", "tfrs-render-")
	if err != nil {
		return nil, nil, err
	}
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	disco, err := startDiscovery(tmp, kubeVersion)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	o := engine.Options{
		StateDir: tmp, Passphrase: hex.EncodeToString(key), MaxConcurrent: 2,
		Env: map[string]string{
			"KUBECONFIG":              disco.kubeconfig,
			"KUBERNETES_SERVICE_HOST": "",
		},
	}
	for _, x := range extra {
		x(&o)
	}
	eng, err := engine.New(ctx, o)
	if err != nil {
		disco.Close()
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	return eng, func() { _ = eng.Close(); disco.Close(); _ = os.RemoveAll(tmp) }, nil
}

// renderParents hands children their parents' outputs from the stacks rendered in this run.
type renderParents struct {
	eng      runner.Engine
	rendered map[string]bool
}

// Cluster gives a tenant the rendered cluster's image mirror and personal middleware, the
// RabbitMQ operator as ready (a rendered cluster installs it) and no pull Secret. A cluster not in the files renders the
// tenant with upstream images.
func (p *renderParents) Cluster(ctx context.Context, stack string) (stacks.TenantCluster, error) {
	c := stacks.TenantCluster{RabbitMQOperatorReady: true}
	if !p.rendered[stack] {
		return c, nil
	}
	out, err := p.eng.Outputs(ctx, stack)
	if err != nil {
		return c, err
	}
	c.ImageRegistry = out.String(stacks.ClusterOutputImageRegistry)
	// The shared middleware of its personal tenants (spec.personal).
	c.Personal = stacks.OptionalString(out.String(stacks.ClusterOutputPersonal))
	return c, nil
}

// Tenant gives a server the outputs of its tenant rendered in this run.
func (p *renderParents) Tenant(ctx context.Context, stack string) (stacks.TenantOutputs, error) {
	if !p.rendered[stack] {
		return stacks.TenantOutputs{}, &kinds.ParentError{Stack: stack, Reason: "render needs the server's TFRTenant in the same files"}
	}
	out, err := p.eng.Outputs(ctx, stack)
	if err != nil {
		return stacks.TenantOutputs{}, err
	}
	return stacks.TenantOutputsFromStack(out)
}

// tidyRendered counts the manifests under dir and, when asked, deletes the Secrets (the
// provider names files <apiVersion>-<kind>-<namespace>-<name>.yaml).
func tidyRendered(dir string, omitSecrets bool) (kept, removed int, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == dir {
			return fs.SkipAll // nothing rendered (e.g. a personal tenant's member stack)
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		if omitSecrets && strings.HasPrefix(d.Name(), "v1-secret-") {
			removed++
			return os.Remove(path)
		}
		kept++
		return nil
	})
	return kept, removed, err
}

// passwordSecretRef is a cluster's registry password Secret, which a render cannot read.
func passwordSecretRef(obj v1alpha1.Object) *v1alpha1.SecretKeyRef {
	tc, ok := obj.(*v1alpha1.TFRCluster)
	if !ok || tc.Spec.ImageRegistry == nil || tc.Spec.ImageRegistry.Credentials == nil {
		return nil
	}
	return tc.Spec.ImageRegistry.Credentials.PasswordSecretRef
}

// loadInputs reads the inputs and confines their local sources (untrusted.go) into a
// throwaway directory; in the untrusted mode local sources must be under the input root and
// the provider runs through the shim (no secret in its environment; a render has no cluster,
// so Helm's lookup already finds nothing).
func (f *renderFlags) loadInputs(stdin io.Reader) (objs []prepared, extra []func(*engine.Options), closeFn func(), err error) {
	tmp, err := os.MkdirTemp("", "tfrs-render-sources-")
	if err != nil {
		return nil, nil, nil, err
	}
	closeFn = func() { _ = os.RemoveAll(tmp) }
	defer func() {
		if err != nil {
			closeFn()
		}
	}()
	if f.untrusted.root != "" && !f.untrusted.on {
		return nil, nil, nil, fmt.Errorf("%w: --input-root applies only with --untrusted", errUsage)
	}
	mode := confine.Trusted
	if f.untrusted.on {
		mode = confine.Untrusted
	}
	conf, err := confine.New(mode, f.untrusted.root, filepath.Join(tmp, "local"))
	if err != nil {
		return nil, nil, nil, err
	}
	f.inputs.conf = conf
	if objs, err = f.inputs.load(stdin, false); err != nil {
		return nil, nil, nil, err
	}
	if err = absLocalSources(conf, objs); err != nil {
		return nil, nil, nil, err
	}
	if conf.Untrusted() {
		pol := untrustedPolicy(&sourcepolicy.Policy{Hosts: stacks.PinnedHosts()}, conf)
		if err = checkSources(withClusterMirrors(pol, objs), objs); err != nil {
			return nil, nil, nil, err
		}
		opt, cleanup, serr := providerShim(tmp, nil)
		if serr != nil {
			return nil, nil, nil, serr
		}
		extra = append(extra, opt)
		prev := closeFn
		closeFn = func() { cleanup(); prev() }
	}
	if err = confineSources(conf, objs); err != nil {
		return nil, nil, nil, err
	}
	return objs, extra, closeFn, nil
}
