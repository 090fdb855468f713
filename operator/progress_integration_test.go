//go:build integration

package operator

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
)

// TestOperatorProgressDuringUp: during a real up of the stand-in cluster (the real engine,
// the operator as deployed) status.lastOperation.progress appears while the operation runs,
// with done <= total and a component; the API server sees at most one progress write per
// interval (a watch counts them) however many engine events the up has; Progress Events are
// rarer still; the Ready object keeps the complete count. The destroy reports progress too.
func TestOperatorProgressDuringUp(t *testing.T) {
	e := integrationEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	const interval = time.Second
	op := e.startOperator(t, 0, func(o *Options) { o.ProgressInterval = interval })
	defer op.stop()

	scheme, err := Scheme()
	require.NoError(t, err)
	wc, err := client.NewWithWatch(e.cp.RESTConfig, client.Options{Scheme: scheme})
	require.NoError(t, err)
	w, err := wc.Watch(ctx, &v1alpha1.TFRClusterList{}, client.MatchingFields{"metadata.name": "progress"})
	require.NoError(t, err)
	defer w.Stop()

	cl := testenv.StandInCluster("progress")
	patchesBefore := metricValue(progressPatches.WithLabelValues("TFRCluster"))
	start := time.Now()
	require.NoError(t, e.c.Create(ctx, cl))

	var (
		writes   int // progress values the API server stored (each a distinct write)
		running  []v1alpha1.Progress
		last     *v1alpha1.Progress
		upTime   time.Duration
		complete *v1alpha1.Operation
	)
	for complete == nil {
		select {
		case <-ctx.Done():
			t.Fatalf("no Ready cluster; progress seen while running: %+v", running)
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "watch closed")
			if ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			obj := ev.Object.(*v1alpha1.TFRCluster)
			lo := obj.Status.LastOperation
			if lo == nil || lo.Progress == nil {
				continue
			}
			if last == nil || *last != *lo.Progress {
				writes++
				p := *lo.Progress
				last = &p
				require.LessOrEqual(t, p.ResourcesDone, p.ResourcesTotal, "done <= total")
				if lo.Result == "" {
					running = append(running, p)
				}
			}
			if r := cond(obj, v1alpha1.ConditionReady); r != nil && r.Status == metav1.ConditionTrue && r.ObservedGeneration == obj.Generation {
				upTime, complete = time.Since(start), lo
			}
		}
	}
	patches := metricValue(progressPatches.WithLabelValues("TFRCluster")) - patchesBefore
	t.Logf("up %s: %d progress patches sent, %d distinct progress values stored, %d seen while running",
		upTime.Round(100*time.Millisecond), int(patches), writes, len(running))
	require.NotEmpty(t, running, "progress shows while the up runs")
	mid := running[len(running)/2]
	assert.NotEmpty(t, mid.Component, "a component is named: %+v", mid)
	assert.Greater(t, mid.ResourcesTotal, int32(0))
	bound := float64(upTime/interval) + 3
	assert.LessOrEqual(t, patches, bound, "at most one progress patch per interval (+ the first and the final)")
	assert.LessOrEqual(t, float64(writes), bound)
	require.NotNil(t, complete.Progress)
	assert.Equal(t, complete.Progress.ResourcesTotal, complete.Progress.ResourcesDone, "the finished up's progress is complete")
	assert.Greater(t, complete.Progress.ResourcesTotal, int32(30), "every resource of the cluster program")

	evs, err := e.cs.EventsV1().Events("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	progressEvents := 0
	for _, ev := range evs.Items {
		if ev.Regarding.Name == "progress" && ev.Regarding.Kind == "TFRCluster" && ev.Reason == ReasonProgress {
			progressEvents++
			assert.Regexp(t, `^up: \d+/\d+ resources`, ev.Note)
		}
	}
	t.Logf("%d Progress events", progressEvents)
	assert.GreaterOrEqual(t, progressEvents, 1)
	assert.LessOrEqual(t, float64(progressEvents), float64(upTime/(6*interval))+2, "one Progress event per 6 intervals at most")

	// The destroy reports its progress the same way; the object then goes.
	require.NoError(t, e.c.Delete(ctx, cl))
	sawDestroy := false
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		got := &v1alpha1.TFRCluster{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(cl), got); err != nil {
			break // gone
		}
		if lo := got.Status.LastOperation; lo != nil && lo.Kind == v1alpha1.OperationDestroy && lo.Progress != nil {
			sawDestroy = true
			require.LessOrEqual(t, lo.Progress.ResourcesDone, lo.Progress.ResourcesTotal)
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.waitGone(t, cl, time.Minute)
	assert.True(t, sawDestroy, "the destroy's progress showed")
}
