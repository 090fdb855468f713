package routing_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/routing"
)

// The generated tests compose requests and responses from fragments (routing headers and
// cookies in every order, duplicates, mixed-case and misspelt names, separators and hostile
// bytes inside values, repeated Cookie headers as Envoy may present them, headers and cookies
// that disagree, platform namespaces, adminToken and Authorization variants) and check
// properties of the filters' decisions against a model of what was composed, not a list of
// expected answers:
//
//	(a) an accepted request's upstream is UpstreamHost of the values that were given exactly
//	    once (or identically as header and cookie), and those values are valid;
//	(b) an ambiguous request is refused with 400 and a constant message;
//	(c) no accepted request reaches a namespace the tenant reservation refuses;
//	(d) no Set-Cookie for a routing or adminToken name survives the response filter, and
//	    every other one does, in order;
//
// and that the Lua agrees with the Go twin (Targets.Validate) on every unambiguous request,
// decides the same when the route filter runs alone and when get() returns only the first
// of repeated headers (older Envoys).

const (
	genSeed      = 45
	genRequests  = 6000
	genResponses = 3000
)

// Routing names as the model knows them (lowercase) and as error messages spell them.
var genRouting = []string{"x-tf-namespace", "x-tf-robotid", "x-tf-robottype"}

const genAdmin = "admintoken"

var (
	genNamespaces = func() []string {
		ns := []string{"tenant-a", "acme", "personal-chat", "team-1", "kube", "kubesystem", "istio-system2", "default1"}
		ns = append(ns, v1alpha1.PlatformNamespaces()...)
		ns = append(ns, testReserved...)
		return append(ns, "kube-system", "kube-public", "kube-node-lease", "kube-x")
	}()
	genIDs   = []string{"r-123", "42", "0b0e7a5c-7d8f-4f3e-9a55-2a5d2b6c8e10", "helper-bot", "a"}
	genTypes = []string{"chat", "voice", "x1"}
	// Hostile values: separators, quotes, spaces, control bytes, percent-encoding, unicode
	// lookalikes, case, DNS-shaped escapes. None is a valid value; ';' is left out because in
	// a cookie it ends the pair (a ';' inside a "value" is modelled as a second pair).
	genHostile = []string{
		"", " ", "a b", "a,b", "tenant-a,kube-system", "a=b", `"chat"`, "'chat'", " chat", "ch\tat",
		"ch\x00at", "ch\x7fat", "chat\r\nx-tf-upstream: x", "%63hat", "%2e%2e", "../kube-system",
		"\u0441hat", "\uff43hat", "chat\u200b", "CHAT", "Tenant-a", "-chat", "chat-", "tenant-a.svc",
		"x.kube-system.svc.cluster.local", strings.Repeat("a", 64), "a/b", "a\\b", "chat-bot",
	}
	genTokens    = []string{"eyJhbGciOi.eyJzdWIi.sig-_x", "abc==", "t0k3n", "a~b+c/d"}
	genBadTokens = []string{"", "a b", "tok,en", `tok"en`, "t\u00f6k", "tok=en", "tok\x01"}
	// Filler cookies: benign, kept upstream byte for byte. Some look like routing names to a
	// human but not to any parser (a Cyrillic or fullwidth letter, a suffix).
	genFillers = []string{
		"session=abc123", "prefs=a,b", "_ga=GA1.2.3", "theme=dark", "empty=", "flag",
		"x-tf-namespacex=1", "namespace=kube-system", "\u0445-tf-namespace=kube-system",
		"\uff58-tf-robotid=r-1", "tfrs=1", "robot_type=chat",
	}
)

// genCase returns name with each letter's case chosen at random.
func genCase(r *rand.Rand, name string) string {
	b := []byte(name)
	for i, c := range b {
		if c >= 'a' && c <= 'z' && r.IntN(2) == 0 {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// genMisspell returns a cookie or header name that is canonical in another spelling: equal
// after lowercasing, percent-decoding and dropping non-[a-z0-9] bytes, but not the name.
func genMisspell(r *rand.Rand, name string, cookie bool) string {
	variants := []string{name[:3] + "_" + name[3:], name[:3] + "." + name[3:]}
	if strings.Contains(name, "-") {
		variants = append(variants, strings.ReplaceAll(name, "-", "_"))
	}
	if cookie {
		variants = append(variants,
			name+" ", name+"\t", `"`+name+`"`, name+"%00",
			name[:4]+"\u200b"+name[4:],
			name[:1]+fmt.Sprintf("%%%02X", name[1])+name[2:],
		)
	}
	v := genCase(r, variants[r.IntN(len(variants))])
	if strings.ToLower(v) == name {
		panic("not a misspelling: " + v)
	}
	return v
}

// genValue picks a value for routing key k: mostly valid, sometimes hostile.
func genValue(r *rand.Rand, k int) string {
	switch {
	case r.IntN(12) == 0:
		return genHostile[r.IntN(len(genHostile))]
	case k == 0 && r.IntN(3) > 0:
		return genNamespaces[r.IntN(4)] // mostly tenant namespaces, sometimes any
	}
	return [][]string{genNamespaces, genIDs, genTypes}[k][r.IntN([]int{len(genNamespaces), len(genIDs), len(genTypes)}[k])]
}

// genPair is one cookie pair on the wire and what the model knows about it.
type genPair struct {
	text  string
	key   int    // index in genRouting, len(genRouting) for adminToken, -1 for a filler
	value string // the value as the gateway must see it (key >= 0)
	bad   bool   // a misspelt or hidden protected name: the request is ambiguous
}

// genRequest is a composed request and the model's expectations.
type genRequest struct {
	entries []entry
	apiHost bool
	// ambiguous: some value is given in two places or in a misspelt or hidden name.
	ambiguous bool
	// values are the routing values, each given once (ok[k]).
	values [3]string
	ok     [3]bool
	// badAdmin: the adminToken cookie is not a token, or differs from Authorization.
	badAdmin bool
	wantAuth string
	fillers  bool // some filler cookie was sent
}

// accepted is the model's decision: what the gateway must do with this request.
func (g *genRequest) accepted(targets routing.Targets) bool {
	if !g.apiHost || g.ambiguous || g.badAdmin || !g.ok[0] || !g.ok[1] || !g.ok[2] {
		return false
	}
	return targets.Validate(g.values[0], g.values[1], g.values[2]) == nil
}

func genRequestFrom(r *rand.Rand) *genRequest {
	g := &genRequest{apiHost: r.IntN(12) != 0}
	host := []string{testAPIHost, "API.Example.COM:443", testAPIHost + "."}[r.IntN(3)]
	if !g.apiHost {
		host = []string{"grafana.example.com", "x.api.example.com", "api.example.com.evil"}[r.IntN(3)]
	}
	add := func(k, v string) { g.entries = append(g.entries, entry{strings.ToLower(k), v}) }
	add(":authority", host)

	var headerVals [3][]string
	var pairs []genPair
	for k, name := range genRouting {
		// Where the value comes from: a header, a cookie, both (mostly agreeing), twice in
		// one place, or nowhere.
		headers, cookies, same := 0, 0, false
		switch m := r.IntN(100); {
		case m < 40:
			headers = 1
		case m < 75:
			cookies = 1
		case m < 85:
			headers, cookies, same = 1, 1, true
		case m < 89:
			headers, cookies = 1, 1
		case m < 93:
			headers = 2
		case m < 98:
			cookies = 2 + r.IntN(2)
		}
		for range headers {
			v := genValue(r, k)
			headerVals[k] = append(headerVals[k], v)
			add(name, v)
		}
		for range cookies {
			v := genValue(r, k)
			if same {
				v = headerVals[k][0] // the same value in both places is one source
			}
			pairs = append(pairs, genPair{text: genCase(r, name) + "=" + v, key: k, value: v})
		}
		if r.IntN(60) == 0 { // a header name in another spelling
			g.ambiguous = true
			add(genMisspell(r, name, false), genValue(r, k))
		}
		if r.IntN(60) == 0 { // a cookie name in another spelling
			pairs = append(pairs, genPair{text: genMisspell(r, name, true) + "=" + genValue(r, k), key: -1, bad: true})
		}
		if r.IntN(60) == 0 { // a routing cookie hidden after ',' or in a nameless cookie
			hidden := []string{"prefs=a, ", "prefs=a,", "="}[r.IntN(3)] + genCase(r, name) + "=" + genValue(r, k)
			pairs = append(pairs, genPair{text: hidden, key: -1, bad: true})
		}
	}

	// adminToken cookies and Authorization headers.
	var tokens []string
	for range []int{0, 0, 0, 0, 1, 1, 1, 2}[r.IntN(8)] {
		tok := genTokens[r.IntN(len(genTokens))]
		if r.IntN(4) == 0 {
			tok = genBadTokens[r.IntN(len(genBadTokens))]
		}
		tokens = append(tokens, tok)
		pairs = append(pairs, genPair{text: genCase(r, "adminToken") + "=" + tok, key: len(genRouting), value: tok})
	}
	if r.IntN(30) == 0 {
		pairs = append(pairs, genPair{text: genMisspell(r, "admintoken", true) + "=t0k3n", key: -1, bad: true})
	}
	var auths []string
	switch r.IntN(16) {
	case 0, 1:
		auths = []string{"Bearer other"}
	case 2:
		if len(tokens) > 0 {
			auths = []string{"Bearer " + tokens[0]}
		}
	case 3:
		auths = []string{"Bearer a", "Bearer b"}
	}
	for _, a := range auths {
		add("authorization", a)
	}

	for range r.IntN(4) {
		pairs = append(pairs, genPair{text: genFillers[r.IntN(len(genFillers))], key: -1})
	}
	r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })

	// Cookie header layout: pairs in 1..3 groups, each group "; " or ";" joined; the groups
	// sent as separate Cookie entries, or joined by Envoy with "; " (current) or "," (older).
	groups := [][]genPair{}
	for i := 0; i < len(pairs); {
		n := 1 + r.IntN(len(pairs)-i)
		groups = append(groups, pairs[i:i+n])
		i += n
	}
	var texts []string
	for _, grp := range groups {
		var ts []string
		for _, p := range grp {
			t := p.text
			if r.IntN(8) == 0 {
				t = " \t"[r.IntN(2):][:1] + t // optional whitespace around a pair is not part of it
			}
			ts = append(ts, t)
		}
		texts = append(texts, strings.Join(ts, []string{"; ", ";"}[r.IntN(2)]))
	}
	commaJoined := false
	switch layout := r.IntN(3); {
	case len(texts) == 0:
	case layout == 0:
		for _, t := range texts {
			add("cookie", t)
		}
	case layout == 1:
		add("cookie", strings.Join(texts, "; "))
	default:
		add("cookie", strings.Join(texts, ","))
		commaJoined = len(texts) > 1
	}

	// The model: each group boundary joined by ',' puts the next group's first pair inside the
	// previous group's last pair.
	var cookieVals [4][]string
	for gi, grp := range groups {
		for pi, p := range grp {
			if p.bad {
				g.ambiguous = true
			}
			if p.key < 0 {
				g.fillers = true
			}
			if commaJoined && gi > 0 && pi == 0 && p.key >= 0 {
				g.ambiguous = true // a protected name after ','
			}
			if p.key >= 0 {
				v := strings.TrimRight(p.value, " \t") // the pair's trailing OWS is not the value's
				if commaJoined && gi < len(groups)-1 && pi == len(grp)-1 {
					v += ",…" // the next group's first pair is now part of this value
				}
				cookieVals[p.key] = append(cookieVals[p.key], v)
			}
		}
	}

	for k := range genRouting {
		hv, cv := headerVals[k], cookieVals[k]
		switch {
		case len(hv) > 1 || len(cv) > 1:
			g.ambiguous = true
		case len(hv) == 1 && len(cv) == 1 && hv[0] != cv[0]:
			g.ambiguous = true
		case len(hv) == 1:
			g.values[k], g.ok[k] = hv[0], true
		case len(cv) == 1:
			g.values[k], g.ok[k] = cv[0], true
		}
	}
	adm := cookieVals[len(genRouting)]
	switch {
	case len(auths) > 1 || len(adm) > 1:
		g.ambiguous = true
	case len(adm) == 1 && !reToken.MatchString(adm[0]):
		g.badAdmin = true
	case len(adm) == 1 && len(auths) == 1 && auths[0] != "Bearer "+adm[0]:
		g.ambiguous = true
	case len(auths) == 1:
		g.wantAuth = auths[0]
	case len(adm) == 1:
		g.wantAuth = "Bearer " + adm[0]
	}

	if r.IntN(3) == 0 { // the client tries to pick the upstream itself
		add(routing.HeaderUpstream, "kubernetes.default.svc.cluster.local")
		add(routing.HeaderUpstreamCluster, "outbound|443||kubernetes.default.svc.cluster.local")
	}
	r.Shuffle(len(g.entries)-1, func(i, j int) { g.entries[i+1], g.entries[j+1] = g.entries[j+1], g.entries[i+1] })
	return g
}

var (
	reToken = regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`)
	// A 400's body: fixed JSON whose message is made of the filter's constant text only.
	re400Body = regexp.MustCompile(`^\{"error":"bad_request","message":"[A-Za-z0-9 :'()^$\[\]+,.*-]+"\}$`)
)

func (g *genRequest) stream(firstOnly bool) *stream {
	return &stream{entries: slices.Clone(g.entries), firstOnly: firstOnly}
}

func (g *genRequest) String() string {
	var b strings.Builder
	for _, e := range g.entries {
		fmt.Fprintf(&b, "\n  %s: %q", e.key, e.value)
	}
	return b.String()
}

// protectedCookie reports whether a cookie name is a routing or adminToken name in any case.
func protectedCookie(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	return slices.Contains(genRouting, n) || n == genAdmin
}

func TestGeneratedRequests(t *testing.T) {
	targets := testTargets()
	full := newGateway(t)
	routeAlone := newGateway(t).route
	r := rand.New(rand.NewPCG(genSeed, 0))

	var generated, accepted, refused, ambiguous, reservedRefused, passed, agree int
	for i := range genRequests {
		g := genRequestFrom(r)
		generated++
		want := g.accepted(targets)
		s := g.stream(false)
		full.request(t, s)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("request %d: "+format+"%s", append(append([]any{i}, args...), g)...)
		}
		up, hasUp := s.get(routing.HeaderUpstream)
		cl, hasCl := s.get(routing.HeaderUpstreamCluster)
		switch {
		case !g.apiHost:
			passed++
			if s.status != "" || hasUp || hasCl {
				fail("another host: status %q upstream %q %q, want untouched and no upstream", s.status, up, cl)
			}
		case want:
			accepted++
			if s.status != "" {
				fail("refused %s %s, the model accepts", s.status, s.body)
			}
			// (a) the upstream is the Go twin's, of the values given once.
			if w := routing.UpstreamHost(g.values[0], g.values[1], g.values[2]); up != w {
				fail("upstream %q, want %q", up, w)
			}
			if w := routing.UpstreamCluster(g.values[0], g.values[1], g.values[2]); cl != w {
				fail("cluster %q, want %q", cl, w)
			}
			for k, name := range genRouting {
				if vs := s.values(name); len(vs) != 1 || vs[0] != g.values[k] {
					fail("upstream %s = %q, want exactly %q", name, vs, g.values[k])
				}
			}
			if auth := s.values("authorization"); g.wantAuth == "" && len(auth) > 0 || g.wantAuth != "" && !slices.Equal(auth, []string{g.wantAuth}) {
				fail("authorization %q, want %q", auth, g.wantAuth)
			}
			// (c) never a namespace no tenant may hold.
			ns := g.values[0]
			if v1alpha1.ReservedNamespaceReason(ns, testReserved...) != "" || slices.Contains(v1alpha1.PlatformNamespaces(), ns) {
				fail("routed to reserved namespace %q", ns)
			}
			// No routing cookie or token goes upstream, by net/http's reading or by a
			// reader that also splits at ','; every other cookie does.
			raw := strings.Join(s.values("cookie"), "; ")
			cookies, _ := http.ParseCookie(raw)
			for _, c := range cookies {
				if protectedCookie(c.Name) {
					fail("cookie %q forwarded upstream: %q", c.Name, raw)
				}
			}
			for _, part := range strings.FieldsFunc(raw, func(c rune) bool { return c == ';' || c == ',' }) {
				if name, _, _ := strings.Cut(part, "="); protectedCookie(name) {
					fail("cookie %q forwarded upstream: %q", name, raw)
				}
			}
			if g.fillers && raw == "" {
				fail("other cookies were dropped")
			}
		default:
			refused++
			if g.ambiguous {
				ambiguous++
			} else if !g.badAdmin && routing.Validate(g.values[0], g.values[1], g.values[2]) == nil {
				reservedRefused++
			}
			// (b) refused with a constant message, and no upstream.
			if s.status != "400" || !json.Valid([]byte(s.body)) || !re400Body.MatchString(s.body) {
				fail("status %q body %q, the model refuses", s.status, s.body)
			}
			if hasUp || hasCl {
				fail("refused request carries an upstream %q %q", up, cl)
			}
		}
		// Go twin: on every unambiguous request for the API host, Targets.Validate decides
		// as the Lua did.
		if g.apiHost && !g.ambiguous && !g.badAdmin && g.ok[0] && g.ok[1] && g.ok[2] {
			if (targets.Validate(g.values[0], g.values[1], g.values[2]) == nil) != (s.status == "") {
				fail("Go twin and Lua disagree")
			}
			agree++
		}
		// The same decision from the route filter alone, and with an Envoy whose get()
		// returns only the first of repeated headers.
		for _, alt := range []struct {
			name string
			run  func(*stream)
			s    *stream
		}{
			{"route filter alone", func(x *stream) { routeAlone.run(t, "envoy_on_request", x) }, g.stream(false)},
			{"first-value get()", func(x *stream) { full.request(t, x) }, g.stream(true)},
		} {
			alt.run(alt.s)
			aUp, _ := alt.s.get(routing.HeaderUpstream)
			if alt.s.status != s.status || aUp != up {
				fail("%s: status %q upstream %q, full gateway %q %q", alt.name, alt.s.status, aUp, s.status, up)
			}
		}
	}
	t.Logf("generated %d requests (seed %d): %d accepted, %d refused (%d ambiguous, %d for a reserved namespace, %d invalid), %d for other hosts passed; Go twin agreed on %d unambiguous requests",
		generated, genSeed, accepted, refused, ambiguous, reservedRefused, refused-ambiguous-reservedRefused, passed, agree)
	if accepted < genRequests/10 || refused < genRequests/4 || ambiguous < genRequests/10 || reservedRefused < 50 {
		t.Errorf("the generator lost its mix: %d accepted, %d refused, %d ambiguous, %d reserved", accepted, refused, ambiguous, reservedRefused)
	}
}

// genSetCookie is one Set-Cookie value and whether it sets a protected name.
func genSetCookie(r *rand.Rand) (string, bool) {
	attrs := []string{"", "; Path=/", "; Domain=example.com; Path=/; Secure; HttpOnly", "; SameSite=None; Secure", "; Expires=Wed, 21 Oct 2026 07:28:00 GMT"}
	attr := attrs[r.IntN(len(attrs))]
	names := append(slices.Clone(genRouting), genAdmin)
	name := names[r.IntN(len(names))]
	switch r.IntN(9) {
	case 0, 1:
		return genCase(r, name) + "=" + genValue(r, 0) + attr, true
	case 2:
		return genMisspell(r, name, true) + "=v" + attr, true
	case 3: // a nameless cookie, sent back by browsers as its bare value
		return "=" + genCase(r, name) + "=v" + attr, true
	case 4: // a second cookie after ','
		return "a=1, " + genCase(r, name) + "=v" + attr, true
	case 5:
		return " " + genCase(r, name) + "=v" + attr, true
	default:
		f := genFillers[r.IntN(len(genFillers))]
		if !strings.Contains(f, "=") {
			f += "=1"
		}
		return f + attr, false
	}
}

func TestGeneratedResponses(t *testing.T) {
	g := newGateway(t)
	r := rand.New(rand.NewPCG(genSeed, 1))
	var generated, stripped, kept int
	for i := range genResponses {
		s := &stream{}
		s.add(":status", "200")
		s.add("content-type", "application/json")
		var want []string
		for range r.IntN(6) {
			v, protected := genSetCookie(r)
			s.add("set-cookie", v)
			if protected {
				stripped++
			} else {
				want = append(want, v)
				kept++
			}
			if r.IntN(4) == 0 {
				s.add("x-other", v) // only Set-Cookie is filtered
			}
		}
		before := slices.Clone(s.entries)
		g.response(t, s)
		generated++
		got := s.values("set-cookie")
		if !slices.Equal(got, want) {
			t.Fatalf("response %d: set-cookie %q, want %q (from %q)", i, got, want, before)
		}
		// (d) no routing or adminToken cookie survives, as a browser would read it.
		for _, v := range got {
			if c, err := http.ParseSetCookie(v); err == nil && protectedCookie(c.Name) {
				t.Fatalf("response %d: %q survives", i, v)
			}
		}
		isSetCookie := func(e entry) bool { return e.key == "set-cookie" }
		if !slices.Equal(slices.DeleteFunc(slices.Clone(before), isSetCookie), slices.DeleteFunc(slices.Clone(s.entries), isSetCookie)) {
			t.Fatalf("response %d: other headers changed: %q -> %q", i, before, s.entries)
		}
	}
	t.Logf("generated %d responses (seed %d): %d Set-Cookies for routing/adminToken names dropped, %d others kept", generated, genSeed, stripped, kept)
	if stripped < genResponses/2 || kept < genResponses/2 {
		t.Errorf("the generator lost its mix: %d dropped, %d kept", stripped, kept)
	}
}

// The agreement of the gateway's reserved namespaces with the tenant reservation, over every
// namespace the generator uses and the built-in lists: a namespace the gateway routes to is
// one a tenant may hold, and the other way round.
func TestTargetsAgreeWithTenantReservation(t *testing.T) {
	targets := testTargets()
	for _, ns := range append(slices.Clone(genNamespaces), v1alpha1.BuiltinReservedNamespaces()...) {
		tenantRefused := v1alpha1.ReservedNamespaceReason(ns, testReserved...) != "" || slices.Contains(v1alpha1.PlatformNamespaces(), ns)
		if targets.Reserved(ns) != tenantRefused {
			t.Errorf("namespace %q: gateway reserved=%v, tenant reservation refuses=%v", ns, targets.Reserved(ns), tenantRefused)
		}
	}
}
