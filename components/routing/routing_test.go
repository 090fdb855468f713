package routing_test

import (
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/routing"
	"github.com/tfrs-io/tfrs-operator/internal/pulumitest"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

const testAPIHost = "api.example.com"

// stream is a fake of the part of Envoy's Lua stream handle the filters may use:
// headers():get/replace/add/remove, pairs(headers()), and respond on requests. Any other call
// fails the Lua with "attempt to call a nil value", so the test also pins the filters to that
// API. Headers are an ordered list of entries with lowercase keys, as Envoy stores them, so
// repeated headers stay separate entries (pairs yields each); get joins them with ',' as
// current Envoy does, or returns the first only (firstOnly) as older Envoys did.
type stream struct {
	entries   []entry
	firstOnly bool
	open      int // pairs iterations started and not run to their end
	status    string
	body      string
}

type entry struct{ key, value string }

func newStream(h map[string]string) *stream {
	s := &stream{}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.add(k, h[k])
	}
	return s
}

func (s *stream) values(key string) []string {
	var vs []string
	for _, e := range s.entries {
		if e.key == strings.ToLower(key) {
			vs = append(vs, e.value)
		}
	}
	return vs
}

func (s *stream) get(key string) (string, bool) {
	vs := s.values(key)
	switch {
	case len(vs) == 0:
		return "", false
	case s.firstOnly:
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}

func (s *stream) add(key, value string) {
	s.entries = append(s.entries, entry{strings.ToLower(key), value})
}

func (s *stream) remove(key string) {
	s.entries = slices.DeleteFunc(s.entries, func(e entry) bool { return e.key == strings.ToLower(key) })
}

func (s *stream) replace(key, value string) {
	s.remove(key)
	s.add(key, value)
}

func (s *stream) handle(L *lua.LState, request bool) *lua.LTable {
	headers := L.NewTable()
	// Envoy: "headers cannot be modified during iteration", and a loop must run to its end
	// before any change.
	mutating := func(L *lua.LState) {
		if s.open > 0 {
			L.RaiseError("headers modified during (or after an unfinished) pairs iteration")
		}
	}
	L.SetField(headers, "get", L.NewFunction(func(L *lua.LState) int {
		if v, ok := s.get(L.CheckString(2)); ok {
			L.Push(lua.LString(v))
		} else {
			L.Push(lua.LNil)
		}
		return 1
	}))
	L.SetField(headers, "replace", L.NewFunction(func(L *lua.LState) int {
		mutating(L)
		s.replace(L.CheckString(2), L.CheckString(3))
		return 0
	}))
	L.SetField(headers, "add", L.NewFunction(func(L *lua.LState) int {
		mutating(L)
		s.add(L.CheckString(2), L.CheckString(3))
		return 0
	}))
	L.SetField(headers, "remove", L.NewFunction(func(L *lua.LState) int {
		mutating(L)
		s.remove(L.CheckString(2))
		return 0
	}))
	mt := L.NewTable()
	L.SetField(mt, "__pairs", L.NewFunction(func(L *lua.LState) int {
		snapshot := slices.Clone(s.entries)
		s.open++
		i, done := 0, false
		L.Push(L.NewFunction(func(L *lua.LState) int {
			if i >= len(snapshot) {
				if !done {
					done = true
					s.open--
				}
				L.Push(lua.LNil)
				return 1
			}
			e := snapshot[i]
			i++
			L.Push(lua.LString(e.key))
			L.Push(lua.LString(e.value))
			return 2
		}))
		L.Push(lua.LNil)
		L.Push(lua.LNil)
		return 3
	}))
	L.SetMetatable(headers, mt)

	h := L.NewTable()
	L.SetField(h, "headers", L.NewFunction(func(L *lua.LState) int {
		L.Push(headers)
		return 1
	}))
	if request {
		L.SetField(h, "respond", L.NewFunction(func(L *lua.LState) int {
			if s.status != "" {
				L.RaiseError("respond called twice")
			}
			rh := L.CheckTable(2)
			s.status = lua.LVAsString(rh.RawGetString(":status"))
			s.body = L.OptString(3, "")
			return 0
		}))
	}
	return h
}

// luaPairs makes pairs honour __pairs, as Envoy's LuaJIT (built with Lua 5.2 compatibility)
// does and gopher-lua (Lua 5.1) does not.
const luaPairs = `
local rawpairs = pairs
function pairs(t)
  local mt = getmetatable(t)
  if mt ~= nil and mt.__pairs ~= nil then
    return mt.__pairs(t)
  end
  return rawpairs(t)
end
`

// filter is one loaded Lua filter. Envoy keeps one Lua state per worker and runs every
// request through it, so one state serves every call here too.
type filter struct{ L *lua.LState }

func loadFilter(t testing.TB, code string) filter {
	t.Helper()
	L := lua.NewState()
	t.Cleanup(L.Close)
	if err := L.DoString(luaPairs); err != nil {
		t.Fatal(err)
	}
	if err := L.DoString(code); err != nil {
		t.Fatalf("load lua: %v", err)
	}
	return filter{L}
}

func (f filter) run(t testing.TB, fn string, s *stream) {
	t.Helper()
	if err := f.L.CallByParam(lua.P{Fn: f.L.GetGlobal(fn), NRet: 0, Protect: true}, s.handle(f.L, fn == "envoy_on_request")); err != nil {
		t.Fatalf("%s: %v", fn, err)
	}
	if s.open != 0 {
		t.Fatalf("%s left a pairs iteration unfinished", fn)
	}
}

// gateway is the filters in the gateway's order: cookie filter, then routing filter (the
// cookie EnvoyFilter has the lower priority, so Istio inserts it first before the router). A
// 400 from either ends the request. Responses pass both, in reverse order.
type gateway struct{ cookie, route filter }

// testReserved are the namespaces the test cluster's admin reserves (spec.reservedNamespaces).
var testReserved = []string{"team-secret", "legacy"}

// testTargets are that cluster's reserved namespaces, built by the cluster stack's own
// function.
func testTargets() routing.Targets {
	return stacks.RoutingTargets(&v1alpha1.TFRClusterSpec{ReservedNamespaces: testReserved})
}

func newGateway(t testing.TB) gateway {
	t.Helper()
	cookie, err := routing.CookieFilterLua(testAPIHost)
	if err != nil {
		t.Fatal(err)
	}
	route, err := routing.RoutingFilterLua(testAPIHost, testTargets())
	if err != nil {
		t.Fatal(err)
	}
	return gateway{loadFilter(t, cookie), loadFilter(t, route)}
}

func (g gateway) request(t testing.TB, s *stream) {
	t.Helper()
	g.cookie.run(t, "envoy_on_request", s)
	if s.status == "" {
		g.route.run(t, "envoy_on_request", s)
	}
}

func (g gateway) response(t testing.TB, s *stream) {
	t.Helper()
	g.route.run(t, "envoy_on_response", s)
	g.cookie.run(t, "envoy_on_response", s)
}

func TestRoutingContract(t *testing.T) {
	long := strings.Repeat("a", 300)
	good := map[string]string{
		":authority":     testAPIHost,
		"X-TF-Namespace": "tenant-a",
		"X-TF-RobotId":   "r-123",
		"X-TF-RobotType": "chat",
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for kk, vv := range good {
			m[kk] = vv
		}
		if v == "\x00delete" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	without := func(k string) map[string]string { return with(k, "\x00delete") }

	cases := []struct {
		name    string
		headers map[string]string
		// want: "" = routed to wantNS/ID/Type; "400"; "pass" = not the API host, untouched.
		want                   string
		wantNS, wantID, wantTy string
		wantAuth               string
		wantCookie             string // the Cookie header sent upstream
	}{
		{name: "good", headers: good, want: "", wantNS: "tenant-a", wantID: "r-123", wantTy: "chat"},
		{name: "good uppercase host with port", headers: with(":authority", "API.Example.com:443"), wantNS: "tenant-a", wantID: "r-123", wantTy: "chat"},
		{name: "good host header instead of authority", headers: func() map[string]string {
			m := without(":authority")
			m["host"] = testAPIHost
			return m
		}(), wantNS: "tenant-a", wantID: "r-123", wantTy: "chat"},
		{name: "good trailing dot host", headers: with(":authority", testAPIHost+"."), wantNS: "tenant-a", wantID: "r-123", wantTy: "chat"},
		{name: "good 63-char namespace", headers: with("X-TF-Namespace", strings.Repeat("n", 63)), wantNS: strings.Repeat("n", 63), wantID: "r-123", wantTy: "chat"},
		{name: "good digits only", headers: with("X-TF-RobotId", "42"), wantNS: "tenant-a", wantID: "42", wantTy: "chat"},
		{name: "good uuid robot id", headers: with("X-TF-RobotId", "0b0e7a5c-7d8f-4f3e-9a55-2a5d2b6c8e10"), wantNS: "tenant-a", wantID: "0b0e7a5c-7d8f-4f3e-9a55-2a5d2b6c8e10", wantTy: "chat"},

		{name: "missing namespace", headers: without("X-TF-Namespace"), want: "400"},
		{name: "missing robot id", headers: without("X-TF-RobotId"), want: "400"},
		{name: "missing robot type", headers: without("X-TF-RobotType"), want: "400"},
		{name: "missing all", headers: map[string]string{":authority": testAPIHost}, want: "400"},
		{name: "empty namespace", headers: with("X-TF-Namespace", ""), want: "400"},
		{name: "empty robot id", headers: with("X-TF-RobotId", ""), want: "400"},

		{name: "dot dot slash", headers: with("X-TF-Namespace", "../kube-system"), want: "400"},
		{name: "dot dot", headers: with("X-TF-RobotId", ".."), want: "400"},
		{name: "svc suffix", headers: with("X-TF-Namespace", "tenant-a.svc"), want: "400"},
		{name: "fqdn", headers: with("X-TF-RobotType", "x.kube-system.svc.cluster.local"), want: "400"},
		{name: "uppercase", headers: with("X-TF-RobotType", "Chat"), want: "400"},
		{name: "300 chars", headers: with("X-TF-RobotId", long), want: "400"},
		{name: "64 chars", headers: with("X-TF-Namespace", strings.Repeat("n", 64)), want: "400"},
		{name: "unicode", headers: with("X-TF-Namespace", "ténant"), want: "400"},
		{name: "unicode homoglyph", headers: with("X-TF-RobotType", "сhat"), want: "400"},
		{name: "space", headers: with("X-TF-RobotId", "r 1"), want: "400"},
		{name: "crlf", headers: with("X-TF-RobotId", "r1\r\nx-tf-upstream: evil"), want: "400"},
		{name: "nul", headers: with("X-TF-RobotId", "r1\x00"), want: "400"},
		{name: "slash", headers: with("X-TF-RobotType", "a/b"), want: "400"},
		{name: "port", headers: with("X-TF-Namespace", "tenant-a:8080"), want: "400"},
		{name: "percent encoded", headers: with("X-TF-Namespace", "%2e%2e"), want: "400"},
		{name: "underscore", headers: with("X-TF-RobotId", "r_1"), want: "400"},
		{name: "leading dash", headers: with("X-TF-RobotType", "-chat"), want: "400"},
		// chat-bot/1 would route to chat/bot-1's Service: a robot type has no '-'.
		{name: "dash in robot type", headers: with("X-TF-RobotType", "chat-bot"), want: "400"},
		{name: "trailing dash", headers: with("X-TF-Namespace", "tenant-"), want: "400"},
		{name: "only dashes", headers: with("X-TF-RobotId", "---"), want: "400"},
		{name: "comma list", headers: with("X-TF-Namespace", "a,b"), want: "400"},
		{name: "service name too long", headers: with("X-TF-RobotId", strings.Repeat("r", 60)), want: "400"},

		{name: "other host passes untouched", headers: map[string]string{":authority": "grafana.example.com"}, want: "pass"},
		{name: "other host with subdomain of api passes", headers: map[string]string{":authority": "x.api.example.com"}, want: "pass"},

		// Cookies instead of headers (the generated test covers the rest of the rule).
		{name: "cookies only", headers: map[string]string{
			":authority": testAPIHost,
			"cookie":     "X-TF-Namespace=tenant-b; X-TF-RobotId=r-9; X-TF-RobotType=chat",
		}, wantNS: "tenant-b", wantID: "r-9", wantTy: "chat"},
		{name: "lowercase cookie names, no space after ';', other cookie", headers: map[string]string{
			":authority": testAPIHost,
			"cookie":     `x-tf-namespace=tenant-b;x-tf-robotid=r-9 ; x-tf-robottype=chat; other=1`,
		}, wantNS: "tenant-b", wantID: "r-9", wantTy: "chat", wantCookie: "other=1"},
		{name: "quoted cookie value is not a value", headers: map[string]string{
			":authority": testAPIHost,
			"cookie":     `x-tf-namespace="tenant-b"; x-tf-robotid=r-9; x-tf-robottype=chat`,
		}, want: "400"},
		{name: "repeated cookie headers joined by comma hide a name", headers: map[string]string{
			":authority": testAPIHost,
			"cookie":     "x-tf-namespace=tenant-b, x-tf-robotid=r-9, x-tf-robottype=chat",
		}, want: "400"},
		{name: "header and cookie agree", headers: with("cookie", "X-TF-Namespace=tenant-a"), wantNS: "tenant-a", wantID: "r-123", wantTy: "chat"},
		{name: "header and cookie disagree", headers: with("cookie", "X-TF-Namespace=other"), want: "400"},
		{name: "cookie given twice", headers: with("cookie", "X-TF-Namespace=tenant-a; x-tf-namespace=tenant-a"), want: "400"},
		{name: "cookie fills the one missing header", headers: func() map[string]string {
			m := without("X-TF-RobotType")
			m["cookie"] = "X-TF-RobotType=voice"
			return m
		}(), wantNS: "tenant-a", wantID: "r-123", wantTy: "voice"},
		{name: "an empty header is a source too", headers: func() map[string]string {
			m := with("X-TF-RobotType", "")
			m["cookie"] = "X-TF-RobotType=voice"
			return m
		}(), want: "400"},
		{name: "cookie injection rejected", headers: map[string]string{
			":authority": testAPIHost,
			"cookie":     "X-TF-Namespace=../kube-system; X-TF-RobotId=r-9; X-TF-RobotType=chat",
		}, want: "400"},
		{name: "cookie missing one value", headers: map[string]string{
			":authority": testAPIHost,
			"cookie":     "X-TF-Namespace=tenant-b; X-TF-RobotType=chat",
		}, want: "400"},
		{name: "empty cookie values", headers: map[string]string{
			":authority": testAPIHost,
			"cookie":     "X-TF-Namespace=; X-TF-RobotId=; X-TF-RobotType=",
		}, want: "400"},
		{name: "platform namespace", headers: with("X-TF-Namespace", "istio-system"), want: "400"},
		{name: "kube- namespace", headers: with("X-TF-Namespace", "kube-public"), want: "400"},
		{name: "namespace reserved by the cluster", headers: with("X-TF-Namespace", "team-secret"), want: "400"},
		{name: "admin token cookie", headers: func() map[string]string {
			m := with("cookie", "adminToken=eyJhbGciOi.eyJzdWIi.sig-_x; theme=dark")
			return m
		}(), wantNS: "tenant-a", wantID: "r-123", wantTy: "chat", wantAuth: "Bearer eyJhbGciOi.eyJzdWIi.sig-_x", wantCookie: "theme=dark"},
		{name: "admin token cookie equal to authorization", headers: func() map[string]string {
			m := with("cookie", "adminToken=tok")
			m["authorization"] = "Bearer tok"
			return m
		}(), wantNS: "tenant-a", wantID: "r-123", wantTy: "chat", wantAuth: "Bearer tok"},
		{name: "admin token cookie differs from authorization", headers: func() map[string]string {
			m := with("cookie", "adminToken=cookie-token")
			m["authorization"] = "Bearer header-token"
			return m
		}(), want: "400"},
		{name: "admin token with bad characters", headers: with("cookie", "adminToken=a b\x01c"), want: "400"},
	}

	g := newGateway(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStream(tc.headers)
			// A client may try to pick the upstream itself; the routing filter must drop it.
			f.add(routing.HeaderUpstream, "evil.kube-system.svc.cluster.local")
			f.add(routing.HeaderUpstreamCluster, "outbound|443||kubernetes.default.svc.cluster.local")
			g.request(t, f)

			up, hasUp := f.get(routing.HeaderUpstream)
			cl, hasCl := f.get(routing.HeaderUpstreamCluster)
			switch tc.want {
			case "400":
				if f.status != "400" {
					t.Fatalf("status = %q, want 400 (upstream %q)", f.status, up)
				}
				if !json.Valid([]byte(f.body)) || !strings.Contains(f.body, `"error":"bad_request"`) {
					t.Errorf("body = %q", f.body)
				}
				if hasUp || hasCl {
					t.Errorf("rejected request still carries an upstream: %q %q", up, cl)
				}
			case "pass":
				if f.status != "" || hasUp || hasCl {
					t.Fatalf("status %q upstream %q %q; want untouched and stripped", f.status, up, cl)
				}
			default:
				if f.status != "" {
					t.Fatalf("status = %q body %s, want routed", f.status, f.body)
				}
				if err := testTargets().Validate(tc.wantNS, tc.wantID, tc.wantTy); err != nil {
					t.Fatalf("Go rejects values the Lua routed: %v", err)
				}
				if want := routing.UpstreamHost(tc.wantNS, tc.wantID, tc.wantTy); up != want {
					t.Errorf("lua upstream = %q, Go UpstreamHost = %q", up, want)
				}
				if want := routing.UpstreamCluster(tc.wantNS, tc.wantID, tc.wantTy); cl != want {
					t.Errorf("lua cluster = %q, Go UpstreamCluster = %q", cl, want)
				}
				if auth, _ := f.get("authorization"); auth != tc.wantAuth {
					t.Errorf("authorization = %q, want %q", auth, tc.wantAuth)
				}
				if c, _ := f.get("cookie"); c != tc.wantCookie {
					t.Errorf("upstream cookie = %q, want %q", c, tc.wantCookie)
				}
			}
		})
	}
}

// TestGoAndLuaAgree feeds the same values to Validate and to the routing filter (as headers)
// and requires the same decision, so the two implementations cannot drift.
func TestGoAndLuaAgree(t *testing.T) {
	values := []string{
		"a", "tenant-a", "0", "r-123", "-a", "a-", "-", "A", "a.b", "a/b", "../x", "", " ",
		"ä", "a\x00", strings.Repeat("x", 63), strings.Repeat("x", 64), strings.Repeat("y", 29),
		strings.Repeat("z", 30), "a--b", "1-2-3",
	}
	targets := testTargets()
	route := newGateway(t).route
	n := 0
	for _, ns := range []string{"tenant-a", values[4], strings.Repeat("x", 63), "kube-system", "tfrs-system", "legacy"} {
		for _, id := range values {
			for _, typ := range values {
				f := newStream(map[string]string{":authority": testAPIHost})
				for _, kv := range [][2]string{{"x-tf-namespace", ns}, {"x-tf-robotid", id}, {"x-tf-robottype", typ}} {
					if kv[1] != "" {
						f.add(kv[0], kv[1])
					}
				}
				route.run(t, "envoy_on_request", f)
				goErr := targets.Validate(ns, id, typ)
				luaOK := f.status == ""
				if luaOK != (goErr == nil) {
					t.Errorf("ns=%q id=%q type=%q: lua routed=%v, Go error=%v", ns, id, typ, luaOK, goErr)
				}
				if goErr != nil && !errors.Is(goErr, routing.ErrInvalid) {
					t.Errorf("Validate error does not wrap ErrInvalid: %v", goErr)
				}
				if luaOK {
					if up, _ := f.get(routing.HeaderUpstream); up != routing.UpstreamHost(ns, id, typ) {
						t.Errorf("lua upstream %q != %q", up, routing.UpstreamHost(ns, id, typ))
					}
				}
				n++
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d combinations", n)
	}
}

func TestNames(t *testing.T) {
	if got := routing.RobotServiceName("r-1", "chat"); got != "chat-r-1-api" {
		t.Errorf("RobotServiceName = %q", got)
	}
	if got := routing.UpstreamHost("tenant-a", "r-1", "chat"); got != "chat-r-1-api.tenant-a.svc.cluster.local" {
		t.Errorf("UpstreamHost = %q", got)
	}
	if got := routing.UpstreamCluster("tenant-a", "r-1", "chat"); got != "outbound|80||chat-r-1-api.tenant-a.svc.cluster.local" {
		t.Errorf("UpstreamCluster = %q", got)
	}
}

func TestRenderRejectsBadHost(t *testing.T) {
	for _, h := range []string{"", "API.example.com", `a"; os.exit() --`, "a..b", strings.Repeat("a.", 200) + "com"} {
		if _, err := routing.RoutingFilterLua(h, testTargets()); err == nil {
			t.Errorf("RoutingFilterLua(%q) accepted", h)
		}
	}
	// Targets land in Lua string literals, and none at all would open every namespace.
	for _, bad := range []routing.Targets{
		{},
		{ReservedNames: []string{`a", "b`}},
		{ReservedNames: []string{"Kube-System"}},
		{ReservedPrefixes: []string{`kube-"`}},
		{ReservedPrefixes: []string{""}},
	} {
		if _, err := routing.RoutingFilterLua(testAPIHost, bad); err == nil {
			t.Errorf("RoutingFilterLua accepted targets %+v", bad)
		}
	}
	for _, render := range []func() (string, error){
		func() (string, error) { return routing.CookieFilterLua("api.example.com") },
		func() (string, error) { return routing.RoutingFilterLua("api.example.com", testTargets()) },
	} {
		code, err := render()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(code, "@API_HOST@") || strings.Contains(code, "@ENTRY@") || !strings.Contains(code, `"api.example.com"`) {
			t.Errorf("placeholders not filled")
		}
		// Every placeholder in the source is one render knows.
		var left []string
		for _, part := range strings.Split(code, `"@`)[1:] {
			left = append(left, strings.SplitN(part, `@"`, 2)[0])
		}
		sort.Strings(left)
		if len(left) > 0 {
			t.Errorf("unfilled placeholders: %v", left)
		}
	}
}

// TestLuaRoutesToServerService closes the loop between the gateway and the server stack: the
// X-TF-* headers of a robot go through both Lua filters, and the upstream they pick must be
// the in-cluster DNS name and port of the API Service that the server program (stacks.Server)
// creates for that robot, for a robot of an enterprise and of a personal tenant.
func TestLuaRoutesToServerService(t *testing.T) {
	for _, tc := range []struct{ tenantType, namespace, robotID, robotType string }{
		{"enterprise", "acme", "helper-bot", "chat"},
		{"personal", "personal-chat", "0b0e7a5c-7d8f-4f3e-9a55-2a5d2b6c8e10", "voice"},
	} {
		t.Run(tc.tenantType, func(t *testing.T) {
			srv := &v1alpha1.TFRServer{
				ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "tfrs-system"},
				Spec:       v1alpha1.TFRServerSpec{TenantRef: "t", RobotID: tc.robotID, RobotType: tc.robotType, Image: "tfrobot/server:1"},
			}
			m := &pulumitest.Mocks{Stack: "server.tfrs-system.robot"}
			m.Run(t, stacks.Server(stacks.ServerInput{Server: srv, Tenant: tenantOutputs(tc.tenantType, tc.namespace)}))
			var svc map[string]any
			for _, r := range m.All("kubernetes:core/v1:Service") {
				svc = pulumitest.Plain(r.Inputs)
			}
			if svc == nil {
				t.Fatal("the server program created no Service")
			}
			meta := svc["metadata"].(map[string]any)
			port := pulumitest.At(t, svc, "spec", "ports", 0, "port").(float64)
			host := meta["name"].(string) + "." + meta["namespace"].(string) + ".svc." + routing.ClusterDomain

			f := newStream(map[string]string{
				":authority": testAPIHost, "X-TF-Namespace": tc.namespace, "X-TF-RobotId": tc.robotID, "X-TF-RobotType": tc.robotType,
			})
			newGateway(t).request(t, f)
			if f.status != "" {
				t.Fatalf("gateway answered %s: %s", f.status, f.body)
			}
			up, _ := f.get(routing.HeaderUpstream)
			cluster, _ := f.get(routing.HeaderUpstreamCluster)
			pulumitest.Eq(t, "lua upstream vs the Service's DNS name", up, host)
			pulumitest.Eq(t, "lua cluster vs the Service's port", cluster, "outbound|"+strconv.Itoa(int(port))+"||"+host)
		})
	}
}

// tenantOutputs are a tenant stack's outputs as the server program reads them.
func tenantOutputs(tenantType, ns string) stacks.TenantOutputs {
	return stacks.TenantOutputs{
		Namespace: ns, TenantType: tenantType, JobType: "chat",
		PostgresHost: ns + "-pg-rw", PostgresPort: 5432, PostgresDatabase: ns, PostgresUser: "app_user", PostgresPassword: "pg",
		RedisHost: "redis." + ns + ".svc.cluster.local", RedisPort: 6379, RedisPassword: "redis",
		RabbitMQHost: "rabbitmq." + ns + ".svc.cluster.local", RabbitMQPort: 5672, RabbitMQUser: "tfrs", RabbitMQPassword: "mq", RabbitMQVHost: "/",
		MinIOHost: "minio." + ns + ".svc.cluster.local", MinIOPort: 80, MinIOAccessKey: "root", MinIOSecretKey: "minio", MinIOBucket: ns,
	}
}
