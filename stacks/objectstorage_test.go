package stacks

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
)

// recordingBuckets is a fetcher that also checks buckets: it records the checks asked.
type recordingBuckets struct {
	recordingFetcher
	mu    sync.Mutex
	asked []sourcepolicy.Bucket
	err   error
}

func (f *recordingBuckets) EnsureBucket(_ context.Context, b sourcepolicy.Bucket) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, b)
	return false, f.err
}

func externalEnterprise(mut func(*v1alpha1.ExternalObjectStorage)) *v1alpha1.TFRTenant {
	return newEnterprise(func(s *v1alpha1.TFRTenantSpec) {
		e := &v1alpha1.ExternalObjectStorage{Endpoint: "https://s3.storage.example.com:9443/", Region: "eu-central-1", CredentialsSecret: "acme-s3"}
		if mut != nil {
			mut(e)
		}
		s.ObjectStorage = v1alpha1.ObjectStorageSpec{Provider: v1alpha1.ObjectStorageExternal, External: e}
	})
}

// networkPolicyNames are the names of the NetworkPolicies a run registered.
func networkPolicyNames(r *tenantRun) []string {
	var out []string
	for _, reg := range r.m.regs {
		if strings.HasSuffix(reg.Type, ":NetworkPolicy") {
			if n, ok := plainInputs(reg.Inputs)["metadata"].(map[string]any)["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestTenantExternalObjectStorage: with provider External no MinIO is made; the credentials
// come from the user's Secret, the bucket is checked through the door's fetcher with them
// before the outputs hand it on, and the outputs and NetworkPolicies follow the choice.
func TestTenantExternalObjectStorage(t *testing.T) {
	f := &recordingBuckets{}
	UseSourceFetcher(f)
	t.Cleanup(func() { UseSourceFetcher(nil) })

	tt := externalEnterprise(nil)
	r := runTenant(t, TenantInput{Tenant: tt, Cluster: testTenantCluster}, enterpriseStack,
		map[string]string{v1alpha1.SecretKeyAccessKey: "AKIDACME", v1alpha1.SecretKeySecretKey: "acme-s3-secret"})

	comps := r.m.components()
	if _, ok := comps[TenantMinIO]; ok {
		t.Error("a MinIO component with an external object storage")
	}
	if c, ok := comps[TenantObjectStorage]; !ok || c.Type != tenant.ObjectStorageType {
		t.Errorf("object-storage component: %v", c)
	}
	if n := len(r.m.all("kubernetes:minio.min.io/v2:Tenant")); n != 0 {
		t.Errorf("%d MinIO Tenants", n)
	}
	if !slices.Contains(r.g.Edges(), GraphEdge{From: TenantNamespace, To: TenantObjectStorage}) {
		t.Errorf("edges %v: want namespace → object-storage", r.g.Edges())
	}
	check(t, "bucket checks", f.asked, []sourcepolicy.Bucket{{Endpoint: "https://s3.storage.example.com:9443", Region: "eu-central-1",
		Name: "acme", AccessKey: "AKIDACME", SecretKey: "acme-s3-secret", Create: true}})

	out := r.out
	check(t, "outputs", map[string]any{
		"host": out[TenantOutputMinIOHost], "port": out[TenantOutputMinIOPort], "key": out[TenantOutputMinIOAccessKey],
		"secret": out[TenantOutputMinIOSecretKey], "bucket": out[TenantOutputMinIOBucket], "provider": out[TenantOutputObjectStorageProvider],
		"url": out[TenantOutputObjectStorageURL], "region": out[TenantOutputObjectStorageRegion],
	}, map[string]any{
		"host": "s3.storage.example.com", "port": 9443, "key": "AKIDACME", "secret": "acme-s3-secret", "bucket": "acme",
		"provider": "External", "url": "https://s3.storage.example.com:9443", "region": "eu-central-1",
	})
	names := networkPolicyNames(r)
	if slices.Contains(names, "tfrs-allow-minio-operator") || !slices.Contains(names, "tfrs-allow-cnpg-operator") {
		t.Errorf("NetworkPolicies %v: want the CNPG operator's and not the MinIO operator's", names)
	}

	// bucketPolicy Existing asks for no creation; a failed check fails the run, naming the
	// bucket and the endpoint, never the keys.
	f.asked = nil
	existing := externalEnterprise(func(e *v1alpha1.ExternalObjectStorage) {
		e.Bucket, e.BucketPolicy = "shared-objects", v1alpha1.BucketExisting
	})
	runTenant(t, TenantInput{Tenant: existing, Cluster: testTenantCluster}, enterpriseStack,
		map[string]string{v1alpha1.SecretKeyAccessKey: "AKIDACME", v1alpha1.SecretKeySecretKey: "acme-s3-secret"})
	if len(f.asked) != 1 || f.asked[0].Create || f.asked[0].Name != "shared-objects" {
		t.Errorf("checks %v", f.asked)
	}
	f.err = sourcepolicy.ErrNoBucket
	_, err := runTenantErr(TenantInput{Tenant: existing, Cluster: testTenantCluster}, enterpriseStack,
		map[string]string{v1alpha1.SecretKeyAccessKey: "AKIDACME", v1alpha1.SecretKeySecretKey: "acme-s3-secret"})
	if err == nil || !strings.Contains(err.Error(), `bucket "shared-objects" at https://s3.storage.example.com:9443`) ||
		!strings.Contains(err.Error(), "does not exist") || strings.Contains(err.Error(), "acme-s3-secret") {
		t.Errorf("err = %v", err)
	}
	// A Secret without the access key fails the run naming the key.
	f.err = nil
	_, err = runTenantErr(TenantInput{Tenant: existing, Cluster: testTenantCluster}, enterpriseStack,
		map[string]string{v1alpha1.SecretKeySecretKey: "acme-s3-secret"})
	if err == nil || !strings.Contains(err.Error(), `has no key "accessKey"`) {
		t.Errorf("err = %v", err)
	}
}

// TestTenantMinIONetworkPolicies: the MinIO operator's policy is there when MinIO is.
func TestTenantMinIONetworkPolicies(t *testing.T) {
	r := runTenant(t, TenantInput{Tenant: newEnterprise(nil), Cluster: testTenantCluster}, enterpriseStack, nil)
	if !slices.Contains(networkPolicyNames(r), "tfrs-allow-minio-operator") {
		t.Errorf("NetworkPolicies %v", networkPolicyNames(r))
	}
}

// TestServerOnExternalObjectStorage: an enterprise robot of a tenant with an external object
// storage runs no minio-init (the tenant made the bucket; there is no MinIO to make users
// in), and its Confz points at the endpoint, with TLS and the region.
func TestServerOnExternalObjectStorage(t *testing.T) {
	UseSourceFetcher(&recordingBuckets{})
	t.Cleanup(func() { UseSourceFetcher(nil) })
	r := runTenant(t, TenantInput{Tenant: externalEnterprise(nil), Cluster: testTenantCluster}, enterpriseStack,
		map[string]string{v1alpha1.SecretKeyAccessKey: "AKIDACME", v1alpha1.SecretKeySecretKey: "acme-s3-secret"})
	to, err := TenantOutputsFromStack(r.outputs())
	if err != nil {
		t.Fatal(err)
	}
	s := runServer(t, ServerInput{Server: newServer(nil), Tenant: to})
	if _, ok := s.m.components()[ServerMinIOInit]; ok {
		t.Error("minio-init ran for an external object storage")
	}
	skipped := map[string]string{}
	for _, sk := range s.g.Skipped {
		skipped[sk.ID] = sk.Reason
	}
	if !strings.Contains(skipped[ServerMinIOInit], "external") {
		t.Errorf("skipped %v", skipped)
	}
	check(t, "cos", confzOf(t, s)["cos"], map[string]any{
		"host": "s3.storage.example.com", "port": int64(9443), "access_key": "AKIDACME", "secret_key": "acme-s3-secret",
		"bucket": "acme", "secure": true, "region": "eu-central-1",
	})

	// Outputs that name an external store for a personal tenant are refused.
	to.TenantType = string(v1alpha1.TenantPersonal)
	if _, err := runServerErr(ServerInput{Server: newServer(nil), Tenant: to}); err == nil || !strings.Contains(err.Error(), "personal robots need MinIO") {
		t.Errorf("err = %v", err)
	}
}
