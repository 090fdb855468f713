// Package sourcepolicy decides what a request may make tfrs read or fetch: local paths
// (localPath, file:// URLs), remote chart repositories and manifests (chartRepo,
// manifestURL) and Secrets in other namespaces (passwordSecretRef). Every door (HTTP API,
// operator, CLI) checks objects against a Policy before anything runs (Check); the fetch path
// enforces the same Policy again when it connects (Client: after DNS resolution, on every
// redirect), so a name that resolves differently at fetch time (DNS rebinding) or a mirror
// that redirects elsewhere is refused there too.
//
// The decision functions (LocalPath, URL, IP, SecretNamespace) are pure: no file system, no
// DNS. The only I/O of the package is in Client and Fetcher.
package sourcepolicy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// ErrForbidden is the sentinel of every refusal; *Error matches it with errors.Is.
var ErrForbidden = errors.New("forbidden by the source policy")

// Error is one refusal: what was refused and why, without echoing secrets (URLs lose their
// user info).
type Error struct {
	// What is the refused thing: "local path /etc", "host evil.example.com", "address 10.0.0.1".
	What   string
	Reason string
}

func (e *Error) Error() string { return e.What + ": " + e.Reason }

// Is makes errors.Is(err, ErrForbidden) true.
func (e *Error) Is(target error) bool { return target == ErrForbidden }

func refuse(what, format string, args ...any) error {
	return &Error{What: what, Reason: fmt.Sprintf(format, args...)}
}

// Policy is what may be read or fetched. The zero Policy allows nothing but the hosts it is
// given: no local path, no private address, no Secret outside the object's own namespace.
type Policy struct {
	// LocalRoots are the directories under which localPath and file:// may point (after
	// cleaning; symlinks are resolved by the doors that can see the disk, ResolveLocal).
	LocalRoots []string
	// AnyLocalPath allows every local path (the CLI's default: a CI user owns their disk).
	AnyLocalPath bool
	// Hosts are the hosts chartRepo and manifestURL may name: exact names ("charts.jetstack.io"),
	// "*.example.com" for any subdomain, or IP literals. An entry without a port allows the
	// scheme's default port only (443, or 80 for http); "mirror:8443" allows that port.
	Hosts []string
	// AnyHost allows every host (addresses are still checked, see AllowPrivate).
	AnyHost bool
	// AllowPrivate allows loopback, link-local, private (RFC 1918, ULA), CGNAT and
	// unspecified addresses. Off, they are refused even for an allowed host (a mirror's name
	// that resolves to 127.0.0.1 or 169.254.169.254 is refused when it is fetched).
	AllowPrivate bool
	// AllowedNets are networks allowed despite AllowPrivate being off (an in-cluster mirror
	// at 10.96.0.0/12, say).
	AllowedNets []netip.Prefix
	// SecretNamespaces are the namespaces a passwordSecretRef may read from; "*" is any.
	SecretNamespaces []string
}

// Permissive allows everything: what a door with no policy configured did before.
func Permissive() *Policy {
	return &Policy{AnyLocalPath: true, AnyHost: true, AllowPrivate: true, SecretNamespaces: []string{"*"}}
}

// LocalPath decides on a local path (localPath, or the path of a file:// URL). It must be
// absolute and, once cleaned, under one of LocalRoots. "..", relative paths and NUL bytes are
// refused whatever the policy says.
func (p *Policy) LocalPath(path string) error {
	what := "local path " + path
	switch {
	case strings.ContainsRune(path, 0):
		return refuse("local path", "contains a NUL byte")
	case p.AnyLocalPath:
		return nil
	case !filepath.IsAbs(path):
		return refuse(what, "must be absolute")
	}
	clean := filepath.Clean(path)
	for _, root := range p.LocalRoots {
		if under(filepath.Clean(root), clean) {
			return nil
		}
	}
	if len(p.LocalRoots) == 0 {
		return refuse(what, "local paths are not allowed here (no allowed root is configured)")
	}
	return refuse(what, "not under an allowed root")
}

// under reports whether path is root or inside it (both clean).
func under(root, path string) bool {
	if root == path {
		return true
	}
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// URL decides on a source URL: chartRepo (http, https, oci) or manifestURL (http, https,
// file). file:// URLs are local paths; the others must name an allowed host, and a host
// written as an IP address must be an allowed address.
func (p *Policy) URL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return refuse("URL", "cannot be parsed")
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return refuse("file URL", "names a remote host")
		}
		return p.LocalPath(u.Path)
	case "http", "https", "oci":
	default:
		return refuse("URL scheme "+u.Scheme, "not supported")
	}
	if u.Host == "" {
		return refuse("URL", "has no host")
	}
	return p.Host(u.Scheme, u.Host)
}

// Host decides on a host[:port] of a URL with the given scheme (ports default by scheme).
func (p *Policy) Host(scheme, hostport string) error {
	host, port := splitHostPort(hostport)
	if host == "" {
		return refuse("URL", "has no host")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := p.IP(ip); err != nil {
			return err
		}
	} else if isLocalName(host) {
		return p.IP(netip.MustParseAddr("127.0.0.1"))
	}
	if p.AnyHost || p.hostAllowed(host, port, scheme) {
		return nil
	}
	return refuse("host "+host, "not an allowed source host (allow it with --source-allow-host)")
}

func (p *Policy) hostAllowed(host, port, scheme string) bool {
	if port == "" {
		port = defaultPort(scheme)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, a := range p.Hosts {
		ah, ap := splitHostPort(strings.ToLower(strings.TrimSpace(a)))
		if ap == "" {
			ap = defaultPort(scheme) // an entry without a port allows the scheme's own
		}
		if ap != port {
			continue
		}
		if suffix, ok := strings.CutPrefix(ah, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if ah == host {
			return true
		}
	}
	return false
}

func splitHostPort(hp string) (host, port string) {
	if h, pt, err := net.SplitHostPort(hp); err == nil {
		return strings.Trim(h, "[]"), pt
	}
	return strings.Trim(hp, "[]"), ""
}

func defaultPort(scheme string) string {
	if scheme == "http" {
		return "80"
	}
	return "443"
}

// isLocalName: names that always mean this machine, whatever DNS says.
func isLocalName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// refusedNets are the ranges net/netip has no predicate for.
var refusedNets = []struct {
	net netip.Prefix
	why string
}{
	{netip.MustParsePrefix("100.64.0.0/10"), "private (carrier-grade NAT) addresses are not allowed"},
	{netip.MustParsePrefix("fec0::/10"), "private (site-local) addresses are not allowed"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified addresses are not allowed"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking addresses are not allowed"},
}

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// IP decides on an address a source resolves to (or is written as).
func (p *Policy) IP(ip netip.Addr) error {
	ip = ip.Unmap()
	if p.AllowPrivate || slices.ContainsFunc(p.AllowedNets, func(n netip.Prefix) bool { return n.Contains(ip) }) {
		return nil
	}
	what := "address " + ip.String()
	switch {
	case !ip.IsValid():
		return refuse("address", "invalid")
	case ip.IsLoopback():
		return refuse(what, "loopback addresses are not allowed")
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return refuse(what, "link-local addresses (cloud metadata) are not allowed")
	case ip.IsPrivate():
		return refuse(what, "private addresses are not allowed")
	case ip.IsUnspecified():
		return refuse(what, "unspecified addresses are not allowed")
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return refuse(what, "multicast addresses are not allowed")
	case nat64.Contains(ip):
		// 64:ff9b::a.b.c.d reaches a.b.c.d through a NAT64 gateway: decide on that.
		b := ip.As16()
		return p.IP(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	for _, n := range refusedNets {
		if n.net.Contains(ip) {
			return refuse(what, "%s", n.why)
		}
	}
	return nil
}

// SecretNamespace decides on the namespace a Secret is read from. own is the namespace of
// the object itself ("" for a cluster-scoped one), always allowed.
func (p *Policy) SecretNamespace(ns, own string) error {
	if ns == own && own != "" {
		return nil
	}
	for _, a := range p.SecretNamespaces {
		if a == "*" || a == ns {
			return nil
		}
	}
	return refuse("namespace "+ns, "Secrets may not be read from this namespace (allow it with --source-allow-secret-namespace)")
}

// WithHosts returns a copy of p that also allows hosts (a cluster's configured mirrors).
func (p *Policy) WithHosts(hosts ...string) *Policy {
	c := *p
	c.Hosts = append(slices.Clip(p.Hosts), hosts...)
	return &c
}

// HostOf is the host[:port] of a source URL, "" for none (file URLs, unparsable ones).
func HostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "file" {
		return ""
	}
	return u.Host
}
