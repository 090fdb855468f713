package server

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"log/slog"
	"slices"
	"sort"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// TokenReviewer creates TokenReviews (authentication.k8s.io/v1), as
// clientset.AuthenticationV1().TokenReviews() does.
type TokenReviewer interface {
	Create(ctx context.Context, r *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// AccessReviewer creates SubjectAccessReviews (authorization.k8s.io/v1), as
// clientset.AuthorizationV1().SubjectAccessReviews() does.
type AccessReviewer interface {
	Create(ctx context.Context, r *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// KubernetesOptions tune KubernetesAuth; zero values get the defaults named.
type KubernetesOptions struct {
	// Audiences, when set, are asked of every TokenReview: a token is accepted only when
	// issued for one of them (`kubectl create token SA --audience tfrs`). Default: none, so
	// the API server's own audiences (what `kubectl create token SA` issues).
	Audiences []string
	// CacheTTL is how long a review's answer is kept (allowed and denied alike; errors
	// never). Default 10 s; a revoked binding or token keeps working at most that long.
	CacheTTL time.Duration
	// CacheSize bounds each of the two caches (token reviews, access reviews). Default 10000.
	CacheSize int
	// MaxInFlight bounds the reviews waiting on the API server at once. Default 32.
	MaxInFlight int
	Logger      *slog.Logger
}

// DefaultAuthCacheTTL is KubernetesOptions.CacheTTL's default.
const DefaultAuthCacheTTL = 10 * time.Second

// KubernetesAuth authenticates Kubernetes bearer tokens (ServiceAccounts, OIDC users) with
// TokenReview and authorizes their requests with SubjectAccessReview, both against the API
// server it was made for: the same user may do over HTTP exactly what RBAC lets them do with
// kubectl. It is an Authenticator and an Authorizer.
type KubernetesAuth struct {
	tokens  TokenReviewer
	access  AccessReviewer
	aud     []string
	log     *slog.Logger
	idents  *reviewCache[identity]
	answers *reviewCache[accessAnswer]
	sem     chan struct{}
}

type identity struct {
	p  Principal
	ok bool
}

type accessAnswer struct{ allowed bool }

var (
	_ Authenticator = (*KubernetesAuth)(nil)
	_ Authorizer    = (*KubernetesAuth)(nil)
)

// NewKubernetesAuth reviews tokens with tr and access with ar.
func NewKubernetesAuth(tr TokenReviewer, ar AccessReviewer, o KubernetesOptions) *KubernetesAuth {
	return newKubernetesAuth(tr, ar, o, time.Now)
}

func newKubernetesAuth(tr TokenReviewer, ar AccessReviewer, o KubernetesOptions, now func() time.Time) *KubernetesAuth {
	if o.CacheTTL == 0 {
		o.CacheTTL = DefaultAuthCacheTTL
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 10000
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 32
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &KubernetesAuth{tokens: tr, access: ar, aud: slices.Clone(o.Audiences), log: o.Logger,
		idents:  newReviewCache[identity](o.CacheTTL, o.CacheSize, now),
		answers: newReviewCache[accessAnswer](o.CacheTTL, o.CacheSize, now),
		sem:     make(chan struct{}, o.MaxInFlight)}
}

// NewKubernetesAuthForConfig reviews against the API server of rc (whose identity needs
// `create` on tokenreviews and subjectaccessreviews: config/rbac/api_auth_role.yaml).
func NewKubernetesAuthForConfig(rc *rest.Config, o KubernetesOptions) (*KubernetesAuth, error) {
	authn, err := authenticationv1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationv1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return NewKubernetesAuth(authn.TokenReviews(), authz.SubjectAccessReviews(), o), nil
}

// acquire bounds the reviews in flight; the request's context ends the wait.
func (k *KubernetesAuth) acquire(ctx context.Context) (func(), error) {
	select {
	case k.sem <- struct{}{}:
		return func() { <-k.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Authenticate implements Authenticator: ErrUnauthorized for a token the API server does not
// accept (or not for the audiences), ErrAuthUnavailable when the review fails.
func (k *KubernetesAuth) Authenticate(ctx context.Context, token string) (Principal, error) {
	if !isToken68(token) {
		return Principal{}, ErrUnauthorized
	}
	key := sha256.Sum256([]byte(token))
	if id, ok := k.idents.get(key); ok {
		if !id.ok {
			return Principal{}, ErrUnauthorized
		}
		return id.p, nil
	}
	release, err := k.acquire(ctx)
	if err != nil {
		return Principal{}, err
	}
	defer release()
	res, err := k.tokens.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: k.aud},
	}, metav1.CreateOptions{})
	if err != nil {
		if ctx.Err() != nil {
			return Principal{}, ctx.Err()
		}
		k.log.Warn("TokenReview failed", "err", err)
		return Principal{}, fmt.Errorf("%w: TokenReview: %v", ErrAuthUnavailable, err)
	}
	st := res.Status
	id := identity{ok: st.Authenticated && st.User.Username != "" && k.audienceOK(st.Audiences)}
	if id.ok {
		id.p = Principal{Name: st.User.Username, UID: st.User.UID, Groups: slices.Clone(st.User.Groups), Via: AuthKubernetes}
		if len(st.User.Extra) > 0 {
			id.p.Extra = make(map[string][]string, len(st.User.Extra))
			for key, v := range st.User.Extra {
				id.p.Extra[key] = slices.Clone(v)
			}
		}
	}
	k.idents.put(key, id)
	if !id.ok {
		return Principal{}, ErrUnauthorized
	}
	return id.p, nil
}

// audienceOK: with audiences configured, the API server must have confirmed one of them.
func (k *KubernetesAuth) audienceOK(got []string) bool {
	if len(k.aud) == 0 {
		return true
	}
	for _, a := range got {
		if slices.Contains(k.aud, a) {
			return true
		}
	}
	return false
}

// Authorize implements Authorizer with a SubjectAccessReview of p doing attrs.
func (k *KubernetesAuth) Authorize(ctx context.Context, p Principal, attrs Attributes) error {
	key := accessKey(p, attrs)
	if ans, ok := k.answers.get(key); ok {
		return k.answer(p, attrs, ans.allowed)
	}
	release, err := k.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: p.Name, UID: p.UID, Groups: p.Groups,
	}}
	if len(p.Extra) > 0 {
		sar.Spec.Extra = make(map[string]authorizationv1.ExtraValue, len(p.Extra))
		for key, v := range p.Extra {
			sar.Spec.Extra[key] = v
		}
	}
	if attrs.Resource == "" {
		sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: attrs.Path, Verb: attrs.Verb}
	} else {
		sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: attrs.Namespace, Verb: attrs.Verb, Group: attrs.Group, Version: v1alpha1.GroupVersion.Version,
			Resource: attrs.Resource, Subresource: attrs.Subresource, Name: attrs.Name,
		}
	}
	res, err := k.access.Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		k.log.Warn("SubjectAccessReview failed", "err", err)
		return fmt.Errorf("%w: SubjectAccessReview: %v", ErrAuthUnavailable, err)
	}
	allowed := res.Status.Allowed && !res.Status.Denied
	if !allowed {
		// The API server's reasoning names roles and bindings: the log has it, the caller not.
		k.log.Debug("access denied", "user", p.Name, "check", attrs.String(), "reason", res.Status.Reason, "evaluationError", res.Status.EvaluationError)
	}
	k.answers.put(key, accessAnswer{allowed: allowed})
	return k.answer(p, attrs, allowed)
}

func (k *KubernetesAuth) answer(p Principal, attrs Attributes, allowed bool) error {
	if allowed {
		return nil
	}
	return &ForbiddenError{Principal: p.Name, Attrs: attrs}
}

// accessKey digests everything a SubjectAccessReview is asked: the user info and the
// attributes, each length-prefixed so no two different questions share a key.
func accessKey(p Principal, a Attributes) [sha256.Size]byte {
	h := sha256.New()
	write := func(ss ...string) {
		for _, s := range ss {
			writeLen(h, len(s))
			h.Write([]byte(s))
		}
	}
	write(p.Name, p.UID)
	writeLen(h, len(p.Groups))
	write(p.Groups...)
	keys := make([]string, 0, len(p.Extra))
	for k := range p.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	writeLen(h, len(keys))
	for _, k := range keys {
		write(k)
		writeLen(h, len(p.Extra[k]))
		write(p.Extra[k]...)
	}
	write(a.Verb, a.Group, a.Resource, a.Subresource, a.Namespace, a.Name, a.Path)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

func writeLen(h hash.Hash, n int) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
}
