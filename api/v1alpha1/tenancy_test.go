package v1alpha1

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
)

func qp(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// hasErr reports whether errs has one at exactly field whose text contains want.
func hasErr(errs field.ErrorList, fieldPath, want string) bool {
	for _, e := range errs {
		if e.Field == fieldPath && strings.Contains(e.Error(), want) {
			return true
		}
	}
	return false
}

// TestTenancyClassErrors is the table of the class rule over a tenant's spec.
func TestTenancyClassErrors(t *testing.T) {
	small := &TenancySpec{Classes: []TenantClass{{Name: "small", Quota: ClassQuota{Storage: qp("20Gi"), PersistentVolumeClaims: ptr.To[int32](4)}, MaxVolumeSize: qp("15Gi")}}, DefaultClass: "small"}
	for _, tc := range []struct {
		name   string
		policy *TenancySpec
		mut    func(*TFRTenant)
		field  string // "" = no error
		want   string
	}{
		{"defaults fit standard", nil, nil, "", ""},
		{"the issue's 1Pi MinIO", nil, func(x *TFRTenant) { x.Spec.MinIO.Size = qp("1Pi") }, "spec.minio.size", "1Pi exceeds class standard's storage 500Gi"},
		{"1Pi MinIO is also above the volume max", nil, func(x *TFRTenant) { x.Spec.MinIO.Size = qp("1Pi") }, "spec.minio.size", "1Pi exceeds class standard's maxVolumeSize 200Gi"},
		{"9 × 1Ei PostgreSQL", nil, func(x *TFRTenant) { x.Spec.PostgreSQL.Size, x.Spec.PostgreSQL.Instances = qp("1Ei"), ptr.To[int32](9) }, "spec.postgresql.size", "(9 volumes of it, 9Ei in all)"},
		{"9 × 100Gi PostgreSQL: each fits, together not", nil, func(x *TFRTenant) {
			x.Spec.PostgreSQL.Size, x.Spec.PostgreSQL.Instances = qp("100Gi"), ptr.To[int32](9)
		}, "spec.postgresql.size", "exceeds class standard's storage 500Gi (9 volumes of it, 900Gi in all)"},
		{"MinIO servers × volumes × size", nil, func(x *TFRTenant) {
			x.Spec.MinIO.Size, x.Spec.MinIO.Servers, x.Spec.MinIO.VolumesPerServer = qp("100Gi"), ptr.To[int32](2), ptr.To[int32](4)
		}, "spec.minio.size", "(8 volumes of it, 800Gi in all)"},
		{"RabbitMQ replicas × size", nil, func(x *TFRTenant) { x.Spec.RabbitMQ.Size, x.Spec.RabbitMQ.Replicas = qp("199Gi"), ptr.To[int32](3) }, "spec.rabbitmq.size", "597Gi in all"},
		{"the sum of fields that fit one by one", nil, func(x *TFRTenant) {
			x.Spec.PostgreSQL.Size, x.Spec.MinIO.Size, x.Spec.TimescaleDB.Size, x.Spec.SharedCache.Size = qp("150Gi"), qp("150Gi"), qp("150Gi"), qp("100Gi")
		}, "spec", "the volumes of the spec total 552Gi, which exceeds class standard's storage 500Gi"},
		{"a switched-off component does not count in the sum", nil, func(x *TFRTenant) {
			x.Spec.PostgreSQL.Size, x.Spec.MinIO.Size, x.Spec.TimescaleDB.Size, x.Spec.SharedCache.Size = qp("150Gi"), qp("150Gi"), qp("150Gi"), qp("100Gi")
			x.Spec.SharedCache.Enabled = ptr.To(false)
		}, "", ""},
		{"a switched-off component's own size is still bounded", nil, func(x *TFRTenant) {
			x.Spec.SharedCache.Size, x.Spec.SharedCache.Enabled = qp("1Pi"), ptr.To(false)
		}, "spec.sharedCache.size", "maxVolumeSize"},
		{"a container above the class max", nil, func(x *TFRTenant) {
			x.Spec.Redis.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}
		}, "spec.redis.resources.limits[cpu]", "100 exceeds class standard's container.max.cpu 16"},
		{"replicas × requests above the quota", nil, func(x *TFRTenant) {
			x.Spec.TFRSUtils.Replicas = ptr.To[int32](100)
			x.Spec.TFRSUtils.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, "spec.tfrsUtils.resources.requests[memory]", "exceeds class standard's quota.requestsMemory 64Gi (100 pods of it, 100Gi in all)"},
		{"a request above the default limit of a container without limits", nil, func(x *TFRTenant) {
			x.Spec.PostgreSQL.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		}, "spec.postgresql.resources.requests[cpu]", "4 exceeds its limit 2 (class standard's container.default.cpu, the limit of a container that sets none): set resources.limits.cpu"},
		{"a request above its own limit", nil, func(x *TFRTenant) {
			x.Spec.PostgreSQL.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}
			x.Spec.PostgreSQL.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")}
		}, "spec.postgresql.resources.requests[memory]", "4Gi exceeds its limit 3Gi"},
		{"a request above the default limit, with a limit set", nil, func(x *TFRTenant) {
			x.Spec.PostgreSQL.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
			x.Spec.PostgreSQL.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		}, "", ""},
		{"a resource the class does not bound", nil, func(x *TFRTenant) {
			x.Spec.PostgreSQL.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		}, "spec.postgresql.resources.limits[nvidia.com/gpu]", `supported values: "cpu", "memory"`},
		{"resource claims", nil, func(x *TFRTenant) {
			x.Spec.Vector.Resources.Claims = []corev1.ResourceClaim{{Name: "x"}}
		}, "spec.vector.resources.claims", "resource claims"},
		{"unknown class", nil, func(x *TFRTenant) { x.Spec.Class = "gold" }, "spec.class", `Unsupported value: "gold": supported values: "standard"`},
		{"the cluster's class: defaults too big for it", small, nil, "spec", "total 42Gi, which exceeds class small's storage 20Gi"},
		{"the cluster's class: too many volumes", small, func(x *TFRTenant) {
			x.Spec.PostgreSQL.Size, x.Spec.MinIO.Size, x.Spec.TimescaleDB.Size, x.Spec.SharedCache.Size = qp("1Gi"), qp("1Gi"), qp("1Gi"), qp("1Gi")
		}, "spec", "the spec makes 6 volumes, more than class small's persistentVolumeClaims 4"},
		{"the built-in class is gone once the cluster has classes", small, func(x *TFRTenant) { x.Spec.Class = "standard" }, "spec.class", `supported values: "small"`},
		{"a personal tenant: only the class's existence (its middleware is the cluster's)", nil, func(x *TFRTenant) {
			x.Spec.Type, x.Spec.JobType = TenantPersonal, "chat"
		}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newTenant()
			if tc.mut != nil {
				tc.mut(x)
			}
			errs := TenancyErrors(x, tc.policy)
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs.ToAggregate())
				}
				return
			}
			if !hasErr(errs, tc.field, tc.want) {
				t.Fatalf("want an error at %s saying %q, got %v", tc.field, tc.want, errs.ToAggregate())
			}
		})
	}
}

// quantityField is one user-settable quantity of the TFRTenant spec: a size, or a cpu/memory
// amount of a resources field, found by walking the Go type.
type quantityField struct {
	path string // the field path an error must name
	set  func(spec reflect.Value, q resource.Quantity)
}

// quantityFields walks typ (at path, v's type) and returns every *resource.Quantity field and
// every cpu and memory request and limit of every corev1.ResourceRequirements field.
func quantityFields(typ reflect.Type, path string, get func(reflect.Value) reflect.Value) []quantityField {
	var out []quantityField
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		p := path
		if name != "" {
			p = path + "." + name
		}
		idx := i
		fieldOf := func(v reflect.Value) reflect.Value { return get(v).Field(idx) }
		switch ft := f.Type; {
		case ft == reflect.TypeFor[*resource.Quantity]():
			out = append(out, quantityField{p, func(v reflect.Value, q resource.Quantity) { fieldOf(v).Set(reflect.ValueOf(&q)) }})
		case ft == reflect.TypeFor[resource.Quantity]():
			out = append(out, quantityField{p, func(v reflect.Value, q resource.Quantity) { fieldOf(v).Set(reflect.ValueOf(q)) }})
		case ft == reflect.TypeFor[corev1.ResourceRequirements]():
			for _, side := range []string{"requests", "limits"} {
				for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					out = append(out, quantityField{fmt.Sprintf("%s.%s[%s]", p, side, res), func(v reflect.Value, q resource.Quantity) {
						r := fieldOf(v).Addr().Interface().(*corev1.ResourceRequirements)
						l := corev1.ResourceList{res: q}
						if side == "requests" {
							r.Requests = l
						} else {
							r.Limits = l
						}
					}})
				}
			}
		case ft.Kind() == reflect.Struct:
			out = append(out, quantityFields(ft, p, fieldOf)...)
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
			alloc := func(v reflect.Value) reflect.Value {
				fv := fieldOf(v)
				if fv.IsNil() {
					fv.Set(reflect.New(ft.Elem()))
				}
				return fv.Elem()
			}
			out = append(out, quantityFields(ft.Elem(), p, alloc)...)
		}
	}
	return out
}

// TestTenancyGeneratorEveryQuantity: a generator, not a list. It walks the TFRTenantSpec Go
// type, finds every size and every cpu/memory amount a tenant can set, and throws huge
// quantities at each one alone: every attempt must be refused with an error at that field
// (the built-in class, and a small admin class). A size or resources field added to the spec
// without a row in usesOf fails here.
func TestTenancyGeneratorEveryQuantity(t *testing.T) {
	fields := quantityFields(reflect.TypeFor[TFRTenantSpec](), "spec", func(v reflect.Value) reflect.Value { return v })
	if len(fields) < 46 { // 6 sizes + 10 resources × 4: the walk must not silently find less
		t.Fatalf("the walk found %d quantity fields, want at least 46: %v", len(fields), fields)
	}
	huge := []string{"1Pi", "1Ei", "8Ei", "123456789012345678901234567890", "1e18"}
	policies := map[string]*TenancySpec{
		"standard": nil,
		"tiny": {Classes: []TenantClass{{Name: "tiny", Quota: ClassQuota{Storage: qp("100Gi"), RequestsCPU: qp("4"), RequestsMemory: qp("8Gi"), LimitsCPU: qp("8"), LimitsMemory: qp("16Gi")},
			MaxVolumeSize: qp("50Gi"), Container: ContainerLimits{Default: ContainerResources{CPU: qp("1"), Memory: qp("1Gi")}, Max: ContainerResources{CPU: qp("2"), Memory: qp("4Gi")}}}}, DefaultClass: "tiny"},
	}
	attempts, refused := 0, 0
	for pname, policy := range policies {
		for _, f := range fields {
			for _, h := range huge {
				attempts++
				x := newTenant()
				x.Default()
				f.set(reflect.ValueOf(&x.Spec).Elem(), resource.MustParse(h))
				errs := TenancyErrors(x, policy)
				at := slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == f.path && strings.Contains(e.Detail, "exceeds class") })
				if !at {
					t.Errorf("%s: %s = %s was not refused at its field: %v", pname, f.path, h, errs.ToAggregate())
					continue
				}
				refused++
			}
		}
	}
	t.Logf("%d quantity fields, %d attempts, %d refused at their field", len(fields), attempts, refused)
}

// TestTenancyPolicyValidate checks TFRCluster.spec.tenancy itself.
func TestTenancyPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mut   func(*TFRCluster)
		field string
		want  string
	}{
		{"empty: the built-in class", func(*TFRCluster) {}, "", ""},
		{"classes without standard need a defaultClass", func(c *TFRCluster) {
			c.Spec.Tenancy.Classes = []TenantClass{{Name: "gold"}}
		}, "spec.tenancy.defaultClass", `classes has no class "standard"`},
		{"defaultClass names a class", func(c *TFRCluster) {
			c.Spec.Tenancy.Classes, c.Spec.Tenancy.DefaultClass = []TenantClass{{Name: "gold"}}, "silver"
		}, "spec.tenancy.defaultClass", `Unsupported value: "silver"`},
		{"personalClass names a class", func(c *TFRCluster) { c.Spec.Tenancy.PersonalClass = "silver" }, "spec.tenancy.personalClass", `Unsupported value: "silver"`},
		{"duplicate class", func(c *TFRCluster) {
			c.Spec.Tenancy.Classes = []TenantClass{{Name: "standard"}, {Name: "standard"}}
		}, "spec.tenancy.classes[1].name", "Duplicate"},
		{"system priority classes are never allowed", func(c *TFRCluster) {
			c.Spec.Tenancy.AllowedPriorityClasses = []string{"batch-low", "system-node-critical"}
		}, "spec.tenancy.allowedPriorityClasses[1]", "system-*"},
		{"a LimitRange the API server would refuse", func(c *TFRCluster) {
			c.Spec.Tenancy.Classes = []TenantClass{{Name: "standard", Container: ContainerLimits{Max: ContainerResources{Memory: qp("1Gi")}}}}
		}, "spec.tenancy.classes[0].container.default.memory", "must not exceed max.memory 1Gi"},
		{"a non-positive amount", func(c *TFRCluster) {
			c.Spec.Tenancy.Classes = []TenantClass{{Name: "standard", Quota: ClassQuota{Storage: qp("0")}}}
		}, "spec.tenancy.classes[0].quota.storage", "must be positive"},
		{"a bad prefix", func(c *TFRCluster) { c.Spec.Tenancy.AllowedNamespacePrefixes = []string{"Team_"} }, "spec.tenancy.allowedNamespacePrefixes[0]", "should match"},
		{"the personal middleware must fit the personal class", func(c *TFRCluster) {
			c.Spec.Personal.Middleware.MinIO.Size = qp("1Pi")
		}, "spec.personal.middleware.minio.size", "1Pi exceeds class standard's storage 500Gi"},
		{"a job type's middleware must fit the personal class", func(c *TFRCluster) {
			c.Spec.Tenancy.Classes = []TenantClass{{Name: "standard"}, {Name: "personal", MaxVolumeSize: qp("5Gi")}}
			c.Spec.Tenancy.PersonalClass = "personal"
			c.Spec.Personal.JobTypes = map[string]TenantMiddleware{"chat": {}}
		}, "spec.personal.jobTypes.chat.postgresql.size", "10Gi exceeds class personal's maxVolumeSize 5Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := newCluster(tc.mut).Validate()
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs.ToAggregate())
				}
				return
			}
			if !hasErr(errs, tc.field, tc.want) {
				t.Fatalf("want an error at %s saying %q, got %v", tc.field, tc.want, errs.ToAggregate())
			}
		})
	}
}

// TestTenancyTenantClassField: spec.class is the enterprise tenant's; a personal tenant's job
// type takes the cluster's personal class, whatever the tenant says.
func TestTenancyTenantClassField(t *testing.T) {
	if errs := newTenant(func(x *TFRTenant) { x.Spec.Class = "gold" }).Validate(); len(errs) > 0 {
		t.Fatalf("an enterprise tenant's class refused statically: %v", errs.ToAggregate())
	}
	errs := newTenant(func(x *TFRTenant) { x.Spec.Type, x.Spec.JobType, x.Spec.Class = TenantPersonal, "chat", "gold" }).Validate()
	if !hasErr(errs, "spec.class", "a personal tenant cannot pick a class") {
		t.Fatalf("a personal tenant's class: %v", errs.ToAggregate())
	}
	s := &TenancySpec{Classes: []TenantClass{{Name: "standard"}, {Name: "shared"}}, PersonalClass: "shared"}
	if got := s.ClassNameOf(newTenant(func(x *TFRTenant) { x.Spec.Type, x.Spec.JobType = TenantPersonal, "chat" })); got != "shared" {
		t.Fatalf("personal class = %q", got)
	}
	if got := s.ClassNameOf(newTenant()); got != "standard" {
		t.Fatalf("default class = %q", got)
	}
	// A class's unset fields are the built-in class's.
	c, _ := s.Class("shared")
	if b := BuiltinClass(); c.Quota.Storage.Cmp(*b.Quota.Storage) != 0 || c.Container.Max.CPU.Cmp(*b.Container.Max.CPU) != 0 {
		t.Fatalf("resolved class %+v", c)
	}
}

// TestTenancyNamespaceClaim is the table of the namespace rule for new tenants.
func TestTenancyNamespaceClaim(t *testing.T) {
	prefixes := &TenancySpec{AllowedNamespacePrefixes: []string{"team-", "lab-"}}
	for _, tc := range []struct {
		name   string
		policy *TenancySpec
		mut    func(*TFRTenant)
		want   string // "" = allowed
	}{
		{"an ordinary name", nil, func(x *TFRTenant) { x.Spec.Namespace = "acme" }, ""},
		{"the personal- prefix", nil, func(x *TFRTenant) { x.Spec.Namespace = "personal-chat" }, "personal-* namespaces belong to the personal job types"},
		{"the personal- prefix by the tenant's name", nil, func(x *TFRTenant) { x.Name = "personal-x" }, "set spec.namespace"},
		{"monitoring (trusted by every tenant)", nil, func(x *TFRTenant) { x.Spec.Namespace = clusterns.Monitoring }, "reserved for the platform"},
		{"the ingress gateway's", nil, func(x *TFRTenant) { x.Spec.Namespace = clusterns.IstioIngress }, "reserved for the platform"},
		{"an operator's", nil, func(x *TFRTenant) { x.Spec.Namespace = clusterns.RabbitMQOperator }, "reserved for the platform"},
		{"the admin's allowlist: allowed", prefixes, func(x *TFRTenant) { x.Spec.Namespace = "team-a" }, ""},
		{"the admin's allowlist: refused", prefixes, func(x *TFRTenant) { x.Spec.Namespace = "acme" }, "must start with one of team-, lab-"},
		{"a personal tenant's own namespace", prefixes, func(x *TFRTenant) { x.Spec.Type, x.Spec.JobType = TenantPersonal, "chat" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := NamespaceClaimErrors(newTenant(tc.mut), tc.policy)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs.ToAggregate())
				}
				return
			}
			if !hasErr(errs, "spec.namespace", tc.want) {
				t.Fatalf("want spec.namespace saying %q, got %v", tc.want, errs.ToAggregate())
			}
		})
	}
}

// TestTenancyPlatformNamespacesCoverTrust: every namespace a tenant's isolation trusts, by
// name (clusterns.Trusted, the AuthorizationPolicy) or by role label (clusterns.Roles, the
// NetworkPolicies), is a platform namespace no new tenant may take.
func TestTenancyPlatformNamespacesCoverTrust(t *testing.T) {
	platform := PlatformNamespaces()
	for _, ns := range clusterns.Trusted() {
		if !slices.Contains(platform, ns) {
			t.Errorf("trusted namespace %q is not reserved", ns)
		}
	}
	var roles []string
	for _, ns := range platform {
		if r := clusterns.Labels(ns)[clusterns.PlatformRoleLabel]; r != "" {
			roles = append(roles, r)
		}
	}
	slices.Sort(roles)
	want := slices.Sorted(slices.Values(clusterns.Roles()))
	if fmt.Sprint(roles) != fmt.Sprint(want) {
		t.Fatalf("roles of the reserved namespaces = %v, want every role %v: a role's namespace is not reserved", roles, want)
	}
}
