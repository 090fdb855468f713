// Package routing defines, once, how a request to api.<domain> is mapped to a robot's API
// Service: the Service name a server stack creates (RobotServiceName), the in-cluster host the
// gateway routes to (UpstreamHost), and the Envoy Lua filters that derive that host from the
// X-TF-* headers and cookies (routing.lua, rendered by CookieFilterLua and RoutingFilterLua).
// The rule that wins is stated at the top of routing.lua: a routing value comes from exactly
// one place, and an ambiguous request is refused.
//
// The Lua cannot call Go, so the host format and the value rules exist twice: here and in
// routing.lua. The tests run the Lua under gopher-lua against generated requests and fail when
// the Lua's upstream differs from UpstreamHost or its accept/reject decision differs from
// Targets.Validate.
package routing

import (
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The routing contract of TFRobot's public clients.
const (
	HeaderNamespace  = "X-TF-Namespace"
	HeaderRobotID    = "X-TF-RobotId"
	HeaderRobotType  = "X-TF-RobotType"
	CookieAdminToken = "adminToken"
)

// Headers set by the route filter. Clients cannot set them: the filter strips both from every
// request before deciding.
const (
	// HeaderUpstream is the in-cluster host the request goes to (UpstreamHost).
	HeaderUpstream = "x-tf-upstream"
	// HeaderUpstreamCluster is the Envoy cluster of HeaderUpstream (UpstreamCluster); the API
	// route uses it as its cluster_header.
	HeaderUpstreamCluster = "x-tf-upstream-cluster"
)

const (
	// ServiceSuffix ends every robot API Service name, so the gateway can only ever reach
	// Services that were made to be reached this way.
	ServiceSuffix = "-api"
	// UpstreamPort is the port of the robot API Service (the server stack maps it to the
	// worker's container port). Port 80 keeps the Service a plain HTTP service for Istio's
	// protocol detection and leaves the container port a detail of the server stack.
	UpstreamPort = 80
	// ClusterDomain is the Kubernetes cluster DNS domain.
	ClusterDomain = "cluster.local"
	// MaxLabelLength is the longest DNS label (a header value, a Service name).
	MaxLabelLength = 63
)

// ErrInvalid is wrapped by every Validate error.
var ErrInvalid = errors.New("invalid routing values")

var (
	reValue   = regexp.MustCompile(`^[a-z0-9-]+$`)
	reAPIHost = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// RobotServiceName is the name of a robot's API Service: "<robotType>-<robotId>-api".
func RobotServiceName(robotID, robotType string) string {
	return robotType + "-" + robotID + ServiceSuffix
}

// UpstreamHost is the in-cluster host the gateway sends a request with these X-TF-* values to:
// "<robotType>-<robotId>-api.<namespace>.svc.cluster.local", port UpstreamPort. Call Validate
// first; the gateway answers 400 for values Validate rejects.
func UpstreamHost(namespace, robotID, robotType string) string {
	return RobotServiceName(robotID, robotType) + "." + namespace + ".svc." + ClusterDomain
}

// UpstreamCluster is the Envoy (Istio) cluster name of UpstreamHost.
func UpstreamCluster(namespace, robotID, robotType string) string {
	return "outbound|" + strconv.Itoa(UpstreamPort) + "||" + UpstreamHost(namespace, robotID, robotType)
}

// Validate reports whether the gateway accepts these values, exactly as routing.lua decides:
// each matches ^[a-z0-9-]+$, has 1..63 bytes and starts and ends with a letter or digit, the
// robot type has no '-' at all, and the Service name fits a DNS label.
//
// Why no '-' in the robot type: a robot's names are "<robotType>-<robotId>…", and with a '-'
// allowed on both sides chat-bot/1 and chat/bot-1 would both be "chat-bot-1" (one Service,
// one role, one bucket). With none in the type, the first '-' of a name ends the type, so
// the mapping from (robotType, robotId) to names is injective while every name stays a plain
// DNS label, SQL identifier and bucket name, and no existing robot id changes.
func Validate(namespace, robotID, robotType string) error {
	for _, v := range []struct{ header, value string }{
		{HeaderNamespace, namespace}, {HeaderRobotID, robotID}, {HeaderRobotType, robotType},
	} {
		if v.value == "" {
			return fmt.Errorf("%w: missing %s", ErrInvalid, v.header)
		}
		if !validLabel(v.value) {
			return fmt.Errorf("%w: %s must match ^[a-z0-9-]+$, have at most %d characters and start and end with a letter or digit", ErrInvalid, v.header, MaxLabelLength)
		}
	}
	if strings.Contains(robotType, "-") {
		return fmt.Errorf("%w: %s must not contain '-' (it ends the robot type in the robot's names)", ErrInvalid, HeaderRobotType)
	}
	if n := len(RobotServiceName(robotID, robotType)); n > MaxLabelLength {
		return fmt.Errorf("%w: %s and %s together make a %d-character service name (max %d)", ErrInvalid, HeaderRobotType, HeaderRobotID, n, MaxLabelLength)
	}
	return nil
}

func validLabel(v string) bool {
	if len(v) == 0 || len(v) > MaxLabelLength || !reValue.MatchString(v) {
		return false
	}
	return v[0] != '-' && v[len(v)-1] != '-'
}

// Targets are the namespaces the route filter may send requests to: every namespace that is
// not reserved. The cluster stack fills them from the facts the tenant reservation reads
// (api/v1alpha1: the kube- prefix, the platform's namespaces, spec.reservedNamespaces), so a
// namespace no tenant can hold is a namespace the gateway never routes to.
type Targets struct {
	// ReservedPrefixes: a namespace starting with one of them is refused (e.g. "kube-").
	ReservedPrefixes []string
	// ReservedNames: namespaces refused by name.
	ReservedNames []string
}

var rePrefix = regexp.MustCompile(`^[a-z0-9-]+$`)

// check refuses Targets that would render a filter refusing nothing (fail closed: a missing
// argument must not open the platform namespaces) or that are not plain DNS text (they land in
// Lua string literals).
func (t Targets) check() error {
	if len(t.ReservedNames) == 0 && len(t.ReservedPrefixes) == 0 {
		return errors.New("routing: no reserved namespaces: the route filter would route to every namespace")
	}
	for _, n := range t.ReservedNames {
		if !validLabel(n) {
			return fmt.Errorf("routing: reserved namespace %q is not a DNS label", n)
		}
	}
	for _, p := range t.ReservedPrefixes {
		if len(p) > MaxLabelLength || !rePrefix.MatchString(p) {
			return fmt.Errorf("routing: reserved namespace prefix %q must match %s", p, rePrefix)
		}
	}
	return nil
}

// Reserved reports whether the route filter refuses namespace ns as not a tenant's.
func (t Targets) Reserved(ns string) bool {
	if slices.Contains(t.ReservedNames, ns) {
		return true
	}
	return slices.ContainsFunc(t.ReservedPrefixes, func(p string) bool { return strings.HasPrefix(ns, p) })
}

// Validate reports whether the route filter accepts these values, exactly as routing.lua
// decides once the request is unambiguous: Validate, and a namespace that is not reserved.
func (t Targets) Validate(namespace, robotID, robotType string) error {
	if err := Validate(namespace, robotID, robotType); err != nil {
		return err
	}
	if t.Reserved(namespace) {
		return fmt.Errorf("%w: %s %q is not a tenant namespace", ErrInvalid, HeaderNamespace, namespace)
	}
	return nil
}

//go:embed routing.lua
var luaSource string

// Filter entry points of routing.lua.
const (
	entryCookies = "cookies"
	entryRoute   = "route"
)

// CookieFilterLua is the Lua of the cookie filter (envoyfilter-cookie) for the API host
// apiHost, e.g. "api.example.com". It runs before RoutingFilterLua and never routes, so it
// needs no Targets.
func CookieFilterLua(apiHost string) (string, error) {
	return render(apiHost, entryCookies, Targets{})
}

// RoutingFilterLua is the Lua of the routing filter (envoyfilter-lua-routing) for the API
// host apiHost, refusing the namespaces targets reserve.
func RoutingFilterLua(apiHost string, targets Targets) (string, error) {
	if err := targets.check(); err != nil {
		return "", err
	}
	return render(apiHost, entryRoute, targets)
}

// render fills routing.lua's placeholders. apiHost and the targets are validated as DNS text
// first, so nothing can break out of the Lua string literals they land in.
func render(apiHost, entry string, t Targets) (string, error) {
	if len(apiHost) > 253 || !reAPIHost.MatchString(apiHost) {
		return "", fmt.Errorf("routing: API host %q is not a lowercase DNS name", apiHost)
	}
	r := strings.NewReplacer(
		"@API_HOST@", apiHost,
		"@ENTRY@", entry,
		"@SERVICE_SUFFIX@", ServiceSuffix,
		"@CLUSTER_DOMAIN@", ClusterDomain,
		"@UPSTREAM_PORT@", strconv.Itoa(UpstreamPort),
		`"@RESERVED_NAMES@"`, luaList(t.ReservedNames),
		`"@RESERVED_PREFIXES@"`, luaList(t.ReservedPrefixes),
	)
	return r.Replace(luaSource), nil
}

// luaList renders vs (checked DNS text) as the items of a Lua table constructor, sorted so the
// rendered filter, and the EnvoyFilter, do not change with the order of the spec.
func luaList(vs []string) string {
	sorted := slices.Sorted(slices.Values(vs))
	sorted = slices.Compact(sorted)
	quoted := make([]string, len(sorted))
	for i, v := range sorted {
		quoted[i] = strconv.Quote(v)
	}
	return strings.Join(quoted, ", ")
}
