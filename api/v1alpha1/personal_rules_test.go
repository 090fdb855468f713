/*
Copyright 2026 The TFRS Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func personalTenant(mut ...func(*TFRTenant)) *TFRTenant {
	return newTenant(append([]func(*TFRTenant){func(t *TFRTenant) {
		t.Name = "alice"
		t.Spec.Type, t.Spec.JobType = TenantPersonal, "chat"
	}}, mut...)...)
}

func errorFields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	slices.Sort(out)
	return out
}

// Every middleware field a personal tenant sets is refused at its own path, with a message
// that says where the setting belongs; what only the defaults hold is accepted.
func TestPersonalTenantCannotSetMiddleware(t *testing.T) {
	cases := []struct {
		name  string
		mut   func(*TFRTenant)
		field string
	}{
		{"redis size", func(t *TFRTenant) { t.Spec.Redis.Size = qty("5Gi") }, "spec.redis"},
		{"redis storage class", func(t *TFRTenant) { t.Spec.Redis.StorageClassName = "fast" }, "spec.redis"},
		{"postgresql owner", func(t *TFRTenant) { t.Spec.PostgreSQL.Owner = "mallory" }, "spec.postgresql"},
		{"minio image", func(t *TFRTenant) { t.Spec.MinIO.Image = "evil.example.com/minio:1" }, "spec.minio"},
		{"rabbitmq replicas", func(t *TFRTenant) { t.Spec.RabbitMQ.Replicas = ptr.To[int32](3) }, "spec.rabbitmq"},
		{"timescaledb off", func(t *TFRTenant) { t.Spec.TimescaleDB.Enabled = ptr.To(false) }, "spec.timescaledb"},
		{"grafana values", func(t *TFRTenant) {
			t.Spec.Grafana.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}
		}, "spec.grafana"},
		{"jaeger chart", func(t *TFRTenant) { t.Spec.Jaeger.ChartRepo = "https://charts.example.com" }, "spec.jaeger"},
		{"prometheus retention", func(t *TFRTenant) { t.Spec.Prometheus.Retention = "1d" }, "spec.prometheus"},
		{"otel collector", func(t *TFRTenant) { t.Spec.OtelCollector.Image = "otel/x:1" }, "spec.otelCollector"},
		{"vector", func(t *TFRTenant) { t.Spec.Vector.Enabled = ptr.To(false) }, "spec.vector"},
		{"shared cache", func(t *TFRTenant) { t.Spec.SharedCache.CacheDir = "/elsewhere" }, "spec.sharedCache"},
		{"front", func(t *TFRTenant) { t.Spec.TFRobotFront.Replicas = ptr.To[int32](3) }, "spec.tfrobotFront"},
		{"utils", func(t *TFRTenant) { t.Spec.TFRSUtils.Image = "x/y:1" }, "spec.tfrsUtils"},
		{"credentials", func(t *TFRTenant) {
			t.Spec.Credentials.Redis = &ExistingSecretRef{ExistingSecret: "my-redis"}
		}, "spec.credentials"},
		{"deletion policy", func(t *TFRTenant) { t.Spec.DeletionPolicy = DeletionDelete }, "spec.deletionPolicy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := personalTenant(tc.mut).Validate()
			if got := errorFields(errs); !slices.Equal(got, []string{tc.field}) {
				t.Fatalf("errors at %v, want exactly %s: %v", got, tc.field, errs)
			}
			e := errs[0]
			if e.Type != field.ErrorTypeForbidden || !strings.Contains(e.Detail, "personal tenant cannot set shared middleware") ||
				!strings.Contains(e.Detail, "spec.personal.jobTypes[chat]") {
				t.Errorf("error %v: want Forbidden naming the cluster's spec.personal", e)
			}
			// The same spec is an enterprise tenant's to set.
			ent := personalTenant(tc.mut)
			ent.Spec.Type, ent.Spec.JobType = TenantEnterprise, ""
			if errs := ent.Validate(); len(errs) > 0 {
				t.Errorf("enterprise tenant with the same spec refused: %v", errs)
			}
		})
	}
	// Writing the defaults out is not setting anything (the API server stores them so).
	explicit := personalTenant()
	explicit.Default()
	if errs := explicit.Validate(); len(errs) > 0 {
		t.Errorf("a defaulted personal tenant is refused: %v", errs)
	}
	two := personalTenant(func(t *TFRTenant) { t.Spec.Redis.Size = qty("5Gi"); t.Spec.MinIO.Size = qty("5Gi") })
	if got := errorFields(two.Validate()); !slices.Equal(got, []string{"spec.minio", "spec.redis"}) {
		t.Errorf("two fields set: errors at %v", got)
	}
}

// The cluster's personal middleware obeys the TFRTenant rules, reported at its own place.
func TestClusterPersonalMiddlewareValidated(t *testing.T) {
	c := newCluster(func(c *TFRCluster) {
		c.Spec.Personal.Middleware.Redis.StorageClassName = "Bad_Class"
		c.Spec.Personal.JobTypes = map[string]TenantMiddleware{
			"chat":    {MinIO: MinIOSpec{Servers: ptr.To[int32](99)}},
			"Bad_Key": {},
			// The admin's chart values are free-form (values_policy.go), but still an object.
			"code": {Grafana: GrafanaSpec{ComponentSource: ComponentSource{
				Values: &apiextensionsv1.JSON{Raw: []byte(`["rbac"]`)}}}},
		}
	})
	got := errorFields(c.Validate())
	want := []string{"spec.personal.jobTypes", "spec.personal.jobTypes.chat.minio.servers",
		"spec.personal.jobTypes.code.grafana.values", "spec.personal.middleware.redis.storageClassName"}
	if !slices.Equal(got, want) {
		t.Errorf("errors at %v, want %v", got, want)
	}
	ok := newCluster(func(c *TFRCluster) {
		c.Spec.Personal.Middleware.Redis.Size = qty("4Gi")
		c.Spec.Personal.JobTypes = map[string]TenantMiddleware{"chat": {DeletionPolicy: DeletionDelete}}
	})
	if errs := ok.Validate(); len(errs) > 0 {
		t.Errorf("valid personal middleware refused: %v", errs)
	}
}

// A job type listed in jobTypes takes its entry as a whole; any other takes middleware; both
// defaulted.
func TestPersonalSpecFor(t *testing.T) {
	p := PersonalSpec{
		Middleware: TenantMiddleware{Redis: RedisSpec{Size: qty("4Gi")}},
		JobTypes:   map[string]TenantMiddleware{"chat": {MinIO: MinIOSpec{Size: qty("50Gi")}}},
	}
	chat, code := p.For("chat"), p.For("code")
	if chat.MinIO.Size.String() != "50Gi" || chat.Redis.Size.String() != DefaultRedisSize {
		t.Errorf("chat: minio %s redis %s; want its own entry, defaulted", chat.MinIO.Size, chat.Redis.Size)
	}
	if code.Redis.Size.String() != "4Gi" || code.MinIO.Size.String() != DefaultMinIOSize || code.DeletionPolicy != DefaultDeletionPolicy {
		t.Errorf("code: redis %s minio %s policy %s; want spec.personal.middleware, defaulted", code.Redis.Size, code.MinIO.Size, code.DeletionPolicy)
	}
	if p.Middleware.MinIO.Size != nil || p.JobTypes["chat"].Redis.Size != nil {
		t.Error("For changed the spec")
	}
	if p.Source("chat") != "spec.personal.jobTypes[chat]" || p.Source("code") != "spec.personal.middleware" {
		t.Errorf("sources %q %q", p.Source("chat"), p.Source("code"))
	}
}
