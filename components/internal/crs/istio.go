package crs

import "strconv"

// API versions of the Istio kinds TFRS creates.
const (
	IstioNetworkingV1 = "networking.istio.io/v1"
	// IstioNetworkingV1alpha3 is EnvoyFilter's: it has no v1.
	IstioNetworkingV1alpha3 = "networking.istio.io/v1alpha3"
	IstioTelemetryV1        = "telemetry.istio.io/v1"
	IstioSecurityV1         = "security.istio.io/v1"
)

// GatewaySpec is an Istio Gateway.
type GatewaySpec struct {
	// Selector picks the gateway pods (by label).
	Selector map[string]string `json:"selector"`
	Servers  []GatewayServer   `json:"servers"`
}

// TypeMeta implements Spec.
func (GatewaySpec) TypeMeta() TypeMeta {
	return TypeMeta{APIVersion: IstioNetworkingV1, Kind: "Gateway"}
}

// GatewayServer is one port the gateway listens on and the hosts it serves there.
type GatewayServer struct {
	Port  GatewayPort `json:"port"`
	Hosts []string    `json:"hosts"`
	TLS   *ServerTLS  `json:"tls,omitempty"`
}

// GatewayPort is a gateway listener's port.
type GatewayPort struct {
	Number   int    `json:"number"`
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
}

// ServerTLS is a listener's TLS: a redirect to HTTPS, or termination with a Secret.
type ServerTLS struct {
	HTTPSRedirect  bool   `json:"httpsRedirect,omitempty"`
	Mode           string `json:"mode,omitempty"`
	CredentialName string `json:"credentialName,omitempty"`
}

// HTTPSGateway serves host on the pods selector picks: HTTPS on httpsPort, terminated with
// the TLS Secret credentialName (in the gateway pods' namespace), and HTTP on httpPort
// answered with a redirect to HTTPS.
func HTTPSGateway(selector map[string]string, host string, httpPort, httpsPort int, credentialName string) GatewaySpec {
	return GatewaySpec{Selector: selector, Servers: []GatewayServer{
		{Port: GatewayPort{Number: httpPort, Name: "http", Protocol: "HTTP"}, Hosts: []string{host}, TLS: &ServerTLS{HTTPSRedirect: true}},
		{Port: GatewayPort{Number: httpsPort, Name: "https", Protocol: "HTTPS"}, Hosts: []string{host}, TLS: &ServerTLS{Mode: "SIMPLE", CredentialName: credentialName}},
	}}
}

// VirtualServiceSpec is an Istio VirtualService.
type VirtualServiceSpec struct {
	Hosts    []string    `json:"hosts"`
	Gateways []string    `json:"gateways"`
	HTTP     []HTTPRoute `json:"http"`
}

// TypeMeta implements Spec.
func (VirtualServiceSpec) TypeMeta() TypeMeta {
	return TypeMeta{APIVersion: IstioNetworkingV1, Kind: "VirtualService"}
}

// HTTPRoute is a named HTTP route.
type HTTPRoute struct {
	Name  string             `json:"name"`
	Route []RouteDestination `json:"route"`
}

// RouteDestination is where a route sends traffic.
type RouteDestination struct {
	Destination Destination `json:"destination"`
}

// Destination is a Service host and port.
type Destination struct {
	Host string       `json:"host"`
	Port PortSelector `json:"port"`
}

// PortSelector is a port by number.
type PortSelector struct {
	Number int `json:"number"`
}

// SingleRouteVirtualService binds host on gateway ("<namespace>/<name>") to one route named
// route, towards destinationHost:port.
func SingleRouteVirtualService(host, gateway, route, destinationHost string, port int) VirtualServiceSpec {
	return VirtualServiceSpec{
		Hosts: []string{host}, Gateways: []string{gateway},
		HTTP: []HTTPRoute{{Name: route, Route: []RouteDestination{{Destination: Destination{Host: destinationHost, Port: PortSelector{Number: port}}}}}},
	}
}

// EnvoyFilterSpec is an Istio EnvoyFilter.
type EnvoyFilterSpec struct {
	WorkloadSelector WorkloadSelector `json:"workloadSelector"`
	// Priority orders filters on the same workload: lower applies first.
	Priority      int                `json:"priority"`
	ConfigPatches []EnvoyConfigPatch `json:"configPatches"`
}

// TypeMeta implements Spec.
func (EnvoyFilterSpec) TypeMeta() TypeMeta {
	return TypeMeta{APIVersion: IstioNetworkingV1alpha3, Kind: "EnvoyFilter"}
}

// WorkloadSelector picks workloads by label.
type WorkloadSelector struct {
	Labels map[string]string `json:"labels"`
}

// EnvoyConfigPatch is one patch of the generated Envoy configuration.
type EnvoyConfigPatch struct {
	ApplyTo string           `json:"applyTo"`
	Match   EnvoyPatchMatch  `json:"match"`
	Patch   EnvoyPatchAction `json:"patch"`
}

// EnvoyPatchMatch is what a patch applies to: a listener's filter or a route.
type EnvoyPatchMatch struct {
	Context            string                   `json:"context"`
	Listener           *ListenerMatch           `json:"listener,omitempty"`
	RouteConfiguration *RouteConfigurationMatch `json:"routeConfiguration,omitempty"`
}

// ListenerMatch matches a listener by a filter of its filter chain.
type ListenerMatch struct {
	FilterChain FilterChainMatch `json:"filterChain"`
}

// FilterChainMatch matches a filter chain by one of its filters.
type FilterChainMatch struct {
	Filter FilterMatch `json:"filter"`
}

// FilterMatch matches a network filter and, within an HTTP connection manager, an HTTP filter.
type FilterMatch struct {
	Name      string     `json:"name"`
	SubFilter *NameMatch `json:"subFilter,omitempty"`
}

// NameMatch matches by name.
type NameMatch struct {
	Name string `json:"name"`
}

// RouteConfigurationMatch matches a route of a route configuration.
type RouteConfigurationMatch struct {
	Vhost VirtualHostMatch `json:"vhost"`
}

// VirtualHostMatch matches a virtual host's route.
type VirtualHostMatch struct {
	Route NameMatch `json:"route"`
}

// EnvoyPatchAction is the operation and the Envoy configuration it adds or merges. Value is
// Envoy's own (xDS JSON): the CRD leaves it open, so it is one of the small structs below.
type EnvoyPatchAction struct {
	Operation string `json:"operation"`
	Value     any    `json:"value"`
}

// LuaHTTPFilter is an Envoy Lua HTTP filter with inline source.
type LuaHTTPFilter struct {
	Name        string    `json:"name"`
	TypedConfig LuaConfig `json:"typed_config"`
}

// LuaConfig is envoy.extensions.filters.http.lua.v3.Lua.
type LuaConfig struct {
	Type              string     `json:"@type"`
	DefaultSourceCode DataSource `json:"default_source_code"`
}

// DataSource is Envoy's inline data source.
type DataSource struct {
	InlineString string `json:"inline_string"`
}

// RouteClusterHeader makes a route take its upstream cluster from a request header.
type RouteClusterHeader struct {
	Route struct {
		ClusterHeader string `json:"cluster_header"`
	} `json:"route"`
}

// Istio's names for the gateway context and the filters a Lua filter is placed among.
const (
	envoyContextGateway      = "GATEWAY"
	envoyHTTPConnManager     = "envoy.filters.network.http_connection_manager"
	envoyRouterFilter        = "envoy.filters.http.router"
	envoyLuaFilterConfigType = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"
)

// LuaFilterPatch inserts the Lua HTTP filter filterName running code before the router of
// the gateway's listeners.
func LuaFilterPatch(filterName, code string) EnvoyConfigPatch {
	return EnvoyConfigPatch{
		ApplyTo: "HTTP_FILTER",
		Match: EnvoyPatchMatch{Context: envoyContextGateway, Listener: &ListenerMatch{FilterChain: FilterChainMatch{Filter: FilterMatch{
			Name: envoyHTTPConnManager, SubFilter: &NameMatch{Name: envoyRouterFilter},
		}}}},
		Patch: EnvoyPatchAction{Operation: "INSERT_BEFORE", Value: LuaHTTPFilter{
			Name:        filterName,
			TypedConfig: LuaConfig{Type: envoyLuaFilterConfigType, DefaultSourceCode: DataSource{InlineString: code}},
		}},
	}
}

// ClusterHeaderPatch makes the gateway route named route take its cluster from header.
// cluster_header is in the same oneof as the cluster Istio generates for the route's
// destination, so MERGE replaces it.
func ClusterHeaderPatch(route, header string) EnvoyConfigPatch {
	v := RouteClusterHeader{}
	v.Route.ClusterHeader = header
	return EnvoyConfigPatch{
		ApplyTo: "HTTP_ROUTE",
		Match:   EnvoyPatchMatch{Context: envoyContextGateway, RouteConfiguration: &RouteConfigurationMatch{Vhost: VirtualHostMatch{Route: NameMatch{Name: route}}}},
		Patch:   EnvoyPatchAction{Operation: "MERGE", Value: v},
	}
}

// EnvoyFilter applies patches, at priority, to the workloads with labels.
func EnvoyFilter(labels map[string]string, priority int, patches ...EnvoyConfigPatch) EnvoyFilterSpec {
	return EnvoyFilterSpec{WorkloadSelector: WorkloadSelector{Labels: labels}, Priority: priority, ConfigPatches: patches}
}

// TelemetrySpec is an Istio Telemetry.
type TelemetrySpec struct {
	AccessLogging []AccessLogging `json:"accessLogging"`
	Tracing       []Tracing       `json:"tracing,omitempty"`
}

// TypeMeta implements Spec.
func (TelemetrySpec) TypeMeta() TypeMeta {
	return TypeMeta{APIVersion: IstioTelemetryV1, Kind: "Telemetry"}
}

// AccessLogging turns access logs on for providers.
type AccessLogging struct {
	Providers []ProviderRef `json:"providers"`
}

// Tracing sends a sample of traces to providers.
type Tracing struct {
	Providers []ProviderRef `json:"providers"`
	// RandomSamplingPercentage is always sent: 0 means none, not Istio's default.
	RandomSamplingPercentage float64 `json:"randomSamplingPercentage"`
}

// ProviderRef names an extension provider of the mesh config.
type ProviderRef struct {
	Name string `json:"name"`
}

// envoyAccessLog is Istio's built-in stdout access log provider.
const envoyAccessLog = "envoy"

// MeshTelemetry logs every request with Envoy's access log and, when tracingProvider is
// not empty, traces samplingPercent of them to it.
func MeshTelemetry(tracingProvider string, samplingPercent float64) TelemetrySpec {
	t := TelemetrySpec{AccessLogging: []AccessLogging{{Providers: []ProviderRef{{Name: envoyAccessLog}}}}}
	if tracingProvider != "" {
		t.Tracing = []Tracing{{Providers: []ProviderRef{{Name: tracingProvider}}, RandomSamplingPercentage: samplingPercent}}
	}
	return t
}

// PeerAuthenticationSpec is an Istio PeerAuthentication.
type PeerAuthenticationSpec struct {
	MTLS MutualTLS `json:"mtls"`
}

// TypeMeta implements Spec.
func (PeerAuthenticationSpec) TypeMeta() TypeMeta {
	return TypeMeta{APIVersion: IstioSecurityV1, Kind: "PeerAuthentication"}
}

// MutualTLS is the mTLS mode.
type MutualTLS struct {
	Mode string `json:"mode"`
}

// StrictMTLS accepts only mTLS traffic (all workloads of the namespace, without a selector).
func StrictMTLS() PeerAuthenticationSpec {
	return PeerAuthenticationSpec{MTLS: MutualTLS{Mode: "STRICT"}}
}

// Actions of an AuthorizationPolicy.
const (
	// Allow admits what a rule matches; once a workload has any ALLOW policy, what none of
	// them matches is denied. Istio ORs ALLOW policies, so one can add callers, never remove.
	Allow = "ALLOW"
	// Deny refuses what a rule matches. DENY policies are evaluated before ALLOW ones and win.
	Deny = "DENY"
)

// AuthorizationPolicySpec is an Istio AuthorizationPolicy.
type AuthorizationPolicySpec struct {
	// Selector picks the workloads it applies to; nil applies it to the whole namespace.
	Selector *LabelSelector `json:"selector,omitempty"`
	Action   string         `json:"action"`
	// Rules are ORed: a request matches the policy when it matches any of them.
	Rules []Rule `json:"rules"`
}

// TypeMeta implements Spec.
func (AuthorizationPolicySpec) TypeMeta() TypeMeta {
	return TypeMeta{APIVersion: IstioSecurityV1, Kind: "AuthorizationPolicy"}
}

// LabelSelector picks workloads by pod labels.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// Rule is one rule of an AuthorizationPolicy (FromNamespaces, FromNotPrincipals,
// WhenHeaderNot).
type Rule struct {
	From []RuleFrom  `json:"from,omitempty"`
	To   []RuleTo    `json:"to,omitempty"`
	When []Condition `json:"when,omitempty"`
}

// RuleTo is a rule on the request's destination.
type RuleTo struct {
	Operation Operation `json:"operation"`
}

// Operation is a request's destination: the workload's ports (after a Service's mapping).
type Operation struct {
	Ports []string `json:"ports,omitempty"`
}

// RuleFrom is a rule on the request's source.
type RuleFrom struct {
	Source Source `json:"source"`
}

// Source is a request's source. Istio knows a source's namespace and principal only for mTLS
// traffic.
type Source struct {
	Namespaces    []string `json:"namespaces,omitempty"`
	Principals    []string `json:"principals,omitempty"`
	NotPrincipals []string `json:"notPrincipals,omitempty"`
}

// Condition is a rule on a request attribute.
type Condition struct {
	Key       string   `json:"key"`
	NotValues []string `json:"notValues,omitempty"`
}

// FromNamespaces matches requests from workloads of namespaces.
func FromNamespaces(namespaces ...string) Rule {
	return Rule{From: []RuleFrom{{Source: Source{Namespaces: namespaces}}}}
}

// FromNotPrincipals matches requests whose mTLS peer is none of principals.
func FromNotPrincipals(principals ...string) Rule {
	return Rule{From: []RuleFrom{{Source: Source{NotPrincipals: principals}}}}
}

// FromPrincipalsToPorts matches requests whose mTLS peer is one of principals (Istio's exact,
// prefix "x*" or suffix "*x" matches) to one of the workload's ports.
func FromPrincipalsToPorts(principals []string, ports ...int) Rule {
	var ps []string
	for _, p := range ports {
		ps = append(ps, strconv.Itoa(p))
	}
	return Rule{From: []RuleFrom{{Source: Source{Principals: principals}}}, To: []RuleTo{{Operation: Operation{Ports: ps}}}}
}

// WhenHeaderNot matches requests whose header is none of values. Envoy keys headers in
// lowercase, so header must be lowercase.
func WhenHeaderNot(header string, values ...string) Rule {
	return Rule{When: []Condition{{Key: "request.headers[" + header + "]", NotValues: values}}}
}

// AuthorizationPolicy applies action to requests matching any of rules, on the workloads
// selector picks (nil: every workload of the namespace).
func AuthorizationPolicy(selector map[string]string, action string, rules ...Rule) AuthorizationPolicySpec {
	p := AuthorizationPolicySpec{Action: action, Rules: rules}
	if selector != nil {
		p.Selector = &LabelSelector{MatchLabels: selector}
	}
	return p
}
