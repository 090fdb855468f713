//go:build integration

package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/internal/upstream"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The integration test runs the operator as it is deployed — its manager with leader election,
// acting as the service account config/default creates (so the generated least-privilege role
// is what is tested) — with the real engine, the real programs and the offline stand-ins on
// the local control plane. One control plane and one cluster stack serve the whole test.

const (
	itPassphrase = "tfrs-operator-it-passphrase"
	itNamespace  = "default" // where the test's namespaced custom resources live
	operatorSA   = "system:serviceaccount:tfrs-system:tfrs-operator"
)

// logs receives every record of the operator and the engine; no secret may appear in it.
var logs syncBuffer

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var itLog = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

func TestMain(m *testing.M) {
	crlog.SetLogger(logr.FromSlogHandler(itLog.Handler()))
	code := m.Run()
	if shared.cp != nil {
		_ = shared.cp.Stop()
	}
	if shared.env != nil {
		_ = os.RemoveAll(shared.env.stateDir)
	}
	if code != 0 && shared.cp != nil {
		fmt.Fprintf(os.Stderr, "operator log (last 20 KiB):\n%s\n", tail(logs.String(), 20<<10))
	}
	os.Exit(code)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// itEnv is the shared control plane with the CRDs and config/default applied.
type itEnv struct {
	cp         *controlplane.ControlPlane
	c          client.Client // admin
	cs         kubernetes.Interface
	kubeconfig string
	stateDir   string
	backendDir string
}

var shared struct {
	once sync.Once
	cp   *controlplane.ControlPlane
	env  *itEnv
	err  error
}

func integrationEnv(t *testing.T) *itEnv {
	t.Helper()
	upstream.Require(t) // the stand-in charts ship no CRDs: the real upstream ones are installed
	shared.once.Do(func() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cp, err := controlplane.Start(ctx, controlplane.Options{})
		if err != nil {
			shared.err = err
			return
		}
		shared.cp = cp
		e := &itEnv{cp: cp}
		if shared.err = testenv.InstallCRDs(ctx, cp.RESTConfig); shared.err != nil {
			return
		}
		// Everything a deployment applies: the namespace, the service account, both roles and
		// their bindings, the manager's Deployment (kwok runs its pod) and the state volume.
		out, err := exec.CommandContext(ctx, "kubectl", "--kubeconfig", cp.KubeconfigPath, "apply", "-k",
			filepath.Join(testenv.RepoRoot(), "config", "default")).CombinedOutput()
		if err != nil {
			shared.err = fmt.Errorf("kubectl apply -k config/default: %v\n%s", err, out)
			return
		}
		scheme, err := Scheme()
		if err != nil {
			shared.err = err
			return
		}
		if e.c, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme}); err != nil {
			shared.err = err
			return
		}
		if e.cs, err = cp.Client(); err != nil {
			shared.err = err
			return
		}
		if e.kubeconfig, err = cp.Kubeconfig(); err != nil {
			shared.err = err
			return
		}
		if e.stateDir, err = os.MkdirTemp("", "tfrs-operator-it-"); err != nil {
			shared.err = err
			return
		}
		e.backendDir = filepath.Join(e.stateDir, "backend")
		shared.env = e
		fmt.Fprintf(os.Stderr, "integration environment ready in %s\n", time.Since(start).Round(time.Millisecond))
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.env
}

// instance is one operator process: its own engine and manager, over the shared state.
type instance struct {
	eng    *engine.Engine
	cancel context.CancelFunc
	done   chan error
}

// asServiceAccount is the control plane's config impersonating user, a ServiceAccount of
// tfrs-system, with the groups the API server gives it: what that account's RBAC allows.
func (e *itEnv) asServiceAccount(user string) *rest.Config {
	cfg := rest.CopyConfig(e.cp.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:tfrs-system", "system:authenticated"}}
	return cfg
}

// startOperator starts an operator; the caller stops it. cancelGrace is the engine's: a tiny one turns a stop into
// a kill of the running Pulumi processes, as a crash would.
func (e *itEnv) startOperator(t *testing.T, cancelGrace time.Duration, tweak ...func(*Options)) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	eng, err := engine.New(ctx, engine.Options{BackendURL: "file://" + e.backendDir, StateDir: e.stateDir,
		Passphrase: itPassphrase, MaxConcurrent: 4, CancelGrace: cancelGrace, Logger: itLog})
	require.NoError(t, err)
	cfg := e.asServiceAccount(operatorSA)
	mgr, err := NewManager(cfg, ManagerOptions{MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionNamespace: "tfrs-system"})
	require.NoError(t, err)
	o := Options{
		Engine: eng, Run: runner.Options{Kubeconfig: e.kubeconfig},
		ResyncPeriod: 2 * time.Second, ParentPoll: 2 * time.Second, JobPoll: 5 * time.Second,
		BackoffBase: time.Second, BackoffMax: 4 * time.Second, SkipNameValidation: true,
	}
	for _, fn := range tweak {
		fn(&o)
	}
	_, err = Setup(ctx, mgr, o)
	require.NoError(t, err)
	in := &instance{eng: eng, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- mgr.Start(ctx) }()
	return in
}

// stop stops the manager (its running operations are canceled) and closes the engine.
func (in *instance) stop() {
	if in.cancel == nil {
		return
	}
	in.cancel()
	in.cancel = nil
	<-in.done
	_ = in.eng.Close()
}

// waitFor polls obj until ok says so.
func (e *itEnv) waitFor(t *testing.T, obj v1alpha1.Object, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := e.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if err == nil && ok() {
			return
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(obj.GetStackStatus(), "", "  ")
			t.Fatalf("%s %s: %s not reached in %s (get: %v); status:\n%s", obj.KindName(), key(obj), what, timeout, err, b)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (e *itEnv) waitGone(t *testing.T, obj v1alpha1.Object, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := e.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(obj.GetStackStatus(), "", "  ")
			t.Fatalf("%s %s still exists after %s; status:\n%s", obj.KindName(), key(obj), timeout, b)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func readyIs(obj v1alpha1.Object, status metav1.ConditionStatus, reason string) func() bool {
	return func() bool {
		c := cond(obj, v1alpha1.ConditionReady)
		return c != nil && c.Status == status && (reason == "" || c.Reason == reason) && c.ObservedGeneration == obj.GetGeneration()
	}
}

// counter sums a metric family's samples whose kind label is kind.
func counter(t *testing.T, name, kind string) float64 {
	t.Helper()
	fams, err := metrics.Registry.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

func timed(t *testing.T, what string, fn func()) {
	t.Helper()
	start := time.Now()
	fn()
	t.Logf("%s: %s", what, time.Since(start).Round(100*time.Millisecond))
}

func TestOperatorEndToEnd(t *testing.T) {
	e := integrationEnv(t)
	ctx := context.Background()
	cl := testenv.StandInCluster("op")
	tn := testenv.Lean(testenv.StandInTenant(itNamespace, "acme", cl.Name))
	srv := &v1alpha1.TFRServer{ObjectMeta: metav1.ObjectMeta{Namespace: itNamespace, Name: "robot"},
		Spec: v1alpha1.TFRServerSpec{TenantRef: tn.Name, RobotID: "r-001", RobotType: "chat", Image: "ghcr.io/tfrs-io/tfrobot:1.0.0",
			SecretData: map[string]string{"OPENAI_API_KEY": "sk-operator-it-secret"}}}
	var op *instance
	t.Cleanup(func() {
		if op != nil {
			op.stop()
		}
	})
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow() // later steps build on this one
		}
	}

	step("killed mid-up, a new operator converges", func(t *testing.T) {
		first := e.startOperator(t, 500*time.Millisecond)
		defer first.stop()
		require.NoError(t, e.c.Create(ctx, cl))
		// The tenant comes before its cluster is Ready: it waits, running nothing.
		require.NoError(t, e.c.Create(ctx, tn))
		e.waitFor(t, tn, time.Minute, "WaitingForParent", readyIs(tn, metav1.ConditionFalse, v1alpha1.ReasonWaitingForParent))
		assert.Contains(t, cond(tn, v1alpha1.ConditionReady).Message, "TFRCluster op")

		// Wait until the up is well under way: the stand-in charts' namespaces exist.
		e.waitFor(t, cl, 3*time.Minute, "an up creating objects", func() bool {
			ns, err := e.cs.CoreV1().Namespaces().Get(ctx, "cert-manager", metav1.GetOptions{})
			return err == nil && ns != nil && cl.Status.LastOperation != nil
		})
		timed(t, "stop the first operator mid-up", first.stop)
		require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(cl), cl))
		require.Zero(t, cl.Status.ObservedGeneration, "the stop came mid-up: nothing may have been recorded as done")
		assert.Equal(t, metav1.ConditionTrue, cond(cl, v1alpha1.ConditionReconciling).Status)

		op = e.startOperator(t, 0)
		timed(t, "cluster Ready after the restart", func() {
			e.waitFor(t, cl, 8*time.Minute, "Ready", readyIs(cl, metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		})
		st := cl.Status.StackStatus
		assert.EqualValues(t, 1, st.ObservedGeneration)
		assert.Equal(t, "cluster.op", st.StackName)
		assert.Equal(t, v1alpha1.OperationSucceeded, st.LastOperation.Result)
		assert.Equal(t, "tfrobot-pull-secret", st.Outputs["pullSecretName"])
		assert.NotContains(t, st.Outputs, "dockerConfigJSON", "secret outputs never reach status")
		assert.NotEmpty(t, st.OutputsDigest)
		assert.Nil(t, cond(cl, v1alpha1.ConditionStalled))
	})

	step("the tenant goes Ready once its cluster is", func(t *testing.T) {
		timed(t, "tenant Ready", func() {
			e.waitFor(t, tn, 8*time.Minute, "Ready", readyIs(tn, metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		})
		require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(cl), cl))
		assert.Equal(t, cl.Status.OutputsDigest, tn.Status.ParentDigest)
		assert.Equal(t, "acme", tn.Status.TargetNamespace)
		assert.Equal(t, "acme-pg-rw", tn.Status.Outputs["postgresHost"])
		for k := range tn.Status.Outputs {
			assert.NotContains(t, strings.ToLower(k), "password", "secret outputs never reach status")
		}
	})

	step("a resync without change runs nothing", func(t *testing.T) {
		ops := counter(t, "tfrs_operator_operations_total", "TFRCluster") + counter(t, "tfrs_operator_operations_total", "TFRTenant")
		skipsC, skipsT := counter(t, "tfrs_operator_resync_skips_total", "TFRCluster"), counter(t, "tfrs_operator_resync_skips_total", "TFRTenant")
		clStarted, tnStarted := cl.Status.LastOperation.StartedAt, tn.Status.LastOperation.StartedAt
		require.Eventually(t, func() bool {
			return counter(t, "tfrs_operator_resync_skips_total", "TFRCluster") >= skipsC+2 &&
				counter(t, "tfrs_operator_resync_skips_total", "TFRTenant") >= skipsT+2
		}, 30*time.Second, 200*time.Millisecond, "resyncs every 2s are counted as skips")
		assert.Equal(t, ops, counter(t, "tfrs_operator_operations_total", "TFRCluster")+counter(t, "tfrs_operator_operations_total", "TFRTenant"))
		require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(cl), cl))
		require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(tn), tn))
		assert.Equal(t, clStarted, cl.Status.LastOperation.StartedAt)
		assert.Equal(t, tnStarted, tn.Status.LastOperation.StartedAt)
	})

	step("a spec change re-runs that object and only that", func(t *testing.T) {
		clOps := counter(t, "tfrs_operator_operations_total", "TFRCluster")
		clStarted := cl.Status.LastOperation.StartedAt
		tn.Spec.Redis.Image = "redis/redis-stack-server:7.4.0-v4"
		require.NoError(t, e.c.Update(ctx, tn))
		timed(t, "tenant up after the edit", func() {
			e.waitFor(t, tn, 5*time.Minute, "Ready for generation 2", func() bool {
				return tn.Status.ObservedGeneration == 2 && readyIs(tn, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)()
			})
		})
		require.NotNil(t, tn.Status.LastOperation.Changes)
		assert.NotZero(t, tn.Status.LastOperation.Changes.Update, "the Redis Deployment was updated")
		assert.Zero(t, tn.Status.LastOperation.Changes.Create+tn.Status.LastOperation.Changes.Delete+tn.Status.LastOperation.Changes.Replace)
		assert.Equal(t, clOps, counter(t, "tfrs_operator_operations_total", "TFRCluster"), "the cluster did not run")
		require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(cl), cl))
		assert.Equal(t, clStarted, cl.Status.LastOperation.StartedAt)
	})

	// The check the operator runs at spec.driftDetection.interval, on the real stack: a fresh
	// stack shows no drift (no false alarm every hour), an edit made behind its back does.
	step("drift: none on a fresh stack, an out-of-band edit is found", func(t *testing.T) {
		rn := runner.New(op.eng, runner.Options{Kubeconfig: e.kubeconfig})
		o := runner.Op{Door: engine.ManagedByOperator, Message: "integration test: drift check"}
		var d *driftReport
		var err error
		timed(t, "drift check of an unchanged tenant", func() { d, err = checkDrift(ctx, rn, tn, o) })
		require.NoError(t, err)
		assert.False(t, d.drifted(), "false drift: %v", d.Changes)

		ns := tn.Status.TargetNamespace
		require.NoError(t, e.cs.CoreV1().Services(ns).Delete(ctx, "redis", metav1.DeleteOptions{}))
		timed(t, "drift check after deleting the redis Service by hand", func() { d, err = checkDrift(ctx, rn, tn, o) })
		require.NoError(t, err)
		require.True(t, d.drifted(), "a deleted object is drift")
		assert.Contains(t, d.message(), "create kubernetes:core/v1:Service")
		t.Logf("drift found: %s", d.message())

		// A field another manager changed (kubectl scale) is an apply conflict: drift too.
		deps := e.cs.AppsV1().Deployments(ns)
		scale := func(n int32) {
			dep, err := deps.Get(ctx, "redis", metav1.GetOptions{})
			require.NoError(t, err)
			dep.Spec.Replicas = ptr.To(n)
			_, err = deps.Update(ctx, dep, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
		scale(3)
		d, err = checkDrift(ctx, rn, tn, o)
		require.NoError(t, err)
		require.True(t, d.drifted())
		assert.Contains(t, d.message(), "conflict acme/redis")
		assert.Contains(t, d.message(), ".spec.replicas")
		t.Logf("drift found: %s", d.message())
		// The programs do not force field ownership, so an up would stop on the same conflict:
		// give the field its value back (the other manager keeps co-owning it, harmlessly).
		scale(1)
		// The next up (the lock step's) re-creates the Service.
	})

	step("a lock held by another process is waited out", func(t *testing.T) {
		holder := fakePulumi(t)
		op.eng.RecordLockOwner(holder.Process.Pid) // as a wrapper that ran it would
		writeLock(t, e.backendDir, "tenant."+itNamespace+".acme", holder.Process.Pid)
		tn.Annotations = map[string]string{v1alpha1.AnnotationReconcileRequest: "lock-1"}
		require.NoError(t, e.c.Update(ctx, tn))
		e.waitFor(t, tn, 2*time.Minute, "UpdateConflict", readyIs(tn, metav1.ConditionFalse, v1alpha1.ReasonUpdateConflict))
		c := cond(tn, v1alpha1.ConditionReady)
		assert.Contains(t, c.Message, fmt.Sprintf("pid %d", holder.Process.Pid))
		assert.Equal(t, metav1.ConditionTrue, cond(tn, v1alpha1.ConditionReconciling).Status, "a conflict resolves itself")

		require.NoError(t, holder.Process.Kill())
		_ = holder.Wait()
		timed(t, "Ready again after the holder is gone", func() {
			e.waitFor(t, tn, 3*time.Minute, "Ready with the request handled", func() bool {
				return tn.Status.LastHandledReconcileRequest == "lock-1" && readyIs(tn, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)()
			})
		})
		_, err := e.cs.CoreV1().Services(tn.Status.TargetNamespace).Get(ctx, "redis", metav1.GetOptions{})
		require.NoError(t, err, "the up re-created the Service deleted behind its back")
	})

	step("an invalid custom resource stalls, naming the field", func(t *testing.T) {
		ops := counter(t, "tfrs_operator_operations_total", "TFRServer")
		bad := srv.DeepCopy()
		bad.Name, bad.Spec.RobotID, bad.Spec.ConfzData = "bad", "r-bad", "[postgresql]\nport = = 5432\n"
		require.NoError(t, e.c.Create(ctx, bad), "the API server cannot check TOML; Validate does")
		e.waitFor(t, bad, time.Minute, "Stalled", func() bool {
			s := cond(bad, v1alpha1.ConditionStalled)
			return s != nil && s.Reason == v1alpha1.ReasonInvalidSpec
		})
		assert.Contains(t, cond(bad, v1alpha1.ConditionStalled).Message, "spec.confzData")
		assert.Equal(t, ops, counter(t, "tfrs_operator_operations_total", "TFRServer"), "no engine run")
		require.NoError(t, e.c.Delete(ctx, bad))
		e.waitGone(t, bad, time.Minute)
	})

	// The server program is written separately; this step passes once it is.
	t.Run("the server goes Ready on its tenant", func(t *testing.T) {
		require.NoError(t, e.c.Create(ctx, srv))
		timed(t, "server Ready", func() {
			e.waitFor(t, srv, 5*time.Minute, "Ready", readyIs(srv, metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		})
		assert.Equal(t, tn.Status.OutputsDigest, srv.Status.ParentDigest)
	})

	step("deleting a parent with children waits for them", func(t *testing.T) {
		require.NoError(t, e.c.Delete(ctx, cl))
		e.waitFor(t, cl, time.Minute, "DependentsExist", readyIs(cl, metav1.ConditionFalse, v1alpha1.ReasonDependentsExist))
		assert.Contains(t, cond(cl, v1alpha1.ConditionReady).Message, "TFRTenant default/acme")
		assert.Contains(t, cl.Finalizers, Finalizer)
		_, err := op.eng.Status(ctx, "cluster.op")
		require.NoError(t, err, "the cluster stack is untouched")

		require.NoError(t, e.c.Delete(ctx, tn))
		e.waitFor(t, tn, time.Minute, "DependentsExist", readyIs(tn, metav1.ConditionFalse, v1alpha1.ReasonDependentsExist))
		assert.Contains(t, cond(tn, v1alpha1.ConditionReady).Message, "TFRServer default/robot")
	})

	step("delete destroys children first, then parents", func(t *testing.T) {
		require.NoError(t, e.c.Delete(ctx, srv))
		timed(t, "server destroyed", func() { e.waitGone(t, srv, 3*time.Minute) })
		timed(t, "tenant destroyed", func() { e.waitGone(t, tn, 5*time.Minute) })
		require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(cl), cl), "the cluster outlives its tenant")
		timed(t, "cluster destroyed", func() { e.waitGone(t, cl, 5*time.Minute) })
		stacks, err := op.eng.List(ctx, "")
		require.NoError(t, err)
		assert.Empty(t, stacks, "every stack is destroyed and removed")
	})

	t.Run("no secret in events or logs", func(t *testing.T) {
		evs, err := e.cs.EventsV1().Events("").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		reasons := map[string]int{}
		for _, ev := range evs.Items {
			if ev.ReportingController != "tfrs-operator" {
				continue
			}
			reasons[ev.Reason]++
			assert.NotContains(t, ev.Note, testenv.RegistryPassword)
			assert.NotContains(t, ev.Note, "sk-operator-it-secret")
		}
		t.Logf("operator events by reason: %v", reasons)
		for _, r := range []string{v1alpha1.ReasonProgressing, v1alpha1.ReasonSucceeded, v1alpha1.ReasonWaitingForParent,
			v1alpha1.ReasonUpdateConflict, v1alpha1.ReasonInvalidSpec, v1alpha1.ReasonDependentsExist} {
			assert.NotZero(t, reasons[r], "an event with reason %s", r)
		}
		all := logs.String()
		assert.NotContains(t, all, testenv.RegistryPassword)
		assert.NotContains(t, all, "sk-operator-it-secret")
	})
}

// fakePulumi starts a live process that stands for a Pulumi CLI and holds nothing but its pid.
func fakePulumi(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// writeLock takes the file backend's lock of stack as pid on this host, the way the Pulumi
// CLI of another process would.
func writeLock(t *testing.T, backendDir, stack string, pid int) {
	t.Helper()
	host, err := os.Hostname()
	require.NoError(t, err)
	dir := filepath.Join(backendDir, ".pulumi", "locks", "organization", engine.ProjectName, stack)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	b, err := json.Marshal(map[string]any{"pid": pid, "username": "someone", "hostname": host, "timestamp": time.Now()})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, uuid.NewString()+".json"), b, 0o600))
}
