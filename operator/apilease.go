package operator

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// APILockLeaseID names the Lease that `tfrs serve` replicas elect a lock breaker with. API
// replicas all serve; the Lease decides only which one may break a backend lock left by an API
// pod that is gone (an operation it ran when it died), with the same rules as the operator's
// leader (leaderPods): hold the Lease, and the API server says the Pod is gone.
const APILockLeaseID = "tfrs-api-locks"

// StartAPILockLease runs the election for APILockLeaseID in namespace (default: the pod's) as
// identity (default NewIdentity()) until ctx ends, releasing the Lease then, and returns the
// engine's PodProbe for it. Losing the Lease only takes the right to break locks away: the
// election starts again, and serving goes on.
func StartAPILockLease(ctx context.Context, cfg *rest.Config, namespace, identity string, log *slog.Logger) (engine.PodProbe, error) {
	if identity == "" {
		identity = NewIdentity()
	}
	if namespace == "" {
		namespace = podNamespace()
	}
	lock, err := newLeaseLock(cfg, namespace, APILockLeaseID, identity)
	if err != nil {
		return nil, err
	}
	reader, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	elected := make(chan struct{})
	var once sync.Once
	lec := leaderelection.LeaderElectionConfig{
		Lock: lock, Name: APILockLeaseID, ReleaseOnCancel: true,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				once.Do(func() { close(elected) })
				log.Info("holding the API lock Lease: this replica may break locks of API pods that are gone", "lease", namespace+"/"+APILockLeaseID)
			},
			OnStoppedLeading: func() { log.Info("API lock Lease lost or released", "lease", namespace+"/"+APILockLeaseID) },
		},
	}
	// The first elector is built here, so a bad configuration fails the command at once; Run
	// returns when the Lease is lost, and a new elector competes again.
	le, err := leaderelection.NewLeaderElector(lec)
	if err != nil {
		return nil, err
	}
	go func() {
		for ctx.Err() == nil {
			le.Run(ctx)
			if le, err = leaderelection.NewLeaderElector(lec); err != nil {
				return // the same config was accepted above
			}
		}
	}()
	// elected closes once: Leading also checks the Lease itself, which covers a later loss.
	return &leaderPods{reader: reader, elected: elected, namespace: namespace, lease: APILockLeaseID, identity: identity, now: time.Now}, nil
}
