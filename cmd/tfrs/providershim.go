package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/tfrs-io/tfrs-operator/internal/tools"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// The Kubernetes provider renders Helm charts, so it evaluates what the inputs supply. The
// Pulumi CLI starts it with the CLI's own environment, which must hold the state passphrase
// (the CLI decrypts the state) and the backend's credentials. In the untrusted mode the
// engine is pointed at a shim instead of the provider: a link named like the provider to this
// very binary. Started under that name, tfrs does nothing but exec the real provider with an
// allowlisted environment (providerEnv), before main runs. So the provider process, and any
// template it evaluates, has no passphrase, backend credential, cloud or proxy variable in
// its environment (/proc/self/environ included), by construction rather than by a list of
// names to remove.

const (
	providerName = "pulumi-resource-kubernetes"
	// shimExecEnv names the real provider for the shim.
	shimExecEnv = "TFRS_PROVIDER_SHIM_EXEC"
)

func init() {
	if filepath.Base(os.Args[0]) != providerName {
		return
	}
	real := os.Getenv(shimExecEnv)
	if real == "" {
		fmt.Fprintf(os.Stderr, "tfrs: started as %s without %s\n", providerName, shimExecEnv)
		os.Exit(1)
	}
	err := syscall.Exec(real, append([]string{real}, os.Args[1:]...), providerEnv(os.Environ()))
	fmt.Fprintf(os.Stderr, "tfrs: exec %s: %v\n", real, err)
	os.Exit(1)
}

// providerEnvNames are the variables the provider keeps: the process basics, TLS roots, the
// in-cluster service address, the kubeconfig *path* (a render's stub; a preview passes the
// kubeconfig as secret stack config instead) and Pulumi's non-secret switches.
var providerEnvNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TZ", "LANG",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
	"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBECONFIG",
	"PULUMI_HOME", "PULUMI_SKIP_UPDATE_CHECK", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION",
	"PULUMI_AUTOMATION_API", "PULUMI_DEBUG_GRPC", "PULUMI_DEBUG_COMMANDS",
	// Helm's API server for `lookup` (helmstub.go); set by tfrs, never inherited.
	"HELM_KUBEAPISERVER", "HELM_KUBETOKEN",
}

// providerEnvPrefixes are the families kept whole: the locale and the provider's own
// PULUMI_K8S_* switches (timeouts, server-side apply …; none holds a credential).
var providerEnvPrefixes = []string{"LC_", "PULUMI_K8S_"}

// providerEnv keeps what the allowlist names and drops everything else.
func providerEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(providerEnvNames, k) || slices.ContainsFunc(providerEnvPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			out = append(out, kv)
		}
	}
	return out
}

// providerShim makes the engine start the provider through the shim: a new private
// directory under parent with a link named like the provider to this executable. The helm
// map adds Helm's API server settings (helmstub.go). cleanup removes the directory.
func providerShim(parent string, helm map[string]string) (opt func(*engine.Options), cleanup func(), err error) {
	real, err := tools.Bin(providerName)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", engine.ErrToolsMissing, err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp(parent, "provider-shim-")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	shim := filepath.Join(dir, providerName)
	if err := os.Symlink(self, shim); err != nil {
		cleanup()
		return nil, nil, err
	}
	return func(o *engine.Options) {
		if o.ProviderPath != "" {
			real = o.ProviderPath
		}
		o.ProviderPath = shim
		env := map[string]string{shimExecEnv: real}
		for k, v := range o.Env {
			env[k] = v
		}
		for k, v := range helm {
			env[k] = v
		}
		o.Env = env
	}, cleanup, nil
}
