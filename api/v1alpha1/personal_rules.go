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

// Personal tenants and their shared middleware. The middleware of a job type belongs to the
// platform admin (TFRCluster.spec.personal), so a personal TFRTenant sets none of it: after
// defaulting, every TenantMiddleware field of a personal tenant must be its default. The
// schema cannot say so (the API server applies the defaults before any rule sees the
// object, so a default and a value the user wrote are the same bytes), which is why the
// rule is here and every door (the operator, the HTTP API, the CLI, the programs) runs it.

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Default sets the TFRTenant defaults on the middleware.
func (m *TenantMiddleware) Default() {
	t := TFRTenant{Spec: TFRTenantSpec{TenantMiddleware: *m}}
	t.Default()
	*m = t.Spec.TenantMiddleware
}

// Default defaults the middleware of every job type and the shared stacks' approval and
// drift check.
func (p *PersonalSpec) Default() {
	p.Approval.Default()
	p.DriftDetection.Default()
	p.Middleware.Default()
	for jt, m := range p.JobTypes {
		m.Default()
		p.JobTypes[jt] = m
	}
}

// For is the shared middleware of jobType, defaulted: its jobTypes entry when there is one,
// else spec.personal.middleware.
func (p *PersonalSpec) For(jobType string) TenantMiddleware {
	m, ok := p.JobTypes[jobType]
	if !ok {
		m = p.Middleware
	}
	m = *m.DeepCopy()
	m.Default()
	return m
}

// Source names, for messages, the field of the cluster that sets jobType's middleware.
func (p *PersonalSpec) Source(jobType string) string {
	if _, ok := p.JobTypes[jobType]; ok {
		return fmt.Sprintf("spec.personal.jobTypes[%s]", jobType)
	}
	return "spec.personal.middleware"
}

// middlewareFields are the JSON names of the TenantMiddleware fields, with their index.
var middlewareFields = func() []struct {
	name  string
	index int
} {
	var out []struct {
		name  string
		index int
	}
	typ := reflect.TypeFor[TenantMiddleware]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		out = append(out, struct {
			name  string
			index int
		}{name, i})
	}
	return out
}()

// personalMiddlewareErrors refuses, in a defaulted personal tenant t, every middleware field
// that is not its default: spec.<field>: Forbidden, naming where the setting belongs.
func personalMiddlewareErrors(t *TFRTenant) field.ErrorList {
	if t.Spec.Type != TenantPersonal {
		return nil
	}
	var def TenantMiddleware
	def.Default()
	got, want := reflect.ValueOf(&t.Spec.TenantMiddleware).Elem(), reflect.ValueOf(def)
	var errs field.ErrorList
	for _, f := range middlewareFields {
		if equality.Semantic.DeepEqual(got.Field(f.index).Interface(), want.Field(f.index).Interface()) {
			continue
		}
		errs = append(errs, field.Forbidden(field.NewPath("spec", f.name), fmt.Sprintf(
			"a personal tenant cannot set shared middleware: the personal tenants of job type %q share it, and the cluster's spec.personal.jobTypes[%s] (or spec.personal.middleware) sets it",
			t.Spec.JobType, t.Spec.JobType)))
	}
	return append(errs, personalSettingsErrors(t)...)
}

// personalSettingsErrors refuses, in a defaulted personal tenant t, what else would let one
// personal tenant steer its job type's shared stack: a namespace other than
// personal-<jobType> (the one every tenant of the job type shares), and an approval mode or
// drift check of its own (the runs of any personal tenant bring the shared stack up, so
// they follow the cluster's spec.personal.approval and spec.personal.driftDetection).
func personalSettingsErrors(t *TFRTenant) field.ErrorList {
	var errs field.ErrorList
	if want := PersonalNamespacePrefix + t.Spec.JobType; t.Spec.Namespace != "" && t.Spec.Namespace != want {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "namespace"), fmt.Sprintf(
			"a personal tenant's namespace is its job type's, %q: leave spec.namespace unset", want)))
	}
	var drift DriftDetectionSpec
	drift.Default()
	got := *t.Spec.DriftDetection.DeepCopy()
	got.Default()
	if !equality.Semantic.DeepEqual(got, drift) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "driftDetection"),
			"a personal tenant cannot set its drift check: its runs check its job type's shared stack, which the cluster's spec.personal.driftDetection configures"))
	}
	if t.Spec.Approval.Effective() != ApprovalOnDataLoss {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "approval", "mode"),
			"a personal tenant cannot set its approval mode: its runs change its job type's shared stack, whose approvals the cluster's spec.personal.approval configures"))
	}
	return errs
}

// PersonalGate is the approval mode and drift check of a personal tenant's runs: its
// cluster's spec.personal ones, never the tenant's (which validation keeps at their
// defaults). A nil cluster gives the defaults.
func PersonalGate(c *TFRCluster) (ApprovalMode, DriftDetectionSpec) {
	var p PersonalSpec
	if c != nil {
		p = c.Spec.Personal
	}
	return p.Gate()
}

// Gate is the approval mode and drift check of the personal tenants under p (a cluster's
// spec.personal), defaulted.
func (p PersonalSpec) Gate() (ApprovalMode, DriftDetectionSpec) {
	p = *p.DeepCopy()
	p.Approval.Default()
	p.DriftDetection.Default()
	return p.Approval.Effective(), p.DriftDetection
}

// validate checks every middleware of the spec (at p: spec.personal) by the TFRTenant rules,
// with the errors at their place under p, and the job types.
func (p *PersonalSpec) validate(path *field.Path) field.ErrorList {
	errs := middlewareErrors(path.Child("middleware"), &p.Middleware)
	errs = append(errs, personalObjectStorageErrors(path.Child("middleware"), &p.Middleware)...)
	jp := path.Child("jobTypes")
	if len(p.JobTypes) > MaxPersonalJobTypes {
		errs = append(errs, field.TooMany(jp, len(p.JobTypes), MaxPersonalJobTypes))
	}
	keys := make([]string, 0, len(p.JobTypes))
	for k := range p.JobTypes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(k) > MaxJobTypeLength || !reDNSLabel.MatchString(k) {
			errs = append(errs, field.Invalid(jp, k, fmt.Sprintf("jobTypes keys must be job types: DNS-1123 labels of at most %d characters", MaxJobTypeLength)))
			continue
		}
		m := p.JobTypes[k]
		// At jobTypes.<key>, as the API server names a field of a map entry.
		errs = append(errs, middlewareErrors(jp.Child(k), &m)...)
		if m.ObjectStorage.Provider == ObjectStorageExternal {
			// At jobTypes, where the API server's rule over the map reports it.
			errs = append(errs, field.Forbidden(jp, fmt.Sprintf("jobTypes[%s].objectStorage.provider: %s", k, personalMinIORule)))
		}
	}
	return append(errs, p.OwnerShare.validate(path.Child("ownerShare"))...)
}

// personalObjectStorageErrors: the shared middleware (at p) keeps MinIO, where every
// personal robot gets its own user and bucket (minio-init); an external endpoint has no
// admin API TFRS could make them with, and one shared login would let robots read each
// other's objects.
func personalObjectStorageErrors(p *field.Path, m *TenantMiddleware) field.ErrorList {
	if m.ObjectStorage.Provider != ObjectStorageExternal {
		return nil
	}
	return field.ErrorList{field.Forbidden(p.Child("objectStorage", "provider"), personalMinIORule)}
}

const personalMinIORule = "personal job types use MinIO: each personal robot gets its own MinIO user and bucket, which an external endpoint cannot give"

// validate: a share is positive (a zero share would refuse every robot; leave it unset for
// no limit, or the robots unset and the amounts small).
func (s *OwnerShare) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Robots != nil && *s.Robots < 1 {
		errs = append(errs, field.Invalid(p.Child("robots"), *s.Robots, "must be at least 1"))
	}
	for _, q := range []struct {
		name string
		q    *resource.Quantity
	}{{"cpu", s.CPU}, {"memory", s.Memory}} {
		if q.q != nil && q.q.Sign() <= 0 {
			errs = append(errs, field.Invalid(p.Child(q.name), q.q.String(), "must be positive"))
		}
	}
	return errs
}

// middlewareErrors are the TFRTenant rules on m, placed at p instead of spec: the rules of a
// tenant's middleware are written once, in TFRTenant.Validate, and run here on an
// enterprise tenant that carries m.
func middlewareErrors(p *field.Path, m *TenantMiddleware) field.ErrorList {
	t := &TFRTenant{Spec: TFRTenantSpec{ClusterRef: "personal", Type: TenantEnterprise, TenantMiddleware: *m.DeepCopy()}}
	t.Name = "personal"
	var errs field.ErrorList
	for _, e := range t.ValidateWithAdminValues() { // the chart values are the admin's
		rest, ok := strings.CutPrefix(e.Field, "spec.")
		if !ok {
			continue // not the middleware's: the stand-in's own name and spec are valid
		}
		moved := *e
		moved.Field = p.String() + "." + rest
		errs = append(errs, &moved)
	}
	return errs
}
