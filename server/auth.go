package server

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/labstack/echo/v4"
)

// Role is what a token may do.
type Role string

const (
	// RoleReadOnly may read resources, operations, events, metrics and the OpenAPI document.
	RoleReadOnly Role = "read-only"
	// RoleAdmin may also create, change, preview, delete and cancel.
	RoleAdmin Role = "admin"
)

// MinTokenLength refuses guessable tokens at load time.
const MinTokenLength = 16

// Token is one bearer token. Its value never appears in logs or %v output.
type Token struct {
	// Name identifies the token's holder in access logs ("ci", "alice").
	Name  string
	Role  Role
	Value string
}

// String shows the name and role, never the value.
func (t Token) String() string { return fmt.Sprintf("%s (%s)", t.Name, t.Role) }

// GoString keeps %#v from printing the value.
func (t Token) GoString() string { return "server.Token{" + t.String() + "}" }

// LogValue keeps slog from printing the value.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", t.Name), slog.String("role", string(t.Role)))
}

// ParseTokens reads tokens, one per line: `TOKEN ROLE [NAME]`, ROLE being admin or read-only
// (readonly also accepted). Blank lines and lines starting with # are skipped; ';' also ends
// an entry, so an environment variable can hold several. Tokens shorter than MinTokenLength and
// duplicates are refused: a typo must not quietly weaken access.
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
			if len(f) < 2 || len(f) > 3 {
				return nil, fmt.Errorf("tokens line %d: want `TOKEN ROLE [NAME]`", line)
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
			if len(f) == 3 {
				t.Name = f[2]
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

// principal is the authenticated caller of a request.
type principal struct {
	name string
	role Role
}

// authenticator checks presented tokens. It keeps SHA-256 digests only, compares every one in
// constant time and never stops at the first match, so neither a token's length nor its
// position in the list shows in the response time.
type authenticator struct {
	entries []authEntry
}

type authEntry struct {
	digest [sha256.Size]byte
	p      principal
}

func newAuthenticator(tokens []Token) *authenticator {
	a := &authenticator{}
	for _, t := range tokens {
		a.entries = append(a.entries, authEntry{digest: sha256.Sum256([]byte(t.Value)), p: principal{name: t.Name, role: t.Role}})
	}
	return a
}

func (a *authenticator) lookup(presented string) (principal, bool) {
	d := sha256.Sum256([]byte(presented))
	var found principal
	ok := 0
	for _, e := range a.entries {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			found, ok = e.p, 1
		}
	}
	return found, ok == 1
}

const ctxPrincipal = "tfrs.principal"

// unauthenticated are the only routes that work without a token: probes must not need one.
var unauthenticated = map[string]bool{"/healthz": true, "/readyz": true}

// authMiddleware requires a bearer token on every route but the probes; reading (GET, HEAD)
// takes any role, everything else the admin role. Unknown routes need a token too, so an
// anonymous caller learns nothing about which routes exist.
func (s *Server) authMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if unauthenticated[c.Path()] {
			return next(c)
		}
		scheme, tok, found := strings.Cut(c.Request().Header.Get(echo.HeaderAuthorization), " ")
		if !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return ErrUnauthorized
		}
		p, ok := s.auth.lookup(strings.TrimSpace(tok))
		if !ok {
			return ErrUnauthorized
		}
		c.Set(ctxPrincipal, p)
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead:
		default:
			if p.role != RoleAdmin && !readOnlyAllowed(c) {
				return ErrForbidden
			}
		}
		return next(c)
	}
}

func principalOf(c echo.Context) string {
	if p, ok := c.Get(ctxPrincipal).(principal); ok {
		return p.name
	}
	return ""
}
