package routing_test

import (
	"encoding/json"
	"errors"
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

// fakeRequest is the part of Envoy's Lua stream handle the filters may use:
// headers():get/replace/add/remove and respond. Any other call fails the Lua with "attempt to
// call a nil value", so the test also pins the filters to that API.
type fakeRequest struct {
	headers map[string][]string // lowercase keys, as Envoy stores them
	status  string
	body    string
}

func newFakeRequest(h map[string]string) *fakeRequest {
	f := &fakeRequest{headers: map[string][]string{}}
	for k, v := range h {
		f.headers[strings.ToLower(k)] = []string{v}
	}
	return f
}

func (f *fakeRequest) get(key string) (string, bool) {
	vs, ok := f.headers[strings.ToLower(key)]
	if !ok {
		return "", false
	}
	// Envoy joins repeated headers with ',' in get().
	return strings.Join(vs, ","), true
}

func (f *fakeRequest) handle(L *lua.LState) *lua.LTable {
	headers := L.NewTable()
	L.SetField(headers, "get", L.NewFunction(func(L *lua.LState) int {
		if v, ok := f.get(L.CheckString(2)); ok {
			L.Push(lua.LString(v))
		} else {
			L.Push(lua.LNil)
		}
		return 1
	}))
	L.SetField(headers, "replace", L.NewFunction(func(L *lua.LState) int {
		f.headers[strings.ToLower(L.CheckString(2))] = []string{L.CheckString(3)}
		return 0
	}))
	L.SetField(headers, "add", L.NewFunction(func(L *lua.LState) int {
		k := strings.ToLower(L.CheckString(2))
		f.headers[k] = append(f.headers[k], L.CheckString(3))
		return 0
	}))
	L.SetField(headers, "remove", L.NewFunction(func(L *lua.LState) int {
		delete(f.headers, strings.ToLower(L.CheckString(2)))
		return 0
	}))

	h := L.NewTable()
	L.SetField(h, "headers", L.NewFunction(func(L *lua.LState) int {
		L.Push(headers)
		return 1
	}))
	L.SetField(h, "respond", L.NewFunction(func(L *lua.LState) int {
		if f.status != "" {
			L.RaiseError("respond called twice")
		}
		rh := L.CheckTable(2)
		f.status = lua.LVAsString(rh.RawGetString(":status"))
		f.body = L.OptString(3, "")
		return 0
	}))
	return h
}

// runFilter runs one filter in its own Lua state, as Envoy gives each filter its own.
func runFilter(t *testing.T, code string, f *fakeRequest) {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	if err := L.DoString(code); err != nil {
		t.Fatalf("load lua: %v", err)
	}
	if err := L.CallByParam(lua.P{Fn: L.GetGlobal("envoy_on_request"), NRet: 0, Protect: true}, f.handle(L)); err != nil {
		t.Fatalf("envoy_on_request: %v", err)
	}
}

// runGateway runs the filters in the gateway's order: cookie filter, then routing filter (the
// cookie EnvoyFilter has the lower priority, so Istio inserts it first before the router). A
// 400 from the routing filter ends the request.
func runGateway(t *testing.T, f *fakeRequest) {
	t.Helper()
	cookie, err := routing.CookieFilterLua(testAPIHost)
	if err != nil {
		t.Fatal(err)
	}
	route, err := routing.RoutingFilterLua(testAPIHost)
	if err != nil {
		t.Fatal(err)
	}
	runFilter(t, cookie, f)
	if f.status != "" {
		t.Fatalf("cookie filter responded %s", f.status)
	}
	runFilter(t, route, f)
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

		// Cookies instead of headers.
		{name: "cookies only", headers: map[string]string{
			":authority": testAPIHost,
			"cookie":     "X-TF-Namespace=tenant-b; X-TF-RobotId=r-9; X-TF-RobotType=chat",
		}, wantNS: "tenant-b", wantID: "r-9", wantTy: "chat"},
		{name: "lowercase cookie names and quotes", headers: map[string]string{
			":authority": testAPIHost,
			"cookie":     `x-tf-namespace="tenant-b";x-tf-robotid=r-9 ; x-tf-robottype=chat; other=1`,
		}, wantNS: "tenant-b", wantID: "r-9", wantTy: "chat"},
		{name: "repeated cookie headers joined by comma", headers: map[string]string{
			":authority": testAPIHost,
			"cookie":     "x-tf-namespace=tenant-b, x-tf-robotid=r-9, x-tf-robottype=chat",
		}, wantNS: "tenant-b", wantID: "r-9", wantTy: "chat"},
		{name: "header wins over cookie", headers: func() map[string]string {
			m := with("cookie", "X-TF-Namespace=other; X-TF-RobotId=other; X-TF-RobotType=other")
			return m
		}(), wantNS: "tenant-a", wantID: "r-123", wantTy: "chat"},
		{name: "cookie fills the one missing header", headers: func() map[string]string {
			m := without("X-TF-RobotType")
			m["cookie"] = "X-TF-RobotType=voice"
			return m
		}(), wantNS: "tenant-a", wantID: "r-123", wantTy: "voice"},
		{name: "cookie fills an empty header", headers: func() map[string]string {
			m := with("X-TF-RobotType", "")
			m["cookie"] = "X-TF-RobotType=voice"
			return m
		}(), wantNS: "tenant-a", wantID: "r-123", wantTy: "voice"},
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
		{name: "admin token cookie", headers: func() map[string]string {
			m := with("cookie", "adminToken=eyJhbGciOi.eyJzdWIi.sig-_x")
			return m
		}(), wantNS: "tenant-a", wantID: "r-123", wantTy: "chat", wantAuth: "Bearer eyJhbGciOi.eyJzdWIi.sig-_x"},
		{name: "admin token cookie does not replace authorization", headers: func() map[string]string {
			m := with("cookie", "adminToken=cookie-token")
			m["authorization"] = "Bearer header-token"
			return m
		}(), wantNS: "tenant-a", wantID: "r-123", wantTy: "chat", wantAuth: "Bearer header-token"},
		{name: "admin token with bad characters ignored", headers: func() map[string]string {
			m := with("cookie", "adminToken=a b\x01c")
			return m
		}(), wantNS: "tenant-a", wantID: "r-123", wantTy: "chat", wantAuth: ""},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeRequest(tc.headers)
			// A client may try to pick the upstream itself; the routing filter must drop it.
			f.headers[routing.HeaderUpstream] = []string{"evil.kube-system.svc.cluster.local"}
			f.headers[routing.HeaderUpstreamCluster] = []string{"outbound|443||kubernetes.default.svc.cluster.local"}
			runGateway(t, f)

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
				if err := routing.Validate(tc.wantNS, tc.wantID, tc.wantTy); err != nil {
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
	route, err := routing.RoutingFilterLua(testAPIHost)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ns := range []string{"tenant-a", values[4], strings.Repeat("x", 63)} {
		for _, id := range values {
			for _, typ := range values {
				f := newFakeRequest(map[string]string{":authority": testAPIHost})
				for k, v := range map[string]string{"x-tf-namespace": ns, "x-tf-robotid": id, "x-tf-robottype": typ} {
					if v != "" {
						f.headers[k] = []string{v}
					}
				}
				runFilter(t, route, f)
				goErr := routing.Validate(ns, id, typ)
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

// The routing filter alone does not read cookies: that is the cookie filter's job, and the
// cookie EnvoyFilter must therefore run first.
func TestRoutingFilterAloneIgnoresCookies(t *testing.T) {
	route, err := routing.RoutingFilterLua(testAPIHost)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeRequest(map[string]string{
		":authority": testAPIHost,
		"cookie":     "X-TF-Namespace=tenant-b; X-TF-RobotId=r-9; X-TF-RobotType=chat",
	})
	runFilter(t, route, f)
	if f.status != "400" {
		t.Fatalf("status = %q, want 400", f.status)
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
		if _, err := routing.RoutingFilterLua(h); err == nil {
			t.Errorf("RoutingFilterLua(%q) accepted", h)
		}
	}
	code, err := routing.CookieFilterLua("api.example.com")
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

			f := newFakeRequest(map[string]string{
				":authority": testAPIHost, "X-TF-Namespace": tc.namespace, "X-TF-RobotId": tc.robotID, "X-TF-RobotType": tc.robotType,
			})
			runGateway(t, f)
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
