package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tfrs-io/tfrs-operator/operator"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// operatorFlags are the manager's own flags; the stack flags (backend, secrets, parallel,
// kubeconfig) are the ones every stack command shares.
type operatorFlags struct {
	stack                   stackFlags
	metricsAddr, probeAddr  string
	leaderElect             bool
	leaderElectionNamespace string
	maxConcurrentReconciles int
	resync                  time.Duration
	log                     logFlags
	sources                 sourceFlags
}

func newOperatorCmd() *cobra.Command {
	var f operatorFlags
	cmd := &cobra.Command{
		Use:   "operator [flags]",
		Short: "Run the Kubernetes operator: reconcile TFRCluster, TFRTenant and TFRServer through their Pulumi stacks",
		Long: `Operator runs a controller-runtime manager that reconciles TFRCluster, TFRTenant and
TFRServer resources through their Pulumi stacks, with the same runner, engine and state as
the HTTP API and the CLI. It reaches the API server through --kubeconfig (and --context), else
the in-cluster service account, else ~/.kube/config.`,
		Example: `  tfrs operator --kubeconfig ~/.kube/config --state-dir ~/.tfrs/state --passphrase-file pass.txt
  tfrs operator --leader-elect --leader-election-namespace tfrs-system --log-format json`,
		GroupID: groupServers,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOperator(cmd.Context(), cmd, &f)
		},
	}
	fs := cmd.Flags()
	f.stack.bind(fs)
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", `address of /metrics ("0" turns it off)`)
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader among replicas: only the leader runs stack operations")
	fs.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's)")
	fs.IntVar(&f.maxConcurrentReconciles, "max-concurrent-reconciles", 2, "reconciles at once per kind (short: operations run in the background, bounded by --parallel)")
	fs.DurationVar(&f.resync, "resync-period", 10*time.Minute, "how often an unchanged object is looked at again (runs nothing unless a parent changed or a drift check is due)")
	f.sources.bind(fs, "operator")
	f.log.bind(fs)
	return cmd
}

func runOperator(ctx context.Context, cmd *cobra.Command, f *operatorFlags) error {
	h, err := f.log.handler(cmd.Flags(), os.Stderr)
	if err != nil {
		return err
	}
	crlog.SetLogger(logr.FromSlogHandler(h))

	cfg, err := f.stack.restConfig()
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
	mo := operator.ManagerOptions{
		MetricsBindAddress: f.metricsAddr, HealthProbeBindAddress: f.probeAddr,
		LeaderElection: f.leaderElect, LeaderElectionNamespace: f.leaderElectionNamespace,
		Identity: operator.NewIdentity(),
	}
	mgr, err := operator.NewManager(cfg, mo)
	if err != nil {
		return err
	}
	// The leader may break a backend lock whose owner Pod is gone (a replica lost mid-run).
	eng, err := f.stack.engine(ctx, func(o *engine.Options) {
		leader := operator.NewLeaderPods(mgr, mo)
		o.Pods = leader
		if f.leaderElect {
			// No mutating run starts unless this replica holds the Lease at that moment.
			o.Fence = func(ctx context.Context) error {
				if leader.Leading(ctx) {
					return nil
				}
				return errors.New("this replica does not hold the leader Lease " + operator.LeaderElectionID)
			}
		}
	})
	if err != nil {
		return err
	}
	defer eng.Close()
	op, err := operator.Setup(ctx, mgr, operator.Options{
		Sources: pol,
		Engine:  eng, Run: run,
		MaxConcurrentReconciles: f.maxConcurrentReconciles, ResyncPeriod: f.resync,
	})
	if err != nil {
		return err
	}
	log := slog.New(h)
	log.Info("tfrs operator starting", "backend", eng.BackendURL(), "leaderElection", f.leaderElect, "parallel", f.stack.parallel)
	err = mgr.Start(ctx)
	// After a lost Lease Start returns without waiting for the stack operations: stop them
	// through Pulumi's cancel path before exiting (eng.Close, deferred, then waits for the CLI
	// processes themselves).
	if n := op.Running(); n > 0 {
		log.Warn("operator stopped: canceling its running stack operations before exiting", "operations", n, "reason", errString(err))
	}
	op.WindDown()
	return err
}

func errString(err error) string {
	if err == nil {
		return "shutdown"
	}
	return err.Error()
}

// restConfig is how the manager reaches the API server: --kubeconfig (and --context) when
// given, else the in-cluster service account, else ~/.kube/config. The programs get the
// same kubeconfig's contents (stackFlags.runOptions), or the in-cluster account without one.
func (f *stackFlags) restConfig() (*rest.Config, error) {
	if f.kubeconfig == "" {
		return config.GetConfigWithContext(f.kubeContext)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = filepath.SplitList(f.kubeconfig)[0] // the file runOptions reads
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: f.kubeContext}).ClientConfig()
}
