package tenant

import (
	"encoding/base64"
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
)

// Names of the isolation objects in every tenant namespace.
const (
	// PeerAuthenticationName is "default": Istio applies a namespace's PeerAuthentication
	// without a selector to every workload in it.
	PeerAuthenticationName = "default"
	// AuthorizationPolicyName is the namespace's allow-list.
	AuthorizationPolicyName = "tenant-isolation"
)

// PullSecret is the registry pull Secret copied into the tenant namespace: the cluster's
// shared one, or the namespace's own, which the admin keeps elsewhere.
type PullSecret struct {
	// Name of the Secret (the cluster stack's pullSecretName output).
	Name string
	// DockerConfigJSON is its .dockerconfigjson (the cluster stack's secret output).
	DockerConfigJSON pulumi.StringInput
	// From, instead of DockerConfigJSON, names the kubernetes.io/dockerconfigjson Secret to
	// copy: the namespace's own pull credential, read (never managed) by the provisioner.
	From *SecretRef
}

// SecretRef names a Secret of another namespace.
type SecretRef struct {
	Namespace, Name string
}

// NamespaceArgs configure the namespace component.
type NamespaceArgs struct {
	// Name of the namespace.
	Name string
	// Labels identify the tenant (type, tenant or job type); istio-injection is added.
	Labels map[string]string
	// Annotations of the namespace (the owner marker).
	Annotations map[string]string
	// PullSecret is copied into the namespace; nil when the cluster has no registry
	// credentials.
	PullSecret *PullSecret
	// AllowedNamespaces may call the tenant's workloads besides the namespace itself: the
	// ingress gateway's, istio-system and the monitoring namespace. Every other namespace is
	// denied.
	AllowedNamespaces []string
	// Egress is where the namespace's pods may connect (egress.go), written by the
	// provisioner. Nil: egress stays open (a cluster stack from before the policy exports
	// none; its tenants get it on their first up after the cluster's).
	Egress *Egress
	// NoMinIO: the tenant's object storage is external, so no MinIO runs here and neither
	// the MinIO operator's ingress nor the MinIO sidecar's API server egress is allowed.
	NoMinIO bool
	// RobotsReadNoTelemetry, for a personal job type's shared namespace, keeps every robot's
	// mesh identity away from the shared Prometheus, Jaeger query and Grafana (telemetry.go).
	RobotsReadNoTelemetry bool
	// Quota is the namespace's class: its LimitRange and ResourceQuotas (quota.go), made by
	// the provisioner. Nil: none (a program run without a cluster policy, tests).
	Quota *Quota
	// Retain keeps the namespace on destroy. It must follow the deletion policy of the data
	// inside: deleting a namespace deletes everything in it, retained or not.
	Retain bool
	// Applier, when set, creates the namespace's applier identity (see applier.go) and makes
	// the provisioner own the Namespace and its isolation objects. Nil: everything goes
	// through the stack's default provider (rendering, and programs run outside the runner).
	Applier *Applier
}

// Namespace is the tenant namespace with its mesh isolation: STRICT mTLS for every
// workload and an ALLOW policy that, being the only one, denies whatever it does not list.
type Namespace struct {
	pulumi.ResourceState
	children.Set

	// Name of the namespace (an output, so dependants wait for it to exist).
	Name pulumi.StringOutput `pulumi:"name"`
	// PullSecretName is the copied pull Secret ("" when there is none).
	PullSecretName pulumi.StringOutput `pulumi:"pullSecretName"`
}

// NewNamespace creates the namespace component.
func NewNamespace(ctx *pulumi.Context, name string, args *NamespaceArgs, opts ...pulumi.ResourceOption) (*Namespace, error) {
	if args == nil || args.Name == "" {
		return nil, fmt.Errorf("namespace: a name is required")
	}
	if p := args.PullSecret; p != nil && (p.Name == "" || (p.DockerConfigJSON == nil) == (p.From == nil)) {
		return nil, fmt.Errorf("namespace: pull secret needs a name and either its dockerconfigjson or the Secret to copy")
	}
	if err := platformLabelFree(args.Labels); err != nil {
		return nil, err
	}
	c := &Namespace{}
	if err := ctx.RegisterComponentResource(NamespaceType, name, c, opts...); err != nil {
		return nil, err
	}
	labels := map[string]string{"istio-injection": "enabled"}
	for k, v := range args.Labels {
		labels[k] = v
	}
	// privileged: the Namespace and the isolation objects, which the applier must not change.
	privileged := []pulumi.ResourceOption{pulumi.Parent(c)}
	if args.Applier != nil {
		privileged = append(privileged, pulumi.Provider(args.Applier.Provider))
	}
	ns, err := corev1.NewNamespace(ctx, name+"-namespace", &corev1.NamespaceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(args.Name), Labels: pulumi.ToStringMap(withPodSecurity(labels)), Annotations: annotations(args.Annotations)},
	}, retain(args.Retain, privileged...)...)
	if err != nil {
		return nil, err
	}
	c.Keep(ns)
	// nsName is the namespace once it exists; ready once whatever applies into it may.
	nsName, ready := ns.Metadata.Name().Elem(), ns.Metadata.Name().Elem()
	if args.Applier != nil {
		if ready, err = c.addApplier(ctx, name, nsName, args.Applier); err != nil {
			return nil, err
		}
	}
	if q := args.Quota; q != nil {
		if ready, err = c.addQuota(ctx, name, nsName, ready, q, privileged); err != nil {
			return nil, err
		}
	}

	c.PullSecretName = pulumi.String("").ToStringOutput()
	if p := args.PullSecret; p != nil {
		var data pulumi.StringOutput
		if p.From != nil {
			if data, err = c.readPullSecret(ctx, name, p.From, privileged); err != nil {
				return nil, err
			}
		} else {
			data = p.DockerConfigJSON.ToStringOutput().ApplyT(func(s string) string {
				return base64.StdEncoding.EncodeToString([]byte(s))
			}).(pulumi.StringOutput)
		}
		s, err := corev1.NewSecret(ctx, name+"-pull-secret", &corev1.SecretArgs{
			Metadata: meta(p.Name, ready, nil),
			Type:     pulumi.String("kubernetes.io/dockerconfigjson"),
			Data:     pulumi.StringMap{".dockerconfigjson": pulumi.ToSecret(data).(pulumi.StringOutput)},
		}, pulumi.Parent(c))
		if err != nil {
			return nil, err
		}
		c.Keep(s)
		c.PullSecretName = s.Metadata.Name().Elem()
	}

	pa, err := crs.New(ctx, name+"-peer-authentication", crs.Args{
		Metadata: meta(PeerAuthenticationName, nsName, nil),
		Spec:     crs.StrictMTLS(),
	}, privileged...)
	if err != nil {
		return nil, err
	}
	// Source namespaces are only known for mTLS traffic, which STRICT makes all traffic.
	allowed := []string{args.Name}
	for _, n := range args.AllowedNamespaces {
		if n != "" && n != args.Name {
			allowed = append(allowed, n)
		}
	}
	ap, err := crs.New(ctx, name+"-authorization-policy", crs.Args{
		Metadata: meta(AuthorizationPolicyName, nsName, nil),
		Spec:     crs.AuthorizationPolicy(nil, crs.Allow, crs.FromNamespaces(allowed...)),
	}, privileged...)
	if err != nil {
		return nil, err
	}
	c.Keep(pa, ap)
	if err := c.addNetworkPolicies(ctx, name, nsName, args.RobotsReadNoTelemetry, args.NoMinIO, privileged); err != nil {
		return nil, err
	}
	if args.RobotsReadNoTelemetry {
		np, err := crs.New(ctx, name+"-robots-no-telemetry", crs.Args{
			Metadata: meta(RobotsNoTelemetryPolicy, nsName, nil), Spec: RobotsNoTelemetry(),
		}, privileged...)
		if err != nil {
			return nil, err
		}
		c.Keep(np)
	}
	if args.Egress != nil {
		e := *args.Egress
		e.NoMinIO = args.NoMinIO
		if err := c.addEgressPolicies(ctx, name, nsName, &e, privileged); err != nil {
			return nil, err
		}
	}

	c.Name = ready
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": c.Name, "pullSecretName": c.PullSecretName})
}

// annotations is nil for none, so a namespace without any keeps its old inputs.
func annotations(m map[string]string) pulumi.StringMapInput {
	if len(m) == 0 {
		return nil
	}
	return pulumi.ToStringMap(m)
}

// readPullSecret reads the namespace's own pull credential (read, never managed: the admin
// owns it) with the provisioner, the only identity that may read another namespace, and
// returns its .dockerconfigjson as the Secret holds it (base64).
func (c *Namespace) readPullSecret(ctx *pulumi.Context, name string, from *SecretRef, privileged []pulumi.ResourceOption) (pulumi.StringOutput, error) {
	src, err := corev1.GetSecret(ctx, name+"-pull-credential", pulumi.ID(from.Namespace+"/"+from.Name), nil, privileged...)
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	what := fmt.Sprintf("pull credential: Secret %s/%s", from.Namespace, from.Name)
	return pulumi.All(src.Type, src.Data).ApplyT(func(v []any) (string, error) {
		if t, _ := v[0].(string); t != "kubernetes.io/dockerconfigjson" {
			return "", fmt.Errorf("%s is not of type kubernetes.io/dockerconfigjson", what)
		}
		data, _ := v[1].(map[string]string)
		if data[".dockerconfigjson"] == "" {
			return "", fmt.Errorf("%s has no .dockerconfigjson", what)
		}
		return data[".dockerconfigjson"], nil
	}).(pulumi.StringOutput), nil
}
