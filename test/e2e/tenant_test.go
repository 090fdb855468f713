//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestEnterpriseTenantLifecycle runs the cluster stack (stand-ins), then an enterprise tenant
// on top of it through the engine: up, a second up that changes nothing and keeps every
// password, then destroy under deletionPolicy Retain, which must keep the data objects (CNPG
// clusters, MinIO tenant, PVCs) and remove the rest.
func TestEnterpriseTenantLifecycle(t *testing.T) {
	e := newEnv(t, 15*time.Minute)
	ctx, cp, eng, cfg, stateDir := e.ctx, e.cp, e.eng, e.cfg, e.stateDir

	tc, clusterOut := upStandInCluster(ctx, t, eng, cfg)

	root, err := filepath.Abs(filepath.Join("..", "..", "stacks", "testdata", "tenant", "charts"))
	require.NoError(t, err)
	tt := &v1alpha1.TFRTenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", Namespace: "tfrs-system"},
		Spec:       v1alpha1.TFRTenantSpec{ClusterRef: tc.Name, Type: v1alpha1.TenantEnterprise, Namespace: "acme"},
	}
	tt.Spec.Jaeger.LocalPath = filepath.Join(root, "jaeger")
	tt.Spec.Grafana.LocalPath = filepath.Join(root, "grafana")
	tt.Default()
	require.Empty(t, tt.Validate())
	tstack, _, err := stacks.TenantStackNames(tt)
	require.NoError(t, err)
	req := engine.Request{Stack: tstack, Program: stacks.Tenant(stacks.TenantInput{Tenant: tt, Cluster: clusterOut}), ManagedBy: engine.ManagedByCLI, Config: cfg}

	up, err := eng.Up(ctx, req)
	require.NoError(t, err)
	t.Logf("tenant up: %v in %s", map[engine.StepOp]int(up.Changes), up.Duration)
	out, err := stacks.TenantOutputsFromStack(up.Outputs)
	require.NoError(t, err)
	require.Equal(t, "acme-pg-rw", out.PostgresHost)
	require.Equal(t, "redis.acme.svc.cluster.local", out.RedisHost)
	require.True(t, up.Outputs[stacks.TenantOutputPostgresPassword].Secret)

	again, err := eng.Up(ctx, req)
	require.NoError(t, err)
	require.Zero(t, again.Changes.Changed(), "second up must change nothing: %+v", again.Steps)
	_, err = stacks.TenantOutputsFromStack(again.Outputs)
	require.NoError(t, err)

	// Changing an unrelated component updates it and never rotates a password.
	edited := tt.DeepCopy()
	edited.Spec.Prometheus.Retention = "7d"
	req.Program = stacks.Tenant(stacks.TenantInput{Tenant: edited, Cluster: clusterOut})
	changed, err := eng.Up(ctx, req)
	require.NoError(t, err)
	require.NotZero(t, changed.Changes.Changed(), "the retention edit must change something")
	for _, k := range []string{stacks.TenantOutputPostgresPassword, stacks.TenantOutputRedisPassword, stacks.TenantOutputRabbitMQPassword} {
		require.Equal(t, up.Outputs[k].Reveal(), changed.Outputs[k].Reveal(), "%s must not rotate on an unrelated edit", k)
	}
	for _, k := range []string{stacks.TenantOutputPostgresPassword, stacks.TenantOutputRedisPassword, stacks.TenantOutputRabbitMQPassword} {
		require.Equal(t, up.Outputs[k].Reveal(), again.Outputs[k].Reveal(), "%s must be kept across runs", k)
	}

	_, err = eng.Destroy(ctx, req)
	require.NoError(t, err)

	dyn, err := dynamic.NewForConfig(cp.RESTConfig)
	require.NoError(t, err)
	cnpg := schema.GroupVersionResource{Group: "postgresql.cnpg.io", Version: "v1", Resource: "clusters"}
	_, err = dyn.Resource(cnpg).Namespace("acme").Get(ctx, "acme-pg", metav1.GetOptions{})
	require.NoError(t, err, "the PostgreSQL cluster must survive destroy under Retain")
	cs, err := cp.Client()
	require.NoError(t, err)
	pvcs, err := cs.CoreV1().PersistentVolumeClaims("acme").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, pvcs.Items, "PVCs must survive destroy under Retain")
	_, err = cs.AppsV1().Deployments("acme").Get(ctx, "prometheus", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "non-data workloads must be removed, got %v", err)

	requireNotInDir(t, stateDir, up.Outputs[stacks.TenantOutputPostgresPassword].Reveal().(string))
}

// TestPersonalTenantsShareMiddleware brings up two personal tenants of one job type: the
// job type's shared stack owns the namespace and middleware once; each tenant's own stack
// creates no Kubernetes object of its own and hands out the shared connection info.
func TestPersonalTenantsShareMiddleware(t *testing.T) {
	e := newEnv(t, 15*time.Minute)
	ctx, cp, eng, cfg := e.ctx, e.cp, e.eng, e.cfg

	tc, clusterOut := upStandInCluster(ctx, t, eng, cfg)

	personal := func(name string) v1alpha1.TFRTenant {
		p := v1alpha1.TFRTenant{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tfrs-system"},
			Spec:       v1alpha1.TFRTenantSpec{ClusterRef: tc.Name, Type: v1alpha1.TenantPersonal, JobType: "chat"},
		}
		// The middleware (stand-in charts) is the cluster's spec.personal (testenv.StandInCluster).
		p.Default()
		require.Empty(t, p.Validate())
		return p
	}
	tenants := []v1alpha1.TFRTenant{personal("alice"), personal("bob")}
	owner := stacks.SharedStackOwner(tenants, "chat")
	require.NotNil(t, owner)
	_, shared, err := stacks.TenantStackNames(owner)
	require.NoError(t, err)
	sup, err := eng.Up(ctx, engine.Request{Stack: shared, Program: stacks.Tenant(stacks.TenantInput{Tenant: owner, Cluster: clusterOut}), ManagedBy: engine.ManagedByOperator, Config: cfg})
	require.NoError(t, err)
	sharedOut, err := stacks.TenantOutputsFromStack(sup.Outputs)
	require.NoError(t, err)
	require.Equal(t, "personal-chat", sharedOut.Namespace)

	for i := range tenants {
		own, sharedAgain, err := stacks.TenantStackNames(&tenants[i])
		require.NoError(t, err)
		require.Equal(t, shared, sharedAgain, "one shared stack per job type")
		res, err := eng.Up(ctx, engine.Request{Stack: own, Program: stacks.Tenant(stacks.TenantInput{Tenant: &tenants[i], Cluster: clusterOut, Shared: &sharedOut}), ManagedBy: engine.ManagedByOperator, Config: cfg})
		require.NoError(t, err)
		for _, st := range res.Steps {
			if st.Op == engine.StepCreate && strings.HasPrefix(st.Type, "kubernetes:") {
				t.Errorf("%s created %s of its own; the middleware must be shared", own, st.URN)
			}
		}
		out, err := stacks.TenantOutputsFromStack(res.Outputs)
		require.NoError(t, err)
		require.Equal(t, sharedOut.PostgresHost, out.PostgresHost)
		require.Equal(t, sup.Outputs[stacks.TenantOutputPostgresPassword].Reveal(), res.Outputs[stacks.TenantOutputPostgresPassword].Reveal())
	}

	cs, err := cp.Client()
	require.NoError(t, err)
	deps, err := cs.AppsV1().Deployments("personal-chat").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	names := map[string]int{}
	for _, d := range deps.Items {
		names[d.Name]++
	}
	for n, c := range names {
		require.Equal(t, 1, c, "deployment %s exists %d times", n, c)
	}
	require.NotZero(t, names["redis"], "the shared Redis runs in personal-chat")
}

// upStandInCluster brings the cluster stack up from the stand-ins and returns what a tenant
// takes from it.
func upStandInCluster(ctx context.Context, t *testing.T, eng *engine.Engine, cfg map[string]engine.ConfigValue) (*v1alpha1.TFRCluster, stacks.TenantCluster) {
	t.Helper()
	tc := standInCluster(t)
	cstack, err := stackname.Cluster(tc.Name)
	require.NoError(t, err)
	cup, err := eng.Up(ctx, engine.Request{Stack: cstack, Program: stacks.Cluster(stacks.ClusterInput{Cluster: tc}), ManagedBy: engine.ManagedByCLI, Config: cfg})
	require.NoError(t, err)
	out, err := stacks.TenantClusterFromStack(cup.Outputs)
	require.NoError(t, err)
	return tc, out
}
