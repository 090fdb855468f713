// Package devenv is the whole product on one machine: the local control plane with the CRDs,
// the operator and the HTTP API in this process, one engine over a file:// backend under a
// dev directory. `tfrs dev` runs it for people; the end-to-end suite runs it for tests, so
// what a user tries first is exactly what CI proves.
package devenv

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/config/crd"
	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/manifest"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/internal/upstream"
	"github.com/tfrs-io/tfrs-operator/operator"
	"github.com/tfrs-io/tfrs-operator/server"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Options configure Start.
type Options struct {
	// Dir keeps everything: controlplane/ (data, certs, logs, kubeconfig), state/ (the
	// file:// backend and workspaces), passphrase, api-token, specs/ and env.sh. The control
	// plane is started afresh each time, and so are the state and the API's specs: stacks
	// describing objects of a control plane that is gone would only mislead the next run.
	// The passphrase and the token are kept.
	Dir string
	// Listen is the HTTP API's address (default 127.0.0.1:0, a free port).
	Listen string
	// Log receives the operator's and the API's records (default: Dir/tfrs.log).
	Log io.Writer
	// LogHandler makes the handler that formats those records on Log (default: slog's text
	// handler; `tfrs dev --log-format` chooses).
	LogHandler func(io.Writer) slog.Handler
	// Operator tunes the operator (tests shorten its polls); Engine and Run are set here.
	Operator operator.Options
	// MaxConcurrent bounds engine operations (default 4).
	MaxConcurrent int
	// Revision gives the build's program revision, recorded on every stack an up applies
	// (nil: none).
	Revision func() *v1alpha1.Revision
}

// Env is a running dev environment.
type Env struct {
	Dir            string
	KubeconfigPath string
	APIURL         string
	// Token is the API's admin bearer token (Dir/api-token).
	Token string
	// StateDir and PassphraseFile are what another tfrs process (`tfrs up -f …`) needs to
	// share this environment's state: `--state-dir` and `--passphrase-file`.
	StateDir, PassphraseFile string
	// EnvFile holds the exports that point a shell's tfrs and kubectl at this environment.
	EnvFile string
	// TeamNamespace and TeamServiceAccount are the demo team of team-rbac.yaml: its
	// ServiceAccount's tokens (kubectl create token) may manage the tenants and servers of
	// its namespace over the API, as RBAC allows, and nothing else.
	TeamNamespace, TeamServiceAccount string

	// Sources is the source policy of both doors, the operator's and the API's (devSources).
	Sources *sourcepolicy.Policy

	CP     *controlplane.ControlPlane
	Engine *engine.Engine
	Runner *runner.Runner

	cancel  context.CancelFunc
	done    chan error // the operator and the API, each sends once
	started int        // how many of them run
	logFile *os.File
}

// Start brings the environment up. Stop it with Stop (also on error paths: Start cleans up
// after itself when it fails).
func Start(ctx context.Context, o Options) (env *Env, err error) {
	if o.Dir == "" {
		return nil, errors.New("devenv: Dir is required")
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	e := &Env{Dir: o.Dir, StateDir: filepath.Join(o.Dir, "state"), PassphraseFile: filepath.Join(o.Dir, "passphrase"),
		EnvFile: filepath.Join(o.Dir, "env.sh"), done: make(chan error, 2)}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	if o.Log == nil {
		if e.logFile, err = os.OpenFile(filepath.Join(o.Dir, "tfrs.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			return nil, err
		}
		o.Log = e.logFile
	}
	if o.LogHandler == nil {
		o.LogHandler = func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) }
	}
	log := slog.New(o.LogHandler(o.Log))

	// A fresh control plane every time (its etcd is scratch), so fresh state too.
	cpDir := filepath.Join(o.Dir, "controlplane")
	for _, d := range []string{cpDir, e.StateDir, filepath.Join(o.Dir, "specs")} {
		if err := os.RemoveAll(d); err != nil {
			return nil, err
		}
	}
	if e.CP, err = controlplane.Start(ctx, controlplane.Options{Dir: cpDir}); err != nil {
		return nil, err
	}
	e.KubeconfigPath = e.CP.KubeconfigPath
	if err := installCRDs(ctx, e.CP.RESTConfig, log); err != nil {
		return nil, err
	}
	if err := applyTeamRBAC(ctx, e.CP.RESTConfig); err != nil {
		return nil, fmt.Errorf("team RBAC: %w", err)
	}
	e.TeamNamespace, e.TeamServiceAccount = TeamNamespace, TeamServiceAccount
	kubeconfig, err := os.ReadFile(e.KubeconfigPath)
	if err != nil {
		return nil, err
	}

	if err := ensureSecretFile(e.PassphraseFile); err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(o.Dir, "api-token")
	if err := ensureSecretFile(tokenFile); err != nil {
		return nil, err
	}
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, err
	}
	e.Token = strings.TrimSpace(string(tok))

	if e.Engine, err = engine.New(ctx, engine.Options{StateDir: e.StateDir, PassphraseFile: e.PassphraseFile,
		MaxConcurrent: o.MaxConcurrent, Logger: log}); err != nil {
		return nil, err
	}
	runOpts := runner.Options{Kubeconfig: string(kubeconfig), Revision: o.Revision}
	e.Runner = runner.New(e.Engine, runOpts)
	// One source policy at every door of this process: the operator checks every spec with
	// the API's policy, and the programs of both fetch remote overrides through it.
	e.Sources = devSources(o.Dir)
	stacks.UseSourceFetcher(&sourcepolicy.Fetcher{Policy: e.Sources, Dir: filepath.Join(e.StateDir, "sources")})

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	if err := e.startOperator(runCtx, o, runOpts, log); err != nil {
		return nil, err
	}
	if err := e.startAPI(runCtx, o, log); err != nil {
		return nil, err
	}
	if err := e.writeEnvFile(); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Env) startOperator(ctx context.Context, o Options, run runner.Options, log *slog.Logger) error {
	// controller-runtime logs through its global logger: into the dev log, like the rest.
	crlog.SetLogger(logr.FromSlogHandler(log.Handler()))
	mgr, err := operator.NewManager(e.CP.RESTConfig, operator.ManagerOptions{MetricsBindAddress: "0", HealthProbeBindAddress: "0"})
	if err != nil {
		return err
	}
	opts := operatorOptions(o.Operator, e.Engine, run, e.Sources)
	if _, err := operator.Setup(ctx, mgr, opts); err != nil {
		return err
	}
	e.started++
	go func() { e.done <- mgr.Start(ctx) }()
	return nil
}

func (e *Env) startAPI(ctx context.Context, o Options, log *slog.Logger) error {
	// Specs and operation records in the state backend, as `tfrs serve` keeps them.
	bkt, err := e.Engine.Bucket(ctx)
	if err != nil {
		return err
	}
	// Both auth modes: the admin token of Dir/api-token, and Kubernetes tokens of the control
	// plane (the team's ServiceAccount), reviewed by the control plane's API server.
	kube, err := server.NewKubernetesAuthForConfig(e.CP.RESTConfig, server.KubernetesOptions{Logger: log})
	if err != nil {
		return err
	}
	srv := server.New(server.Config{
		Runner: e.Runner, Engine: e.Engine, Logger: log,
		Specs: server.NewBackendSpecStore(bkt), Operations: server.NewOperationStore(bkt, "tfrs-dev"),
		Tokens:        []server.Token{{Value: e.Token, Role: server.RoleAdmin, Name: "dev"}},
		Kubernetes:    kube,
		ShutdownGrace: 30 * time.Second,
		// The demo's examples point at the checkout's offline stand-ins.
		Sources: e.Sources,
	})
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("API listen %s: %w", o.Listen, err)
	}
	e.APIURL = "http://" + l.Addr().String()
	e.started++
	go func() { e.done <- srv.Serve(ctx, l) }()
	return nil
}

// writeEnvFile writes the exports for a shell: `source ~/.tfrs/dev/env.sh`, then kubectl,
// tfrs up/preview and curl all talk to this environment.
func (e *Env) writeEnvFile() error {
	body := fmt.Sprintf(`# written by tfrs dev; source it to use this environment from a shell
export KUBECONFIG=%q
export TFRS_STATE_DIR=%q
export TFRS_PASSPHRASE_FILE=%q
export TFRS_API_URL=%q
export TFRS_API_TOKEN="$(cat %q)"
# The API also takes Kubernetes tokens (--auth kubernetes,static). The team's ServiceAccount may
# manage tenants and servers in namespace %s only (Role tfrs-tenant-editor):
#   TEAM_TOKEN="$(%s)"
#   curl -H "Authorization: Bearer $TEAM_TOKEN" "$TFRS_API_URL/v1/namespaces/%s/tenants"
`, e.KubeconfigPath, e.StateDir, e.PassphraseFile, e.APIURL, filepath.Join(e.Dir, "api-token"),
		e.TeamNamespace, e.TeamTokenCommand(), e.TeamNamespace)
	return os.WriteFile(e.EnvFile, []byte(body), 0o600)
}

// TeamTokenCommand is the kubectl command that prints a token of the team's ServiceAccount
// (valid one hour) usable against the API.
func (e *Env) TeamTokenCommand() string {
	return fmt.Sprintf("kubectl create token %s -n %s --duration 1h", e.TeamServiceAccount, e.TeamNamespace)
}

// The demo team of team-rbac.yaml.
const (
	TeamNamespace      = "team-a"
	TeamServiceAccount = "tenant-admin"
)

// teamRBAC is the demo team: a namespace, a ServiceAccount and the Role that lets it manage
// the namespace's tenants and servers (previews included) over the API.
//
//go:embed team-rbac.yaml
var teamRBAC []byte

// applyTeamRBAC creates the objects of team-rbac.yaml.
func applyTeamRBAC(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	return manifest.EachDocument(bytes.NewReader(teamRBAC), func(_ int, doc []byte) error {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return err
		}
		return c.Create(ctx, &u)
	})
}

// Stop stops the API (letting running operations finish within its grace), the operator,
// the engine and the control plane, in that order. No process is left behind.
func (e *Env) Stop() error {
	var errs []error
	if e.cancel != nil {
		e.cancel()
		for range e.started {
			if err := <-e.done; err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, err)
			}
		}
		e.cancel = nil
	}
	if e.Engine != nil {
		errs = append(errs, e.Engine.Close())
		e.Engine = nil
	}
	if e.CP != nil {
		errs = append(errs, e.CP.Stop())
		e.CP = nil
	}
	if e.logFile != nil {
		errs = append(errs, e.logFile.Close())
		e.logFile = nil
	}
	return errors.Join(errs...)
}

// ensureSecretFile creates path (mode 0600) holding 32 random bytes in hex, unless it exists.
func ensureSecretFile(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o600)
}

// standInCRDs are accept-anything stand-ins of the upstream CRDs, for a checkout without the
// real ones beside it (testenv.RepoRoot is the checkout this binary was built from).
var standInCRDs = filepath.Join(testenv.RepoRoot(), "stacks", "testdata", "crds", "standins.yaml")

// installCRDs installs TFRS's CRDs and, as a cluster with its operators' CRDs in place, the
// real upstream CRDs of the pinned versions (../shared/upstream). A checkout without them
// gets the accept-anything stand-ins instead, said in the log: the demo runs, but the
// custom resources are then not checked against any schema.
func installCRDs(ctx context.Context, cfg *rest.Config, log *slog.Logger) error {
	if upstream.Present() {
		return testenv.InstallCRDs(ctx, cfg)
	}
	log.Warn("no upstream CRDs beside the checkout: installing accept-anything stand-ins", "missing", upstream.Root(), "standIns", standInCRDs)
	own, err := crd.Definitions()
	if err != nil {
		return err
	}
	defs, err := upstream.ReadFile(standInCRDs)
	if err != nil {
		return err
	}
	return crd.Apply(ctx, cfg, append(own, defs...))
}

// operatorOptions are the dev operator's options: the caller's tuning, this environment's
// engine and programs, and the one source policy (an object outside it is refused as an
// invalid spec, as `tfrs operator` and the API refuse it). A policy the caller set is kept.
func operatorOptions(o operator.Options, eng *engine.Engine, run runner.Options, sources *sourcepolicy.Policy) operator.Options {
	o.Engine, o.Run = eng, run
	if o.Sources == nil {
		o.Sources = sources
	}
	return o
}

// devSources is the dev API's and the dev operator's source policy: the API's default plus local paths under dir and
// under the checkout's stand-ins (stacks/testdata), which the demo's examples name.
//
// The demo's TFRCluster reads its registry password from a Secret in "default" (where
// `kubectl apply` of examples/dev puts it), which the API's default would refuse; only a
// TFRCluster names a Secret, and only a cluster admin may write one.
func devSources(dir string) *sourcepolicy.Policy {
	p := server.DefaultSourcePolicy()
	p.LocalRoots = []string{dir, filepath.Dir(testenv.StandIns("tenant"))}
	p.SecretNamespaces = append(p.SecretNamespaces, "default")
	return p
}
