// Package tenant holds the components of the tenant stack (TFRTenant): one ComponentResource
// per node of the tenant graph, each with a tfrs:tenant:<Name> type token.
//
// Like the cluster components, these know nothing of the TFRTenant CRD, of where charts come
// from or of how passwords are made: the program (stacks.Tenant) resolves chart sources,
// generates or looks up credentials and passes plain values and Pulumi inputs in. Passwords
// always arrive as Pulumi secrets and leave only through Kubernetes Secrets and secret
// outputs; workloads read them from those Secrets (secretKeyRef), never from a literal.
//
// Data objects take a Retain flag (the tenant's deletion policy): the CNPG clusters, the
// MinIO Tenant, the Redis and shared-cache PVCs, the Secrets that unlock retained data (the
// PostgreSQL login, MinIO's root configuration) and the namespace itself, since deleting a
// namespace deletes everything in it. With it they get RetainOnDelete, so `destroy` removes
// them from the stack but leaves them, and their data, in the cluster. Nothing is ever
// `protect`ed: a destroy must always succeed.
//
// Helm charts are rendered client-side by the components' kit (kit.NewChart in
// components/internal/kit, which says why); neither Jaeger nor Grafana needs a Helm hook.
// Image mirrors and the registry pull Secret reach chart workloads through the kit's resource
// transforms, so they do not depend on each chart's value names.
//
// The package imports the kit, never another component package: what it shares with the
// cluster and server components (charts, pull secrets, labels, the AuthorizationPolicy) lives
// there. ChartRef and Images are the kit's types, re-exported as aliases because the program
// cannot import an internal package.
package tenant

import (
	"encoding/base64"
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
)

// Type tokens of the tenant components.
const (
	NamespaceType     = "tfrs:tenant:Namespace"
	PostgreSQLType    = "tfrs:tenant:PostgreSQL"
	RedisType         = "tfrs:tenant:Redis"
	MinIOType         = "tfrs:tenant:MinIO"
	ObjectStorageType = "tfrs:tenant:ExternalObjectStorage"
	RabbitMQType      = "tfrs:tenant:RabbitMQ"
	TimescaleDBType   = "tfrs:tenant:TimescaleDB"
	JaegerType        = "tfrs:tenant:Jaeger"
	OtelCollectorType = "tfrs:tenant:OtelCollector"
	PrometheusType    = "tfrs:tenant:Prometheus"
	GrafanaType       = "tfrs:tenant:Grafana"
	VectorType        = "tfrs:tenant:Vector"
	SharedCacheType   = "tfrs:tenant:SharedCache"
	TFRobotFrontType  = "tfrs:tenant:TFRobotFront"
	TFRSUtilsType     = "tfrs:tenant:TFRSUtils"
)

// Names the components share.
const (
	clusterDomain    = "cluster.local"
	skipAwait        = "pulumi.com/skipAwait"
	sidecarInjection = "sidecar.istio.io/inject"
)

// noSidecar keeps Istio's sidecar out of pods whose operator lives in another namespace and
// talks to them directly (CNPG's status port, the MinIO operator's admin calls, the RabbitMQ
// operators' management API): those operators have no sidecar, so under STRICT mTLS they
// could not reach a sidecar-injected pod at all. Clients in the mesh still reach these pods
// (Istio falls back to plain text towards pods without a sidecar).
var noSidecar = map[string]string{sidecarInjection: "false"}

// ServiceHost is the in-cluster DNS name of a Service.
func ServiceHost(service, namespace string) string {
	return service + "." + namespace + ".svc." + clusterDomain
}

// Resources are the requests and limits of a container, as quantity strings by resource
// name ("cpu": "500m").
type Resources struct {
	Requests, Limits map[string]string
}

func (r Resources) empty() bool { return len(r.Requests) == 0 && len(r.Limits) == 0 }

// Args are the typed Kubernetes arguments (Deployments here, the server stack's workers in
// the program); nil when empty. A nil map would be sent as an empty one, so only the maps
// that have entries are set.
func (r Resources) Args() *corev1.ResourceRequirementsArgs {
	if r.empty() {
		return nil
	}
	out := &corev1.ResourceRequirementsArgs{}
	if len(r.Requests) > 0 {
		out.Requests = pulumi.ToStringMap(r.Requests)
	}
	if len(r.Limits) > 0 {
		out.Limits = pulumi.ToStringMap(r.Limits)
	}
	return out
}

// Login is where a component's user name and password come from.
type Login struct {
	// ExistingSecret is a user-given Secret in the tenant namespace. When set it wins: the
	// component reads its keys (see each component) and Password is ignored. The Secret is
	// read, never managed: it belongs to whoever created it.
	ExistingSecret string
	// User is the user name when no Secret gives one (a generated one is a secret).
	User pulumi.StringInput
	// Password is the generated password (a Pulumi secret), used without ExistingSecret.
	Password pulumi.StringInput
	// Unread, set when rendering without a cluster, stands for every key of ExistingSecret,
	// which is then not read (there is no cluster to read it from).
	Unread string
}

func (l Login) validate(what string) error {
	if l.ExistingSecret == "" && l.Password == nil {
		return fmt.Errorf("%s: a password or an existing Secret is required", what)
	}
	return nil
}

func (l Login) user() pulumi.StringOutput {
	if l.User == nil {
		return pulumi.String("").ToStringOutput()
	}
	return l.User.ToStringOutput()
}

// resolveLogin returns the user and password of a Login. From a Secret, userKey is optional
// (empty or missing: l.User) and passwordKey required; the user name is not secret unless
// secretUser (MinIO's root user is its access key), the password always is.
//
// The Secret is read once the namespace output resolves, i.e. after the namespace exists.
func resolveLogin(ctx *pulumi.Context, parent pulumi.Resource, name string, namespace pulumi.StringInput, l Login, userKey, passwordKey string, secretUser bool) (user, password pulumi.StringOutput, err error) {
	user = l.user()
	switch {
	case l.ExistingSecret == "":
		password = pulumi.ToSecret(l.Password.ToStringOutput()).(pulumi.StringOutput)
	case l.Unread != "":
		password = pulumi.ToSecret(pulumi.String(l.Unread)).(pulumi.StringOutput)
		if userKey != "" && l.User == nil {
			user = pulumi.String(l.Unread).ToStringOutput()
		}
	default:
		id := namespace.ToStringOutput().ApplyT(func(ns string) pulumi.ID {
			return pulumi.ID(ns + "/" + l.ExistingSecret)
		}).(pulumi.IDOutput)
		src, err := corev1.GetSecret(ctx, name+"-existing-secret", id, nil, pulumi.Parent(parent))
		if err != nil {
			return user, password, err
		}
		key := func(k string, fallback pulumi.StringOutput) pulumi.StringOutput {
			return pulumi.All(src.Data, fallback).ApplyT(func(v []any) (string, error) {
				data, _ := v[0].(map[string]string)
				enc, ok := data[k]
				if !ok {
					if k == passwordKey {
						return "", fmt.Errorf("%s: Secret %q has no key %q", name, l.ExistingSecret, k)
					}
					return v[1].(string), nil
				}
				b, err := base64.StdEncoding.DecodeString(enc)
				if err != nil {
					return "", fmt.Errorf("%s: key %q of Secret %q is not base64", name, k, l.ExistingSecret)
				}
				return string(b), nil
			}).(pulumi.StringOutput)
		}
		password = pulumi.ToSecret(key(passwordKey, pulumi.String("").ToStringOutput())).(pulumi.StringOutput)
		if userKey != "" {
			user = key(userKey, user)
		}
	}
	if secretUser {
		user = pulumi.ToSecret(user).(pulumi.StringOutput)
	} else {
		// A user name is not a secret; it only became one by being read from a Secret.
		user = pulumi.Unsecret(user).(pulumi.StringOutput)
	}
	return user, password, nil
}

// retain is the option set of a data object under the tenant's deletion policy.
func retain(r bool, opts ...pulumi.ResourceOption) []pulumi.ResourceOption {
	if r {
		opts = append(opts, pulumi.RetainOnDelete(true))
	}
	return opts
}

// patchForce is the Kubernetes provider's annotation that forces a server-side apply through
// field conflicts.
const patchForce = "pulumi.com/patchForce"

// retainedSecret marks the metadata of a Secret kept under the Retain policy so that its
// replacement works. The provider replaces a Secret whose data changes (a password rotation).
// A retained Secret's old copy is not deleted on replace, so the new copy is created over it
// by server-side apply while the old copy's field manager (each copy has its own) still owns
// the data: without force that create fails on a field conflict, and the rotation with it.
// Both copies are this stack's own Secret, so taking the fields over is what is meant.
func retainedSecret(m *metav1.ObjectMetaArgs, retained bool) *metav1.ObjectMetaArgs {
	if retained {
		m.Annotations = pulumi.StringMap{patchForce: pulumi.String("true")}
	}
	return m
}

// meta is the metadata of a namespaced object the component owns.
func meta(name string, ns pulumi.StringInput, labels map[string]string) *metav1.ObjectMetaArgs {
	m := &metav1.ObjectMetaArgs{Name: pulumi.String(name), Namespace: ns}
	if len(labels) > 0 {
		m.Labels = pulumi.ToStringMap(labels)
	}
	return m
}

func appLabels(app string) map[string]string {
	return map[string]string{kit.LabelName: app, kit.LabelPartOf: kit.PartOf}
}

// Images is how a component turns an upstream image into the one to pull (a mirror); nil
// keeps images as they are. The kit's ImageTransform applies it to a chart's workloads.
type Images = kit.ImageRewriter

// ChartRef is a Helm chart to render (the kit's type, the same as cluster.ChartRef: same
// resolution rules).
type ChartRef = kit.ChartRef
