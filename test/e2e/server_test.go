//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/routing"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// TestServerLifecycle brings robots up on one local control plane with the real engine:
//
//   - an enterprise tenant and one server: every object exists, its three init Jobs
//     completed, the workers run with the robot's environment; a second up changes nothing;
//     a configData edit replaces the (content-named) ConfigMap and rolls both workers, and
//     nothing else (no Job runs again); destroy removes the server's objects and leaves the
//     tenant's as they were;
//   - a personal tenant (its job type's shared stack and its own) with two robots: each gets
//     its own Secrets, RabbitMQ vhost/user/permission, AuthorizationPolicy and Jobs, and a
//     second up of a robot changes nothing (its generated credentials are stable).
//
// The tenants run only what servers use (PostgreSQL, Redis, MinIO, RabbitMQ, Grafana, the
// shared cache) to keep the test short.
func TestServerLifecycle(t *testing.T) {
	e := newEnv(t, 20*time.Minute)
	ctx, cp, eng, cfg := e.ctx, e.cp, e.eng, e.cfg
	cs, err := cp.Client()
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cp.RESTConfig)
	require.NoError(t, err)

	tc, clusterOut := upStandInCluster(ctx, t, eng, cfg)

	// The personal tenant's stacks come up while the enterprise robot is exercised: the two
	// share nothing (other namespaces, other stacks), and the test is shorter for it.
	alice := serverTenant(t, tc.Name, "alice", v1alpha1.TenantPersonal)
	type tenantUp struct {
		out stacks.TenantOutputs
		err error
	}
	personal, done := make(chan tenantUp, 1), make(chan struct{})
	pctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(done)
		out, err := upPersonalTenant(pctx, eng, alice, clusterOut, cfg)
		personal <- tenantUp{out, err}
	}()
	// Should the test stop early, stop and wait for it before the engine is closed.
	t.Cleanup(func() { cancel(); <-done })

	// Enterprise.
	ent := serverTenant(t, tc.Name, "acme", v1alpha1.TenantEnterprise)
	tstack, _, err := stacks.TenantStackNames(ent)
	require.NoError(t, err)
	tup, err := eng.Up(ctx, engine.Request{Stack: tstack, Program: stacks.Tenant(stacks.TenantInput{Tenant: ent, Cluster: clusterOut}), ManagedBy: engine.ManagedByCLI, Config: cfg})
	require.NoError(t, err)
	tenantOut, err := stacks.TenantOutputsFromStack(tup.Outputs)
	require.NoError(t, err)
	tenantBefore := namespaceObjects(ctx, t, dyn, "acme")

	srv := robotServer("helper-bot", "helper-bot")
	srv.Spec.ConfigData = map[string]string{"TFS_PROFILE": "prod", server.ExtractedImagesDirEnv: "/tmp/not-the-cache"}
	srv.Spec.SecretData = map[string]string{"OPENAI_API_KEY": "sk-e2e"}
	req := serverRequest(t, srv, tenantOut, cfg)
	up, err := eng.Up(ctx, req)
	require.NoError(t, err)
	t.Logf("enterprise server up: %v in %s", map[engine.StepOp]int(up.Changes), up.Duration)
	robot := server.Robot{Namespace: "acme", ID: "helper-bot", Type: "chat"}
	require.Equal(t, routing.UpstreamHost("acme", "helper-bot", "chat"), up.Outputs[stacks.ServerOutputAPIService].Value)
	requireRobotUp(ctx, t, cs, robot, up.Outputs, 3)

	api, err := cs.AppsV1().Deployments("acme").Get(ctx, robot.APIName(), metav1.GetOptions{})
	require.NoError(t, err)
	c := api.Spec.Template.Spec.Containers[0]
	require.Contains(t, c.Env, corev1.EnvVar{Name: server.ExtractedImagesDirEnv, Value: tenantOut.SharedCacheDir},
		"the shared-cache dir is an explicit env entry, which beats the ConfigMap's value")
	require.Equal(t, up.Outputs[stacks.ServerOutputChecksum].Value, api.Spec.Template.Annotations[server.ChecksumAnnotation])
	svc, err := cs.CoreV1().Services("acme").Get(ctx, robot.APIName(), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(routing.UpstreamPort), svc.Spec.Ports[0].Port)
	jobsBefore := jobNames(ctx, t, cs, "acme")

	again, err := eng.Up(ctx, req)
	require.NoError(t, err)
	requireNoChanges(t, again, "a second up")

	// A configData edit: a new ConfigMap replaces the old one (content-named, so created first
	// and deleted last) and both workers roll onto it; nothing else moves.
	edited := srv.DeepCopy()
	edited.Spec.ConfigData["TFS_PROFILE"] = "dev"
	req = serverRequest(t, edited, tenantOut, cfg)
	rolled, err := eng.Up(ctx, req)
	require.NoError(t, err)
	require.Equal(t, []string{
		"replace kubernetes:core/v1:ConfigMap", "update kubernetes:apps/v1:Deployment", "update kubernetes:apps/v1:Deployment",
	}, changedSteps(rolled))
	require.NotEqual(t, up.Outputs[stacks.ServerOutputChecksum].Value, rolled.Outputs[stacks.ServerOutputChecksum].Value)
	api, err = cs.AppsV1().Deployments("acme").Get(ctx, robot.APIName(), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, rolled.Outputs[stacks.ServerOutputChecksum].Value, api.Spec.Template.Annotations[server.ChecksumAnnotation])
	require.Equal(t, jobsBefore, jobNames(ctx, t, cs, "acme"), "no Job runs again for a configData edit")

	_, err = eng.Destroy(ctx, req)
	require.NoError(t, err)
	require.Equal(t, tenantBefore, namespaceObjects(ctx, t, dyn, "acme"), "destroying the server leaves exactly the tenant's objects")

	// Personal: two robots of one tenant, brought up together.
	p := <-personal
	require.NoError(t, p.err)
	aliceOut := p.out
	vhosts := schema.GroupVersionResource{Group: "rabbitmq.com", Version: "v1beta1", Resource: "vhosts"}
	policies := schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"}
	ids := []string{"r-1", "r-2"}
	reqs, results, errs := make([]engine.Request, len(ids)), make([]*engine.Result, len(ids)), make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		reqs[i] = serverRequest(t, robotServer(id, id), aliceOut, cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = eng.Up(ctx, reqs[i])
		}()
	}
	wg.Wait()
	for i, id := range ids {
		require.NoError(t, errs[i], "robot %s", id)
		res := results[i]
		t.Logf("personal server %s up: %v in %s", id, map[engine.StepOp]int(res.Changes), res.Duration)
		r := server.Robot{Namespace: "personal-chat", ID: id, Type: "chat", DataOwner: "tenant.tfrs-system.t"} // its data is named after its tenant
		requireRobotUp(ctx, t, cs, r, res.Outputs, 3)
		require.Equal(t, r.Schema(), res.Outputs[stacks.ServerOutputDBSchema].Value)
		vh, err := dyn.Resource(vhosts).Namespace("personal-chat").Get(ctx, r.Name(), metav1.GetOptions{})
		require.NoError(t, err, "robot %s has its own vhost", id)
		require.Equal(t, r.VHost(), vh.Object["spec"].(map[string]any)["name"])
		_, err = dyn.Resource(policies).Namespace("personal-chat").Get(ctx, r.APIName(), metav1.GetOptions{})
		require.NoError(t, err, "robot %s has its AuthorizationPolicy", id)
	}
	again, err = eng.Up(ctx, reqs[0])
	require.NoError(t, err)
	requireNoChanges(t, again, "a personal robot's second up (its generated credentials are stable)")
}

// upPersonalTenant brings up a personal tenant: its job type's shared stack, then its own,
// and returns the outputs its servers read.
func upPersonalTenant(ctx context.Context, eng *engine.Engine, tt *v1alpha1.TFRTenant, cluster stacks.TenantCluster, cfg map[string]engine.ConfigValue) (stacks.TenantOutputs, error) {
	own, shared, err := stacks.TenantStackNames(tt)
	if err != nil {
		return stacks.TenantOutputs{}, err
	}
	sup, err := eng.Up(ctx, engine.Request{Stack: shared, Program: stacks.Tenant(stacks.TenantInput{Tenant: tt, Cluster: cluster}), ManagedBy: engine.ManagedByCLI, Config: cfg})
	if err != nil {
		return stacks.TenantOutputs{}, err
	}
	sharedOut, err := stacks.TenantOutputsFromStack(sup.Outputs)
	if err != nil {
		return stacks.TenantOutputs{}, err
	}
	mup, err := eng.Up(ctx, engine.Request{Stack: own, Program: stacks.Tenant(stacks.TenantInput{Tenant: tt, Cluster: cluster, Shared: &sharedOut}), ManagedBy: engine.ManagedByCLI, Config: cfg})
	if err != nil {
		return stacks.TenantOutputs{}, err
	}
	return stacks.TenantOutputsFromStack(mup.Outputs)
}

// serverTenant is a tenant of the stand-in cluster with what servers use and nothing else.
func serverTenant(t *testing.T, cluster, name string, typ v1alpha1.TenantType) *v1alpha1.TFRTenant {
	t.Helper()
	root := filepath.Join(testenv.StandIns("tenant"), "charts")
	tt := &v1alpha1.TFRTenant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tfrs-system"},
		Spec:       v1alpha1.TFRTenantSpec{ClusterRef: cluster, Type: typ},
	}
	if typ == v1alpha1.TenantPersonal {
		// A personal tenant's middleware is the cluster's spec.personal (testenv.StandInCluster).
		tt.Spec.JobType = "chat"
		tt.Default()
		require.Empty(t, tt.Validate())
		return tt
	}
	s := &tt.Spec
	for _, off := range []**bool{&s.TimescaleDB.Enabled, &s.Jaeger.Enabled, &s.OtelCollector.Enabled, &s.Prometheus.Enabled,
		&s.Vector.Enabled, &s.TFRobotFront.Enabled, &s.TFRSUtils.Enabled} {
		*off = ptr.To(false)
	}
	s.Grafana.LocalPath = filepath.Join(root, "grafana")
	tt.Default()
	require.Empty(t, tt.Validate())
	return tt
}

func robotServer(name, robotID string) *v1alpha1.TFRServer {
	return &v1alpha1.TFRServer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tfrs-system"},
		Spec:       v1alpha1.TFRServerSpec{TenantRef: "t", RobotID: robotID, RobotType: "chat", Image: "tfrobot/tfrobot-server:1.0.0"},
	}
}

func serverRequest(t *testing.T, s *v1alpha1.TFRServer, tenant stacks.TenantOutputs, cfg map[string]engine.ConfigValue) engine.Request {
	t.Helper()
	s = s.DeepCopy()
	s.Default()
	require.Empty(t, s.Validate())
	name, err := stackname.Server(s.Namespace, s.Name)
	require.NoError(t, err)
	return engine.Request{Stack: name, Program: stacks.Server(stacks.ServerInput{Server: s, Tenant: tenant}), ManagedBy: engine.ManagedByCLI, Config: cfg}
}

// requireRobotUp checks the robot's objects: both workers available, its Service, its
// Secrets and ConfigMap (named by the stack's outputs), and jobs completed init Jobs.
func requireRobotUp(ctx context.Context, t *testing.T, cs kubernetes.Interface, r server.Robot, out program.Outputs, jobs int) {
	t.Helper()
	for _, d := range []string{r.APIName(), r.WorkerName()} {
		dep, err := cs.AppsV1().Deployments(r.Namespace).Get(ctx, d, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, *dep.Spec.Replicas, dep.Status.AvailableReplicas, "deployment %s available", d)
	}
	_, err := cs.CoreV1().Services(r.Namespace).Get(ctx, r.APIName(), metav1.GetOptions{})
	require.NoError(t, err)
	for _, key := range []string{stacks.ServerOutputSecretName, stacks.ServerOutputConfzSecret} {
		_, err := cs.CoreV1().Secrets(r.Namespace).Get(ctx, out[key].Value.(string), metav1.GetOptions{})
		require.NoError(t, err)
	}
	_, err = cs.CoreV1().ConfigMaps(r.Namespace).Get(ctx, out[stacks.ServerOutputConfigMapName].Value.(string), metav1.GetOptions{})
	require.NoError(t, err)
	list, err := cs.BatchV1().Jobs(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: server.LabelInstance + "=" + r.Name()})
	require.NoError(t, err)
	require.Len(t, list.Items, jobs)
	for _, j := range list.Items {
		require.True(t, jobComplete(&j), "job %s complete: %+v", j.Name, j.Status)
	}
}

func jobComplete(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobNames(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) []string {
	t.Helper()
	list, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var out []string
	for _, j := range list.Items {
		out = append(out, j.Name)
	}
	sort.Strings(out)
	return out
}

// serverKinds are the kinds of objects a server makes in its namespace.
var serverKinds = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rabbitmq.com", Version: "v1beta1", Resource: "vhosts"},
	{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"},
}

// namespaceObjects lists the objects of serverKinds in ns as "resource/name", sorted.
func namespaceObjects(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns string) []string {
	t.Helper()
	var out []string
	for _, gvr := range serverKinds {
		list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "list %s", gvr.Resource)
		for _, o := range list.Items {
			out = append(out, gvr.Resource+"/"+o.GetName())
		}
	}
	sort.Strings(out)
	return out
}

// requireNoChanges fails, naming every changed resource and property, unless r changed
// nothing.
func requireNoChanges(t *testing.T, r *engine.Result, what string) {
	t.Helper()
	if r.Changes.Changed() == 0 {
		return
	}
	for _, s := range r.Steps {
		if s.Op != engine.StepSame {
			t.Logf("%s %s: diffs %v, replace keys %v", s.Op, s.URN, s.Diffs, s.ReplaceKeys)
		}
	}
	t.Fatalf("%s must change nothing: %v", what, changedSteps(r))
}

// changedSteps are the steps of a result that change something, as "op type", sorted.
func changedSteps(r *engine.Result) []string {
	var out []string
	for _, s := range r.Steps {
		switch s.Op {
		case engine.StepSame, engine.StepRead, engine.StepRefresh:
		default:
			out = append(out, string(s.Op)+" "+s.Type)
		}
	}
	sort.Strings(out)
	return out
}
