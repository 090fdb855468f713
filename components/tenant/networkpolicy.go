package tenant

import (
	"fmt"

	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	networkingv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/networking/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
)

// The tenant namespace's network isolation: Kubernetes NetworkPolicies, enforced by the CNI
// for every pod, in the mesh or not. The Istio AuthorizationPolicy only guards workloads that
// have a sidecar; the CNPG, MinIO and RabbitMQ pods run outside the mesh, so without these a
// pod of any namespace could dial a tenant's database directly.
//
// The model (policies are additive allow-lists once any policy selects a pod):
//
//	policy                        pods                      may be reached from
//	tfrs-default-deny-ingress     every pod                 nobody (the deny every allow below refines)
//	tfrs-allow-tenant             every pod (in a personal  the namespace itself; namespaces labelled
//	                              job type's namespace:     tfrs.io/platform-role ingress, mesh or monitoring
//	                              all but Prometheus)
//	tfrs-allow-prometheus         Prometheus, personal      the namespace's pods that are not robots;
//	                              namespaces only           the same platform roles
//	tfrs-allow-cnpg-operator      cnpg.io/cluster pods      role cnpg-operator, TCP 8000 (status) and 5432
//	tfrs-allow-minio-operator     v1.min.io/tenant pods     role minio-operator, TCP 9000 (MinIO API)
//	tfrs-allow-rabbitmq-operator  RabbitMQ pods             role rabbitmq-operator, TCP 15672/15671 (management)
//
// Platform namespaces are matched by clusterns.PlatformRoleLabel, never by name: a name is
// whatever namespace a tenant manages to take, while the label is set only by the cluster
// stack on the namespaces it installs into (and by the admin on the monitoring namespace),
// and TFRS refuses it on every tenant namespace it builds (NewNamespace). The tenant's own
// namespace is matched as the policy's own (an empty podSelector peer), not by any label.
//
// Kubelet probes come from the node, which CNIs admit regardless of policy. Egress is
// restricted by the policies of egress.go: default deny, explicit allows.
const (
	// NetworkPolicyDefaultDeny selects every pod and allows no ingress.
	NetworkPolicyDefaultDeny = "tfrs-default-deny-ingress"
	// NetworkPolicyAllowTenant admits the namespace itself and the platform's callers.
	NetworkPolicyAllowTenant = "tfrs-allow-tenant"
	// NetworkPolicyAllowPrometheus, in a personal job type's shared namespace only, admits to
	// Prometheus the namespace's pods that are not robots and the platform's callers.
	NetworkPolicyAllowPrometheus = "tfrs-allow-prometheus"

	// PlatformRoleLabel marks the platform namespaces the policies admit (clusterns').
	PlatformRoleLabel = clusterns.PlatformRoleLabel

	// CNPGOperatorNamespace and RabbitMQOperatorNamespace are where the upstream manifests
	// install those operators (the MinIO operator's is cluster.MinIOOperatorNamespace).
	CNPGOperatorNamespace     = clusterns.CNPGOperator
	RabbitMQOperatorNamespace = clusterns.RabbitMQOperator
)

// OperatorPeer is an operator that runs outside the tenant namespace and must reach the pods
// it manages there.
type OperatorPeer struct {
	// Policy is the NetworkPolicy's name.
	Policy string
	// Role is the PlatformRoleLabel value of the namespace the operator runs in.
	Role string
	// PodLabel is the label key (any value) the operator puts on the pods it manages.
	PodLabel string
	// PodLabelValue, when set, is the value PodLabel must have.
	PodLabelValue string
	// Ports are the TCP ports the operator dials.
	Ports []int
}

// OperatorPeers are the operators whose pods the tenant's middleware answers: CloudNativePG
// polls every instance's manager (8000) and connects to PostgreSQL (5432); the MinIO
// operator checks its Tenant through the MinIO API (9000); the RabbitMQ cluster and topology
// operators use the management API (15672, 15671 with TLS).
var OperatorPeers = []OperatorPeer{
	{Policy: "tfrs-allow-cnpg-operator", Role: clusterns.RoleCNPGOperator, PodLabel: "cnpg.io/cluster", Ports: []int{8000, PostgresPort}},
	{Policy: "tfrs-allow-minio-operator", Role: clusterns.RoleMinIOOperator, PodLabel: "v1.min.io/tenant", Ports: []int{9000}},
	{Policy: "tfrs-allow-rabbitmq-operator", Role: clusterns.RoleRabbitMQOperator, PodLabel: "app.kubernetes.io/part-of", PodLabelValue: "rabbitmq", Ports: []int{15672, 15671}},
}

// addNetworkPolicies registers the namespace's NetworkPolicies (see the model above) as
// children of the namespace component. Their resource and object names are the ones they had
// when they trusted namespaces by name, so an existing tenant's policies are updated in place
// on its next up.
//
// noRobotsToPrometheus, for a personal job type's shared namespace, takes the Prometheus pods
// out of tfrs-allow-tenant and admits to them only the namespace's pods that are not robots
// (Grafana) and the platform's callers (NetworkPolicyAllowPrometheus): Prometheus runs
// outside the mesh, so this is what keeps one user's robots from reading every robot's
// metrics (components/tenant/telemetry.go covers the meshed Jaeger and Grafana).
//
// noMinIO leaves out the MinIO operator's policy: the tenant's object storage is external.
func (c *Namespace) addNetworkPolicies(ctx *pulumi.Context, name string, ns pulumi.StringInput, noRobotsToPrometheus, noMinIO bool, opts []pulumi.ResourceOption) error {
	tcp := pulumi.String("TCP")
	policy := func(suffix, policyName string, pods *metav1.LabelSelectorArgs, rules networkingv1.NetworkPolicyIngressRuleArray) error {
		np, err := networkingv1.NewNetworkPolicy(ctx, name+"-"+suffix, &networkingv1.NetworkPolicyArgs{
			Metadata: meta(policyName, ns, nil),
			Spec: &networkingv1.NetworkPolicySpecArgs{
				PodSelector: pods,
				PolicyTypes: pulumi.StringArray{pulumi.String("Ingress")},
				Ingress:     rules,
			},
		}, opts...)
		if err != nil {
			return err
		}
		c.Keep(np)
		return nil
	}
	if err := policy("default-deny-ingress", NetworkPolicyDefaultDeny, &metav1.LabelSelectorArgs{}, nil); err != nil {
		return err
	}
	from := networkingv1.NetworkPolicyPeerArray{
		networkingv1.NetworkPolicyPeerArgs{PodSelector: &metav1.LabelSelectorArgs{}},
		networkingv1.NetworkPolicyPeerArgs{NamespaceSelector: rolesSelector(clusterns.CallerRoles()...)},
	}
	tenantPods := &metav1.LabelSelectorArgs{}
	if noRobotsToPrometheus {
		tenantPods = &metav1.LabelSelectorArgs{MatchExpressions: metav1.LabelSelectorRequirementArray{notIn(kit.LabelName, PrometheusService)}}
		prometheusFrom := networkingv1.NetworkPolicyPeerArray{
			networkingv1.NetworkPolicyPeerArgs{PodSelector: &metav1.LabelSelectorArgs{MatchExpressions: metav1.LabelSelectorRequirementArray{notIn(kit.LabelName, kit.RobotAppName)}}},
			networkingv1.NetworkPolicyPeerArgs{NamespaceSelector: rolesSelector(clusterns.CallerRoles()...)},
		}
		if err := policy("allow-prometheus", NetworkPolicyAllowPrometheus, &metav1.LabelSelectorArgs{MatchLabels: pulumi.ToStringMap(appLabels(PrometheusService))},
			networkingv1.NetworkPolicyIngressRuleArray{networkingv1.NetworkPolicyIngressRuleArgs{From: prometheusFrom}}); err != nil {
			return err
		}
	}
	if err := policy("allow-tenant", NetworkPolicyAllowTenant, tenantPods,
		networkingv1.NetworkPolicyIngressRuleArray{networkingv1.NetworkPolicyIngressRuleArgs{From: from}}); err != nil {
		return err
	}
	for _, o := range OperatorPeers {
		if noMinIO && o.Role == clusterns.RoleMinIOOperator {
			continue
		}
		pods := &metav1.LabelSelectorArgs{MatchExpressions: metav1.LabelSelectorRequirementArray{
			metav1.LabelSelectorRequirementArgs{Key: pulumi.String(o.PodLabel), Operator: pulumi.String("Exists")},
		}}
		if o.PodLabelValue != "" {
			pods = &metav1.LabelSelectorArgs{MatchLabels: pulumi.StringMap{o.PodLabel: pulumi.String(o.PodLabelValue)}}
		}
		var ports networkingv1.NetworkPolicyPortArray
		for _, p := range o.Ports {
			ports = append(ports, networkingv1.NetworkPolicyPortArgs{Port: pulumi.Int(p), Protocol: tcp})
		}
		rule := networkingv1.NetworkPolicyIngressRuleArgs{
			From:  networkingv1.NetworkPolicyPeerArray{networkingv1.NetworkPolicyPeerArgs{NamespaceSelector: rolesSelector(o.Role)}},
			Ports: ports,
		}
		if err := policy(o.Policy[len("tfrs-"):], o.Policy, pods, networkingv1.NetworkPolicyIngressRuleArray{rule}); err != nil {
			return err
		}
	}
	return nil
}

// notIn is a label requirement "key NotIn values" (a pod without key matches).
func notIn(key string, values ...string) metav1.LabelSelectorRequirementArgs {
	return metav1.LabelSelectorRequirementArgs{Key: pulumi.String(key), Operator: pulumi.String("NotIn"), Values: pulumi.ToStringArray(values)}
}

// rolesSelector selects the platform namespaces of roles (by PlatformRoleLabel).
func rolesSelector(roles ...string) *metav1.LabelSelectorArgs {
	return &metav1.LabelSelectorArgs{MatchExpressions: metav1.LabelSelectorRequirementArray{
		metav1.LabelSelectorRequirementArgs{Key: pulumi.String(PlatformRoleLabel), Operator: pulumi.String("In"), Values: pulumi.ToStringArray(roles)},
	}}
}

// platformLabelFree refuses tenant namespace labels that carry PlatformRoleLabel: the
// policies of every tenant admit a namespace with it, so a tenant namespace never has it.
func platformLabelFree(labels map[string]string) error {
	if v, ok := labels[PlatformRoleLabel]; ok {
		return fmt.Errorf("namespace: label %s=%q is reserved for platform namespaces (the cluster stack and the admin set it); a tenant namespace cannot carry it", PlatformRoleLabel, v)
	}
	return nil
}
