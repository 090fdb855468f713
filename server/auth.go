package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/labstack/echo/v4"
)

// Role is what a static token may do at most; its Scope narrows it further.
type Role string

const (
	// RoleReadOnly may read resources, operations, events, metrics and the OpenAPI document.
	RoleReadOnly Role = "read-only"
	// RoleAdmin may also create, change, preview, delete and cancel.
	RoleAdmin Role = "admin"
)

// MinTokenLength refuses guessable tokens at load time.
const MinTokenLength = 16

// Token is one static bearer token. Its value never appears in logs or %v output.
type Token struct {
	// Name identifies the token's holder in access logs ("ci", "alice").
	Name  string
	Role  Role
	Value string
	// Scope narrows what the role allows (the zero Scope: everything the role allows).
	Scope Scope
}

// String shows the name, role and scope, never the value.
func (t Token) String() string {
	if s := t.Scope.String(); s != "" {
		return fmt.Sprintf("%s (%s, %s)", t.Name, t.Role, s)
	}
	return fmt.Sprintf("%s (%s)", t.Name, t.Role)
}

// GoString keeps %#v from printing the value.
func (t Token) GoString() string { return "server.Token{" + t.String() + "}" }

// LogValue keeps slog from printing the value.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", t.Name), slog.String("role", string(t.Role)), slog.String("scope", t.Scope.String()))
}

// ParseTokens reads tokens, one per line: `TOKEN ROLE [NAME] [namespaces=NS,…] [kinds=KIND,…]
// [verbs=VERB,…]`, ROLE being admin or read-only (readonly also accepted), the scope fields in
// any order after ROLE (see ParseScopeField). Blank lines and lines starting with # are
// skipped; ';' also ends an entry, so an environment variable can hold several. Tokens shorter
// than MinTokenLength, duplicates and malformed scopes are refused: a typo must not quietly
// weaken (or widen) access.
func ParseTokens(r io.Reader) ([]Token, error) {
	var out []Token
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		for _, entry := range strings.Split(sc.Text(), ";") {
			entry = strings.TrimSpace(entry)
			if entry == "" || strings.HasPrefix(entry, "#") {
				continue
			}
			f := strings.Fields(entry)
			if len(f) < 2 {
				return nil, fmt.Errorf("tokens line %d: want `TOKEN ROLE [NAME] [namespaces=…] [kinds=…] [verbs=…]`", line)
			}
			t := Token{Value: f[0], Name: fmt.Sprintf("token-%d", len(out)+1)}
			switch strings.ToLower(f[1]) {
			case "admin":
				t.Role = RoleAdmin
			case "read-only", "readonly":
				t.Role = RoleReadOnly
			default:
				return nil, fmt.Errorf("tokens line %d: role must be admin or read-only", line)
			}
			named := false
			for _, field := range f[2:] {
				if !strings.Contains(field, "=") {
					if named {
						return nil, fmt.Errorf("tokens line %d: more than one NAME (scopes are key=value)", line)
					}
					t.Name, named = field, true
					continue
				}
				if err := t.Scope.ParseField(field); err != nil {
					return nil, fmt.Errorf("tokens line %d: %w", line, err)
				}
			}
			if len(t.Value) < MinTokenLength {
				return nil, fmt.Errorf("tokens line %d: token %s is shorter than %d characters", line, t.Name, MinTokenLength)
			}
			if seen[t.Value] {
				return nil, fmt.Errorf("tokens line %d: token %s is a duplicate", line, t.Name)
			}
			seen[t.Value] = true
			out = append(out, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	return out, nil
}

// LoadTokenFile reads a token file (see ParseTokens).
func LoadTokenFile(path string) ([]Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	toks, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return toks, nil
}

// Principal is the authenticated caller of a request: a static token's holder or a
// Kubernetes user (a ServiceAccount, an OIDC user) as TokenReview describes it.
type Principal struct {
	// Name is the static token's name or the Kubernetes username; logs, rate limits and
	// stream caps go by it.
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
	// Via is the authenticator that recognized the token: AuthStatic or AuthKubernetes. It
	// picks the authorizer.
	Via AuthMode

	// A static token's role and scope.
	role  Role
	scope Scope
}

// AuthMode names an authentication mode of the API.
type AuthMode string

// Authentication modes.
const (
	// AuthStatic: the tokens of a token file, authorized by their role and scope.
	AuthStatic AuthMode = "static"
	// AuthKubernetes: Kubernetes bearer tokens verified with TokenReview and authorized with
	// SubjectAccessReview by the API server the server talks to.
	AuthKubernetes AuthMode = "kubernetes"
)

// Authenticator recognizes a bearer token. It returns ErrUnauthorized for a token it does not
// recognize and ErrAuthUnavailable when it cannot tell (its backend failed).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Principal, error)
}

// ErrAuthUnavailable: the API server's TokenReview or SubjectAccessReview failed, so the
// request can be neither admitted nor refused (503).
var ErrAuthUnavailable = errors.New("authentication or authorization unavailable")

// staticTokens checks presented tokens against the token file's. It keeps SHA-256 digests
// only, compares every one in constant time and never stops at the first match, so neither a
// token's length nor its position in the list shows in the response time.
type staticTokens struct {
	entries []staticEntry
}

type staticEntry struct {
	digest [sha256.Size]byte
	p      Principal
}

func newStaticTokens(tokens []Token) *staticTokens {
	a := &staticTokens{}
	for _, t := range tokens {
		a.entries = append(a.entries, staticEntry{digest: sha256.Sum256([]byte(t.Value)),
			p: Principal{Name: t.Name, Via: AuthStatic, role: t.Role, scope: t.Scope}})
	}
	return a
}

func (a *staticTokens) lookup(presented string) (Principal, bool) {
	d := sha256.Sum256([]byte(presented))
	var found Principal
	ok := 0
	for _, e := range a.entries {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			found, ok = e.p, 1
		}
	}
	return found, ok == 1
}

// Authenticate implements Authenticator.
func (a *staticTokens) Authenticate(_ context.Context, token string) (Principal, error) {
	if p, ok := a.lookup(token); ok {
		return p, nil
	}
	return Principal{}, ErrUnauthorized
}

// authenticators tries each authenticator in turn: the first that recognizes the token wins;
// one that is unavailable makes the answer 503 unless a later one recognizes the token.
type authenticators []Authenticator

func (as authenticators) Authenticate(ctx context.Context, token string) (Principal, error) {
	var unavailable error
	for _, a := range as {
		p, err := a.Authenticate(ctx, token)
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, ErrUnauthorized):
		default:
			unavailable = err
		}
	}
	if unavailable != nil {
		return Principal{}, unavailable
	}
	return Principal{}, ErrUnauthorized
}

const ctxPrincipal = "tfrs.principal"

// unauthenticated are the only routes that work without a token: probes must not need one.
var unauthenticated = map[string]bool{"/healthz": true, "/readyz": true}

// maxTokenBytes bounds what is hashed or sent for review: no real token comes near it.
const maxTokenBytes = 16 << 10

// authMiddleware requires a bearer token on every route but the probes and sets the request's
// Principal. Unknown routes need a token too, so an anonymous caller learns nothing about
// which routes exist. What the principal may do is authzMiddleware's business.
func (s *Server) authMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if unauthenticated[c.Path()] {
			return next(c)
		}
		scheme, tok, found := strings.Cut(c.Request().Header.Get(echo.HeaderAuthorization), " ")
		tok = strings.TrimSpace(tok)
		if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" || len(tok) > maxTokenBytes {
			return ErrUnauthorized
		}
		p, err := s.authn.Authenticate(c.Request().Context(), tok)
		if err != nil {
			return err
		}
		c.Set(ctxPrincipal, p)
		return next(c)
	}
}

// isToken68 is RFC 7235's token68, what a JWT (a ServiceAccount's or an OIDC token) is made
// of: anything else is refused before it is sent to the API server for review.
func isToken68(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~+/=", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// principal is the request's authenticated caller (the zero Principal on the probes).
func principal(c echo.Context) Principal {
	p, _ := c.Get(ctxPrincipal).(Principal)
	return p
}

func principalOf(c echo.Context) string { return principal(c).Name }
