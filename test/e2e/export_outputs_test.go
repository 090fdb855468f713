//go:build e2e

package e2e

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestTenantExportOutputs brings an enterprise tenant with spec.exportOutputs up on the
// stand-in cluster: the exported Secret holds what the middleware's own Secrets hold and a
// host whose Service exists, and follows a rotation of the PostgreSQL password in the run
// that rotates it, under deletionPolicy Retain (the Secret is retained on delete, so its
// replacement must still work). Switched to Delete, destroy removes it.
func TestTenantExportOutputs(t *testing.T) {
	e := newEnv(t, 15*time.Minute)
	ctx, cp, eng, cfg, stateDir := e.ctx, e.cp, e.eng, e.cfg, e.stateDir

	tc, clusterOut := upStandInCluster(ctx, t, eng, cfg)

	root, err := filepath.Abs(filepath.Join("..", "..", "stacks", "testdata", "tenant", "charts"))
	require.NoError(t, err)
	const ns = "exports"
	tt := &v1alpha1.TFRTenant{
		ObjectMeta: metav1.ObjectMeta{Name: "exports", Namespace: "tfrs-system"},
		Spec:       v1alpha1.TFRTenantSpec{ClusterRef: tc.Name, Type: v1alpha1.TenantEnterprise, Namespace: ns},
	}
	tt.Spec.Jaeger.LocalPath = filepath.Join(root, "jaeger")
	tt.Spec.Grafana.LocalPath = filepath.Join(root, "grafana")
	tt.Spec.ExportOutputs = &v1alpha1.ExportOutputsSpec{SecretName: "legacy-middleware", Labels: map[string]v1alpha1.LabelValue{"app": "legacy"}}
	tt.Default()
	require.Empty(t, tt.Validate())
	tstack, _, err := stacks.TenantStackNames(tt)
	require.NoError(t, err)
	req := engine.Request{Stack: tstack, Program: stacks.Tenant(stacks.TenantInput{Tenant: tt, Cluster: clusterOut}), ManagedBy: engine.ManagedByCLI, Config: cfg}

	up, err := eng.Up(ctx, req)
	require.NoError(t, err)
	t.Logf("tenant up: %v in %s", map[engine.StepOp]int(up.Changes), up.Duration)

	cs, err := cp.Client()
	require.NoError(t, err)
	secret := func(name string) map[string]string {
		t.Helper()
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "Secret %s", name)
		out := map[string]string{}
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out
	}
	exported := secret("legacy-middleware")
	got, err := cs.CoreV1().Secrets(ns).Get(ctx, "legacy-middleware", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "legacy", got.Labels["app"])

	// The values are the middleware's own: each password is the one its component's Secret
	// holds (what the server workloads mount).
	pg := secret(ns + "-pg-credentials")
	require.NotEmpty(t, pg["password"])
	require.Equal(t, pg["password"], exported["postgresql_password"])
	require.Equal(t, pg["username"], exported["postgresql_user"])
	require.Equal(t, pg["password"], exported["timescaledb_password"])
	require.Equal(t, secret(tenant.RedisSecret)["password"], exported["redis_password"])
	mq := secret(tenant.RabbitMQDefaultUserSecret)
	require.Equal(t, mq["password"], exported["rabbitmq_password"])
	require.Equal(t, mq["username"], exported["rabbitmq_user"])
	require.Equal(t, ns, exported["postgresql_database"])
	require.Equal(t, ns, exported["minio_bucket"])
	require.Equal(t, "/", exported["rabbitmq_vhost"])
	// Redis's Service is the stack's own (the other middleware's Services come from their
	// operators, which the stand-in cluster does not run): its DNS name and port are exported.
	svc, err := cs.CoreV1().Services(ns).Get(ctx, tenant.RedisService, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, tenant.ServiceHost(svc.Name, svc.Namespace), exported["redis_host"])
	require.Equal(t, strconv.Itoa(int(svc.Spec.Ports[0].Port)), exported["redis_port"])
	require.Equal(t, "redis://:"+exported["redis_password"]+"@"+exported["redis_host"]+":6379/0", exported["redis_url"])

	// A rotation reaches the exported Secret in the run that rotates.
	rotate := req
	rotate.Rotate = []string{stacks.CredentialPostgresPassword}
	rotated, err := eng.Up(ctx, rotate)
	require.NoError(t, err)
	t.Logf("rotate up: %v in %s", map[engine.StepOp]int(rotated.Changes), rotated.Duration)
	after := secret("legacy-middleware")
	newPG := secret(ns + "-pg-credentials")["password"]
	require.NotEqual(t, pg["password"], newPG, "the rotation must change the PostgreSQL password")
	require.Equal(t, newPG, after["postgresql_password"], "the exported Secret must follow the rotation")
	require.Contains(t, after["postgresql_url"], ":"+newPG+"@")
	require.Equal(t, exported["redis_password"], after["redis_password"], "a password not rotated stays")

	for _, s := range []string{pg["password"], newPG, after["postgresql_url"]} {
		requireNotInDir(t, stateDir, s)
	}

	// Under Delete the Secret goes with the stack.
	del := tt.DeepCopy()
	del.Spec.DeletionPolicy = v1alpha1.DeletionDelete
	req.Program = stacks.Tenant(stacks.TenantInput{Tenant: del, Cluster: clusterOut})
	_, err = eng.Up(ctx, req)
	require.NoError(t, err)
	_, err = eng.Destroy(ctx, req)
	require.NoError(t, err)
	_, err = cs.CoreV1().Secrets(ns).Get(ctx, "legacy-middleware", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "under Delete the exported Secret goes with the stack, got %v", err)
}
