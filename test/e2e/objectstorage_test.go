//go:build e2e

package e2e

import (
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestTenantOnExternalObjectStorage: an enterprise tenant whose object storage is a real S3
// server (versitygw) on this machine. The first up stops at the credentials Secret the spec
// names (the user makes it in the namespace the tenant just got); the next creates the
// bucket through the source policy and comes up with no MinIO, and the tenant's robot gets
// a Confz pointing at the endpoint and no minio-init Job.
func TestTenantOnExternalObjectStorage(t *testing.T) {
	e := newEnv(t, 15*time.Minute)
	ctx, cp, eng, cfg := e.ctx, e.cp, e.eng, e.cfg
	cs, err := cp.Client()
	require.NoError(t, err)
	s3 := testenv.S3(t)
	// The door's fetcher: only this endpoint's host and the loopback network it is on.
	stacks.UseSourceFetcher(&sourcepolicy.Fetcher{Dir: t.TempDir(), Policy: &sourcepolicy.Policy{
		Hosts: []string{s3.Addr}, AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AnyLocalPath: true}})
	t.Cleanup(func() { stacks.UseSourceFetcher(nil) })

	tc, clusterOut := upStandInCluster(ctx, t, eng, cfg)
	tt := serverTenant(t, tc.Name, "objects", v1alpha1.TenantEnterprise)
	tt.Spec.ObjectStorage = v1alpha1.ObjectStorageSpec{Provider: v1alpha1.ObjectStorageExternal, External: &v1alpha1.ExternalObjectStorage{
		Endpoint: "http://" + s3.Addr, Bucket: "objects-data", CredentialsSecret: "objects-s3"}}
	tt.Default()
	require.Empty(t, tt.Validate())
	loop := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	require.Empty(t, (&sourcepolicy.Policy{AnyLocalPath: true, Hosts: []string{s3.Addr}, AllowedNets: loop}).Check(tt),
		"the endpoint passes the door's policy")
	refused := (&sourcepolicy.Policy{AnyLocalPath: true, Hosts: []string{"s3.example.com"}, AllowedNets: loop}).Check(tt)
	require.Len(t, refused, 1, "a door that does not allow the host refuses the tenant")
	require.Equal(t, "spec.objectStorage.external.endpoint", refused[0].Field)
	tstack, _, err := stacks.TenantStackNames(tt)
	require.NoError(t, err)
	req := engine.Request{Stack: tstack, Program: stacks.Tenant(stacks.TenantInput{Tenant: tt, Cluster: clusterOut}), ManagedBy: engine.ManagedByCLI, Config: cfg}

	_, err = eng.Up(ctx, req)
	require.ErrorContains(t, err, "objects-s3", "the up names the missing credentials Secret")
	_, err = cs.CoreV1().Secrets("objects").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "objects-s3"},
		StringData: map[string]string{v1alpha1.SecretKeyAccessKey: s3.Access, v1alpha1.SecretKeySecretKey: s3.Secret}}, metav1.CreateOptions{})
	require.NoError(t, err)

	up, err := eng.Up(ctx, req)
	require.NoError(t, err)
	t.Logf("tenant up: %v in %s", map[engine.StepOp]int(up.Changes), up.Duration)
	to, err := stacks.TenantOutputsFromStack(up.Outputs)
	require.NoError(t, err)
	require.True(t, to.ExternalObjectStorage())
	require.Equal(t, "objects-data", to.MinIOBucket)
	require.DirExists(t, filepath.Join(s3.Dir, "objects-data"), "the bucket is on the S3 server")
	created, err := (&sourcepolicy.Fetcher{Policy: sourcepolicy.Permissive()}).EnsureBucket(ctx, sourcepolicy.Bucket{
		Endpoint: "http://" + s3.Addr, Region: "us-east-1", Name: "objects-data", AccessKey: s3.Access, SecretKey: s3.Secret})
	require.NoError(t, err, "the S3 server has the bucket")
	require.False(t, created)
	again, err := eng.Up(ctx, req)
	require.NoError(t, err)
	requireNoChanges(t, again, "a second up")

	srv := robotServer("objects-bot", "objects-bot")
	sup, err := eng.Up(ctx, serverRequest(t, srv, to, cfg))
	require.NoError(t, err)
	confz, err := cs.CoreV1().Secrets("objects").Get(ctx, sup.Outputs[stacks.ServerOutputConfzSecret].Value.(string), metav1.GetOptions{})
	require.NoError(t, err)
	var cz map[string]any
	require.NoError(t, toml.Unmarshal(confz.Data[server.ConfzKey], &cz))
	host, port, err := net.SplitHostPort(s3.Addr)
	require.NoError(t, err)
	portNum, err := strconv.ParseInt(port, 10, 64)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"host": host, "port": portNum, "access_key": s3.Access, "secret_key": s3.Secret,
		"bucket": "objects-data", "secure": false, "region": "us-east-1"}, cz["cos"])
	for _, j := range jobNames(ctx, t, cs, "objects") {
		require.NotContains(t, j, "minio-init", "no minio-init Job for an external object storage")
	}
}
