package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Scope narrows what a static token's role allows. An empty list allows everything the role
// does on that axis. A token scoped to namespaces reaches no cluster-scoped resource
// (TFRClusters); non-resource paths (/metrics) need only the get verb.
type Scope struct {
	// Namespaces the token may act in.
	Namespaces []string
	// Kinds the token may act on: TFRCluster, TFRTenant, TFRServer.
	Kinds []v1alpha1.Kind
	// Verbs the token may use: get, list, create, update, delete, and preview (the preview
	// subresource). Canceling an operation takes the operation's verb.
	Verbs []string
}

// scopeVerbs are the verbs a scope may name.
var scopeVerbs = []string{VerbGet, VerbList, VerbCreate, VerbUpdate, VerbDelete, SubresourcePreview}

// roleVerbs are the verbs each role allows.
var roleVerbs = map[Role][]string{
	RoleAdmin:    scopeVerbs,
	RoleReadOnly: {VerbGet, VerbList, SubresourcePreview}, // a preview writes nothing (engine: scratch state)
}

// ParseField reads one `key=value,…` scope field of a token line: namespaces= (DNS labels),
// kinds= (TFRCluster, TFRTenant, TFRServer; any case) or verbs= (see Scope). A key may appear
// once; `*` or an empty list is refused (leave the key out to allow all).
func (s *Scope) ParseField(field string) error {
	key, value, _ := strings.Cut(field, "=")
	var vals []string
	for v := range strings.SplitSeq(value, ",") {
		if v = strings.TrimSpace(v); v != "" {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return fmt.Errorf("scope %s: no values (leave the key out to allow all)", key)
	}
	switch strings.ToLower(key) {
	case "namespaces":
		if s.Namespaces != nil {
			return fmt.Errorf("scope namespaces given twice")
		}
		for _, ns := range vals {
			if len(ns) > v1alpha1.MaxNameLength || !reDNSLabel.MatchString(ns) {
				return fmt.Errorf("scope namespaces: %q is not a namespace name", ns)
			}
		}
		s.Namespaces = vals
	case "kinds":
		if s.Kinds != nil {
			return fmt.Errorf("scope kinds given twice")
		}
		for _, v := range vals {
			k := kindNamed(v)
			if k == nil {
				return fmt.Errorf("scope kinds: %q is not TFRCluster, TFRTenant or TFRServer", v)
			}
			s.Kinds = append(s.Kinds, k.kind)
		}
	case "verbs":
		if s.Verbs != nil {
			return fmt.Errorf("scope verbs given twice")
		}
		for _, v := range vals {
			v = strings.ToLower(v)
			if !slices.Contains(scopeVerbs, v) {
				return fmt.Errorf("scope verbs: %q is not one of %s", v, strings.Join(scopeVerbs, ", "))
			}
			s.Verbs = append(s.Verbs, v)
		}
	default:
		return fmt.Errorf("unknown scope %q (namespaces=, kinds=, verbs=)", key)
	}
	return nil
}

// kindNamed finds a kind by its name in any case.
func kindNamed(name string) *kindInfo {
	for _, k := range resourceKinds {
		if strings.EqualFold(string(k.kind), name) {
			return k
		}
	}
	return nil
}

// String is the scope as token-file fields ("" when unscoped).
func (s Scope) String() string {
	var parts []string
	if len(s.Namespaces) > 0 {
		parts = append(parts, "namespaces="+strings.Join(s.Namespaces, ","))
	}
	if len(s.Kinds) > 0 {
		ks := make([]string, len(s.Kinds))
		for i, k := range s.Kinds {
			ks[i] = string(k)
		}
		parts = append(parts, "kinds="+strings.Join(ks, ","))
	}
	if len(s.Verbs) > 0 {
		parts = append(parts, "verbs="+strings.Join(s.Verbs, ","))
	}
	return strings.Join(parts, " ")
}

// staticAuthorizer authorizes static tokens by their role and scope.
type staticAuthorizer struct{}

func (staticAuthorizer) Authorize(_ context.Context, p Principal, a Attributes) error {
	deny := func(reason string) error { return &ForbiddenError{Principal: p.Name, Attrs: a, Reason: reason} }
	verb := a.Verb
	if a.Subresource == SubresourcePreview {
		verb = SubresourcePreview
	}
	if !slices.Contains(roleVerbs[p.role], verb) {
		return deny(fmt.Sprintf("the token's role %s does not allow %s", p.role, verb))
	}
	if len(p.scope.Verbs) > 0 && !slices.Contains(p.scope.Verbs, verb) {
		return deny("outside the token's scope: verbs=" + strings.Join(p.scope.Verbs, ","))
	}
	if a.Resource == "" {
		return nil // a non-resource path: the verb was all there was to check
	}
	if len(p.scope.Kinds) > 0 {
		k := kindOfResource(a.Resource)
		if k == nil || !slices.Contains(p.scope.Kinds, k.kind) {
			return deny("outside the token's scope: " + p.scope.String())
		}
	}
	if len(p.scope.Namespaces) > 0 && !slices.Contains(p.scope.Namespaces, a.Namespace) {
		return deny("outside the token's scope: " + p.scope.String())
	}
	return nil
}

func kindOfResource(resource string) *kindInfo {
	for _, k := range resourceKinds {
		if resourceOf(k) == resource {
			return k
		}
	}
	return nil
}
