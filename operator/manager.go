package operator

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/google/uuid"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/stacks/approval"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The operator's own permissions (config/rbac/role.yaml is generated from these). What the
// Pulumi programs apply — namespaces, workloads, CRDs, charts' RBAC — is granted separately by
// the provisioner ClusterRole (config/rbac/provisioner_role.yaml), so each can be reviewed
// on its own.
//
// +kubebuilder:rbac:groups=tfrs.io,resources=tfrclusters;tfrtenants;tfrservers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=tfrs.io,resources=tfrclusters/status;tfrtenants/status;tfrservers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=tfrs.io,resources=tfrclusters/finalizers;tfrtenants/finalizers;tfrservers/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=tfrs-system,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Options configure the operator. Zero values take the defaults named.
type Options struct {
	// Engine runs the stack operations (an *engine.Engine; tests pass a fake).
	Engine runner.Engine
	// Run is how programs reach Kubernetes (kubeconfig, context). Its SharedOwner is set by
	// the operator from its TFRTenant cache.
	Run runner.Options
	// MaxConcurrentReconciles per kind (default 2). Reconciles are short; the engine's own
	// limit (engine.Options.MaxConcurrent) bounds the operations that run at once.
	MaxConcurrentReconciles int
	// ResyncPeriod is how often an unchanged Ready object is looked at again (default 10m):
	// parents' outputs and drift checks are due then. It runs no engine operation by itself.
	// A parent stack made outside the operator is read again only when the engine reports it
	// changed, or, when the engine cannot tell, at most once per half period (parentcache.go).
	ResyncPeriod time.Duration
	// ParentPoll is how often an object waiting for its parent or for its dependents looks
	// again (default 10s); the watches on parents and children usually wake it sooner.
	ParentPoll time.Duration
	// BackoffBase and BackoffMax bound the capped exponential backoff of failed operations
	// (defaults 10s and 5m).
	BackoffBase, BackoffMax time.Duration
	// JobPoll is how often a running operation is looked at, should its completion event be
	// lost (default 30s).
	JobPoll time.Duration
	// EngineReadTimeout bounds a synchronous engine read in Reconcile (default 5s): the outputs
	// of a parent stack made over the HTTP API or the CLI.
	EngineReadTimeout time.Duration
	// ProgressInterval bounds how often a running operation's status.lastOperation.progress
	// is written (default 5s); its Progress Events come at most every 6 intervals and its
	// progress log lines every 3.
	ProgressInterval time.Duration
	// SkipNameValidation lets several operators run in one process (tests of a restart).
	SkipNameValidation bool
	// Sources, when set, is the source policy every object's spec must pass before anything
	// runs (a refusal is an invalid spec naming the field); nil checks none here.
	Sources *sourcepolicy.Policy
}

func (o *Options) defaults() {
	def := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.ResyncPeriod, 10*time.Minute)
	def(&o.ParentPoll, 10*time.Second)
	def(&o.BackoffBase, 10*time.Second)
	def(&o.BackoffMax, 5*time.Minute)
	def(&o.JobPoll, 30*time.Second)
	def(&o.EngineReadTimeout, 5*time.Second)
	def(&o.ProgressInterval, 5*time.Second)
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 2
	}
}

// Operator is the three controllers sharing one operation table.
type Operator struct {
	jobs *jobs
}

// Running is the number of stack operations running now.
func (op *Operator) Running() int { return op.jobs.running() }

// WindDown cancels the running stack operations and waits until they have ended: the engine
// stops each Pulumi CLI through its cancel path (SIGINT, then its cancel grace), so the CLI
// saves what it did and releases the backend lock. A clean stop does this inside the manager
// (jobs.Start), but when the Lease is lost controller-runtime skips the wait and Start returns
// at once, while a new leader may already be starting. The process must therefore call
// WindDown after Start returns and before it exits: leadership is then a fence, not only the
// backend lock. It is idempotent.
func (op *Operator) WindDown() {
	op.jobs.stop()
	op.jobs.wg.Wait()
}

// Setup adds the operator to mgr: the field indexes, the operation table, the parent digest
// cache and one controller per kind, all of them the same core.
func Setup(ctx context.Context, mgr manager.Manager, o Options) (*Operator, error) {
	if o.Engine == nil {
		return nil, errors.New("operator: an engine is required")
	}
	o.defaults()
	registerEngineMetrics(o.Engine)
	for _, ix := range fieldIndexes {
		if err := mgr.GetFieldIndexer().IndexField(ctx, ix.obj, ix.field, ix.fn); err != nil {
			return nil, err
		}
	}
	c := mgr.GetClient()
	op := &Operator{jobs: newJobs()}
	if err := mgr.Add(op.jobs); err != nil {
		return nil, err
	}
	parents := newParentCache(digestTTL(o.ResyncPeriod))
	run := o.Run
	if run.Namespaces == nil && run.Kubeconfig == "" && run.KubeContext == "" {
		// Read straight from the API server: no cache (and no watch) of every namespace.
		run.Namespaces = clientNamespaces{mgr.GetAPIReader()}
	}
	rn := runner.New(o.Engine, runOptions(c, run))
	for _, k := range []*kind{clusterKind(), tenantKind(), serverKind()} {
		r := newReconciler(k, c, rn, op.jobs, parents, o)
		r.events = mgr.GetEventRecorder("tfrs-operator")
		name := strings.ToLower(string(k.name()))
		copts := controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles}
		if o.SkipNameValidation {
			copts.SkipNameValidation = ptr.To(true)
		}
		b := ctrl.NewControllerManagedBy(mgr).
			Named(name).
			For(k.newObj(), builder.WithPredicates(ownChanges)).
			WithOptions(copts).
			WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{}))
		if err := k.watch(b, c).Complete(r); err != nil {
			return nil, err
		}
	}
	return op, nil
}

// runOptions makes the runner ask the operator's cache which personal tenant drives a job
// type's shared stack, so that exactly one does.
func runOptions(c client.Reader, run runner.Options) runner.Options {
	run.SharedOwner = func(ctx context.Context, jobType string) (v1alpha1.Object, error) {
		owner, err := sharedOwner(ctx, c, jobType)
		if err != nil || owner == nil {
			return nil, err // never a typed nil
		}
		return owner, nil
	}
	// The provider applies to the operator's own cluster unless a kubeconfig says otherwise:
	// then the manager's client reads the tenants' namespaces before they run.
	if run.Namespaces == nil && run.Kubeconfig == "" && run.KubeContext == "" {
		run.Namespaces = clientNamespaces{c}
	}
	return run
}

// clientNamespaces reads namespaces with the manager's client (runner.NamespaceGetter).
type clientNamespaces struct{ c client.Reader }

func (n clientNamespaces) GetNamespace(ctx context.Context, name string) (bool, map[string]string, error) {
	var ns corev1.Namespace
	if err := n.c.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil, nil
		}
		return false, nil, err
	}
	return true, ns.Annotations, nil
}

// planStoreOf is the engine's plan store; nil for an engine that keeps none (a test fake),
// where any approval mode but Auto fails instead of applying unreviewed.
func planStoreOf(e runner.Engine) approval.Backend {
	if s, ok := e.(approval.Backend); ok {
		return s
	}
	return nil
}

func newReconciler(k *kind, c client.Client, rn *runner.Runner, js *jobs, pc *parentCache, o Options) *reconciler {
	return &reconciler{
		kind: k, client: c, runner: rn, jobs: js, digests: pc, plans: approval.NewStore(planStoreOf(o.Engine), engine.ManagedByOperator),
		wake:      make(chan event.GenericEvent, 1024),
		timing:    timing{Resync: o.ResyncPeriod, ParentPoll: o.ParentPoll, BackoffBase: o.BackoffBase, BackoffMax: o.BackoffMax},
		poll:      o.JobPoll,
		readTO:    o.EngineReadTimeout,
		failing:   &failingSet{kind: string(k.name())},
		revisions: &revisionSet{kind: string(k.name())},
		revision:  o.Run.Revision,
		now:       time.Now,
		sources:   o.Sources,

		progressInterval: o.ProgressInterval,
		progressEvents:   &eventThrottle{},
	}
}

// ManagerOptions configure the controller-runtime manager of `tfrs operator`.
type ManagerOptions struct {
	// MetricsBindAddress serves /metrics ("0" turns it off), e.g. ":8080".
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz ("" or "0" turns it off).
	HealthProbeBindAddress string
	// LeaderElection makes one replica run the stacks; the others wait.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease (default: the pod's namespace).
	LeaderElectionNamespace string
	// GracefulShutdownTimeout is how long running operations may wind down on shutdown
	// (default 2m15s: the engine's cancel grace plus a margin).
	GracefulShutdownTimeout time.Duration
	// Identity is this replica's name in the Lease (default NewIdentity()); NewLeaderPods
	// compares the Lease's holder with it.
	Identity string
}

// NewIdentity is a unique Lease holder identity, "<hostname>_<uuid>" as controller-runtime
// makes it.
func NewIdentity() string {
	h, _ := os.Hostname()
	return h + "_" + uuid.NewString()
}

// leaseLock is the Lease lock controller-runtime would make, with mo.Identity as holder.
func leaseLock(cfg *rest.Config, mo ManagerOptions) (resourcelock.Interface, error) {
	return newLeaseLock(cfg, mo.LeaderElectionNamespace, LeaderElectionID, mo.Identity)
}

// newLeaseLock is a Lease lock ns/name held as id (default NewIdentity()); ns defaults to the
// pod's namespace.
func newLeaseLock(cfg *rest.Config, ns, name, id string) (resourcelock.Interface, error) {
	if ns == "" {
		ns = podNamespace()
	}
	if ns == "" {
		return nil, errors.New("leader election: the Lease namespace is unknown outside a pod: set --leader-election-namespace")
	}
	if id == "" {
		id = NewIdentity()
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, ns, name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id})
}

// LeaderElectionID names the Lease the replicas compete for.
const LeaderElectionID = "tfrs-operator.tfrs.io"

// Scheme has the types the operator reads: Kubernetes' own and the three TFRS kinds.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewManager returns a manager with leader election, health and readiness probes and the
// metrics endpoint, where the operator's metrics (metrics.go) join controller-runtime's.
func NewManager(cfg *rest.Config, mo ManagerOptions) (manager.Manager, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	grace := mo.GracefulShutdownTimeout
	if grace <= 0 {
		grace = 2*time.Minute + 15*time.Second
	}
	var lock resourcelock.Interface
	if mo.LeaderElection {
		// Our own Lease lock, so this replica knows its identity (leaderPods checks it).
		if lock, err = leaseLock(cfg, mo); err != nil {
			return nil, err
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		LeaderElectionResourceLockInterface: lock,
		Scheme:                              scheme,
		Metrics:                             metricsserver.Options{BindAddress: mo.MetricsBindAddress},
		HealthProbeBindAddress:              mo.HealthProbeBindAddress,
		LeaderElection:                      mo.LeaderElection,
		LeaderElectionID:                    LeaderElectionID,
		LeaderElectionNamespace:             mo.LeaderElectionNamespace,
		// Stack operations are stopped (jobs.Start) before the lease is released, so the next
		// leader never overlaps with this one.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &grace,
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}
