package v1alpha1

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestObjectDescribesItsKind(t *testing.T) {
	personal := newTenant(func(x *TFRTenant) { x.Spec.Type, x.Spec.JobType = TenantPersonal, "chat" })
	for _, tc := range []struct {
		obj        Object
		kind       Kind
		namespaced bool
		stacks     Stacks
		parent     ParentRef
	}{
		{newCluster(), KindTFRCluster, false, Stacks{Own: "cluster.main", Children: "tenant."}, ParentRef{}},
		{newTenant(), KindTFRTenant, true,
			Stacks{Own: "tenant." + testNamespace + ".acme", Parent: "cluster.main", Children: "server." + testNamespace + "."},
			ParentRef{Kind: KindTFRCluster, Name: "main", Field: field.NewPath("spec", "clusterRef")}},
		{personal, KindTFRTenant, true,
			Stacks{Own: "tenant." + testNamespace + ".acme", Shared: "tenant.personal-chat._shared", Parent: "cluster.main", Children: "server." + testNamespace + "."},
			ParentRef{Kind: KindTFRCluster, Name: "main", Field: field.NewPath("spec", "clusterRef")}},
		{newServer(), KindTFRServer, true,
			Stacks{Own: "server." + testNamespace + ".robot-a", Parent: "tenant." + testNamespace + ".acme"},
			ParentRef{Kind: KindTFRTenant, Name: "acme", Field: field.NewPath("spec", "tenantRef")}},
	} {
		name := string(tc.kind)
		if got := tc.obj.KindName(); got != tc.kind {
			t.Errorf("%s: KindName = %s", name, got)
		}
		if got := tc.obj.Namespaced(); got != tc.namespaced {
			t.Errorf("%s: Namespaced = %v", name, got)
		}
		s, err := tc.obj.Stacks()
		if err != nil || s != tc.stacks {
			t.Errorf("%s: Stacks = %+v, %v; want %+v", name, s, err, tc.stacks)
		}
		if got := tc.obj.Parent(); !reflect.DeepEqual(got, tc.parent) {
			t.Errorf("%s: Parent = %+v, want %+v", name, got, tc.parent)
		}
		if got := reflect.ValueOf(tc.obj.GetSpec()).Elem().FieldByName("DriftDetection").Interface(); !reflect.DeepEqual(got, tc.obj.GetDriftDetection()) {
			t.Errorf("%s: GetSpec does not point at the spec", name)
		}
	}

	// A name no stack can carry is an error, not a stack name.
	if _, err := newServer(func(s *TFRServer) { s.Spec.TenantRef = "" }).Stacks(); err == nil {
		t.Error("a server without a tenantRef has a parent stack")
	}
	if _, err := newTenant(func(x *TFRTenant) { x.Spec.Type = TenantPersonal }).Stacks(); err == nil {
		t.Error("a personal tenant without a job type has a shared stack")
	}
}

func TestSetParentFillsOnlyAnEmptyRef(t *testing.T) {
	s := newServer(func(s *TFRServer) { s.Spec.TenantRef = "" })
	s.SetParent("acme")
	s.SetParent("other")
	if s.Spec.TenantRef != "acme" {
		t.Errorf("tenantRef = %q", s.Spec.TenantRef)
	}
	tn := newTenant()
	tn.SetParent("other")
	if tn.Spec.ClusterRef != "main" {
		t.Errorf("clusterRef = %q", tn.Spec.ClusterRef)
	}
	newCluster().SetParent("x") // no parent: nothing to set, nothing to break
}

func TestValidateUpdateRefusesAnotherKind(t *testing.T) {
	for _, tc := range []struct{ obj, old Object }{
		{newCluster(), newTenant()},
		{newTenant(), newServer()},
		{newServer(), newCluster()},
		{newServer(), nil},
	} {
		errs := tc.obj.ValidateUpdate(tc.old)
		if len(errs) != 1 || errs[0].Field != "kind" {
			t.Errorf("%s over %T: %v", tc.obj.KindName(), tc.old, errs)
		}
	}
	if errs := newTenant().ValidateUpdate(newTenant()); len(errs) != 0 {
		t.Errorf("same tenant: %v", errs)
	}
}

func TestVisitSecrets(t *testing.T) {
	c := newCluster(func(c *TFRCluster) {
		c.Spec.ImageRegistry = &ImageRegistrySpec{Credentials: &RegistryCredentials{Server: "r", Username: "u", Password: "hunter2"}}
	})
	s := newServer(func(s *TFRServer) { s.Spec.SecretData = map[string]string{"API_KEY": "k1", "TOKEN": "k2"} })
	for _, tc := range []struct {
		obj  Object
		want map[string]string
	}{
		{c, map[string]string{"spec.imageRegistry.credentials.password": "hunter2"}},
		{s, map[string]string{"spec.secretData[API_KEY]": "k1", "spec.secretData[TOKEN]": "k2"}},
		{newTenant(), map[string]string{}},
		{newCluster(), map[string]string{}},
	} {
		seen := map[string]string{}
		tc.obj.VisitSecrets(func(p *field.Path, v string) string {
			seen[p.String()] = v
			return v
		})
		if !reflect.DeepEqual(seen, tc.want) {
			t.Errorf("%s: visited %v, want %v", tc.obj.KindName(), seen, tc.want)
		}
		tc.obj.VisitSecrets(func(*field.Path, string) string { return "x" })
		tc.obj.VisitSecrets(func(p *field.Path, v string) string {
			if v != "x" {
				t.Errorf("%s: %s not replaced: %q", tc.obj.KindName(), p, v)
			}
			return v
		})
	}
}

func TestDataDeletionPolicy(t *testing.T) {
	tn := newTenant()
	tn.Default()
	if got := tn.DataDeletionPolicy(); got != DeletionRetain {
		t.Errorf("tenant: %q", got)
	}
	for _, o := range []Object{newCluster(), newServer()} {
		if got := o.DataDeletionPolicy(); got != "" {
			t.Errorf("%s: %q", o.KindName(), got)
		}
	}
}
