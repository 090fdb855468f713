/*
Copyright 2026 The TFRS Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

// The egress rules (types in egress_types.go).

import (
	"net/netip"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultDNSPort is the DNS server's port when spec.egress.dns.port is unset.
const DefaultDNSPort = 53

// PublicInternetAllowed is spec.egress.publicInternet with its default.
func (s *EgressSpec) PublicInternetAllowed() bool {
	return s == nil || s.PublicInternet != PublicInternetDeny
}

// DNSServer is spec.egress.dns with its defaults: where tenant pods resolve names.
func (s *EgressSpec) DNSServer() EgressDNS {
	if s == nil || s.DNS == nil {
		return EgressDNS{Namespace: "kube-system", PodLabels: map[string]string{"k8s-app": "kube-dns"}, Port: DefaultDNSPort}
	}
	d := *s.DNS.DeepCopy()
	if d.Port == 0 {
		d.Port = DefaultDNSPort
	}
	return d
}

// ParseEgressCIDR reads one CIDR of the egress policy: a network address and a prefix
// (10.0.0.0/8, 2001:db8::/32), canonical, since NetworkPolicy ipBlocks take nothing else.
func ParseEgressCIDR(v string) (netip.Prefix, string) {
	p, err := netip.ParsePrefix(v)
	if err != nil {
		return p, "must be a CIDR (10.0.0.0/8, 2001:db8::/32)"
	}
	if p.Masked() != p {
		return p, "must be a network address: " + p.Masked().String() + ", not " + v
	}
	if p.Addr().Is4In6() {
		// The API server refuses IPv4-mapped IPv6 in an ipBlock.
		return p, "must not be an IPv4-mapped IPv6 range: write the IPv4 range"
	}
	return p, ""
}

func (s *EgressSpec) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.PublicInternet {
	case "", PublicInternetAllow, PublicInternetDeny:
	default:
		errs = append(errs, field.NotSupported(p.Child("publicInternet"), s.PublicInternet, []PublicInternet{PublicInternetAllow, PublicInternetDeny}))
	}
	cidrs := func(name string, vs []string, blocked bool) {
		fp := p.Child(name)
		if len(vs) > MaxEgressCIDRs {
			errs = append(errs, field.TooMany(fp, len(vs), MaxEgressCIDRs))
		}
		seen := map[string]bool{}
		for i, v := range vs {
			pre, msg := ParseEgressCIDR(v)
			switch {
			case msg != "":
				errs = append(errs, field.Invalid(fp.Index(i), v, msg))
			case seen[v]:
				errs = append(errs, field.Duplicate(fp.Index(i), v))
			case blocked && pre.Bits() == 0:
				// An ipBlock's except must be a strict subset of its cidr (0.0.0.0/0).
				errs = append(errs, field.Invalid(fp.Index(i), v, "blocks every address: set publicInternet: Deny instead"))
			}
			seen[v] = true
		}
	}
	cidrs("allowedCIDRs", s.AllowedCIDRs, false)
	cidrs("blockedCIDRs", s.BlockedCIDRs, true)
	if d := s.DNS; d != nil {
		dp := p.Child("dns")
		errs = append(errs, str(dp.Child("namespace"), d.Namespace, required, 1, MaxNameLength, reDNSLabel)...)
		if len(d.PodLabels) == 0 {
			errs = append(errs, field.Required(dp.Child("podLabels"), "select the DNS server pods"))
		}
		errs = append(errs, metav1validation.ValidateLabels(d.PodLabels, dp.Child("podLabels"))...)
		if d.Port < 0 || d.Port > 65535 {
			errs = append(errs, field.Invalid(dp.Child("port"), d.Port, "must be a port (1-65535)"))
		}
	}
	return errs
}
