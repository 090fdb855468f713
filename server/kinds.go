package server

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// RedactedValue stands in for every secret value in responses and stored records. A request
// that sends it back as a value is refused: it would deploy the placeholder.
const RedactedValue = "[secret]"

// kindInfo is what the HTTP API adds to a kind: where it lives in the URL space. Everything
// else the handlers need to know about a kind is the kind's own description (v1alpha1.Object);
// the handlers are written once over both, and nothing in the package switches on the kind.
type kindInfo struct {
	newObj func() v1alpha1.Object
	plural string // path segment: clusters, tenants, servers
	// route is the echo route of the collection: with :ns for a namespaced kind, and with
	// :tenant for servers, which the URL nests under their tenant.
	route string
	// parent is the kind the URL nests this one under (a server's tenant), nil for none.
	parent *kindInfo

	// From newObj, for the handlers' convenience.
	kind       v1alpha1.Kind
	level      string // first part of the kind's stack names
	namespaced bool
}

func newKindInfo(newObj func() v1alpha1.Object, plural, route string, parent *kindInfo) *kindInfo {
	o := newObj()
	return &kindInfo{newObj: newObj, plural: plural, route: route, parent: parent,
		kind: o.KindName(), level: o.StackLevel(), namespaced: o.Namespaced()}
}

var (
	clusterKind   = newKindInfo(func() v1alpha1.Object { return &v1alpha1.TFRCluster{} }, "clusters", "/v1/clusters", nil)
	tenantKind    = newKindInfo(func() v1alpha1.Object { return &v1alpha1.TFRTenant{} }, "tenants", "/v1/namespaces/:ns/tenants", nil)
	serverKind    = newKindInfo(func() v1alpha1.Object { return &v1alpha1.TFRServer{} }, "servers", "/v1/namespaces/:ns/tenants/:tenant/servers", tenantKind)
	resourceKinds = []*kindInfo{clusterKind, tenantKind, serverKind}
)

// decode strictly decodes a request body into an object of the kind; the field problems are
// the non-fatal ones (see decodeDocument).
func (k *kindInfo) decode(body []byte) (v1alpha1.Object, []FieldProblem, error) {
	return decodeDocument(body, k.newObj)
}

// redacted returns a copy of obj with every secret value replaced by RedactedValue, and
// whether there was any.
func redacted(obj v1alpha1.Object) (v1alpha1.Object, bool) {
	cp := obj.DeepCopyObject().(v1alpha1.Object)
	found := false
	cp.VisitSecrets(func(*field.Path, string) string {
		found = true
		return RedactedValue
	})
	return cp, found
}

// checkRequest validates what the CRD schema cannot see but an HTTP body can carry: labels
// and annotations, and secret values that are the placeholder this API returns instead of
// them (a GET response sent back as a PUT).
func checkRequest(obj v1alpha1.Object) field.ErrorList {
	mp := field.NewPath("metadata")
	errs := metavalidation.ValidateLabels(obj.GetLabels(), mp.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(obj.GetAnnotations(), mp.Child("annotations"))...)
	obj.VisitSecrets(func(p *field.Path, v string) string {
		if v == RedactedValue {
			errs = append(errs, field.Invalid(p, field.OmitValueType{}, "send the secret value itself: the API never returns it, so "+RedactedValue+" cannot be re-applied"))
		}
		return v
	})
	return errs
}

// fromRecord decodes a stored record back into an object.
func (k *kindInfo) fromRecord(rec *Record) (v1alpha1.Object, error) {
	obj, fields, err := k.decode(rec.Document)
	if err == nil && len(fields) > 0 {
		err = invalid("", fields...)
	}
	if err != nil {
		return nil, fmt.Errorf("stored record of %s is unreadable: %w", rec.Stack, err)
	}
	return obj, nil
}

// ref names one resource (or a collection, with an empty name) by its URL.
type ref struct {
	k         *kindInfo
	namespace string // tenants and servers
	tenant    string // servers: the tenant in the URL
	name      string
}

// stack is the resource's own stack, from the URL alone.
func (r ref) stack() (string, error) { return stackname.Of(r.k.level, r.namespace, r.name) }

// parentStack is, for a kind the URL nests under its parent, the parent's stack.
func (r ref) parentStack() (string, error) {
	return stackname.Of(r.k.parent.level, r.namespace, r.tenant)
}

// stackPrefix is the stack-name prefix of the collection.
func (r ref) stackPrefix() string { return stackname.Prefix(r.k.level, r.namespace) }

// collection is the URL of the collection: its route with the URL's path parameters.
func (r ref) collection() string {
	return strings.NewReplacer(":ns", url.PathEscape(r.namespace), ":tenant", url.PathEscape(r.tenant)).Replace(r.k.route)
}

// href is the URL of the resource.
func (r ref) href() string { return r.collection() + "/" + url.PathEscape(r.name) }

// String is "TFRTenant tfrs-system/acme".
func (r ref) String() string {
	if r.namespace == "" {
		return fmt.Sprintf("%s %s", r.k.kind, r.name)
	}
	return fmt.Sprintf("%s %s/%s", r.k.kind, r.namespace, r.name)
}

// bind makes a body agree with its URL: a missing name, namespace or (for a server) tenantRef
// comes from the URL, a different one is an error naming the field.
func (r ref) bind(obj v1alpha1.Object) field.ErrorList {
	var errs field.ErrorList
	mp := field.NewPath("metadata")
	switch {
	case r.name == "":
	case obj.GetName() == "":
		obj.SetName(r.name)
	case obj.GetName() != r.name:
		errs = append(errs, field.Invalid(mp.Child("name"), obj.GetName(), "must match the name in the URL"))
	}
	switch {
	case !r.k.namespaced:
		if obj.GetNamespace() != "" {
			errs = append(errs, field.Forbidden(mp.Child("namespace"), "a "+string(r.k.kind)+" is cluster-scoped"))
		}
	case obj.GetNamespace() == "":
		obj.SetNamespace(r.namespace)
	case obj.GetNamespace() != r.namespace:
		errs = append(errs, field.Invalid(mp.Child("namespace"), obj.GetNamespace(), "must match the namespace in the URL"))
	}
	if r.k.parent != nil {
		obj.SetParent(r.tenant)
		if p := obj.Parent(); p.Name != r.tenant {
			errs = append(errs, field.Invalid(p.Field, p.Name, "must match the tenant in the URL"))
		}
	}
	return errs
}

// newRecord is the stored form of an accepted object; prev (may be nil) is the record it
// replaces.
func newRecord(k *kindInfo, obj v1alpha1.Object, t kinds.Target, prev *Record, now time.Time) (*Record, error) {
	red, had := redacted(obj)
	doc, err := json.Marshal(documentOf(red))
	if err != nil {
		return nil, err
	}
	rec := &Record{Kind: k.kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Stack: t.Stack,
		Parent: obj.Parent().Name, Document: doc, Redacted: had, Generation: 1}
	rec.Created, rec.Updated = now, now
	if prev != nil {
		rec.Generation = prev.Generation + 1
		rec.Created = prev.Created
	}
	return rec, nil
}
