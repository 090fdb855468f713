package v1alpha1

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Nothing in a personal TFRTenant steers its job type's shared stack. The generator walks
// every field of TFRTenantSpec: a field is either what makes the tenant a personal tenant of
// its job type (clusterRef, type, jobType), or the shared middleware (refused field by field,
// TestPersonalTenantCannotSetMiddleware), or refused at its own path when set to anything but
// its default. A new field fails here until it is classified.
func TestPersonalTenantSteersNothing(t *testing.T) {
	identity := []string{"clusterRef", "type", "jobType"}
	// Fields that act on the tenant's own stack only: suspend stops its own runs, and a
	// suspended tenant is never the shared stack's owner (stacks.SharedStackOwner, tested
	// there), so it holds no other tenant back.
	own := []string{"suspend"}
	// A non-default value of each remaining field.
	set := map[string][]func(*TFRTenant){
		"namespace": {
			func(x *TFRTenant) { x.Spec.Namespace = "team-a" },
			func(x *TFRTenant) { x.Spec.Namespace = "personal-code" }, // another job type's
			func(x *TFRTenant) { x.Spec.Namespace = "monitoring" },
		},
		"driftDetection": {
			func(x *TFRTenant) { x.Spec.DriftDetection.Enabled = ptr.To(false) },
			func(x *TFRTenant) { x.Spec.DriftDetection.Interval = &metav1.Duration{Duration: time.Minute} },
			func(x *TFRTenant) { x.Spec.DriftDetection.AutoRemediate = true },
		},
		"approval": {
			func(x *TFRTenant) { x.Spec.Approval.Mode = ApprovalAuto },
			func(x *TFRTenant) { x.Spec.Approval.Mode = ApprovalManual },
		},
		"exportOutputs": {func(x *TFRTenant) { x.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "out"} }},
		"class":         {func(x *TFRTenant) { x.Spec.Class = "large" }},
	}
	cases := 0
	typ := reflect.TypeFor[TFRTenantSpec]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && opts == "inline" && f.Type == reflect.TypeFor[TenantMiddleware]():
			continue // refused field by field, see TestPersonalTenantCannotSetMiddleware
		case slices.Contains(identity, name), slices.Contains(own, name):
			continue
		}
		muts, ok := set[name]
		if !ok {
			t.Errorf("TFRTenantSpec.%s (%s) is not classified: can a personal tenant steer its job type's shared stack with it?", f.Name, name)
			continue
		}
		for _, mut := range muts {
			cases++
			x := personalTenant(mut)
			x.Default()
			errs := x.Validate()
			path := "spec." + name
			hit := slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == path || strings.HasPrefix(e.Field, path+".") })
			if !hit {
				t.Errorf("personal tenant with %s set: not refused at %s (errors: %v)", name, path, errs)
			}
		}
	}
	// The defaults, written out, and the job type's own namespace are accepted.
	ok := personalTenant(func(x *TFRTenant) { x.Spec.Namespace = "personal-chat" })
	ok.Default()
	if errs := ok.Validate(); len(errs) > 0 {
		t.Errorf("personal tenant with its job type's namespace refused: %v", errs)
	}
	t.Logf("%d settings of a personal tenant generated, all refused", cases)
}

// A personal tenant's runs follow the cluster's spec.personal approval and drift check.
func TestPersonalGate(t *testing.T) {
	mode, drift := PersonalGate(nil)
	if mode != ApprovalOnDataLoss || drift.Period() != DefaultDriftInterval {
		t.Errorf("no cluster: %s, %v", mode, drift.Period())
	}
	c := newCluster(func(c *TFRCluster) {
		c.Spec.Personal.Approval.Mode = ApprovalManual
		c.Spec.Personal.DriftDetection.Enabled = ptr.To(false)
	})
	mode, drift = PersonalGate(c)
	if mode != ApprovalManual || drift.Period() != 0 {
		t.Errorf("cluster's Manual, drift off: got %s, %v", mode, drift.Period())
	}
	if c.Spec.Personal.DriftDetection.Interval != nil {
		t.Error("PersonalGate changed the cluster")
	}
}
