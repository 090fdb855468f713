package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/progress"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// Progress of a running operation, as the engine reports it: the job's sink folds every
// engine event into a tracker (internal/progress) and never blocks; a goroutine of the job
// writes what the tracker says, throttled:
//
//   - status.lastOperation.progress at most once per Options.ProgressInterval (default 5s),
//     the first at once and the last when the job ends (the complete count on success), so it
//     is never older than one interval and never written per event;
//   - a "Progress" Event at most once per 6 intervals (30s by default) per object, across its
//     operations (a retried up does not add one per attempt);
//   - a structured log line at most once per 3 intervals.
//
// The writer owns the progress field alone: it sends a JSON merge patch of only that field
// (with the operation's kind and start, the same values the reconciler writes, so the patch is
// valid should it land first), guarded by the object's UID; the reconciler's deferred status
// patch carries the field over from what it read (keepProgress), so it neither writes nor
// clears it. All writes of a job happen before the job is done, hence before the reconciler
// collects it. A drift check reports in the log only: it is not the object's lastOperation.

// ReasonProgress is the reason of the throttled progress Events.
const ReasonProgress = "Progress"

var progressPatches = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "tfrs_operator_progress_patches_total",
	Help: "Status patches of status.lastOperation.progress the operator sent, by kind.",
}, []string{"kind"})

func init() { metrics.Registry.MustRegister(progressPatches) }

// maxComponent bounds the component name written to status (the CRD allows 256).
const maxComponent = 256

// progressReporter is one job's progress sink and writer.
type progressReporter struct {
	r        *reconciler
	obj      v1alpha1.Object // the snapshot the job runs (events refer to it)
	op       v1alpha1.OperationKind
	started  time.Time
	interval time.Duration
	log      logr.Logger

	mu                                sync.Mutex
	tr                                *progress.Tracker
	dirtyStatus, dirtyEvent, dirtyLog bool
	patchT, logT                      progress.Throttle

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func (r *reconciler) newProgress(obj v1alpha1.Object, kind jobKind, stack string) *progressReporter {
	iv := r.progressInterval
	p := &progressReporter{
		r: r, obj: obj, interval: iv, tr: progress.NewTracker(),
		log:    ctrl.Log.WithName("progress").WithValues(string(r.kind.name()), key(obj), "stack", stack, "operation", string(kind)),
		patchT: progress.Throttle{Interval: iv}, logT: progress.Throttle{Interval: 3 * iv},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if kind != jobDrift {
		p.op = opKind(kind)
	}
	return p
}

// sink is the engine.Sink: it must not block (Pulumi's event stream waits for it).
func (p *progressReporter) sink(e engine.Event) {
	p.mu.Lock()
	changed := p.tr.Observe(e)
	if changed {
		p.dirtyStatus, p.dirtyEvent, p.dirtyLog = true, true, true
	}
	p.mu.Unlock()
	if changed {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// start runs the writer until finish. started is the job's start (status.lastOperation.startedAt).
func (p *progressReporter) start(ctx context.Context, started time.Time) {
	p.started = started
	tick := max(p.interval/4, 50*time.Millisecond)
	go func() {
		defer close(p.done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-p.wake:
			case <-t.C:
			case <-p.stop:
				return
			}
			p.flush(ctx, time.Now())
		}
	}()
}

// flush writes what is due now.
func (p *progressReporter) flush(ctx context.Context, now time.Time) {
	p.mu.Lock()
	sn := p.tr.Snapshot()
	status := p.op != "" && p.dirtyStatus && p.patchT.Allow(now)
	if status {
		p.dirtyStatus = false
	}
	event := p.op != "" && p.dirtyEvent && p.r.progressEvents.allow(key(p.obj), now, 6*p.interval)
	if event {
		p.dirtyEvent = false
	}
	logIt := p.dirtyLog && p.logT.Allow(now)
	if logIt {
		p.dirtyLog = false
	}
	p.mu.Unlock()
	if logIt {
		p.log.Info("operation progress", "done", sn.Done, "total", sn.Total, "failed", sn.Failed, "component", sn.Component, "runningStack", sn.Stack)
	}
	if status {
		p.patch(ctx, sn, now)
	}
	if event {
		action := "Up"
		if p.op == v1alpha1.OperationDestroy {
			action = "Destroy"
		}
		p.r.event(p.obj, corev1.EventTypeNormal, ReasonProgress, action, progressNote(p.op, sn))
	}
}

// finish stops the writer and writes the final progress: the complete count when the job
// succeeded, what was reached otherwise. It runs on its own bounded context: a job canceled by
// a shutdown still leaves its last progress behind.
func (p *progressReporter) finish(succeeded bool) {
	close(p.stop)
	<-p.done
	if p.op == "" {
		return
	}
	p.mu.Lock()
	sn := p.tr.Snapshot()
	if succeeded {
		sn = p.tr.Complete()
	}
	p.mu.Unlock()
	if sn.Total == 0 && !succeeded {
		return // nothing ran (refused before the engine started): no progress to show
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.patch(ctx, sn, time.Now())
}

// patch sends the merge patch of status.lastOperation.progress.
func (p *progressReporter) patch(ctx context.Context, sn progress.Snapshot, now time.Time) {
	comp := sn.Component
	if len(comp) > maxComponent {
		comp = comp[:maxComponent]
	}
	type lastOp struct {
		Kind      v1alpha1.OperationKind `json:"kind"`
		StartedAt *metav1.Time           `json:"startedAt"`
		Progress  v1alpha1.Progress      `json:"progress"`
	}
	body := map[string]any{
		"metadata": map[string]any{"uid": p.obj.GetUID()}, // a precondition: never another object of the name
		"status": map[string]any{"lastOperation": lastOp{Kind: p.op, StartedAt: ptrTime(p.started), Progress: v1alpha1.Progress{
			ResourcesDone: int32(min(sn.Done, sn.Total)), ResourcesTotal: int32(sn.Total), Component: comp,
			UpdatedAt: metav1.NewTime(now.Truncate(time.Second)),
		}}},
	}
	data, err := json.Marshal(body)
	if err != nil {
		return
	}
	stub := p.r.kind.newObj()
	stub.SetNamespace(p.obj.GetNamespace())
	stub.SetName(p.obj.GetName())
	progressPatches.WithLabelValues(string(p.r.kind.name())).Inc()
	if err := p.r.client.Status().Patch(ctx, stub, client.RawPatch(types.MergePatchType, data)); client.IgnoreNotFound(err) != nil {
		// Progress is informative: a failed write is retried with the next one, never fatal.
		p.log.V(1).Info("progress status patch failed", "error", err.Error())
	}
}

// eventThrottle spaces the Progress Events of each object, whichever job sends them.
type eventThrottle struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// allow reports whether obj may have a Progress Event at now, and records it if so. Entries
// older than the interval are pruned as the map grows, so deleted objects do not accumulate.
func (t *eventThrottle) allow(obj string, now time.Time, interval time.Duration) bool {
	if t == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[string]time.Time{}
	}
	if last, ok := t.last[obj]; ok && now.Sub(last) < interval {
		return false
	}
	if len(t.last) >= 1024 {
		for k, v := range t.last {
			if now.Sub(v) >= interval {
				delete(t.last, k)
			}
		}
	}
	t.last[obj] = now
	return true
}

// progressNote is the Event's note: "up: 12/40 resources, now PostgreSQL acme-pg".
func progressNote(op v1alpha1.OperationKind, sn progress.Snapshot) string {
	note := fmt.Sprintf("%s: %d/%d resources", op, sn.Done, sn.Total)
	if sn.Failed > 0 {
		note += fmt.Sprintf(" (%d failed)", sn.Failed)
	}
	if sn.Component != "" {
		note += ", now " + sn.Component
	}
	return note
}

// keepProgress carries status.lastOperation.progress over from what the reconcile read into
// what it writes: the job's progress writer owns the field.
func keepProgress(base, obj v1alpha1.Object) {
	o := obj.GetStackStatus().LastOperation
	if o == nil {
		return
	}
	o.Progress = nil
	if b := base.GetStackStatus().LastOperation; b != nil && b.Progress != nil {
		o.Progress = b.Progress.DeepCopy()
	}
}
