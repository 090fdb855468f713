package tenant

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
	"github.com/tfrs-io/tfrs-operator/internal/netpol"
	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// egressNetwork registers tenant namespaces with egress e and returns the cluster view of
// every policy they registered, read back from the provider's inputs.
func egressNetwork(t *testing.T, e *Egress, names ...string) netpol.Cluster {
	return egressNetworkOf(t, NamespaceArgs{Egress: e}, names...)
}

// egressNetworkOf is egressNetwork with the namespaces made from args (their names set).
func egressNetworkOf(t *testing.T, args NamespaceArgs, names ...string) netpol.Cluster {
	t.Helper()
	var c netpol.Cluster
	for _, name := range names {
		m := &pt.Mocks{}
		m.Run(t, func(ctx *pulumi.Context) error {
			a := args
			a.Name, a.AllowedNamespaces = name, clusterns.Trusted()
			_, err := NewNamespace(ctx, "namespace", &a)
			return err
		})
		for _, r := range m.All(networkPolicyType) {
			np, err := netpol.Parse(pt.Plain(r.Inputs))
			require.NoError(t, err)
			c.Policies = append(c.Policies, np)
		}
	}
	c.NamespaceLabels = platformNamespaces()
	c.NamespaceLabels["kube-system"] = nil
	return c
}

func defaultEgress() *Egress {
	return &Egress{DNSNamespace: "kube-system", DNSPodLabels: map[string]string{"k8s-app": "kube-dns"}, DNSPort: 53,
		APIServer: []string{"10.96.0.1", "172.18.0.2"}, APIServerPorts: []int32{443, 6443}, PublicInternet: true}
}

// Pods of a tenant namespace that talk to the API server, labelled as their operators and
// TFRS label them, and a robot's pods, which do not.
var (
	prometheusPod = appLabels(PrometheusService)
	grafanaSAPod  = map[string]string{kit.LabelPartOf: kit.PartOf, kit.LabelComponent: "grafana-sa", "app.kubernetes.io/instance": "chat-1"}
	robotPod      = map[string]string{kit.LabelPartOf: kit.PartOf, kit.LabelComponent: "robot-worker", "app.kubernetes.io/instance": "chat-1"}
	apiClientPods = []map[string]string{postgresPod, minioPod, rabbitPod, prometheusPod, grafanaSAPod}
)

// What the egress policies mean for pods: a tenant pod reaches its own namespace, DNS,
// istiod's xDS port and the ingress gateway, and no other pod of the cluster.
func TestEgressPoliciesMeaningForPods(t *testing.T) {
	c := egressNetwork(t, defaultEgress(), "acme", "other")
	from := []map[string]string{robotPod, appPod, redisPod, postgresPod, prometheusPod}
	type dest struct {
		pod      netpol.Pod
		protocol string
		port     int32
		want     bool
	}
	dests := []dest{
		{netpol.Pod{Namespace: "acme", Labels: redisPod}, "TCP", 6379, true},
		{netpol.Pod{Namespace: "acme", Labels: appPod}, "UDP", 9999, true},
		{netpol.Pod{Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}}, "UDP", 53, true},
		{netpol.Pod{Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}}, "TCP", 53, true},
		{netpol.Pod{Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}}, "TCP", 9153, false},
		{netpol.Pod{Namespace: "kube-system", Labels: map[string]string{"component": "etcd"}}, "TCP", 2379, false},
		{netpol.Pod{Namespace: "istio-system", Labels: map[string]string{"app": "istiod"}}, "TCP", IstiodXDSPort, true},
		{netpol.Pod{Namespace: "istio-system", Labels: map[string]string{"app": "istiod"}}, "TCP", 15010, false},
		{netpol.Pod{Namespace: "istio-system", Labels: map[string]string{"app": "istiod"}}, "TCP", 15014, false},
		{netpol.Pod{Namespace: "istio-ingress", Labels: map[string]string{"istio": "ingressgateway"}}, "TCP", 8443, true},
		// Platform namespaces a tenant pod has no business calling, and look-alikes.
		{netpol.Pod{Namespace: "observability", Labels: map[string]string{"app": "prometheus"}}, "TCP", 9090, false},
		{netpol.Pod{Namespace: "monitoring", Labels: map[string]string{"app": "prometheus"}}, "TCP", 9090, false},
		{netpol.Pod{Namespace: CNPGOperatorNamespace, Labels: map[string]string{"app": "cnpg"}}, "TCP", 9443, false},
		{netpol.Pod{Namespace: "tfrs-system", Labels: map[string]string{"app": "tfrs"}}, "TCP", 8080, false},
		// Another tenant: closed by egress here, and by its ingress there.
		{netpol.Pod{Namespace: "other", Labels: redisPod}, "TCP", 6379, false},
		{netpol.Pod{Namespace: "other", Labels: postgresPod}, "TCP", 5432, false},
	}
	n := 0
	for _, f := range from {
		for _, d := range dests {
			got, err := c.Allowed(netpol.Pod{Namespace: "acme", Labels: f}, d.pod, d.protocol, d.port)
			require.NoError(t, err)
			if d.pod.Namespace != "acme" && d.pod.Namespace != "other" {
				// Other namespaces have no policies here: only acme's egress decides.
				require.Equal(t, d.want, got, "acme %v -> %s %v %s/%d", f, d.pod.Namespace, d.pod.Labels, d.protocol, d.port)
			} else {
				require.Equal(t, d.want, got, "acme %v -> %s %v %s/%d", f, d.pod.Namespace, d.pod.Labels, d.protocol, d.port)
			}
			n++
		}
	}
	t.Logf("%d pod-to-pod cases", n)
}

// nonPublic is the reference for "not a public address", written from the address
// predicates of net/netip and the RFCs, apart from NonPublicRanges.
func nonPublic(a netip.Addr) bool {
	if a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsMulticast() ||
		a.IsUnspecified() || a.IsInterfaceLocalMulticast() {
		return true
	}
	for _, r := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48"} {
		if netip.MustParsePrefix(r).Contains(a) {
			return true
		}
	}
	return false
}

// The egress property, over generated policies and destinations: a tenant pod reaches an
// address outside the cluster's pods exactly when the admin allowed its range, or it is
// public, public internet is allowed, and neither blocked nor the API server; and the API
// server only from the pods that need it, on its ports. The cloud metadata service, the
// nodes' and every private address stay closed unless the admin opens them.
func TestEgressPropertyOverGeneratedAddresses(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 2))
	v4 := func() netip.Addr {
		return netip.AddrFrom4([4]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))})
	}
	v6 := func() netip.Addr {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		if rng.IntN(2) == 0 { // mostly global unicast, sometimes anything
			b[0] = 0x20 | byte(rng.IntN(16))
		}
		return netip.AddrFrom16(b)
	}
	// Addresses worth probing: metadata services, private, node-like, the API server's.
	special := []string{"169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200", "10.0.0.1", "10.96.0.1",
		"172.18.0.2", "192.168.1.10", "127.0.0.1", "::1", "fe80::1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "0.0.0.0", "224.0.0.1"}
	randomCIDR := func() string {
		a := v4()
		if rng.IntN(3) == 0 {
			a = v6()
		}
		bits := 8 + rng.IntN(a.BitLen()-8+1)
		return netip.PrefixFrom(a, bits).Masked().String()
	}
	cases, allowed, refusedMeta := 0, 0, 0
	for round := 0; round < 200; round++ {
		e := defaultEgress()
		e.PublicInternet = rng.IntN(3) != 0
		if rng.IntN(2) == 0 { // a managed control plane with a public endpoint
			e.APIServer = []string{"10.96.0.1", v4().String()}
		}
		for i := rng.IntN(3); i > 0; i-- {
			e.Allowed = append(e.Allowed, randomCIDR())
		}
		for i := rng.IntN(3); i > 0; i-- {
			if c := randomCIDR(); netip.MustParsePrefix(c).Bits() > 0 {
				e.Blocked = append(e.Blocked, c)
			}
		}
		e.Allowed, e.Blocked = uniq(e.Allowed), uniq(e.Blocked)
		c := egressNetwork(t, e, "acme")
		in := func(cidrs []string, a netip.Addr) bool {
			return slices.ContainsFunc(cidrs, func(s string) bool { return netip.MustParsePrefix(s).Contains(a) })
		}
		isAPI := func(a netip.Addr) bool {
			return slices.ContainsFunc(e.APIServer, func(s string) bool { return netip.MustParseAddr(s) == a })
		}
		var addrs []netip.Addr
		for _, s := range special {
			addrs = append(addrs, netip.MustParseAddr(s))
		}
		for _, s := range e.APIServer {
			addrs = append(addrs, netip.MustParseAddr(s))
		}
		for _, s := range append(slices.Clone(e.Allowed), e.Blocked...) {
			addrs = append(addrs, netip.MustParsePrefix(s).Addr())
		}
		for i := 0; i < 20; i++ {
			addrs = append(addrs, v4(), v6())
		}
		for _, pod := range append([]map[string]string{robotPod, appPod, redisPod}, apiClientPods...) {
			client := slices.ContainsFunc(apiClientPods, func(l map[string]string) bool { return fmt.Sprint(l) == fmt.Sprint(pod) })
			for _, a := range addrs {
				for _, port := range []int32{443, 6443, 10250, 80} {
					u := a.Unmap()
					want := in(e.Allowed, u) ||
						(e.PublicInternet && !nonPublic(u) && !in(e.Blocked, u) && !isAPI(u)) ||
						(client && isAPI(u) && slices.Contains(e.APIServerPorts, port))
					// An IPv4-mapped address leaves the pod as an IPv4 packet.
					got, err := c.EgressTo(netpol.Pod{Namespace: "acme", Labels: pod}, a.Unmap(), "TCP", port)
					require.NoError(t, err)
					require.Equal(t, want, got, "round %d: %v -> %s:%d under %+v", round, pod, a, port, e)
					cases++
					if got {
						allowed++
					}
					if (a.String() == "169.254.169.254" || a.String() == "fd00:ec2::254") && !got {
						refusedMeta++
					}
				}
			}
		}
	}
	t.Logf("%d generated connections, %d allowed; metadata refused %d times", cases, allowed, refusedMeta)
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// Without an API server address the clients get no allow, and the policy still stands.
func TestEgressWithoutAPIServer(t *testing.T) {
	e := defaultEgress()
	e.APIServer = nil
	ps, err := EgressPolicies(e)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	_, err = EgressPolicies(&Egress{})
	require.ErrorContains(t, err, "DNS")
	e.Blocked = []string{"10.0.0.1/8"}
	_, err = EgressPolicies(e)
	require.ErrorContains(t, err, "not a network address")
}

// In a personal job type's shared namespace no robot reaches Prometheus (outside the mesh,
// so the NetworkPolicies decide), while Grafana and the platform's monitoring still do and
// robots still reach the rest of the namespace; an enterprise namespace is unchanged.
func TestNoRobotReachesSharedPrometheus(t *testing.T) {
	network := func(personal bool) netpol.Cluster {
		m := &pt.Mocks{}
		m.Run(t, func(ctx *pulumi.Context) error {
			_, err := NewNamespace(ctx, "namespace", &NamespaceArgs{Name: "personal-chat", AllowedNamespaces: clusterns.Trusted(), RobotsReadNoTelemetry: personal})
			return err
		})
		var c netpol.Cluster
		for _, r := range m.All(networkPolicyType) {
			np, err := netpol.Parse(pt.Plain(r.Inputs))
			require.NoError(t, err)
			c.Policies = append(c.Policies, np)
		}
		c.NamespaceLabels = platformNamespaces()
		return c
	}
	robot := func(component string) netpol.Pod {
		return netpol.Pod{Namespace: "personal-chat", Labels: map[string]string{kit.LabelName: kit.RobotAppName, kit.LabelComponent: component, kit.LabelPartOf: kit.PartOf}}
	}
	prometheus := netpol.Pod{Namespace: "personal-chat", Labels: prometheusPod}
	grafana := netpol.Pod{Namespace: "personal-chat", Labels: map[string]string{kit.LabelName: "grafana"}}
	redis := netpol.Pod{Namespace: "personal-chat", Labels: redisPod}
	monitoring := netpol.Pod{Namespace: "observability", Labels: map[string]string{"app": "prometheus"}}
	for _, personal := range []bool{true, false} {
		c := network(personal)
		for _, tc := range []struct {
			from, to netpol.Pod
			port     int32
			want     bool
		}{
			{robot("api-worker"), prometheus, 9090, !personal},
			{robot("robot-worker"), prometheus, 9090, !personal},
			{robot("db-init"), prometheus, 9090, !personal},
			{grafana, prometheus, 9090, true},
			{monitoring, prometheus, 9090, true},
			{robot("robot-worker"), redis, 6379, true},
			{robot("robot-worker"), grafana, 3000, true}, // the mesh's DENY decides (telemetry.go)
			{prometheus, robot("robot-worker"), 15020, true},
		} {
			got, err := c.Allowed(tc.from, tc.to, "TCP", tc.port)
			require.NoError(t, err)
			require.Equal(t, tc.want, got, "personal=%v: %v -> %v:%d", personal, tc.from.Labels, tc.to.Labels, tc.port)
		}
	}
}

// With an external object storage (NoMinIO) a pod labelled as MinIO's reaches the API server
// no more, and the other middleware's pods still do: the allowance follows what runs. The
// MinIO operator's ingress policy goes with it (TestTenantExternalObjectStorage).
func TestEgressWithoutMinIO(t *testing.T) {
	api := netip.MustParseAddr("10.96.0.1")
	for _, noMinIO := range []bool{false, true} {
		c := egressNetworkOf(t, NamespaceArgs{Egress: defaultEgress(), NoMinIO: noMinIO}, "acme")
		for _, pod := range apiClientPods {
			got, err := c.EgressTo(netpol.Pod{Namespace: "acme", Labels: pod}, api, "TCP", 443)
			require.NoError(t, err)
			want := !(noMinIO && maps.Equal(pod, minioPod))
			require.Equal(t, want, got, "noMinIO %v: %v -> API server", noMinIO, pod)
		}
	}
}
