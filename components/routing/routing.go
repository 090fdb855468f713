// Package routing defines, once, how a request to api.<domain> is mapped to a robot's API
// Service: the Service name a server stack creates (RobotServiceName), the in-cluster host the
// gateway routes to (UpstreamHost), and the Envoy Lua filters that derive that host from the
// X-TF-* headers (routing.lua, rendered by CookieFilterLua and RoutingFilterLua).
//
// The Lua cannot call Go, so the host format exists twice: here and in routing.lua. The test
// runs the Lua under gopher-lua against a table of requests and fails when the Lua's upstream
// differs from UpstreamHost or its accept/reject decision differs from Validate.
package routing

import (
	_ "embed"
	"errors"
	"fmt"
	"regexp"
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

//go:embed routing.lua
var luaSource string

// Filter entry points of routing.lua.
const (
	entryCookies = "cookies"
	entryRoute   = "route"
)

// CookieFilterLua is the Lua of the cookie filter (envoyfilter-cookie) for the API host
// apiHost, e.g. "api.example.com". It must run before RoutingFilterLua.
func CookieFilterLua(apiHost string) (string, error) { return render(apiHost, entryCookies) }

// RoutingFilterLua is the Lua of the routing filter (envoyfilter-lua-routing) for the API
// host apiHost.
func RoutingFilterLua(apiHost string) (string, error) { return render(apiHost, entryRoute) }

// render fills routing.lua's placeholders. apiHost is validated as a DNS name first, so
// nothing can break out of the Lua string literal it lands in.
func render(apiHost, entry string) (string, error) {
	if len(apiHost) > 253 || !reAPIHost.MatchString(apiHost) {
		return "", fmt.Errorf("routing: API host %q is not a lowercase DNS name", apiHost)
	}
	r := strings.NewReplacer(
		"@API_HOST@", apiHost,
		"@ENTRY@", entry,
		"@SERVICE_SUFFIX@", ServiceSuffix,
		"@CLUSTER_DOMAIN@", ClusterDomain,
		"@UPSTREAM_PORT@", strconv.Itoa(UpstreamPort),
	)
	return r.Replace(luaSource), nil
}
