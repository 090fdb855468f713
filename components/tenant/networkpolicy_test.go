package tenant

import (
	"sort"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/internal/netpol"
	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

const networkPolicyType = "kubernetes:networking.k8s.io/v1:NetworkPolicy"

// tenantNetwork registers a tenant namespace and returns the cluster view of its policies.
func tenantNetwork(t *testing.T, name string) netpol.Cluster {
	t.Helper()
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewNamespace(ctx, "namespace", &NamespaceArgs{
			Name: name, AllowedNamespaces: []string{"istio-ingress", "istio-system", "monitoring"},
		})
		return err
	})
	var c netpol.Cluster
	for _, r := range m.All(networkPolicyType) {
		np, err := netpol.Parse(pt.Plain(r.Inputs))
		if err != nil {
			t.Fatal(err)
		}
		c.Policies = append(c.Policies, np)
	}
	c.NamespaceLabels = platformNamespaces()
	return c
}

// platformNamespaces are the cluster's platform namespaces with the labels the cluster stack
// (and, for monitoring, the admin) sets, plus look-alikes that lack them.
func platformNamespaces() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, ns := range []string{"istio-ingress", "istio-system", CNPGOperatorNamespace, "minio-operator", RabbitMQOperatorNamespace} {
		out[ns] = clusterns.Labels(ns)
	}
	// Monitoring installed by the admin in a namespace of their choosing, labelled by them.
	out["observability"] = map[string]string{PlatformRoleLabel: clusterns.RoleMonitoring}
	// A namespace of another role's name but without the label (e.g. a tenant took it).
	out["monitoring"] = map[string]string{"app.kubernetes.io/name": "monitoring"}
	out["some-operator"] = map[string]string{PlatformRoleLabel: "operator"}
	return out
}

// Pods of a tenant namespace, labelled as their operators and charts label them.
var (
	postgresPod = map[string]string{"cnpg.io/cluster": "acme-pg", "cnpg.io/instanceRole": "primary", "role": "primary"}
	minioPod    = map[string]string{"v1.min.io/tenant": MinIOTenant, "v1.min.io/pool": "pool-0"}
	rabbitPod   = map[string]string{"app.kubernetes.io/name": RabbitMQCluster, "app.kubernetes.io/component": "rabbitmq", "app.kubernetes.io/part-of": "rabbitmq"}
	redisPod    = map[string]string{"app.kubernetes.io/name": "redis"}
	appPod      = map[string]string{"app.kubernetes.io/name": "tfrobot-front"}
)

// What the NetworkPolicies mean: which peer may open a connection to which tenant pod and
// port, under Kubernetes NetworkPolicy semantics.
func TestNetworkPoliciesMeaning(t *testing.T) {
	c := tenantNetwork(t, "acme")
	// Another tenant has the same policies in its namespace (they do not open acme's pods).
	c.Policies = append(c.Policies, tenantNetwork(t, "other").Policies...)

	in := func(ns string, l map[string]string) netpol.Pod { return netpol.Pod{Namespace: ns, Labels: l} }
	acme := func(l map[string]string) netpol.Pod { return in("acme", l) }
	anyPod := map[string]string{"app": "whatever"}
	type target struct {
		name string
		pod  map[string]string
		port int32
	}
	targets := []target{
		{"postgres", postgresPod, 5432}, {"minio", minioPod, 9000}, {"rabbitmq", rabbitPod, 5672},
		{"redis", redisPod, 6379}, {"app", appPod, 8080},
	}
	peers := []struct {
		name string
		from netpol.Pod
		want bool
	}{
		{"same namespace", acme(appPod), true},
		{"ingress gateway", in("istio-ingress", map[string]string{"istio": "ingressgateway"}), true},
		{"monitoring (labelled by the admin)", in("observability", map[string]string{"app.kubernetes.io/name": "prometheus"}), true},
		{"a namespace named monitoring without the label", in("monitoring", map[string]string{"app.kubernetes.io/name": "prometheus"}), false},
		{"istio-system", in("istio-system", map[string]string{"app": "istiod"}), true},
		{"an operator's namespace (only its own pods and ports)", in(RabbitMQOperatorNamespace, anyPod), false},
		{"a namespace with an unknown role", in("some-operator", anyPod), false},
		{"another tenant's namespace", in("other", anyPod), false},
		{"another tenant's pod with acme's labels", in("other", postgresPod), false},
		{"default", in("default", anyPod), false},
		{"kube-system", in("kube-system", anyPod), false},
		{"a namespace called like a label value", in("acme-pg", anyPod), false},
	}
	for _, p := range peers {
		for _, tg := range targets {
			got, err := c.Allowed(p.from, acme(tg.pod), "TCP", tg.port)
			if err != nil {
				t.Fatal(err)
			}
			if got != p.want {
				t.Errorf("%s -> %s:%d allowed = %v, want %v", p.name, tg.name, tg.port, got, p.want)
			}
		}
	}

	// The operators outside the namespace reach only their own pods, on their own ports.
	for _, tc := range []struct {
		name string
		from string
		to   map[string]string
		port int32
		want bool
	}{
		{"cnpg -> instance manager", CNPGOperatorNamespace, postgresPod, 8000, true},
		{"cnpg -> postgres", CNPGOperatorNamespace, postgresPod, 5432, true},
		{"cnpg -> other port", CNPGOperatorNamespace, postgresPod, 22, false},
		{"cnpg -> minio", CNPGOperatorNamespace, minioPod, 9000, false},
		{"cnpg -> app", CNPGOperatorNamespace, appPod, 8000, false},
		{"minio operator -> minio API", "minio-operator", minioPod, 9000, true},
		{"minio operator -> console", "minio-operator", minioPod, 9090, false},
		{"minio operator -> postgres", "minio-operator", postgresPod, 5432, false},
		{"rabbitmq operator -> management", RabbitMQOperatorNamespace, rabbitPod, 15672, true},
		{"rabbitmq operator -> management TLS", RabbitMQOperatorNamespace, rabbitPod, 15671, true},
		{"rabbitmq operator -> AMQP", RabbitMQOperatorNamespace, rabbitPod, 5672, false},
		{"rabbitmq operator -> redis", RabbitMQOperatorNamespace, redisPod, 6379, false},
		// By label, not by name: the names without the label reach nothing.
		{"unlabelled namespace named like cnpg's -> postgres", "acme-cnpg-system", postgresPod, 5432, false},
		{"monitoring -> instance manager", "observability", postgresPod, 8000, true},
	} {
		got, err := c.Allowed(in(tc.from, map[string]string{"app": "operator"}), acme(tc.to), "TCP", tc.port)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: allowed = %v, want %v", tc.name, got, tc.want)
		}
	}

	// Egress is left open (see networkpolicy.go): DNS, the API server's endpoints, istiod and
	// the internet stay reachable; other tenants are closed by their own ingress policies.
	for _, tc := range []struct {
		name  string
		to    netpol.Pod
		proto string
		port  int32
		want  bool
	}{
		{"dns", in("kube-system", map[string]string{"k8s-app": "kube-dns"}), "UDP", 53, true},
		{"istiod xds", in("istio-system", map[string]string{"app": "istiod"}), "TCP", 15012, true},
		{"other tenant's postgres", in("other", postgresPod), "TCP", 5432, false},
		{"other tenant's app", in("other", appPod), "TCP", 8080, false},
	} {
		got, err := c.Allowed(acme(appPod), tc.to, tc.proto, tc.port)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("acme app -> %s: allowed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The policies are named, namespaced and parented as the component's children.
func TestNetworkPolicyObjects(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewNamespace(ctx, "namespace", &NamespaceArgs{Name: "acme", AllowedNamespaces: []string{"monitoring", "acme", ""}})
		return err
	})
	c := m.Find(t, NamespaceType, "")
	var names []string
	for _, r := range m.All(networkPolicyType) {
		pt.Eq(t, r.Name+" parent", r.Parent, c.URN)
		in := pt.Plain(r.Inputs)
		pt.Eq(t, r.Name+" namespace", pt.At(t, in, "metadata", "namespace"), "acme")
		pt.Eq(t, r.Name+" policy types", pt.At(t, in, "spec", "policyTypes"), []any{"Ingress"})
		names = append(names, pt.At(t, in, "metadata", "name").(string))
	}
	sort.Strings(names)
	pt.Eq(t, "policies (sorted)", names, []string{"tfrs-allow-cnpg-operator", "tfrs-allow-minio-operator",
		"tfrs-allow-rabbitmq-operator", NetworkPolicyAllowTenant, NetworkPolicyDefaultDeny})
	allow := pt.Plain(m.Find(t, networkPolicyType, "namespace-allow-tenant").Inputs)
	pt.Eq(t, "allowed namespaces: own by podSelector, the platform's callers by role label only",
		pt.At(t, allow, "spec", "ingress", 0, "from", 1, "namespaceSelector"), map[string]any{"matchExpressions": []any{
			map[string]any{"key": PlatformRoleLabel, "operator": "In", "values": []any{"ingress", "mesh", "monitoring"}},
		}})
}

// No NetworkPolicy names a namespace: every namespaceSelector of every policy selects by
// the platform-role label alone (a selector on kubernetes.io/metadata.name, or on any other
// key, would trust a name a tenant can take).
func TestNetworkPoliciesTrustLabelsOnly(t *testing.T) {
	c := tenantNetwork(t, "acme")
	selectors := 0
	for _, p := range c.Policies {
		for _, r := range p.Spec.Ingress {
			for _, peer := range r.From {
				if peer.NamespaceSelector == nil {
					continue
				}
				selectors++
				if len(peer.NamespaceSelector.MatchLabels) > 0 {
					t.Errorf("%s: namespaceSelector matchLabels %v", p.Name, peer.NamespaceSelector.MatchLabels)
				}
				for _, e := range peer.NamespaceSelector.MatchExpressions {
					if e.Key != PlatformRoleLabel || e.Operator != "In" || len(e.Values) == 0 {
						t.Errorf("%s: namespaceSelector %v trusts something other than a platform role", p.Name, e)
					}
				}
			}
		}
	}
	if selectors != 1+len(OperatorPeers) {
		t.Errorf("%d namespace selectors, want %d", selectors, 1+len(OperatorPeers))
	}
}

// Upgrade: the policies keep the resource names and object names they had when they trusted
// namespaces by name, so a tenant made before keeps its objects and gets them updated in
// place (only spec changes, which Kubernetes updates) on its next up.
func TestNetworkPoliciesUpgradeInPlace(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewNamespace(ctx, "namespace", &NamespaceArgs{Name: "acme", AllowedNamespaces: []string{"istio-ingress", "istio-system", "monitoring"}})
		return err
	})
	got := map[string]string{}
	for _, r := range m.All(networkPolicyType) {
		got[r.Name] = pt.At(t, pt.Plain(r.Inputs), "metadata", "name").(string)
	}
	// As released before platform-role labels (resource name -> metadata.name).
	pt.Eq(t, "resource and object names", got, map[string]string{
		"namespace-default-deny-ingress":    "tfrs-default-deny-ingress",
		"namespace-allow-tenant":            "tfrs-allow-tenant",
		"namespace-allow-cnpg-operator":     "tfrs-allow-cnpg-operator",
		"namespace-allow-minio-operator":    "tfrs-allow-minio-operator",
		"namespace-allow-rabbitmq-operator": "tfrs-allow-rabbitmq-operator",
	})
}

// A tenant namespace never carries the platform-role label, whatever labels its caller
// passes: every tenant's policies admit a namespace that has it.
func TestNamespaceRefusesPlatformRoleLabel(t *testing.T) {
	for _, role := range append(clusterns.Roles(), "", "anything") {
		err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
			_, err := NewNamespace(ctx, "namespace", &NamespaceArgs{Name: "acme", Labels: map[string]string{"tfrs.io/tenant-type": "enterprise", PlatformRoleLabel: role}})
			return err
		})
		if err == nil || !strings.Contains(err.Error(), PlatformRoleLabel) {
			t.Errorf("platform-role %q on a tenant namespace: err = %v", role, err)
		}
	}
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewNamespace(ctx, "namespace", &NamespaceArgs{Name: "acme", Labels: map[string]string{"tfrs.io/tenant-type": "enterprise"}})
		return err
	})
	if _, ok := pt.At(t, pt.Plain(m.Find(t, "kubernetes:core/v1:Namespace", "").Inputs), "metadata", "labels").(map[string]any)[PlatformRoleLabel]; ok {
		t.Error("the tenant namespace carries the platform-role label")
	}
}
