package stacks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
)

// defaultPersonalJSON is the personal output of a cluster that sets no spec.personal.
func defaultPersonalJSON(t *testing.T) string {
	t.Helper()
	var p v1alpha1.PersonalSpec
	p.Default()
	b, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func quantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// The cluster stack exports spec.personal, and a tenant reads each job type's middleware
// back from it: the job type's own entry, or the default middleware.
func TestClusterPersonalOutputRoundTrip(t *testing.T) {
	tc := newTestCluster(nil)
	tc.Spec.Personal.Middleware.Redis.Size = quantity("4Gi")
	tc.Spec.Personal.JobTypes = map[string]v1alpha1.TenantMiddleware{"chat": {MinIO: v1alpha1.MinIOSpec{Size: quantity("50Gi")}}}
	_, _, out := runCluster(t, tc)
	c := TenantCluster{Personal: OptionalString(out[ClusterOutputPersonal].(string))}
	chat, src, err := c.PersonalMiddleware("chat")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "chat source", src, "spec.personal.jobTypes[chat]")
	check(t, "chat minio", chat.MinIO.Size.String(), "50Gi")
	check(t, "chat redis", chat.Redis.Size.String(), v1alpha1.DefaultRedisSize)
	code, src, err := c.PersonalMiddleware("code")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "code source", src, "spec.personal.middleware")
	check(t, "code redis", code.Redis.Size.String(), "4Gi")
	// A cluster stack made before the output existed: every job type takes the defaults.
	old, _, err := TenantCluster{}.PersonalMiddleware("chat")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "old redis", old.Redis.Size.String(), v1alpha1.DefaultRedisSize)
	if _, _, err := (TenantCluster{Personal: "{"}).PersonalMiddleware("chat"); err == nil || !strings.Contains(err.Error(), ClusterOutputPersonal) {
		t.Errorf("broken output: err = %v", err)
	}
}

// The job type's shared stack takes its middleware from the cluster's spec.personal, and the
// same objects come out whichever personal tenant runs it; a personal tenant that sets
// middleware is refused before anything registers, with the field named.
func TestSharedStackMiddlewareIsTheClusters(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	shared := sharedChatStack(t)
	personal := v1alpha1.PersonalSpec{
		Middleware: v1alpha1.TenantMiddleware{Redis: v1alpha1.RedisSpec{Size: quantity("9Gi")}},
		JobTypes: map[string]v1alpha1.TenantMiddleware{"chat": {
			Redis:       v1alpha1.RedisSpec{Size: quantity("3Gi")},
			TimescaleDB: v1alpha1.TimescaleDBSpec{Toggle: v1alpha1.Toggle{Enabled: ptr.To(false)}},
		}},
	}
	enc, err := encodePersonal(&personal)
	if err != nil {
		t.Fatal(err)
	}
	cl := testTenantCluster
	cl.Personal = enc
	runs := map[string]*tenantRun{}
	for _, name := range []string{"alice", "bob"} {
		r := runTenant(t, TenantInput{Tenant: newPersonal(name, t0, nil), Cluster: cl}, shared, nil)
		pvc := plainInputs(r.m.find(t, "kubernetes:core/v1:PersistentVolumeClaim", "redis-data").Inputs)
		check(t, name+": redis size", dig(t, pvc, "spec", "resources", "requests", "storage"), "3Gi")
		if len(r.m.all(tenant.TimescaleDBType)) > 0 {
			t.Errorf("%s: the cluster switched timescaledb off for chat, the shared stack installs it", name)
		}
		runs[name] = r
	}
	// Generated credentials differ between two mock runs: Secrets and credentials are
	// compared by URN, every other object by URN and inputs.
	objects := func(r *tenantRun) map[string]string {
		out := map[string]string{}
		for _, reg := range r.m.regs {
			out[reg.URN] = ""
			if reg.Type != "kubernetes:core/v1:Secret" && !strings.Contains(reg.Type, "Credential") {
				out[reg.URN] = fmt.Sprint(plainInputs(reg.Inputs))
			}
		}
		return out
	}
	a, b := objects(runs["alice"]), objects(runs["bob"])
	for urn, in := range a {
		if b[urn] != in {
			t.Errorf("%s differs with the tenant that runs the shared stack:\nalice %s\nbob   %s", urn, in, b[urn])
		}
	}
	check(t, "same objects", len(a), len(b))

	// A tenant that sets middleware is refused by the program too (every door runs it).
	mallory := newPersonal("mallory", t0, func(s *v1alpha1.TFRTenantSpec) { s.Redis.Size = quantity("100Gi") })
	_, err = runTenantErr(TenantInput{Tenant: mallory, Cluster: cl}, shared, nil)
	if err == nil || !strings.Contains(err.Error(), "spec.redis") || !strings.Contains(err.Error(), "cannot set shared middleware") {
		t.Errorf("personal tenant setting spec.redis: err = %v", err)
	}
	// A cluster whose middleware for the job type is invalid fails the shared stack, naming it.
	bad := v1alpha1.PersonalSpec{JobTypes: map[string]v1alpha1.TenantMiddleware{"chat": {Redis: v1alpha1.RedisSpec{StorageClassName: "Bad_Class"}}}}
	if cl.Personal, err = encodePersonal(&bad); err != nil {
		t.Fatal(err)
	}
	_, err = runTenantErr(TenantInput{Tenant: newPersonal("alice", t0, nil), Cluster: cl}, shared, nil)
	if err == nil || !strings.Contains(err.Error(), "spec.personal.jobTypes[chat]") {
		t.Errorf("invalid cluster middleware: err = %v", err)
	}
}
