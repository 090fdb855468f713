package operator

import (
	"context"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get

// leaderPods lets the engine break a backend lock left by an operator or API pod that is gone
// (stacks/engine: lockowners.go). Two rules make that safe with replicas: only the replica
// that holds the leader Lease decides, so two never break the same lock; and a Pod counts as
// gone only when the API server says so (not found, or the name now belongs to a Pod with
// another UID). Reads go to the API server, not the cache: a cached "not found" may be stale.
type leaderPods struct {
	reader    client.Reader
	elected   <-chan struct{}
	namespace string // of the leader election Lease
	lease     string // its name
	identity  string // this replica's holder identity in it
	now       func() time.Time
}

var _ engine.PodProbe = (*leaderPods)(nil)

// NewLeaderPods is the engine's PodProbe for a manager made by NewManager(cfg, mo). Without
// leader election it never claims leadership, so other pods' locks are reported, not broken.
func NewLeaderPods(mgr manager.Manager, mo ManagerOptions) engine.PodProbe {
	ns := mo.LeaderElectionNamespace
	if ns == "" {
		ns = podNamespace()
	}
	if mgr == nil || !mo.LeaderElection || mo.Identity == "" || ns == "" {
		return &leaderPods{}
	}
	return &leaderPods{reader: mgr.GetAPIReader(), elected: mgr.Elected(), namespace: ns, lease: LeaderElectionID, identity: mo.Identity, now: time.Now}
}

// podNamespace is the namespace this pod runs in (downward API, else the service account's).
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Leading: this manager won the election and the Lease, read now, still names this replica and
// has not expired. The second check covers the moment between losing the Lease and the
// process exiting.
func (p *leaderPods) Leading(ctx context.Context) bool {
	if p.reader == nil {
		return false
	}
	select {
	case <-p.elected:
	default:
		return false
	}
	var l coordinationv1.Lease
	if err := p.reader.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: p.lease}, &l); err != nil {
		return false
	}
	return leaseHeldBy(l, p.identity, p.now())
}

// leaseHeldBy: the Lease's holder is this replica and its term has not run out.
func leaseHeldBy(l coordinationv1.Lease, identity string, now time.Time) bool {
	s := l.Spec
	if s.HolderIdentity == nil || identity == "" || *s.HolderIdentity != identity {
		return false
	}
	if s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second))
}

// PodGone: the Pod does not exist, or its name now belongs to another Pod (a StatefulSet
// replacement keeps the name, never the UID).
func (p *leaderPods) PodGone(ctx context.Context, ref engine.PodRef) (bool, error) {
	var pod corev1.Pod
	err := p.reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &pod)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return string(pod.UID) != ref.UID, nil
}
