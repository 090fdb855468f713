package operator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// recordedUp is the engine events of a real up of the stand-in cluster
// (internal/progress/testdata, recorded by cmd/tfrs TestWatchFollowsARealOperation).
func recordedUp(t *testing.T) []engine.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "internal", "progress", "testdata", "cluster-up.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var evs []engine.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e engine.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		evs = append(evs, e)
	}
	return evs
}

// The reporter over a fake API server: the recorded events fed over ~1.5s with a 300ms
// interval give a handful of status patches (not one per event), the stored progress never has
// done > total, the final write is the complete count, the Progress events are throttled
// harder still, and the reconciler's own status patch neither clears nor rewrites the field.
func TestProgressReporterThrottlesAndOwnsTheField(t *testing.T) {
	scheme, err := Scheme()
	require.NoError(t, err)
	started := time.Now().Add(-time.Minute).Truncate(time.Second)
	cl := &v1alpha1.TFRCluster{ObjectMeta: metav1.ObjectMeta{Name: "dev", UID: "uid-1"}}
	cl.Status.LastOperation = &v1alpha1.Operation{Kind: v1alpha1.OperationUp, StartedAt: ptrTime(started)}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.TFRCluster{}).WithObjects(cl).Build()
	rec := events.NewFakeRecorder(100)
	r := &reconciler{kind: clusterKind(), client: c, events: rec, progressInterval: 300 * time.Millisecond, progressEvents: &eventThrottle{}}

	patches := func() float64 { return metricValue(progressPatches.WithLabelValues("TFRCluster")) }
	before := patches()
	rep := r.newProgress(cl.DeepCopy(), jobUp, "cluster.dev")
	rep.start(context.Background(), started)
	evs := recordedUp(t)
	begin := time.Now()
	var seen []v1alpha1.Progress
	for i, e := range evs {
		rep.sink(e)
		time.Sleep(10 * time.Millisecond)
		if i%10 == 0 {
			got := &v1alpha1.TFRCluster{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(cl), got))
			if p := got.Status.LastOperation.Progress; p != nil {
				require.LessOrEqual(t, p.ResourcesDone, p.ResourcesTotal)
				seen = append(seen, *p)
			}
		}
	}
	elapsed := time.Since(begin)
	rep.finish(true)
	n := patches() - before
	t.Logf("%d events over %s: %d status patches", len(evs), elapsed.Round(10*time.Millisecond), int(n))
	require.LessOrEqual(t, n, float64(elapsed/(300*time.Millisecond))+2, "at most one patch per interval, plus the first and the final")
	require.GreaterOrEqual(t, n, 3.0, "the first, some in between, the final")
	require.NotEmpty(t, seen, "progress appears while the operation runs")
	require.NotEmpty(t, seen[len(seen)-1].Component)

	got := &v1alpha1.TFRCluster{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(cl), got))
	op := got.Status.LastOperation
	require.Equal(t, v1alpha1.OperationUp, op.Kind)
	require.Equal(t, started.Unix(), op.StartedAt.Unix())
	require.NotNil(t, op.Progress)
	require.EqualValues(t, 45, op.Progress.ResourcesDone)
	require.EqualValues(t, 45, op.Progress.ResourcesTotal)
	require.Equal(t, "RabbitMQOperator rabbitmq-operator", op.Progress.Component)

	drain := func() int {
		n := 0
		for {
			select {
			case ev := <-rec.Events:
				if strings.Contains(ev, ReasonProgress) {
					n++
					require.Regexp(t, `up: \d+/\d+ resources`, ev)
				}
			default:
				return n
			}
		}
	}
	progressEvents := drain()
	require.GreaterOrEqual(t, progressEvents, 1)
	require.LessOrEqual(t, progressEvents, int(elapsed/(6*300*time.Millisecond))+1, "one Progress event per 6 intervals")

	// The reconcile that collects the job writes a new lastOperation without progress: the
	// field the writer owns stays as it was.
	base := got.DeepCopy()
	obj := got.DeepCopy()
	obj.Status.LastOperation = &v1alpha1.Operation{Kind: v1alpha1.OperationUp, Result: v1alpha1.OperationSucceeded,
		StartedAt: ptrTime(started), FinishedAt: ptrTime(time.Now()), Message: "42 created"}
	require.NoError(t, r.patchStatus(context.Background(), base, obj))
	after := &v1alpha1.TFRCluster{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(cl), after))
	require.Equal(t, v1alpha1.OperationSucceeded, after.Status.LastOperation.Result)
	require.NotNil(t, after.Status.LastOperation.Progress, "the reconcile patch does not clear the progress")
	require.EqualValues(t, 45, after.Status.LastOperation.Progress.ResourcesDone)
}

// A drift check reports in the log only: no status patch, no event.
func TestProgressOfADriftCheckIsLogOnly(t *testing.T) {
	scheme, err := Scheme()
	require.NoError(t, err)
	cl := &v1alpha1.TFRCluster{ObjectMeta: metav1.ObjectMeta{Name: "drift", UID: "uid-2"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.TFRCluster{}).WithObjects(cl).Build()
	rec := events.NewFakeRecorder(100)
	r := &reconciler{kind: clusterKind(), client: c, events: rec, progressInterval: 10 * time.Millisecond}
	before := metricValue(progressPatches.WithLabelValues("TFRCluster"))
	rep := r.newProgress(cl.DeepCopy(), jobDrift, "cluster.drift")
	rep.start(context.Background(), time.Now())
	for _, e := range recordedUp(t)[:40] {
		rep.sink(e)
	}
	time.Sleep(50 * time.Millisecond)
	rep.finish(true)
	require.Equal(t, before, metricValue(progressPatches.WithLabelValues("TFRCluster")))
	require.Empty(t, rec.Events)
	got := &v1alpha1.TFRCluster{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(cl), got))
	require.Nil(t, got.Status.LastOperation)
}

// Progress Events are spaced per object, across its jobs: a retried up right after adds none;
// other objects are independent; old entries are pruned.
func TestProgressEventsAreSpacedPerObject(t *testing.T) {
	var th eventThrottle
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	iv := 30 * time.Second
	require.True(t, th.allow("default/acme", t0, iv))
	require.False(t, th.allow("default/acme", t0.Add(time.Second), iv), "the next job of the same object")
	require.True(t, th.allow("default/other", t0.Add(time.Second), iv))
	require.True(t, th.allow("default/acme", t0.Add(iv), iv))
	for i := range 2000 {
		th.allow(fmt.Sprintf("ns/o%d", i), t0.Add(time.Duration(i)*time.Minute), iv)
	}
	require.Less(t, len(th.last), 1100, "pruned as it grows")
}
