//go:build integration

package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const appConfigMaps = 6

// verifyConverged checks that the cluster and the state agree exactly for every object the
// app program manages: no duplicate (two objects for one resource) and no orphan (an object
// the state does not know).
func verifyConverged(t *testing.T, e *Engine, client kubernetes.Interface, stack, ns string) {
	t.Helper()
	doc := exportState(t, e, stack)
	assert.Empty(t, doc.Pending, "no pending operations left")
	inState := map[string][]string{}
	for _, r := range doc.Resources {
		if r.Custom && strings.HasPrefix(r.Type, "kubernetes:") && !r.Delete {
			kind := r.Type[strings.LastIndex(r.Type, ":")+1:]
			inState[kind] = append(inState[kind], r.ID)
		}
	}
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: testLabel + "=" + ns}
	inCluster := map[string][]string{}
	cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, sel)
	require.NoError(t, err)
	for _, o := range cms.Items {
		inCluster["ConfigMap"] = append(inCluster["ConfigMap"], ns+"/"+o.Name)
	}
	secrets, err := client.CoreV1().Secrets(ns).List(ctx, sel)
	require.NoError(t, err)
	for _, o := range secrets.Items {
		inCluster["Secret"] = append(inCluster["Secret"], ns+"/"+o.Name)
	}
	deps, err := client.AppsV1().Deployments(ns).List(ctx, sel)
	require.NoError(t, err)
	for _, o := range deps.Items {
		inCluster["Deployment"] = append(inCluster["Deployment"], ns+"/"+o.Name)
	}
	svcs, err := client.CoreV1().Services(ns).List(ctx, sel)
	require.NoError(t, err)
	for _, o := range svcs.Items {
		inCluster["Service"] = append(inCluster["Service"], ns+"/"+o.Name)
	}
	want := map[string]int{"ConfigMap": appConfigMaps, "Secret": 1, "Deployment": 1, "Service": 1}
	for kind, n := range want {
		sort.Strings(inState[kind])
		sort.Strings(inCluster[kind])
		assert.Len(t, inCluster[kind], n, "%s objects in the cluster", kind)
		assert.Equal(t, inState[kind], inCluster[kind], "%s: state and cluster agree", kind)
	}
}

type killPoint struct {
	name string
	// at returns how long to wait before killing, once the event stream reaches the point.
	at func(ev Event, seen map[EventKind]int) (time.Duration, bool)
}

// TestCrashRecovery SIGKILLs a child process (engine, Pulumi CLI and provider together) at
// several points of a real up, then runs an up in a fresh engine. Every run must converge:
// the stale lock is broken, pending creates are adopted or dropped, no object is duplicated
// or orphaned, and a further up changes nothing.
func TestCrashRecovery(t *testing.T) {
	kc := kubeconfig(t)
	client, err := controlPlane(t).Client()
	require.NoError(t, err)
	stateDir := t.TempDir()
	e := newEngine(t, Options{StateDir: stateDir})

	points := []killPoint{
		{name: "first-step", at: func(ev Event, _ map[EventKind]int) (time.Duration, bool) {
			return 0, ev.Kind == EventStepStart
		}},
		{name: "mid-configmaps", at: func(ev Event, seen map[EventKind]int) (time.Duration, bool) {
			return 0, ev.Kind == EventStepDone && seen[EventStepDone] >= 5
		}},
		{name: "deployment-in-flight", at: func(ev Event, _ map[EventKind]int) (time.Duration, bool) {
			return 300 * time.Millisecond, ev.Kind == EventStepStart && ev.Type == "kubernetes:apps/v1:Deployment"
		}},
		{name: "service-in-flight", at: func(ev Event, _ map[EventKind]int) (time.Duration, bool) {
			return time.Second, ev.Kind == EventStepStart && ev.Type == "kubernetes:core/v1:Service"
		}},
		{name: "4s-into-the-up", at: func(ev Event, _ map[EventKind]int) (time.Duration, bool) {
			return 4 * time.Second, ev.Kind == EventStart
		}},
	}
	adopted := 0
	var credential sync.Map
	for i, p := range points {
		t.Run(p.name, func(t *testing.T) {
			stack, ns := fmt.Sprintf("tenant.crash.k%d", i), fmt.Sprintf("crash-k%d", i)
			c := startChild(t, childSpec{Mode: "up", Stack: stack, StateDir: stateDir, Program: "app",
				Kubeconfig: kc, Namespace: ns, N: appConfigMaps})
			killAt := time.Time{}
			seen := map[EventKind]int{}
		wait:
			for {
				var timeout <-chan time.Time
				if !killAt.IsZero() {
					timeout = time.After(time.Until(killAt))
				}
				select {
				case l, ok := <-c.lines:
					if !ok {
						t.Fatalf("the child finished before the kill point: %s", c.stderr.String())
					}
					if strings.HasPrefix(l, "RESULT") {
						t.Fatalf("the child finished before the kill point: %s", l)
					}
					var ev Event
					if json.Unmarshal([]byte(l), &ev) != nil || !killAt.IsZero() {
						continue
					}
					seen[ev.Kind]++
					if d, ok := p.at(ev, seen); ok {
						killAt = time.Now().Add(d)
					}
				case <-timeout:
					break wait
				case <-time.After(3 * time.Minute):
					t.Fatal("kill point never reached")
				}
			}
			c.kill()
			before := exportState(t, e, stack)
			t.Logf("killed at %s: %d resources, %d pending operations in state", p.name, len(before.Resources), len(before.Pending))

			rec := &recorder{}
			res, err := e.Up(tctx(t, 5*time.Minute), Request{Stack: stack, Program: appProgram(kc, ns, appConfigMaps), ManagedBy: ManagedByOperator, Sink: rec.sink})
			require.NoError(t, err, "the next up recovers by itself")
			require.NotNil(t, res.Recovery, "the dead run's lock had to be broken")
			assert.NotEmpty(t, res.Recovery.BrokenLocks)
			if len(before.Pending) > 0 {
				assert.True(t, res.Recovery.Refreshed)
			}
			adopted += len(res.Recovery.Adopted)
			t.Logf("recovery: %+v", *res.Recovery)
			verifyConverged(t, e, client, stack, ns)

			again, err := e.Up(tctx(t, 3*time.Minute), Request{Stack: stack, Program: appProgram(kc, ns, appConfigMaps)})
			require.NoError(t, err)
			assert.Zero(t, again.Changes.Changed(), "converged: %v", again.Changes)

			// The generated credential survives the crash and stays out of files and logs.
			after := exportState(t, e, stack)
			for _, r := range after.Resources {
				if r.Type == program.CredentialType {
					v, ok := plainString(r.Outputs["value"])
					require.True(t, ok)
					credential.Store(stack, v)
					assertNoPlaintext(t, stateDir, rec.text(), v)
				}
			}

			_, err = e.Destroy(tctx(t, 5*time.Minute), Request{Stack: stack})
			require.NoError(t, err)
		})
	}
	t.Logf("pending creates adopted across kill points: %d", adopted)
}

// TestCancelLeavesStackUsable cancels an up while the Service is awaited: Pulumi's cancel path
// runs (SIGINT), the call returns ErrCanceled/context.Canceled, and the next up converges.
func TestCancelLeavesStackUsable(t *testing.T) {
	kc := kubeconfig(t)
	client, err := controlPlane(t).Client()
	require.NoError(t, err)
	e := newEngine(t, Options{})
	const stack, ns = "tenant.cancel.demo", "cancel-demo"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	sink := func(ev Event) {
		if ev.Kind == EventStepStart && ev.Type == "kubernetes:core/v1:Service" {
			once.Do(func() { time.AfterFunc(500*time.Millisecond, cancel) })
		}
	}
	start := time.Now()
	_, err = e.Up(ctx, Request{Stack: stack, Program: appProgram(kc, ns, appConfigMaps), Sink: sink})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrCanceled)
	assert.ErrorIs(t, err, context.Canceled)
	t.Logf("canceled after %s: %v", time.Since(start), err)

	res, err := e.Up(tctx(t, 5*time.Minute), Request{Stack: stack, Program: appProgram(kc, ns, appConfigMaps)})
	require.NoError(t, err, "the stack is usable after a cancel")
	if res.Recovery != nil {
		t.Logf("recovery after cancel: %+v", *res.Recovery)
	}
	verifyConverged(t, e, client, stack, ns)
	_, err = e.Destroy(tctx(t, 5*time.Minute), Request{Stack: stack})
	require.NoError(t, err)
}

// TestCancelCutsOffACreate makes deterministic what TestCancelLeavesStackUsable meets by
// chance: the API server makes an object, but the cancel reaches the provider before the
// response does. A proxy in front of the API server forwards the create of cm-2, cancels the
// up, and holds the response back until the provider gives up on it. Pulumi records the step
// as failed and keeps no pending operation; the engine must take the object into the stack
// before it returns, so the next up neither orphans it nor makes a second cm-2.
func TestCancelCutsOffACreate(t *testing.T) {
	cp := controlPlane(t)
	client, err := cp.Client()
	require.NoError(t, err)
	upstream, err := url.Parse(cp.RESTConfig.Host)
	require.NoError(t, err)
	transport, err := rest.TransportFor(cp.RESTConfig)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var trapped atomic.Value // the name of the object the server made
	rp := &httputil.ReverseProxy{Transport: transport, Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(upstream) }}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodPost || r.Method == http.MethodPatch) && strings.Contains(r.URL.Path, "/configmaps") && trapped.Load() == nil {
			body, err := io.ReadAll(r.Body)
			if err == nil && strings.Contains(r.URL.Path+string(body), "cm-2-") {
				out := r.Clone(context.Background())
				out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
				rec := httptest.NewRecorder()
				rp.ServeHTTP(rec, out)
				var obj metav1.PartialObjectMetadata
				if assert.NoError(t, json.Unmarshal(rec.Body.Bytes(), &obj), "the server's answer: %s", rec.Body) {
					trapped.Store(obj.Name)
				}
				cancel()
				select { // the provider aborts the request once the cancel reaches it
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: p, cluster: {server: %q}}]
users: [{name: p, user: {}}]
contexts: [{name: p, context: {cluster: p, user: p}}]
current-context: p
`, proxy.URL)

	e := newEngine(t, Options{})
	const stack, ns = "tenant.cutoff.demo", "cutoff-demo"
	res, err := e.Up(ctx, Request{Stack: stack, Program: appProgram(kc, ns, appConfigMaps)})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrCanceled)
	name, _ := trapped.Load().(string)
	require.NotEmpty(t, name, "the proxy saw the create of cm-2")
	_, err = client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err, "the server made %s", name)
	require.NotNil(t, res.Recovery)
	assert.Contains(t, res.Recovery.Adopted, "urn:pulumi:"+stack+"::tfrs::kubernetes:core/v1:ConfigMap::cm-2")
	var ids []string
	for _, r := range exportState(t, e, stack).Resources {
		ids = append(ids, r.ID)
	}
	assert.Contains(t, ids, ns+"/"+name, "the canceled up took the object it made into the stack")

	_, err = e.Up(tctx(t, 5*time.Minute), Request{Stack: stack, Program: appProgram(kc, ns, appConfigMaps)})
	require.NoError(t, err)
	verifyConverged(t, e, client, stack, ns)
	_, err = e.Destroy(tctx(t, 5*time.Minute), Request{Stack: stack})
	require.NoError(t, err)
}

// simulateInterruptedCreate turns created resources back into pending creates, exactly what
// the checkpoint holds when a run dies after the provider created the object but before the
// step completed. It edits the file backend's checkpoint directly: `pulumi stack import`
// would drop pending operations.
func simulateInterruptedCreate(t *testing.T, e *Engine, stack string, urns ...string) {
	t.Helper()
	path := filepath.Join(mustFileBackendDir(t, e.opts.BackendURL), ".pulumi", "stacks", ProjectName, stack+".json")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var file map[string]any
	require.NoError(t, json.Unmarshal(b, &file))
	latest := file["checkpoint"].(map[string]any)["latest"].(map[string]any)
	var keep, pending []any
	for _, r := range latest["resources"].([]any) {
		res := r.(map[string]any)
		if contains(urns, res["urn"].(string)) {
			delete(res, "outputs")
			res["id"] = ""
			pending = append(pending, map[string]any{"type": "creating", "resource": res})
			continue
		}
		keep = append(keep, r)
	}
	require.Len(t, pending, len(urns))
	latest["resources"] = keep
	latest["pending_operations"] = pending
	b, err = json.Marshal(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	_ = os.Remove(path + ".attrs") // gocloud's metadata (with the old MD5)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestPendingCreates: an interrupted create of a plain object is adopted by itself; one of a
// PVC stops with ErrPendingNeedsDecision, the PVC untouched, until the caller decides.
func TestPendingCreates(t *testing.T) {
	kc := kubeconfig(t)
	client, err := controlPlane(t).Client()
	require.NoError(t, err)
	e := newEngine(t, Options{})
	const stack, ns = "tenant.pending.demo", "pending-demo"
	req := Request{Stack: stack, Program: pvcProgram(kc, ns)}
	res, err := e.Up(tctx(t, 3*time.Minute), req)
	require.NoError(t, err)
	urnOf := func(typ string) string {
		for _, s := range res.Steps {
			if s.Type == typ {
				return s.URN
			}
		}
		t.Fatalf("no %s step", typ)
		return ""
	}
	cmURN, pvcURN := urnOf("kubernetes:core/v1:ConfigMap"), urnOf("kubernetes:core/v1:PersistentVolumeClaim")
	pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "data", metav1.GetOptions{})
	require.NoError(t, err)
	uid := pvc.UID

	// A plain object alone: adopted, no question asked.
	simulateInterruptedCreate(t, e, stack, cmURN)
	res, err = e.Up(tctx(t, 3*time.Minute), req)
	require.NoError(t, err)
	require.NotNil(t, res.Recovery)
	assert.Equal(t, []string{cmURN}, res.Recovery.Adopted)
	cms, err := client.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: testLabel + "=" + ns})
	require.NoError(t, err)
	assert.Len(t, cms.Items, 1, "adopted, not duplicated")

	// A PVC: the engine stops and asks.
	simulateInterruptedCreate(t, e, stack, pvcURN)
	_, err = e.Up(tctx(t, 3*time.Minute), req)
	require.ErrorIs(t, err, ErrPendingNeedsDecision)
	var oe *OpError
	require.True(t, errors.As(err, &oe))
	require.Len(t, oe.Pending, 1)
	assert.Equal(t, pvcURN, oe.Pending[0].URN)
	assert.Equal(t, ns+"/data", oe.Pending[0].ID)
	_, err = e.Destroy(tctx(t, time.Minute), Request{Stack: stack})
	require.ErrorIs(t, err, ErrPendingNeedsDecision, "destroy asks too")
	pvc, err = client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "data", metav1.GetOptions{})
	require.NoError(t, err, "the PVC is untouched")
	assert.Equal(t, uid, pvc.UID)
	_, err = e.Preview(tctx(t, 3*time.Minute), req)
	require.NoError(t, err, "previews still work")

	req.Decisions = map[string]Decision{pvcURN: DecisionAdopt}
	res, err = e.Up(tctx(t, 3*time.Minute), req)
	require.NoError(t, err)
	assert.Equal(t, []string{pvcURN}, res.Recovery.Adopted)
	pvc, err = client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "data", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, uid, pvc.UID, "adopted, the very same PVC")
	assert.Empty(t, exportState(t, e, stack).Pending)

	_, err = e.Destroy(tctx(t, 3*time.Minute), Request{Stack: stack})
	require.NoError(t, err)
}
