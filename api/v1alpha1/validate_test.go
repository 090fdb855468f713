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
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func errFields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		if !slices.Contains(out, e.Field) {
			out = append(out, e.Field)
		}
	}
	sort.Strings(out)
	return out
}

func TestValidate(t *testing.T) {
	for _, tc := range validationCases() {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.obj.DeepCopyObject()
			errs := tc.obj.Validate()
			if !equality.Semantic.DeepEqual(before, tc.obj) {
				t.Fatalf("Validate modified its receiver")
			}
			want := slices.Clone(tc.fields)
			sort.Strings(want)
			if got := errFields(errs); !slices.Equal(got, want) {
				t.Fatalf("error fields = %v, want %v\nerrors: %v", got, want, errs.ToAggregate())
			}
			if tc.detail != "" && !strings.Contains(errs.ToAggregate().Error(), tc.detail) {
				t.Fatalf("errors %q do not mention %q", errs.ToAggregate(), tc.detail)
			}
		})
	}
}

func TestValidationCasesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range validationCases() {
		if seen[tc.name] {
			t.Errorf("duplicate case %q", tc.name)
		}
		seen[tc.name] = true
	}
}

func TestCheckTOML(t *testing.T) {
	for _, ok := range []string{"", "  \n", "[a]\nb = 1\n", "x = \"y\"\n[redis]\nport = 6379\n"} {
		if err := CheckTOML(ok); err != nil {
			t.Errorf("CheckTOML(%q) = %v, want nil", ok, err)
		}
	}
	for _, tc := range []struct{ data, want string }{
		{"[postgresql]\nport = = 5432\n", "line 2, column 8"},
		{"a = 1\nb = 2\nc = [1, 2\n", "line 3"},
		{"[redis\nport = 1\n", "line 1"},
		{"a = 1\na = 2\n", "line 2"},
	} {
		err := CheckTOML(tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckTOML(%q) = %v, want an error naming %q", tc.data, err, tc.want)
		}
	}
}

func TestValidateUpdate(t *testing.T) {
	for _, tc := range updateCases() {
		t.Run(tc.name, func(t *testing.T) {
			want := slices.Clone(tc.fields)
			sort.Strings(want)
			if got := errFields(tc.check()); !slices.Equal(got, want) {
				t.Fatalf("ValidateUpdate fields = %v, want %v", got, want)
			}
		})
	}
}

func TestTargetNamespace(t *testing.T) {
	for _, tc := range []struct {
		t    *TFRTenant
		want string
	}{
		{newTenant(), "acme"},
		{newTenant(func(t *TFRTenant) { t.Spec.Namespace = "acme-prod" }), "acme-prod"},
		{newTenant(func(t *TFRTenant) { t.Spec.Type, t.Spec.JobType = TenantPersonal, "translate" }), "personal-translate"},
		{newTenant(func(t *TFRTenant) {
			t.Spec.Type, t.Spec.JobType, t.Spec.Namespace = TenantPersonal, "translate", "shared"
		}), "shared"},
	} {
		if got := tc.t.TargetNamespace(); got != tc.want {
			t.Errorf("TargetNamespace() = %q, want %q", got, tc.want)
		}
	}
	// The longest valid job type still gives a valid namespace.
	long := newTenant(func(t *TFRTenant) {
		t.Spec.Type, t.Spec.JobType = TenantPersonal, strings.Repeat("j", MaxJobTypeLength)
	})
	if errs := long.Validate(); len(errs) != 0 {
		t.Fatalf("Validate: %v", errs)
	}
	if ns := long.TargetNamespace(); len(ns) > MaxNameLength || !reDNSLabel.MatchString(ns) {
		t.Fatalf("TargetNamespace() = %q is not a DNS-1123 label", ns)
	}
	if got := newTenant().DatabaseName(); got != "acme" {
		t.Errorf("DatabaseName() = %q, want acme", got)
	}
}

func TestDefaults(t *testing.T) {
	c := newCluster(func(c *TFRCluster) {
		c.Spec.ImageRegistry = &ImageRegistrySpec{Credentials: &RegistryCredentials{PasswordSecretRef: &SecretKeyRef{Name: "s", Namespace: "n"}}}
		c.Spec.Istio.Enabled = ptr.To(false)
	})
	c.Default()
	if c.Spec.Ingress.Mode != IngressNodePort || c.Spec.TLS.Issuer != TLSSelfSigned {
		t.Errorf("cluster ingress/tls defaults: %+v %+v", c.Spec.Ingress, c.Spec.TLS)
	}
	if !c.Spec.CertManager.IsEnabled() || c.Spec.CertManager.Enabled == nil || c.Spec.Istio.IsEnabled() {
		t.Errorf("component toggles: certManager %v istio %v", c.Spec.CertManager.Enabled, c.Spec.Istio.Enabled)
	}
	cr := c.Spec.ImageRegistry.Credentials
	if cr.PullSecretName() != "registry-pull-secret" || cr.PasswordSecretRef.Key != "password" {
		t.Errorf("registry defaults: %q %q", cr.PullSecretName(), cr.PasswordSecretRef.Key)
	}
	if h, s := c.Spec.Ingress.NodePorts(); h != 30080 || s != 30443 {
		t.Errorf("NodePorts() = %d, %d", h, s)
	}

	tn := newTenant()
	tn.Default()
	s := tn.Spec
	if s.DeletionPolicy != DeletionRetain || *s.PostgreSQL.Instances != 1 || s.PostgreSQL.ImageName != "ghcr.io/cloudnative-pg/postgresql:16-minimal-bookworm" ||
		s.PostgreSQL.Owner != "app_user" || s.PostgreSQL.Size.String() != "10Gi" {
		t.Errorf("tenant postgres defaults: %+v", s.PostgreSQL)
	}
	if s.SharedCache.AccessMode != "ReadWriteMany" || s.SharedCache.CacheDir != "/data/shared-cache" || !s.SharedCache.IsEnabled() {
		t.Errorf("shared cache defaults: %+v", s.SharedCache)
	}
	if *s.RabbitMQ.Replicas != 1 || *s.TFRobotFront.Replicas != 1 || s.Grafana.AdminUser != "admin" || s.Prometheus.Retention != "15d" {
		t.Errorf("tenant defaults: rabbitmq %v front %v grafana %q retention %q", *s.RabbitMQ.Replicas, *s.TFRobotFront.Replicas, s.Grafana.AdminUser, s.Prometheus.Retention)
	}
	if s.Namespace != "" {
		t.Errorf("Default set spec.namespace = %q; it is derived by TargetNamespace", s.Namespace)
	}

	sv := newServer(func(s *TFRServer) { s.Spec.APIWorker.Replicas = ptr.To[int32](0) })
	sv.Default()
	if *sv.Spec.APIWorker.Replicas != 0 || *sv.Spec.RobotWorker.Replicas != 1 {
		t.Errorf("worker replicas: api %d robot %d", *sv.Spec.APIWorker.Replicas, *sv.Spec.RobotWorker.Replicas)
	}
	if !*sv.Spec.InitJobs.DBInit || !*sv.Spec.InitJobs.MinIOInit || !*sv.Spec.InitJobs.GrafanaSA {
		t.Errorf("init jobs: %+v", sv.Spec.InitJobs)
	}
}

func TestDefaultIsIdempotent(t *testing.T) {
	for _, tc := range validationCases() {
		once := tc.obj.DeepCopyObject().(defaulted)
		once.Default()
		twice := once.DeepCopyObject().(defaulted)
		twice.Default()
		if !equality.Semantic.DeepEqual(once, twice) {
			t.Errorf("%s: Default is not idempotent", tc.name)
		}
	}
}

type defaulted interface {
	validated
	Default()
}

func TestExportKeys(t *testing.T) {
	for _, tc := range []struct{ template, want string }{
		{DefaultKeyTemplate, "postgresql_password"},
		{"TFRS_{COMPONENT}_{FIELD}", "TFRS_POSTGRESQL_PASSWORD"},
		{"{field}.{component}", "password.postgresql"},
	} {
		if got := ExportKey(tc.template, ExportPostgreSQL, ExportPassword); got != tc.want {
			t.Errorf("ExportKey(%q) = %q, want %q", tc.template, got, tc.want)
		}
	}
	// Every key of every component is distinct and a Secret key under the default template.
	seen := map[string]bool{}
	for _, c := range ExportedFields() {
		for _, f := range c.Fields {
			k := ExportKey(DefaultKeyTemplate, c.Component, f)
			if seen[k] || !reSecretKey.MatchString(k) {
				t.Errorf("key %q repeated or not a Secret key", k)
			}
			seen[k] = true
		}
	}
	if len(seen) < 25 {
		t.Errorf("only %d keys exported", len(seen))
	}
}
