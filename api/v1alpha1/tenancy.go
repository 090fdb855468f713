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

// The tenancy rules (types in tenancy_types.go). A tenant's spec is checked against its class
// before anything runs, so a spec its namespace's ResourceQuota or LimitRange would refuse
// halfway through an `up` (a PVC refused after the database was made) is refused whole, with
// the field and the limit named. The check needs the cluster's policy, which a tenant reads
// from its cluster's stack: stacks.TenantNamespaceErrors runs it at every door, next to the
// cluster's reserved namespaces. What the spec does not state (sidecars, containers without
// resources, robots' pods) only the API server's quota counts; this check is the early, named
// refusal, the quota is the enforcement.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// BuiltinClassName is the class of a cluster without spec.tenancy.classes, and the default
// class name.
const BuiltinClassName = "standard"

// BuiltinClass is the built-in "standard" class, and the value of every field a cluster's
// class leaves unset. Its numbers bound a runaway or hostile tenant, not size a workload: a
// full tenant with every component at its defaults uses about a tenth of it (about 42Gi of
// volumes, a dozen pods), leaving room for a few dozen robots.
func BuiltinClass() TenantClass {
	q := resource.MustParse
	p := func(v string) *resource.Quantity { x := q(v); return &x }
	n := func(v int32) *int32 { return &v }
	return TenantClass{
		Name: BuiltinClassName,
		Quota: ClassQuota{
			RequestsCPU: p("32"), RequestsMemory: p("64Gi"),
			LimitsCPU: p("128"), LimitsMemory: p("256Gi"),
			Storage: p("500Gi"), PersistentVolumeClaims: n(50),
			Pods: n(200), Services: n(100),
		},
		MaxVolumeSize: p("200Gi"),
		Container: ContainerLimits{
			// A container without limits gets 2 CPU / 2Gi: above what any TFRS container asks
			// for as a request, so a default limit never falls below an explicit request.
			Default:        ContainerResources{CPU: p("2"), Memory: p("2Gi")},
			DefaultRequest: ContainerResources{CPU: p("100m"), Memory: p("128Mi")},
			Max:            ContainerResources{CPU: p("16"), Memory: p("64Gi")},
		},
	}
}

// Resolved is c with every unset field taken from BuiltinClass.
func (c TenantClass) Resolved() TenantClass {
	b := BuiltinClass()
	r := *c.DeepCopy()
	qty := func(dst **resource.Quantity, def *resource.Quantity) {
		if *dst == nil {
			*dst = def
		}
	}
	cnt := func(dst **int32, def *int32) {
		if *dst == nil {
			*dst = def
		}
	}
	qty(&r.Quota.RequestsCPU, b.Quota.RequestsCPU)
	qty(&r.Quota.RequestsMemory, b.Quota.RequestsMemory)
	qty(&r.Quota.LimitsCPU, b.Quota.LimitsCPU)
	qty(&r.Quota.LimitsMemory, b.Quota.LimitsMemory)
	qty(&r.Quota.Storage, b.Quota.Storage)
	cnt(&r.Quota.PersistentVolumeClaims, b.Quota.PersistentVolumeClaims)
	cnt(&r.Quota.Pods, b.Quota.Pods)
	cnt(&r.Quota.Services, b.Quota.Services)
	qty(&r.MaxVolumeSize, b.MaxVolumeSize)
	for _, pair := range []struct{ dst, def *ContainerResources }{
		{&r.Container.Default, &b.Container.Default},
		{&r.Container.DefaultRequest, &b.Container.DefaultRequest},
		{&r.Container.Max, &b.Container.Max},
	} {
		qty(&pair.dst.CPU, pair.def.CPU)
		qty(&pair.dst.Memory, pair.def.Memory)
	}
	return r
}

// classList is the classes that exist: the cluster's, or the built-in one alone.
func (s *TenancySpec) classList() []TenantClass {
	if s == nil || len(s.Classes) == 0 {
		return []TenantClass{BuiltinClass()}
	}
	return s.Classes
}

// ClassNames lists the names of the classes that exist.
func (s *TenancySpec) ClassNames() []string {
	var out []string
	for _, c := range s.classList() {
		out = append(out, c.Name)
	}
	return out
}

// DefaultClassName is the class of a tenant that names none.
func (s *TenancySpec) DefaultClassName() string {
	if s == nil || s.DefaultClass == "" {
		return BuiltinClassName
	}
	return s.DefaultClass
}

// PersonalClassName is the class of every personal job type's shared namespace.
func (s *TenancySpec) PersonalClassName() string {
	if s != nil && s.PersonalClass != "" {
		return s.PersonalClass
	}
	return s.DefaultClassName()
}

// Class is the resolved class of that name ("" means the default), and whether it exists.
func (s *TenancySpec) Class(name string) (TenantClass, bool) {
	if name == "" {
		name = s.DefaultClassName()
	}
	for _, c := range s.classList() {
		if c.Name == name {
			return c.Resolved(), true
		}
	}
	return TenantClass{}, false
}

// ClassNameOf is the class tenant t takes: its job type's shared class for a personal
// tenant (it cannot pick one), else spec.class or the default.
func (s *TenancySpec) ClassNameOf(t *TFRTenant) string {
	switch {
	case t.Spec.Type == TenantPersonal:
		return s.PersonalClassName()
	case t.Spec.Class != "":
		return t.Spec.Class
	}
	return s.DefaultClassName()
}

// ClassOf is t's resolved class, or the error at spec.class when it does not exist.
func (s *TenancySpec) ClassOf(t *TFRTenant) (TenantClass, *field.Error) {
	name := s.ClassNameOf(t)
	c, ok := s.Class(name)
	if !ok {
		return TenantClass{}, field.NotSupported(field.NewPath("spec", "class"), name, s.ClassNames())
	}
	return c, nil
}

// TenancyErrors checks tenant t (defaulted on a copy) against the cluster's policy s: its
// class exists, and every size and resource of its spec fits the class. A personal tenant's
// middleware is the cluster's (spec.personal), checked when the cluster is validated, so
// only its class's existence is checked here.
func TenancyErrors(t *TFRTenant, s *TenancySpec) field.ErrorList {
	x := t.DeepCopy()
	x.Default()
	c, err := s.ClassOf(x)
	if err != nil {
		return field.ErrorList{err}
	}
	if x.Spec.Type == TenantPersonal {
		return nil
	}
	return ClassErrors(field.NewPath("spec"), &x.Spec.TenantMiddleware, &c)
}

// volumeUse is one size field of a spec and how many volumes of that size it makes.
type volumeUse struct {
	path    *field.Path
	size    *resource.Quantity
	count   int64
	enabled bool
}

// computeUse is one resources field and how many pods run that container.
type computeUse struct {
	path    *field.Path
	res     *corev1.ResourceRequirements
	count   int64
	enabled bool
}

func count(v *int32, def int64) int64 {
	if v == nil {
		return def
	}
	return int64(*v)
}

// usesOf lists every size and every resources field of the middleware m (defaulted) under
// p with its multiplicity. A new size or resources field of TenantMiddleware belongs here:
// TestTenancyGeneratorEveryQuantity walks the type and fails on any it cannot refuse.
func usesOf(p *field.Path, m *TenantMiddleware) ([]volumeUse, []computeUse) {
	pg, mn, mq := &m.PostgreSQL, &m.MinIO, &m.RabbitMQ
	vols := []volumeUse{
		{p.Child("postgresql", "size"), pg.Size, count(pg.Instances, 1), true},
		{p.Child("redis", "size"), m.Redis.Size, 1, true},
		{p.Child("minio", "size"), mn.Size, count(mn.Servers, 1) * count(mn.VolumesPerServer, 1), true},
		{p.Child("rabbitmq", "size"), mq.Size, count(mq.Replicas, 1), true},
		{p.Child("timescaledb", "size"), m.TimescaleDB.Size, 1, m.TimescaleDB.IsEnabled()},
		{p.Child("sharedCache", "size"), m.SharedCache.Size, 1, m.SharedCache.IsEnabled()},
	}
	comp := []computeUse{
		{p.Child("postgresql", "resources"), &pg.Resources, count(pg.Instances, 1), true},
		{p.Child("redis", "resources"), &m.Redis.Resources, 1, true},
		{p.Child("minio", "resources"), &mn.Resources, count(mn.Servers, 1), true},
		{p.Child("rabbitmq", "resources"), &mq.Resources, count(mq.Replicas, 1), true},
		{p.Child("timescaledb", "resources"), &m.TimescaleDB.Resources, 1, m.TimescaleDB.IsEnabled()},
		{p.Child("prometheus", "resources"), &m.Prometheus.Resources, 1, m.Prometheus.IsEnabled()},
		{p.Child("otelCollector", "resources"), &m.OtelCollector.Resources, 1, m.OtelCollector.IsEnabled()},
		{p.Child("vector", "resources"), &m.Vector.Resources, 1, m.Vector.IsEnabled()},
		{p.Child("tfrobotFront", "resources"), &m.TFRobotFront.Resources, count(m.TFRobotFront.Replicas, 1), m.TFRobotFront.IsEnabled()},
		{p.Child("tfrsUtils", "resources"), &m.TFRSUtils.Resources, count(m.TFRSUtils.Replicas, 1), m.TFRSUtils.IsEnabled()},
	}
	return vols, comp
}

// times is q × n, exact for any quantity the schema admits (Mul falls back to big decimals).
func times(q *resource.Quantity, n int64) resource.Quantity {
	out := q.DeepCopy()
	out.Mul(n)
	return out
}

// ClassErrors checks the middleware m (defaulted) at p against class c (resolved): each
// volume against the class's maxVolumeSize, each field's volumes and all volumes together
// against its storage and volume count; each container's resources (cpu and memory only)
// against the class's per-container max, and each field's pods and all of them together
// against the quota's totals. Every error names the field and the limit.
func ClassErrors(p *field.Path, m *TenantMiddleware, c *TenantClass) field.ErrorList {
	vols, comp := usesOf(p, m)
	var errs field.ErrorList
	total, totalVols := resource.Quantity{Format: resource.BinarySI}, int64(0)
	for _, v := range vols {
		if v.size == nil {
			continue
		}
		if v.size.Cmp(*c.MaxVolumeSize) > 0 {
			errs = append(errs, field.Forbidden(v.path, fmt.Sprintf("%s exceeds class %s's maxVolumeSize %s (the most one volume may hold)",
				v.size.String(), c.Name, c.MaxVolumeSize.String())))
		}
		all := times(v.size, v.count)
		if all.Cmp(*c.Quota.Storage) > 0 {
			errs = append(errs, field.Forbidden(v.path, fmt.Sprintf("%s exceeds class %s's storage %s%s",
				v.size.String(), c.Name, c.Quota.Storage.String(), timesNote(v.count, all))))
		}
		if v.enabled {
			total.Add(all)
			totalVols += v.count
		}
	}
	if total.Cmp(*c.Quota.Storage) > 0 && len(errs) == 0 {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf("the volumes of the spec total %s, which exceeds class %s's storage %s",
			total.String(), c.Name, c.Quota.Storage.String())))
	}
	if max := int64(*c.Quota.PersistentVolumeClaims); totalVols > max {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf("the spec makes %d volumes, more than class %s's persistentVolumeClaims %d", totalVols, c.Name, max)))
	}
	return append(errs, computeErrors(p, comp, c)...)
}

// timesNote explains a total that is a size times its count.
func timesNote(n int64, all resource.Quantity) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf(" (%d volumes of it, %s in all)", n, all.String())
}

// quotaKinds are the resource names a tenant's component may ask for, and the quota totals
// and container max each one is bounded by. Anything else (GPUs, hugepages,
// ephemeral-storage) the class does not bound, so the spec may not name it.
var quotaKinds = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

func computeErrors(p *field.Path, comp []computeUse, c *TenantClass) field.ErrorList {
	var errs field.ErrorList
	type side struct {
		name  string
		list  func(*corev1.ResourceRequirements) corev1.ResourceList
		total func(corev1.ResourceName) (*resource.Quantity, string)
	}
	sides := []side{
		{"requests", func(r *corev1.ResourceRequirements) corev1.ResourceList { return r.Requests }, func(n corev1.ResourceName) (*resource.Quantity, string) {
			if n == corev1.ResourceCPU {
				return c.Quota.RequestsCPU, "requestsCPU"
			}
			return c.Quota.RequestsMemory, "requestsMemory"
		}},
		{"limits", func(r *corev1.ResourceRequirements) corev1.ResourceList { return r.Limits }, func(n corev1.ResourceName) (*resource.Quantity, string) {
			if n == corev1.ResourceCPU {
				return c.Quota.LimitsCPU, "limitsCPU"
			}
			return c.Quota.LimitsMemory, "limitsMemory"
		}},
	}
	maxOf := func(n corev1.ResourceName) *resource.Quantity {
		if n == corev1.ResourceCPU {
			return c.Container.Max.CPU
		}
		return c.Container.Max.Memory
	}
	for _, sd := range sides {
		totals := map[corev1.ResourceName]*resource.Quantity{}
		for _, u := range comp {
			list := sd.list(u.res)
			for _, name := range sortedNames(list) {
				fp := u.path.Child(sd.name).Key(string(name))
				if !slices.Contains(quotaKinds, name) {
					errs = append(errs, field.NotSupported(fp, string(name), []string{"cpu", "memory"}))
					continue
				}
				v := list[name]
				if mx := maxOf(name); v.Cmp(*mx) > 0 {
					errs = append(errs, field.Forbidden(fp, fmt.Sprintf("%s exceeds class %s's container.max.%s %s (the most one container may ask for)",
						v.String(), c.Name, name, mx.String())))
				}
				all := times(&v, u.count)
				limit, key := sd.total(name)
				if all.Cmp(*limit) > 0 {
					errs = append(errs, field.Forbidden(fp, fmt.Sprintf("%s exceeds class %s's quota.%s %s%s",
						v.String(), c.Name, key, limit.String(), podsNote(u.count, all))))
				}
				if u.enabled {
					if totals[name] == nil {
						totals[name] = &resource.Quantity{Format: v.Format}
					}
					totals[name].Add(all)
				}
			}
		}
		for _, name := range quotaKinds {
			limit, key := sd.total(name)
			if t := totals[name]; t != nil && t.Cmp(*limit) > 0 && len(errs) == 0 {
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("the %s.%s of the spec's components total %s, which exceeds class %s's quota.%s %s",
					sd.name, name, t.String(), c.Name, key, limit.String())))
			}
		}
	}
	for _, u := range comp {
		errs = append(errs, requestAboveLimitErrors(u, c)...)
		if len(u.res.Claims) > 0 {
			errs = append(errs, field.Forbidden(u.path.Child("claims"), "a tenant's components may not use resource claims: the class does not bound them"))
		}
	}
	return errs
}

// requestAboveLimitErrors refuses a request above its container's limit: the one resources
// sets, else the class's container.default, which the LimitRange gives a container without
// one. The API server would refuse every such pod, long after the spec was accepted.
func requestAboveLimitErrors(u computeUse, c *TenantClass) field.ErrorList {
	var errs field.ErrorList
	for _, name := range quotaKinds {
		req, ok := u.res.Requests[name]
		if !ok {
			continue
		}
		limit, set := u.res.Limits[name]
		source := "resources.limits." + string(name)
		if !set {
			def := c.Container.Default.CPU
			if name == corev1.ResourceMemory {
				def = c.Container.Default.Memory
			}
			limit, source = *def, fmt.Sprintf("class %s's container.default.%s, the limit of a container that sets none", c.Name, name)
		}
		if req.Cmp(limit) > 0 {
			errs = append(errs, field.Forbidden(u.path.Child("requests").Key(string(name)), fmt.Sprintf("%s exceeds its limit %s (%s): set resources.limits.%s",
				req.String(), limit.String(), source, name)))
		}
	}
	return errs
}

func podsNote(n int64, all resource.Quantity) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf(" (%d pods of it, %s in all)", n, all.String())
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// validate checks the policy itself (TFRCluster.spec.tenancy at p) and the cluster's personal
// middleware against the personal class: the admin's own spec is refused whole, naming the
// field, rather than every personal tenant failing later.
func (s *TenancySpec) validate(p *field.Path, personal *PersonalSpec) field.ErrorList {
	var errs field.ErrorList
	cp := p.Child("classes")
	if len(s.Classes) > MaxTenantClasses {
		errs = append(errs, field.TooMany(cp, len(s.Classes), MaxTenantClasses))
	}
	seen := map[string]bool{}
	for i, c := range s.Classes {
		ip := cp.Index(i)
		errs = append(errs, str(ip.Child("name"), c.Name, required, 1, MaxNameLength, reDNSLabel)...)
		if seen[c.Name] {
			errs = append(errs, field.Duplicate(ip.Child("name"), c.Name))
		}
		seen[c.Name] = true
		errs = append(errs, classSpecErrors(ip, &c)...)
	}
	for _, ref := range []struct{ name, v string }{{"defaultClass", s.DefaultClass}, {"personalClass", s.PersonalClass}} {
		errs = append(errs, str(p.Child(ref.name), ref.v, optional, 1, MaxNameLength, reDNSLabel)...)
		if ref.v == "" {
			continue
		}
		if _, ok := s.Class(ref.v); !ok {
			errs = append(errs, field.NotSupported(p.Child(ref.name), ref.v, s.ClassNames()))
		}
	}
	if ref := s.DefaultClassName(); s.DefaultClass == "" {
		if _, ok := s.Class(ref); !ok {
			errs = append(errs, field.Required(p.Child("defaultClass"), fmt.Sprintf("classes has no class %q: name the default class", ref)))
		}
	}
	pp := p.Child("allowedPriorityClasses")
	if len(s.AllowedPriorityClasses) > MaxAllowedPriorityClasses {
		errs = append(errs, field.TooMany(pp, len(s.AllowedPriorityClasses), MaxAllowedPriorityClasses))
	}
	for i, n := range s.AllowedPriorityClasses {
		errs = append(errs, str(pp.Index(i), n, required, 1, 253, reDNSSubdomain)...)
		if strings.HasPrefix(n, "system-") {
			errs = append(errs, field.Forbidden(pp.Index(i), "system-* priority classes cannot be allowed for tenants"))
		}
	}
	np := p.Child("allowedNamespacePrefixes")
	if len(s.AllowedNamespacePrefixes) > MaxNamespacePrefixes {
		errs = append(errs, field.TooMany(np, len(s.AllowedNamespacePrefixes), MaxNamespacePrefixes))
	}
	for i, n := range s.AllowedNamespacePrefixes {
		errs = append(errs, str(np.Index(i), n, required, 1, MaxNameLength-1, reNamespacePrefix)...)
	}
	// The personal job types' shared middleware must fit the personal class (once it is
	// valid itself: a count out of range is reported once, at its field).
	perp := field.NewPath("spec", "personal")
	if c, ok := s.Class(s.PersonalClassName()); ok && personal != nil && len(personal.validate(perp)) == 0 {
		errs = append(errs, ClassErrors(perp.Child("middleware"), defaultedMiddleware(personal.Middleware), &c)...)
		for _, jt := range slices.Sorted(maps.Keys(personal.JobTypes)) {
			errs = append(errs, ClassErrors(perp.Child("jobTypes", jt), defaultedMiddleware(personal.JobTypes[jt]), &c)...)
		}
	}
	return errs
}

// PatternNamespacePrefix is the shape of an allowed namespace prefix.
const PatternNamespacePrefix = `^[a-z0-9][-a-z0-9]*$`

var reNamespacePrefix = regexp.MustCompile(PatternNamespacePrefix)

func defaultedMiddleware(m TenantMiddleware) *TenantMiddleware {
	m = *m.DeepCopy()
	m.Default()
	return &m
}

// classSpecErrors checks one class: positive amounts (the schema's rule) and a LimitRange
// the API server accepts (defaultRequest <= default <= max), with the unset fields resolved.
func classSpecErrors(p *field.Path, c *TenantClass) field.ErrorList {
	var errs field.ErrorList
	pos := func(fp *field.Path, q *resource.Quantity) {
		if q != nil && q.Sign() <= 0 {
			errs = append(errs, field.Invalid(fp, q.String(), "must be positive"))
		}
	}
	cnt := func(fp *field.Path, v *int32) {
		errs = append(errs, intRange(fp, v, 1, MaxQuotaCount)...)
	}
	qp := p.Child("quota")
	pos(qp.Child("requestsCPU"), c.Quota.RequestsCPU)
	pos(qp.Child("requestsMemory"), c.Quota.RequestsMemory)
	pos(qp.Child("limitsCPU"), c.Quota.LimitsCPU)
	pos(qp.Child("limitsMemory"), c.Quota.LimitsMemory)
	pos(qp.Child("storage"), c.Quota.Storage)
	cnt(qp.Child("persistentVolumeClaims"), c.Quota.PersistentVolumeClaims)
	cnt(qp.Child("pods"), c.Quota.Pods)
	cnt(qp.Child("services"), c.Quota.Services)
	pos(p.Child("maxVolumeSize"), c.MaxVolumeSize)
	kp := p.Child("container")
	for _, r := range []struct {
		name string
		v    *ContainerResources
	}{{"default", &c.Container.Default}, {"defaultRequest", &c.Container.DefaultRequest}, {"max", &c.Container.Max}} {
		pos(kp.Child(r.name, "cpu"), r.v.CPU)
		pos(kp.Child(r.name, "memory"), r.v.Memory)
	}
	if len(errs) > 0 {
		return errs
	}
	r := c.Resolved()
	for _, pair := range []struct {
		lo, hi         *resource.Quantity
		loName, hiName string
	}{
		{r.Container.DefaultRequest.CPU, r.Container.Default.CPU, "defaultRequest.cpu", "default.cpu"},
		{r.Container.Default.CPU, r.Container.Max.CPU, "default.cpu", "max.cpu"},
		{r.Container.DefaultRequest.Memory, r.Container.Default.Memory, "defaultRequest.memory", "default.memory"},
		{r.Container.Default.Memory, r.Container.Max.Memory, "default.memory", "max.memory"},
	} {
		if pair.lo.Cmp(*pair.hi) > 0 {
			lo := strings.Split(pair.loName, ".")
			errs = append(errs, field.Invalid(kp.Child(lo[0], lo[1:]...), pair.lo.String(),
				fmt.Sprintf("must not exceed %s %s (unset fields take the built-in class's values)", pair.hiName, pair.hi.String())))
		}
	}
	return errs
}

// tenantClassErrors are the static rules of spec.class (no cluster needed): a DNS label, and
// none for a personal tenant, whose job type's shared namespace takes the cluster's
// personal class.
func tenantClassErrors(t *TFRTenant) field.ErrorList {
	p := field.NewPath("spec", "class")
	errs := str(p, t.Spec.Class, optional, 1, MaxNameLength, reDNSLabel)
	if t.Spec.Type == TenantPersonal && t.Spec.Class != "" {
		errs = append(errs, field.Forbidden(p, "a personal tenant cannot pick a class: its job type's shared namespace takes the cluster's spec.tenancy.personalClass"))
	}
	return errs
}
