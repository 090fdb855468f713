package server

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
	"github.com/tfrs-io/tfrs-operator/stacks/stackname"
)

// RedactedValue stands in for every secret value in responses and stored records. A request
// that sends it back as a value is refused: it would deploy the placeholder.
const RedactedValue = "[secret]"

// kindInfo is everything that differs between the three resources. The handlers are written
// once over it; nothing else in the package switches on the kind.
type kindInfo struct {
	kind   runner.Kind
	plural string // path segment: clusters, tenants, servers
	// decode strictly decodes a request body into an object of the kind; the field problems
	// are the non-fatal ones (see decodeDocument).
	decode func(body []byte) (runner.Object, []FieldProblem, error)
	// validateUpdate is the type's ValidateUpdate (Validate plus immutability rules).
	validateUpdate func(obj, old runner.Object) field.ErrorList
	// secrets visits every secret value of a spec and replaces it with fn's result.
	secrets func(obj runner.Object, fn func(p *field.Path, v string) string)
	// parentRef reads the parent's name from the spec; setParentRef fills it from the URL.
	parentRef    func(obj runner.Object) string
	setParentRef func(obj runner.Object, name string)
}

var (
	clusterKind = &kindInfo{
		kind: runner.KindCluster, plural: "clusters",
		decode: func(b []byte) (runner.Object, []FieldProblem, error) {
			d, fields, err := decodeDocument[v1alpha1.TFRClusterSpec](b, runner.KindCluster)
			if err != nil {
				return nil, nil, err
			}
			return &v1alpha1.TFRCluster{TypeMeta: typeMeta(runner.KindCluster), ObjectMeta: d.Metadata.kube(), Spec: *d.Spec}, fields, nil
		},
		validateUpdate: func(obj, old runner.Object) field.ErrorList {
			return obj.(*v1alpha1.TFRCluster).ValidateUpdate(old.(*v1alpha1.TFRCluster))
		},
		secrets: func(obj runner.Object, fn func(*field.Path, string) string) {
			x := obj.(*v1alpha1.TFRCluster)
			if r := x.Spec.ImageRegistry; r != nil && r.Credentials != nil && r.Credentials.Password != "" {
				r.Credentials.Password = fn(field.NewPath("spec", "imageRegistry", "credentials", "password"), r.Credentials.Password)
			}
		},
		parentRef:    func(runner.Object) string { return "" },
		setParentRef: func(runner.Object, string) {},
	}
	tenantKind = &kindInfo{
		kind: runner.KindTenant, plural: "tenants",
		decode: func(b []byte) (runner.Object, []FieldProblem, error) {
			d, fields, err := decodeDocument[v1alpha1.TFRTenantSpec](b, runner.KindTenant)
			if err != nil {
				return nil, nil, err
			}
			return &v1alpha1.TFRTenant{TypeMeta: typeMeta(runner.KindTenant), ObjectMeta: d.Metadata.kube(), Spec: *d.Spec}, fields, nil
		},
		validateUpdate: func(obj, old runner.Object) field.ErrorList {
			return obj.(*v1alpha1.TFRTenant).ValidateUpdate(old.(*v1alpha1.TFRTenant))
		},
		// A tenant's credentials are references to Secrets, never values.
		secrets:      func(runner.Object, func(*field.Path, string) string) {},
		parentRef:    func(obj runner.Object) string { return obj.(*v1alpha1.TFRTenant).Spec.ClusterRef },
		setParentRef: func(runner.Object, string) {},
	}
	serverKind = &kindInfo{
		kind: runner.KindServer, plural: "servers",
		decode: func(b []byte) (runner.Object, []FieldProblem, error) {
			d, fields, err := decodeDocument[v1alpha1.TFRServerSpec](b, runner.KindServer)
			if err != nil {
				return nil, nil, err
			}
			return &v1alpha1.TFRServer{TypeMeta: typeMeta(runner.KindServer), ObjectMeta: d.Metadata.kube(), Spec: *d.Spec}, fields, nil
		},
		validateUpdate: func(obj, old runner.Object) field.ErrorList {
			return obj.(*v1alpha1.TFRServer).ValidateUpdate(old.(*v1alpha1.TFRServer))
		},
		secrets: func(obj runner.Object, fn func(*field.Path, string) string) {
			x := obj.(*v1alpha1.TFRServer)
			p := field.NewPath("spec", "secretData")
			for k, v := range x.Spec.SecretData {
				x.Spec.SecretData[k] = fn(p.Key(k), v)
			}
		},
		parentRef: func(obj runner.Object) string { return obj.(*v1alpha1.TFRServer).Spec.TenantRef },
		setParentRef: func(obj runner.Object, name string) {
			if x := obj.(*v1alpha1.TFRServer); x.Spec.TenantRef == "" {
				x.Spec.TenantRef = name
			}
		},
	}
	kinds = []*kindInfo{clusterKind, tenantKind, serverKind}
)

func typeMeta(k runner.Kind) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(k)}
}

// documentOf is the response (and record) form of an object: the CR document without status.
func documentOf(obj runner.Object) any {
	switch x := obj.(type) {
	case *v1alpha1.TFRCluster:
		return document[v1alpha1.TFRClusterSpec]{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(runner.KindCluster), Metadata: metaOf(x), Spec: &x.Spec}
	case *v1alpha1.TFRTenant:
		return document[v1alpha1.TFRTenantSpec]{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(runner.KindTenant), Metadata: metaOf(x), Spec: &x.Spec}
	case *v1alpha1.TFRServer:
		return document[v1alpha1.TFRServerSpec]{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(runner.KindServer), Metadata: metaOf(x), Spec: &x.Spec}
	}
	return nil
}

// redacted returns a copy of obj with every secret value replaced by RedactedValue, and
// whether there was any.
func (k *kindInfo) redacted(obj runner.Object) (runner.Object, bool) {
	cp := obj.DeepCopyObject().(runner.Object)
	found := false
	k.secrets(cp, func(*field.Path, string) string {
		found = true
		return RedactedValue
	})
	return cp, found
}

// checkRequest validates what the CRD schema cannot see but an HTTP body can carry: labels
// and annotations, and secret values that are the placeholder this API returns instead of
// them (a GET response sent back as a PUT).
func (k *kindInfo) checkRequest(obj runner.Object) field.ErrorList {
	mp := field.NewPath("metadata")
	errs := metavalidation.ValidateLabels(obj.GetLabels(), mp.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(obj.GetAnnotations(), mp.Child("annotations"))...)
	k.secrets(obj, func(p *field.Path, v string) string {
		if v == RedactedValue {
			errs = append(errs, field.Invalid(p, field.OmitValueType{}, "send the secret value itself: the API never returns it, so "+RedactedValue+" cannot be re-applied"))
		}
		return v
	})
	return errs
}

// fromRecord decodes a stored record back into an object.
func (k *kindInfo) fromRecord(rec *Record) (runner.Object, error) {
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
func (r ref) stack() (string, error) {
	switch r.k.kind {
	case runner.KindCluster:
		return stackname.Cluster(r.name)
	case runner.KindTenant:
		return stackname.Tenant(r.namespace, r.name)
	default:
		return stackname.Server(r.namespace, r.name)
	}
}

// stackPrefix is the stack-name prefix of the collection.
func (r ref) stackPrefix() string {
	switch r.k.kind {
	case runner.KindCluster:
		return stackname.LevelCluster + "."
	case runner.KindTenant:
		return stackname.LevelTenant + "." + r.namespace + "."
	default:
		return stackname.LevelServer + "." + r.namespace + "."
	}
}

// collection is the URL of the collection.
func (r ref) collection() string {
	switch r.k.kind {
	case runner.KindCluster:
		return "/v1/clusters"
	case runner.KindTenant:
		return "/v1/namespaces/" + url.PathEscape(r.namespace) + "/tenants"
	default:
		return "/v1/namespaces/" + url.PathEscape(r.namespace) + "/tenants/" + url.PathEscape(r.tenant) + "/servers"
	}
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
func (r ref) bind(obj runner.Object) field.ErrorList {
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
	case r.k.kind == runner.KindCluster:
		if obj.GetNamespace() != "" {
			errs = append(errs, field.Forbidden(mp.Child("namespace"), "a TFRCluster is cluster-scoped"))
		}
	case obj.GetNamespace() == "":
		obj.SetNamespace(r.namespace)
	case obj.GetNamespace() != r.namespace:
		errs = append(errs, field.Invalid(mp.Child("namespace"), obj.GetNamespace(), "must match the namespace in the URL"))
	}
	if r.k.kind == runner.KindServer {
		r.k.setParentRef(obj, r.tenant)
		if got := r.k.parentRef(obj); got != r.tenant {
			errs = append(errs, field.Invalid(field.NewPath("spec", "tenantRef"), got, "must match the tenant in the URL"))
		}
	}
	return errs
}

// newRecord is the stored form of an accepted object; prev (may be nil) is the record it
// replaces.
func newRecord(k *kindInfo, obj runner.Object, t runner.Target, prev *Record, now time.Time) (*Record, error) {
	red, had := k.redacted(obj)
	doc, err := json.Marshal(documentOf(red))
	if err != nil {
		return nil, err
	}
	rec := &Record{Kind: k.kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Stack: t.Stack,
		Parent: k.parentRef(obj), Document: doc, Redacted: had, Generation: 1}
	rec.Created, rec.Updated = now, now
	if prev != nil {
		rec.Generation = prev.Generation + 1
		rec.Created = prev.Created
	}
	return rec, nil
}
