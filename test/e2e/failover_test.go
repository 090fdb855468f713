//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/internal/tools"
	"github.com/tfrs-io/tfrs-operator/operator"
	"github.com/tfrs-io/tfrs-operator/server"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestReplicasFailover is issue 18's headline: two `tfrs operator --leader-elect` and two
// `tfrs serve --leader-elect` processes on one S3 backend (versitygw), each with a Pod object
// of its own on the local control plane. When the machine allows it, each operator runs in
// its own pid namespace, as in a container: its lock owner records then name its Pod, so a
// lock it leaves is judged by the Pod rule (the Lease holder, and the Pod gone), and when the
// operator dies every process it started dies with it.
//
// The cluster is a CR. The leader is SIGSTOPped mid-`up` past its Lease: the standby takes the
// Lease and must not run on the stack while the stopped one's CLI holds the lock; resumed, the
// old leader must notice, run nothing more and exit (then it is restarted, as a kubelet would).
// Tenants come through API replica A, API replica B and as a CR. The new leader is SIGKILLed in
// the middle of the CR tenant's update and its Pod deleted (node loss); the restarted one takes
// over, breaks the dead lock and finishes the update.
//
// A wrapper around the Pulumi CLI (internal/testenv/pulumiwrap) logs the start and end of
// every mutating run: never two at once on one stack; every stack converges; no pending
// operation or lock is left; no password changed. Failover time is the SIGKILL to the first
// mutating run of the new leader.
func TestReplicasFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	began := time.Now()
	root := testenv.RepoRoot()
	cp := testenv.ControlPlane(t)
	s3 := testenv.S3(t)
	w := newWorld(ctx, t, root, cp, s3)
	step := func(name string) { t.Logf("[%s] %s", time.Since(began).Round(time.Second), name) }
	step(fmt.Sprintf("setup (pid namespaces: %v)", w.pidns))

	opA := w.start("op-a", "operator")
	w.waitLeaseHolderChange("") // op-a is the first: the Lease is its
	opALease := w.leaseHolder()
	opB := w.start("op-b", "operator")
	apiA := w.start("api-a", "serve")
	apiB := w.start("api-b", "serve")
	w.waitAPI(apiA)
	w.waitAPI(apiB)
	step("two operators, two API replicas")

	// The cluster, as a CR; SIGSTOP the leader while its CLI runs the up.
	tc := testenv.StandInCluster("e2e")
	tc.Namespace = ""
	require.NoError(t, w.c.Create(ctx, tc))
	cstack, err := stackname.Cluster(tc.Name)
	require.NoError(t, err)
	w.waitRunStart(cstack, "up", "op-a", time.Time{}, 3*time.Minute)
	time.Sleep(2 * time.Second)
	opA.signal(syscall.SIGSTOP)
	stopped := time.Now()
	step("op-a SIGSTOPped mid-up of " + cstack)
	w.waitLeaseHolderChange(opALease)
	step(fmt.Sprintf("op-b holds the Lease %.1fs after SIGSTOP", time.Since(stopped).Seconds()))
	// Past the Lease duration (15 s) with margin; a long GC pause or a frozen VM.
	time.Sleep(time.Until(stopped.Add(25 * time.Second)))
	opA.signal(syscall.SIGCONT)
	resumed := time.Now()
	step("op-a SIGCONTed")
	exit := opA.waitExit(3 * time.Minute)
	step(fmt.Sprintf("op-a exited %.1fs after SIGCONT: %v", exit.Sub(resumed).Seconds(), opA.err))
	require.Error(t, opA.err, "op-a must stop on the lost Lease")
	for _, r := range w.runs() {
		if r.pod == "op-a" && r.start.After(resumed) {
			t.Errorf("op-a started %s %s after it was resumed without the Lease", r.cmd, r.stack)
		}
	}
	opA = w.start("op-a", "operator") // the container restarts in the same Pod
	w.waitCR(&v1alpha1.TFRCluster{}, client.ObjectKey{Name: tc.Name}, 6*time.Minute)
	step("cluster Ready")

	// Tenants: through replica A, through replica B, and as a CR.
	lean := func(name string) *v1alpha1.TFRTenant {
		return testenv.Lean(testenv.StandInTenant("tfrs-system", name, tc.Name))
	}
	const tenants = "/v1/namespaces/tfrs-system/tenants"
	var opURLs []string
	for _, p := range []struct {
		api  *proc
		name string
	}{{apiA, "t-a"}, {apiB, "t-b"}} {
		tt := lean(p.name)
		resp, body := w.api(p.api).do(http.MethodPost, tenants, map[string]any{"metadata": map[string]any{"name": tt.Name}, "spec": tt.Spec})
		require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", body)
		opURLs = append(opURLs, resp.Header.Get("Location"))
	}
	cr := lean("t-cr")
	require.NoError(t, w.c.Create(ctx, cr))
	// An operation started on one replica is read on the other.
	require.Equal(t, server.StateSucceeded, w.api(apiB).wait(opURLs[0]).State, "t-a via replica A, read on B")
	require.Equal(t, server.StateSucceeded, w.api(apiA).wait(opURLs[1]).State, "t-b via replica B, read on A")
	w.waitCR(&v1alpha1.TFRTenant{}, client.ObjectKeyFromObject(cr), 5*time.Minute)
	step("tenants Ready")
	tstacks := map[string]string{}
	for _, n := range []string{"t-a", "t-b", "t-cr"} {
		s, _, err := stacks.TenantStackNames(lean(n))
		require.NoError(t, err)
		tstacks[n] = s
	}
	passwords := map[string]map[string]any{}
	for n, s := range tstacks {
		passwords[n] = w.secretOutputs(s)
		require.NotEmpty(t, passwords[n], "%s has secret outputs", s)
	}

	// Kill the leader in the middle of the CR tenant's update; its Pod goes with its node. The
	// leader is op-b unless, on a loaded machine, op-b missed a renewal and lost the Lease to
	// the restarted op-a: then op-b exited, and comes back as its kubelet would restart it.
	ops := map[string]*proc{"op-a": opA, "op-b": opB}
	startWithin := 2 * time.Minute
	for _, name := range []string{"op-a", "op-b"} {
		if ops[name].exited() {
			step(fmt.Sprintf("%s had exited (%v): restarted", name, ops[name].err))
			ops[name] = w.start(name, "operator")
			// The restarted operator waits for the Lease and its caches before it runs
			// anything, on the loaded machine that made it miss a renewal.
			startWithin = 4 * time.Minute
		}
	}
	require.NoError(t, w.c.Get(ctx, client.ObjectKeyFromObject(cr), cr))
	// The observability it left out: an update of a few dozen objects (no data-bearing ones,
	// which a cut-off create would leave for a person to decide).
	on := ptr.To(true)
	s := &cr.Spec
	s.Prometheus.Enabled, s.Grafana.Enabled, s.Jaeger.Enabled, s.OtelCollector.Enabled, s.Vector.Enabled = on, on, on, on, on
	require.NoError(t, w.c.Update(ctx, cr))
	edited := time.Now()
	leader := w.waitRunStart(tstacks["t-cr"], "up", "", edited, startWithin)
	standby := map[string]string{"op-a": "op-b", "op-b": "op-a"}[leader]
	time.Sleep(1500 * time.Millisecond) // the CLI holds the lock and is creating objects
	killed := ops[leader].kill()
	require.NoError(t, w.cs.CoreV1().Pods("tfrs-system").Delete(ctx, leader, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	step(leader + " SIGKILLed mid-update, its Pod deleted")
	var cut bool
	for _, r := range w.runs() {
		if r.pod == leader && r.stack == tstacks["t-cr"] && r.end.IsZero() {
			cut = true
		}
	}
	require.True(t, cut, "%s was killed with a run of %s under way", leader, tstacks["t-cr"])
	w.waitCR(&v1alpha1.TFRTenant{}, client.ObjectKeyFromObject(cr), 5*time.Minute)
	step("t-cr Ready after failover")

	// Every stack converged, readable from both replicas.
	for _, n := range []string{"t-a", "t-b"} {
		for _, p := range []*proc{apiA, apiB} {
			resp, body := w.api(p).do(http.MethodGet, tenants+"/"+n, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			var v server.ResourceView
			require.NoError(t, json.Unmarshal(body, &v))
			require.True(t, v.Status.Ready, "%s on %s", n, p.name)
		}
	}
	for _, s := range append([]string{cstack}, tstacks["t-a"], tstacks["t-b"], tstacks["t-cr"]) {
		w.requireNoPending(s)
	}
	w.requireNoLocks()
	for n, s := range tstacks {
		after := w.secretOutputs(s)
		for k, v := range passwords[n] {
			if v != "" { // an output of a component switched on by the edit starts empty
				require.Equal(t, v, after[k], "%s: %s rotated", s, k)
			}
		}
	}

	// The wrapper's log: overlaps and the failover time.
	runs := w.runs()
	for _, r := range runs {
		end := "killed with its pod"
		if !r.end.IsZero() {
			end = fmt.Sprintf("%5.1fs %s", r.end.Sub(r.start).Seconds(), r.how)
		}
		t.Logf("run %6.1fs %-5s %-26s %-7s %s", r.start.Sub(began).Seconds(), r.pod, r.stack, r.cmd, end)
	}
	overlaps, refused := overlapping(runs, w.deaths())
	var first time.Time
	for _, r := range runs {
		if r.pod == standby && r.start.After(killed) && r.how != "locked" && (first.IsZero() || r.start.Before(first)) {
			first = r.start
		}
	}
	require.False(t, first.IsZero(), "%s ran nothing after %s was killed", standby, leader)
	failover := first.Sub(killed)
	t.Logf("BENCH failover: %.1f s (leader SIGKILL → first mutating run by the new leader)", failover.Seconds())
	t.Logf("BENCH overlapping-runs: %d (of %d mutating runs; %d refused by the backend lock)", len(overlaps), len(runs), refused)
	t.Logf("BENCH wall: %s", time.Since(began).Round(time.Second))
	require.Empty(t, overlaps, "two mutating runs at once on one stack")
}

// world is the processes of one failover test and what they share.
type world struct {
	ctx                                   context.Context
	t                                     *testing.T
	bin, root, dir, wrapLog, kubeconfig   string
	env                                   []string
	pidns                                 bool
	c                                     client.Client
	cs                                    kubernetes.Interface
	eng                                   *engine.Engine
	token, passphrase, backend, realTools string

	mu     sync.Mutex
	deadAt map[string][]time.Time // per pod: when a process of it died
	logged map[string]bool        // pods whose log tail a failed test printed
}

func newWorld(ctx context.Context, t *testing.T, root string, cp *controlplane.ControlPlane, s3 *testenv.S3Server) *world {
	t.Helper()
	w := &world{ctx: ctx, t: t, root: root, dir: t.TempDir(), kubeconfig: cp.KubeconfigPath,
		token: "failover-admin-token-0123456789", passphrase: "failover-passphrase-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		backend: s3.BackendURL(), deadAt: map[string][]time.Time{}, logged: map[string]bool{}}
	if keep := os.Getenv("TFRS_FAILOVER_DIR"); keep != "" {
		w.dir = keep // the processes' logs and the wrapper's, kept for reading
		require.NoError(t, os.MkdirAll(w.dir, 0o700))
	}
	w.bin = buildTFRS(t, root)
	w.realTools = tools.Dir()
	require.NotEmpty(t, w.realTools, "the tools dir (make tools)")

	// The wrapper stands first: a tools dir of its own whose pulumi is the wrapper and whose
	// other binaries are the real ones.
	wrapDir := filepath.Join(w.dir, "tools")
	require.NoError(t, os.MkdirAll(wrapDir, 0o755))
	entries, err := os.ReadDir(w.realTools)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() != "pulumi" {
			require.NoError(t, os.Symlink(filepath.Join(w.realTools, e.Name()), filepath.Join(wrapDir, e.Name())))
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(wrapDir, "pulumi"), "./internal/testenv/pulumiwrap")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	w.wrapLog = filepath.Join(w.dir, "cli-runs.log")

	w.env = append(os.Environ(), s3.Env()...)
	w.env = append(w.env,
		tools.EnvBinDir+"="+wrapDir, "TFRS_WRAP_REAL="+filepath.Join(w.realTools, "pulumi"), "TFRS_WRAP_LOG="+w.wrapLog,
		"TFRS_PASSPHRASE="+w.passphrase, "TFRS_BACKEND="+w.backend, "PULUMI_SKIP_UPDATE_CHECK=true",
		"TFRS_API_TOKENS="+w.token+" admin failover")
	for _, kv := range s3.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	crlog.SetLogger(logr.Discard()) // the test's client logs nothing worth reading
	w.pidns = exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").Run() == nil

	w.cs, err = cp.Client()
	require.NoError(t, err)
	scheme, err := operator.Scheme()
	require.NoError(t, err)
	w.c, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme})
	require.NoError(t, err)
	_, err = w.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tfrs-system"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	// The test's own engine on the same backend: it reads outputs, never runs an update.
	w.eng, err = engine.New(ctx, engine.Options{StateDir: t.TempDir(), BackendURL: w.backend, Passphrase: w.passphrase})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.eng.Close() })
	return w
}

// proc is one tfrs process, standing for a container of a Pod.
type proc struct {
	name  string
	w     *world
	cmd   *exec.Cmd
	pid   int // of tfrs itself (in pid namespace mode, the child of unshare)
	port  int
	done  chan struct{}
	err   error
	ended time.Time
}

// start runs `tfrs <kind>` as pod name; the Pod object is made on first use (a restart keeps it).
func (w *world) start(name, kind string) *proc {
	t := w.t
	pod, err := w.cs.CoreV1().Pods("tfrs-system").Get(w.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		pod, err = w.cs.CoreV1().Pods("tfrs-system").Create(w.ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tfrs-system"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "tfrs", Image: "tfrs:test"}}},
		}, metav1.CreateOptions{})
	}
	require.NoError(t, err)
	p := &proc{name: name, w: w, done: make(chan struct{})}
	args := []string{kind, "--kubeconfig", w.kubeconfig, "--state-dir", filepath.Join(w.dir, "state-"+name),
		"--leader-elect", "--leader-election-namespace", "tfrs-system",
		"--source-allow-local-root", filepath.Join(w.root, "stacks", "testdata")}
	switch kind {
	case "operator":
		args = append(args, "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	case "serve":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		p.port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		args = append(args, "--listen", "127.0.0.1:"+strconv.Itoa(p.port))
	}
	bin := w.bin
	if w.pidns && kind == "operator" {
		args = append([]string{"--pid", "--fork", "--mount-proc", "--kill-child", w.bin}, args...)
		bin = "unshare"
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(append([]string(nil), w.env...),
		"POD_NAMESPACE=tfrs-system", "POD_NAME="+name, "POD_UID="+string(pod.UID))
	logf, err := os.OpenFile(filepath.Join(w.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, p.cmd.Start())
	p.pid = p.cmd.Process.Pid
	go func() {
		p.err = p.cmd.Wait()
		p.ended = time.Now()
		logf.Close()
		w.mu.Lock()
		w.deadAt[name] = append(w.deadAt[name], p.ended)
		w.mu.Unlock()
		close(p.done)
	}()
	if bin == "unshare" {
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.cmd.Process.Pid, p.cmd.Process.Pid))
			if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
				p.pid, _ = strconv.Atoi(f[0])
				return true
			}
			return false
		}, 10*time.Second, 20*time.Millisecond, "unshare's child")
	}
	t.Cleanup(func() {
		if !p.exited() {
			_ = syscall.Kill(p.pid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
				<-p.done
			}
		}
		// One tail per pod (its restarts append to the same log), also of one that died early:
		// that is often the one to read.
		w.mu.Lock()
		first := !w.logged[name]
		w.logged[name] = true
		w.mu.Unlock()
		if t.Failed() && first {
			b, _ := os.ReadFile(filepath.Join(w.dir, name+".log"))
			t.Logf("--- %s log (tail) ---\n%s", name, tail(string(b), 6000))
		}
	})
	return p
}

// exited: the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) signal(s syscall.Signal) {
	require.NoError(p.w.t, syscall.Kill(p.pid, s), "%s: %v", p.name, s)
}

// kill loses the whole "container" at once: tfrs and every process it started (its pid
// namespace, else its process group). It returns the moment of the kill.
func (p *proc) kill() time.Time {
	at := time.Now()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	p.waitExit(30 * time.Second)
	return at
}

func (p *proc) waitExit(d time.Duration) time.Time {
	select {
	case <-p.done:
		return p.ended
	case <-time.After(d):
		p.w.t.Fatalf("%s did not exit within %s", p.name, d)
		return time.Time{}
	}
}

func (w *world) deaths() map[string][]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string][]time.Time{}
	for k, v := range w.deadAt {
		out[k] = append([]time.Time(nil), v...)
	}
	return out
}

func (w *world) api(p *proc) *apiClient {
	return &apiClient{t: w.t, ctx: w.ctx, base: "http://127.0.0.1:" + strconv.Itoa(p.port), token: w.token}
}

func (w *world) waitAPI(p *proc) {
	require.Eventually(w.t, func() bool {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(p.port) + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 200*time.Millisecond, "%s serves", p.name)
}

func (w *world) leaseHolder() string {
	l, err := w.cs.CoordinationV1().Leases("tfrs-system").Get(w.ctx, operator.LeaderElectionID, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitLeaseHolderChange waits until the Lease names a holder other than from.
func (w *world) waitLeaseHolderChange(from string) {
	require.Eventually(w.t, func() bool {
		h := w.leaseHolder()
		return h != "" && h != from
	}, 2*time.Minute, 200*time.Millisecond, "the Lease changes hands from %q", from)
}

// waitCR waits for obj's current generation to be Ready.
func (w *world) waitCR(obj client.Object, key client.ObjectKey, d time.Duration) {
	var last string
	ok := assertEventually(d, func() bool {
		if err := w.c.Get(w.ctx, key, obj); err != nil {
			last = err.Error()
			return false
		}
		st := statusOf(obj)
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		if c != nil {
			last = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
		}
		return c != nil && c.Status == metav1.ConditionTrue && st.ObservedGeneration == obj.GetGeneration()
	})
	require.True(w.t, ok, "%s Ready: last %s", key, last)
}

func statusOf(obj client.Object) v1alpha1.StackStatus {
	switch o := obj.(type) {
	case *v1alpha1.TFRCluster:
		return o.Status.StackStatus
	case *v1alpha1.TFRTenant:
		return o.Status.StackStatus
	}
	panic(fmt.Sprintf("no status for %T", obj))
}

func assertEventually(d time.Duration, f func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(250 * time.Millisecond) {
		if f() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// secretOutputs are a stack's secret outputs, revealed (read through the engine).
func (w *world) secretOutputs(stack string) map[string]any {
	outs, err := w.eng.Outputs(w.ctx, stack)
	require.NoError(w.t, err, stack)
	m := map[string]any{}
	for _, k := range outs.Keys() {
		if outs[k].Secret {
			m[k] = outs[k].Reveal()
		}
	}
	return m
}

// requireNoPending exports the stack with the real CLI: no pending operation in its state.
func (w *world) requireNoPending(stack string) {
	cmd := exec.CommandContext(w.ctx, filepath.Join(w.realTools, "pulumi"), "stack", "export", "--non-interactive", "--stack", "organization/"+engine.ProjectName+"/"+stack)
	cmd.Dir = w.t.TempDir()
	cmd.Env = append(append([]string(nil), w.env...), "PULUMI_BACKEND_URL="+w.backend, "PULUMI_CONFIG_PASSPHRASE="+w.passphrase,
		"PULUMI_HOME="+w.t.TempDir(), "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING=true")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	require.NoError(w.t, err, "export %s", stack)
	var dep struct {
		Deployment struct {
			Pending []json.RawMessage `json:"pending_operations"`
		} `json:"deployment"`
	}
	require.NoError(w.t, json.Unmarshal(out, &dep))
	require.Empty(w.t, dep.Deployment.Pending, "%s has pending operations", stack)
}

// requireNoLocks: no stack lock is left in the backend.
func (w *world) requireNoLocks() {
	b, err := w.eng.Bucket(w.ctx)
	require.NoError(w.t, err)
	it := b.List(&blob.ListOptions{Prefix: ".pulumi/locks/"})
	for {
		obj, err := it.Next(w.ctx)
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(w.t, err)
		require.True(w.t, obj.IsDir, "lock left: %s", obj.Key)
	}
}

// cliRun is one mutating CLI run from the wrapper's log.
type cliRun struct {
	id, stack, cmd, pod, how string
	start, end               time.Time // end zero: no end line (yet)
}

func (w *world) runs() []cliRun {
	f, err := os.Open(w.wrapLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(w.t, err)
	defer f.Close()
	byID := map[string]*cliRun{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		require.GreaterOrEqual(w.t, len(fs), 7, "wrapper log line %q", sc.Text())
		ns, err := strconv.ParseInt(fs[4], 10, 64)
		require.NoError(w.t, err)
		at := time.Unix(0, ns)
		r := byID[fs[1]]
		if r == nil {
			r = &cliRun{id: fs[1], stack: fs[2], cmd: fs[3], pod: fs[6]}
			byID[fs[1]] = r
			order = append(order, fs[1])
		}
		switch fs[0] {
		case "start":
			r.start = at
		case "end":
			r.end = at
			if len(fs) > 7 {
				r.how = fs[7]
			}
		}
	}
	require.NoError(w.t, sc.Err())
	out := make([]cliRun, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out
}

// waitRunStart waits for a run of `pulumi cmd` on stack by pod (any when "") that started
// after since and is still under way, and returns the pod running it.
func (w *world) waitRunStart(stack, cmd, pod string, since time.Time, d time.Duration) string {
	var by string
	ok := assertEventually(d, func() bool {
		for _, r := range w.runs() {
			if r.stack == stack && r.cmd == cmd && (pod == "" || r.pod == pod) && r.start.After(since) && r.how == "" && r.end.IsZero() {
				by = r.pod
				return true
			}
		}
		return false
	})
	require.True(w.t, ok, "%q starts a run of %s", pod, stack)
	return by
}

// overlapping returns the pairs of mutating runs on one stack that were under way at the same
// time, and how many runs the backend lock refused (those mutated nothing and are left out). A
// run without an end line ended when its pod's process died (every process of it died then);
// one whose pod never died is still running.
func overlapping(runs []cliRun, deaths map[string][]time.Time) ([]string, int) {
	refused := 0
	byStack := map[string][]cliRun{}
	for _, r := range runs {
		if r.how == "locked" {
			refused++
			continue
		}
		if r.end.IsZero() {
			r.end = time.Unix(1<<40, 0)
			for _, d := range deaths[r.pod] {
				if d.After(r.start) && d.Before(r.end) {
					r.end = d
				}
			}
		}
		byStack[r.stack] = append(byStack[r.stack], r)
	}
	var out []string
	for stack, rs := range byStack {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
		for i := 1; i < len(rs); i++ {
			for j := 0; j < i; j++ {
				if rs[j].end.After(rs[i].start) {
					out = append(out, fmt.Sprintf("%s: %s %s (%s) and %s %s (%s)", stack, rs[j].pod, rs[j].cmd, rs[j].id, rs[i].pod, rs[i].cmd, rs[i].id))
				}
			}
		}
	}
	return out, refused
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// TestOverlapping checks the analysis itself: refused runs are left out, a run cut off with its
// pod ends when the pod died, and one that never ended overlaps everything after it.
func TestOverlapping(t *testing.T) {
	at := func(s float64) time.Time { return time.Unix(1000, 0).Add(time.Duration(s * float64(time.Second))) }
	runs := []cliRun{
		{id: "1", stack: "s", cmd: "up", pod: "a", start: at(0), end: at(10), how: "ran"},
		{id: "2", stack: "s", cmd: "up", pod: "b", start: at(5), end: at(5.5), how: "locked"},
		{id: "3", stack: "s", cmd: "up", pod: "b", start: at(11)}, // killed with pod b at 20
		{id: "4", stack: "s", cmd: "up", pod: "a", start: at(21), end: at(25), how: "ran"},
		{id: "5", stack: "t", cmd: "up", pod: "c", start: at(0)}, // pod c never died
		{id: "6", stack: "t", cmd: "refresh", pod: "a", start: at(30), end: at(31), how: "ran"},
	}
	got, refused := overlapping(runs, map[string][]time.Time{"b": {at(20)}})
	require.Equal(t, 1, refused)
	require.Equal(t, []string{"t: c up (5) and a refresh (6)"}, got)
	got, _ = overlapping(runs, map[string][]time.Time{"b": {at(22)}})
	require.Len(t, got, 2, "pod b died after run 4 began: %v", got)
}
