package runner

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	tenantc "github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// Tenant and server stacks apply as their namespace's applier (components/tenant/applier.go):
// their default provider gets the runner's own kubeconfig with Kubernetes impersonation of
// system:serviceaccount:<namespace>:tfrs-applier, so the API server, not only the program,
// keeps them inside their namespace. Cluster stacks, refreshes and destroys (whose providers
// come from the stack's state, recorded by the last up) keep the runner's identity.

// baseKubeconfig is the kubeconfig the runner and its programs reach the cluster with, found
// the way the provider finds it: the contents given, else $KUBECONFIG / ~/.kube/config, else
// the in-cluster ServiceAccount (by file, so rotated tokens are read again). Nil when there is
// none: then there is no identity to narrow either, and the provider fails on its own.
func baseKubeconfig(kubeconfig string) (*clientcmdapi.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.Load([]byte(kubeconfig))
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		return cfg, nil
	}
	if cfg, err := clientcmd.NewDefaultClientConfigLoadingRules().Load(); err == nil && len(cfg.Contexts) > 0 {
		return cfg, nil
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, nil
	}
	const name = "in-cluster"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthority: rc.TLSClientConfig.CAFile}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{TokenFile: rc.BearerTokenFile}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return cfg, nil
}

// impersonating is base narrowed to its current (or kubeContext's) context, whose user acts
// as user. The cluster entry is left exactly as it was: the provider replaces every resource
// when its active cluster's settings change, and only the user changes here.
func impersonating(base *clientcmdapi.Config, kubeContext, user string) (string, error) {
	cfg := base.DeepCopy()
	if kubeContext != "" {
		cfg.CurrentContext = kubeContext
	}
	if _, ok := cfg.Contexts[cfg.CurrentContext]; !ok {
		return "", fmt.Errorf("kubeconfig: no context %q", cfg.CurrentContext)
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate, a.ImpersonateUID, a.ImpersonateGroups, a.ImpersonateUserExtra = user, "", nil, nil
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	return string(b), nil
}

// config is the stack config of a run applying into namespace ns ("" for cluster-wide).
func (r *Runner) config(ns string) (map[string]engine.ConfigValue, error) {
	cfg := map[string]engine.ConfigValue{}
	if r.opts.Kubeconfig != "" {
		cfg[ConfigKubeconfig] = engine.ConfigValue{Value: r.opts.Kubeconfig, Secret: true}
	}
	if r.opts.KubeContext != "" {
		cfg[ConfigKubeContext] = engine.ConfigValue{Value: r.opts.KubeContext}
	}
	if r.opts.RenderDir != "" {
		cfg[ConfigRenderDir] = engine.ConfigValue{Value: r.opts.RenderDir}
		return cfg, nil // nothing is applied: no identity to narrow
	}
	if ns == "" {
		return cfg, nil
	}
	r.baseOnce.Do(func() { r.base, r.baseErr = baseKubeconfig(r.opts.Kubeconfig) })
	if r.baseErr != nil || r.base == nil {
		return cfg, r.baseErr
	}
	applier, err := impersonating(r.base, r.opts.KubeContext, tenantc.ApplierUser(ns))
	if err != nil {
		return nil, err
	}
	cfg[ConfigKubeconfig] = engine.ConfigValue{Value: applier, Secret: true}
	cfg[program.ConfigApplier] = engine.ConfigValue{Value: tenantc.ApplierName}
	return cfg, nil
}
