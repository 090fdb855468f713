package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tfrs-io/tfrs-operator/operator"
)

func init() {
	register("operator", "run the Kubernetes operator: reconcile TFRCluster, TFRTenant and TFRServer resources through their Pulumi stacks", runOperator)
}

// operatorFlags are the manager's own flags; the stack flags (backend, secrets, parallel,
// kubeconfig) are the ones every stack command shares.
type operatorFlags struct {
	stack                   stackFlags
	metricsAddr, probeAddr  string
	leaderElect             bool
	leaderElectionNamespace string
	maxConcurrentReconciles int
	resync                  time.Duration
	jsonLogs                bool
	sources                 sourceFlags
}

func runOperator(ctx context.Context, args []string) error {
	var f operatorFlags
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	f.stack.bind(fs)
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", `address of /metrics ("0" turns it off)`)
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader among replicas: only the leader runs stack operations")
	fs.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's)")
	fs.IntVar(&f.maxConcurrentReconciles, "max-concurrent-reconciles", 2, "reconciles at once per kind (short: operations run in the background, bounded by --parallel)")
	fs.DurationVar(&f.resync, "resync-period", 10*time.Minute, "how often an unchanged object is looked at again (runs nothing unless a parent changed or a drift check is due)")
	f.sources.bind(fs, "operator")
	fs.BoolVar(&f.jsonLogs, "json-logs", os.Getenv("TFRS_JSON_LOGS") == "true", "log JSON lines instead of text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}

	var h slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if f.jsonLogs {
		h = slog.NewJSONHandler(os.Stderr, nil)
	}
	crlog.SetLogger(logr.FromSlogHandler(h))

	cfg, err := f.restConfig()
	if err != nil {
		return err
	}
	run, err := f.stack.runOptions()
	if err != nil {
		return err
	}
	pol, err := f.sources.policy()
	if err != nil {
		return err
	}
	if err := installFetcher(pol, f.stack.stateDir); err != nil {
		return err
	}
	eng, err := f.stack.engine(ctx)
	if err != nil {
		return err
	}
	defer eng.Close()

	mgr, err := operator.NewManager(cfg, operator.ManagerOptions{
		MetricsBindAddress: f.metricsAddr, HealthProbeBindAddress: f.probeAddr,
		LeaderElection: f.leaderElect, LeaderElectionNamespace: f.leaderElectionNamespace,
	})
	if err != nil {
		return err
	}
	if _, err := operator.Setup(ctx, mgr, operator.Options{
		Sources: pol,
		Engine:  eng, Run: run,
		MaxConcurrentReconciles: f.maxConcurrentReconciles, ResyncPeriod: f.resync,
	}); err != nil {
		return err
	}
	slog.New(h).Info("tfrs operator starting", "backend", eng.BackendURL(), "leaderElection", f.leaderElect, "parallel", f.stack.parallel)
	return mgr.Start(ctx)
}

// restConfig is how the manager reaches the API server: --kubeconfig (and --context) when
// given, else the in-cluster service account, else ~/.kube/config. The programs get the
// same kubeconfig's contents (stackFlags.runOptions), or the in-cluster account without one.
func (f *operatorFlags) restConfig() (*rest.Config, error) {
	if f.stack.kubeconfig == "" {
		return config.GetConfigWithContext(f.stack.kubeContext)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = filepath.SplitList(f.stack.kubeconfig)[0] // the file runOptions reads
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: f.stack.kubeContext}).ClientConfig()
}
