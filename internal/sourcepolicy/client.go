package sourcepolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// Resolver looks names up; *net.Resolver is one, tests substitute their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// MaxRedirects bounds the redirects a fetch follows.
const MaxRedirects = 5

// Client returns an HTTP client that enforces p when it connects, not only when a URL is
// checked: every redirect must stay on the same host (and never go from https to http) and
// pass URL; every connection resolves its host itself and dials only addresses IP allows,
// all of them (a name with one refused address is refused: DNS rebinding, split answers).
// Environment proxies are not used, since a proxy would connect on the client's behalf. r
// nil uses net.DefaultResolver.
func (p *Policy) Client(r Resolver, timeout time.Duration) *http.Client {
	if r == nil {
		r = net.DefaultResolver
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           p.dialer(r, d),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: p.checkRedirect}
}

// dialer resolves addr's host and dials the first of its addresses, once every one passed IP.
func (p *Policy) dialer(r Resolver, d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else {
			if isLocalName(host) {
				ips = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
			} else if ips, err = r.LookupNetIP(ctx, "ip", host); err != nil {
				return nil, fmt.Errorf("resolve %s: %w", host, err)
			}
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("resolve %s: no addresses", host)
		}
		for _, ip := range ips {
			if err := p.IP(ip); err != nil {
				return nil, fmt.Errorf("%s resolves to a refused address: %w", host, err)
			}
		}
		var errs []error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
}

// checkRedirect lets a fetch follow a redirect only on its own host, never to plain http from
// https, and only to a URL the policy allows.
func (p *Policy) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return refuse("redirect", "more than %d redirects", MaxRedirects)
	}
	first := via[0].URL
	switch {
	case req.URL.Host != first.Host:
		return refuse("redirect to host "+req.URL.Hostname(), "redirects to another host are not followed")
	case first.Scheme == "https" && req.URL.Scheme != "https":
		return refuse("redirect", "from https to %s", req.URL.Scheme)
	}
	return p.URL(req.URL.String())
}
