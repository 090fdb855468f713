package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// sourceFlags configure the source policy of a door (see internal/sourcepolicy and
// docs/configuration.md, "Source policy"). Defaults differ by door: the HTTP API allows no local path and
// Secrets from tfrs-system only; the CLI allows any local path (a CI user owns their disk) and
// any Secret namespace; the operator allows no local path and any Secret namespace (only a
// cluster admin can create a cluster-scoped TFRCluster). Hosts default to the pinned upstream
// hosts everywhere; private addresses are refused everywhere unless allowed.
type sourceFlags struct {
	roots, hosts, nets, secretNamespaces string
	anyLocal, allowPrivate               bool
}

func (f *sourceFlags) bind(fs *pflag.FlagSet, door string) {
	anyLocal, secretNS := false, "*"
	switch door {
	case "cli":
		anyLocal = true
	case "api":
		secretNS = v1alpha1.DefaultOperatorNamespace
	}
	fs.StringVar(&f.roots, "source-allow-local-root", os.Getenv("TFRS_SOURCE_LOCAL_ROOTS"), "comma-separated directories under which localPath and file:// sources may point (env TFRS_SOURCE_LOCAL_ROOTS)")
	fs.BoolVar(&f.anyLocal, "source-allow-any-local-path", anyLocal, "allow localPath and file:// anywhere on this machine's disk")
	fs.StringVar(&f.hosts, "source-allow-host", os.Getenv("TFRS_SOURCE_HOSTS"), "comma-separated hosts chartRepo and manifestURL may name besides the pinned upstream ones: mirror.example.cn, *.example.cn, mirror:8443 (env TFRS_SOURCE_HOSTS)")
	fs.StringVar(&f.nets, "source-allow-net", os.Getenv("TFRS_SOURCE_NETS"), "comma-separated CIDRs a source may resolve to although private, e.g. an in-cluster mirror's 10.96.0.0/12 (env TFRS_SOURCE_NETS)")
	fs.BoolVar(&f.allowPrivate, "source-allow-private", false, "allow sources on loopback, link-local and private addresses (development only)")
	fs.StringVar(&f.secretNamespaces, "source-allow-secret-namespace", envOr("TFRS_SOURCE_SECRET_NAMESPACES", secretNS), `comma-separated namespaces a passwordSecretRef may read from, "*" for any (env TFRS_SOURCE_SECRET_NAMESPACES)`)
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// policy is the configured policy.
func (f *sourceFlags) policy() (*sourcepolicy.Policy, error) {
	p := &sourcepolicy.Policy{
		AnyLocalPath: f.anyLocal, AllowPrivate: f.allowPrivate,
		Hosts:            append(stacks.PinnedHosts(), splitList(f.hosts)...),
		SecretNamespaces: splitList(f.secretNamespaces),
	}
	for _, r := range splitList(f.roots) {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("%w: --source-allow-local-root %q must be absolute", errUsage, r)
		}
		p.LocalRoots = append(p.LocalRoots, filepath.Clean(r))
	}
	for _, n := range splitList(f.nets) {
		pfx, err := netip.ParsePrefix(n)
		if err != nil {
			return nil, fmt.Errorf("%w: --source-allow-net %q: %v", errUsage, n, err)
		}
		p.AllowedNets = append(p.AllowedNets, pfx)
	}
	return p, nil
}

// install makes the programs of this process fetch remote overrides through p (into
// <state-dir>/sources), so the policy also holds when they connect.
func installFetcher(p *sourcepolicy.Policy, stateDir string) error {
	dir, err := stateDirOr(stateDir)
	if err != nil {
		return err
	}
	stacks.UseSourceFetcher(&sourcepolicy.Fetcher{Policy: p, Dir: filepath.Join(dir, "sources")})
	return nil
}

// withClusterMirrors allows, besides p's hosts, the mirrors the TFRClusters among objs name
// for their own charts and manifests: whoever may apply a cluster-scoped TFRCluster chose
// them, so a file with a cluster and its tenants needs no --source-allow-host for them.
func withClusterMirrors(p *sourcepolicy.Policy, objs []prepared) *sourcepolicy.Policy {
	var hosts []string
	for _, o := range objs {
		if c, ok := o.obj.(*v1alpha1.TFRCluster); ok {
			hosts = append(hosts, sourcepolicy.MirrorHosts(c)...)
		}
	}
	if len(hosts) == 0 {
		return p
	}
	return p.WithHosts(hosts...)
}

// checkSources applies p to every object (the CLI's and the operator's check; the HTTP API
// has its own, answering 403).
func checkSources(p *sourcepolicy.Policy, objs []prepared) error {
	for _, o := range objs {
		if errs := p.Check(o.obj); len(errs) > 0 {
			return fmt.Errorf("%s %s: refused by the source policy: %w", o.target.Kind, o.target.Name, errs.ToAggregate())
		}
	}
	return nil
}

// stateDirOr is dir, or the default state directory.
func stateDirOr(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return engine.DefaultStateDir()
}
