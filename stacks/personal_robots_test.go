package stacks

// Personal mode end to end (issue 45, item 4): every pod of a personal robot runs as the
// robot's own ServiceAccount and is covered by an AuthorizationPolicy of that robot, and
// its data is named after its owner for life. The cases are generated: robot ids built from
// the suffixes of the robot's own object names (the ids most likely to make one robot's
// names another's), long and digit-first values, and several owners that reuse the same
// robot ids.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/routing"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/internal/upstream"
)

// robotCase is one generated personal robot: its TFRServer's namespace and tenant (the
// owner) and its type and id.
type robotCase struct{ crNamespace, tenant, typ, id string }

func (c robotCase) String() string { return c.crNamespace + "/" + c.tenant + ":" + c.typ + "/" + c.id }

func (c robotCase) server() *v1alpha1.TFRServer {
	s := newServer(func(s *v1alpha1.TFRServerSpec) { s.RobotID, s.RobotType, s.TenantRef = c.id, c.typ, c.tenant })
	s.Namespace = c.crNamespace
	s.Name = strings.ReplaceAll(c.typ+"-"+c.id, "--", "-x-")
	return s
}

// robotNameSuffixes end the names of a robot's objects ("{robot}-<suffix>"): an id that ends
// with one of them makes "{robot}" of one robot a whole object name of another.
var robotNameSuffixes = []string{
	"robot", "grafana-sa", "grafana-token", "api", "worker", "deny-inbound", "rabbitmq", "secret",
	"config", "confz", server.KindDBInit, server.KindMinIOInit,
}

// trickyRobots are distinct (type, id) pairs: plain ids, ids made of the object-name
// suffixes, ids that end another's, digit-first and maximal ones.
func trickyRobots() [][2]string {
	ids := []string{"r", "1", "bob", "a-b-c", "9lives", strings.Repeat("i", 40)}
	for _, suf := range robotNameSuffixes {
		ids = append(ids, suf, "bob-"+suf)
	}
	var out [][2]string
	for _, id := range ids {
		out = append(out, [2]string{"chat", id})
	}
	for _, typ := range []string{"c", "chatbot", "0x", strings.Repeat("t", 40)} {
		for _, id := range []string{"bob", "bob-robot", "r"} {
			out = append(out, [2]string{typ, id})
		}
	}
	// The longest pair the gateway routes to: a 63-character API Service name.
	typ := strings.Repeat("t", routing.MaxLabelLength-len("--api")-40)
	return append(out, [2]string{typ, strings.Repeat("i", 40)})
}

// robotPodTemplate is a pod template some registration renders.
type robotPodTemplate struct {
	owner, what    string
	labels         map[string]string
	serviceAccount string
	automount      any
}

// robotPodTemplates are the pod templates (Deployments, StatefulSets, Jobs …) of a run.
func robotPodTemplates(owner string, regs []*registration) []robotPodTemplate {
	var out []robotPodTemplate
	for _, reg := range regs {
		in := plainInputs(reg.Inputs)
		spec, _ := in["spec"].(map[string]any)
		tpl, _ := spec["template"].(map[string]any)
		meta, _ := tpl["metadata"].(map[string]any)
		labels, ok := meta["labels"].(map[string]any)
		if !ok {
			continue
		}
		ps, _ := tpl["spec"].(map[string]any)
		p := robotPodTemplate{owner: owner, what: reg.Type + "::" + reg.Name, labels: map[string]string{}, automount: ps["automountServiceAccountToken"]}
		p.serviceAccount, _ = ps["serviceAccountName"].(string)
		for k, v := range labels {
			p.labels[k] = fmt.Sprint(v)
		}
		out = append(out, p)
	}
	return out
}

// authzPolicy is an AuthorizationPolicy of a run.
type authzPolicy struct {
	owner, name, action string
	selector            map[string]string
	rules               []any
}

func authzPolicies(t *testing.T, owner string, r *serverRun) []authzPolicy {
	var out []authzPolicy
	for _, reg := range r.m.all("kubernetes:security.istio.io/v1:AuthorizationPolicy") {
		in := plainInputs(reg.Inputs)
		p := authzPolicy{owner: owner, name: reg.Name, action: dig(t, in, "spec", "action").(string), selector: map[string]string{}}
		p.rules, _ = dig(t, in, "spec", "rules").([]any)
		sel, ok := dig(t, in, "spec", "selector", "matchLabels").(map[string]any)
		if !ok || len(sel) == 0 {
			t.Errorf("%s: policy %s selects the whole namespace", owner, reg.Name)
		}
		for k, v := range sel {
			p.selector[k] = fmt.Sprint(v)
		}
		out = append(out, p)
	}
	return out
}

// selects: an Istio selector (matchLabels) picks a pod when every label matches.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// denyAll is the rule set of a DENY policy that refuses every request.
func denyAll(p authzPolicy) bool {
	return p.action == "DENY" && len(p.rules) == 1 && len(p.rules[0].(map[string]any)) == 0
}

// gatewayOnly is the rule set of the API worker's policy: deny whoever is not the gateway,
// and whatever does not carry this robot's id.
func gatewayOnly(p authzPolicy, id string) bool {
	want := fmt.Sprint([]any{
		map[string]any{"from": []any{map[string]any{"source": map[string]any{"notPrincipals": []any{ServerGatewayPrincipal}}}}},
		map[string]any{"when": []any{map[string]any{"key": "request.headers[" + server.RobotIDHeader + "]", "notValues": []any{id}}}},
	})
	return p.action == "DENY" && fmt.Sprint(p.rules) == want
}

// Every pod template the server program renders for a personal robot runs as that robot's
// own ServiceAccount with no token (the grafana-sa Job as the robot's second account, the
// only one with a token), and is selected by a DENY AuthorizationPolicy of that robot: the
// API worker by the gateway-and-RobotId policy, every other pod by a deny-all one. No two
// robots share a ServiceAccount, and no policy (nor Deployment selector) of one robot selects
// a pod of another robot or of the job type's shared middleware.
func TestPersonalRobotIdentityAndPolicies(t *testing.T) {
	to := personalTenant(t)
	shared := runTenant(t, TenantInput{Tenant: newPersonal("alice", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nil), Cluster: testTenantCluster}, sharedChatStack(t), nil)
	var (
		pods     = robotPodTemplates("shared middleware", shared.m.regs)
		policies []authzPolicy
		depSel   = map[string]map[string]string{} // Deployment → its selector
		saOf     = map[string]string{}            // ServiceAccount → robot
		robots   = map[string]server.Robot{}
	)
	owners := []string{"alice", "bob"}
	for i, tr := range trickyRobots() {
		c := robotCase{crNamespace: "tfrs-system", tenant: owners[i%len(owners)], typ: tr[0], id: tr[1]}
		rb := server.Robot{Namespace: to.Namespace, Type: c.typ, ID: c.id}
		if err := rb.Validate(); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		r := runServer(t, ServerInput{Server: c.server(), Tenant: to})
		who := c.String()
		robots[who] = rb
		for _, sa := range r.m.all("kubernetes:core/v1:ServiceAccount") {
			name := dig(t, plainInputs(sa.Inputs), "metadata", "name").(string)
			if other, dup := saOf[name]; dup {
				t.Errorf("ServiceAccount %s is both %s's and %s's", name, other, who)
			}
			saOf[name] = who
		}
		own := r.m.find(t, "kubernetes:core/v1:ServiceAccount", ServerConfz+"-service-account")
		check(t, who+" robot SA", dig(t, plainInputs(own.Inputs), "metadata", "name"), rb.ServiceAccount())
		check(t, who+" robot SA has no token", dig(t, plainInputs(own.Inputs), "automountServiceAccountToken"), false)
		for _, rr := range r.m.regs {
			if strings.Contains(rr.Type, "rbac.authorization.k8s.io") {
				subj := fmt.Sprint(dig(t, plainInputs(rr.Inputs), "subjects"))
				if strings.Contains(subj, rb.ServiceAccount()) {
					t.Errorf("%s: RBAC for the robot's own ServiceAccount: %s", who, rr.Name)
				}
			}
		}
		// Every pod starts covered: the API Deployment waits for its policy, and every other
		// pod comes after the confz node, which holds the account and the deny-all policy.
		apiDeps := strings.Join(r.m.find(t, "kubernetes:apps/v1:Deployment", ServerAPIWorker+"-deployment").Deps, " ")
		if !strings.Contains(apiDeps, "::"+ServerAPIWorker+"-authorization-policy") {
			t.Errorf("%s: the API Deployment does not wait for its policy: %s", who, apiDeps)
		}
		r.m.find(t, "kubernetes:security.istio.io/v1:AuthorizationPolicy", ServerConfz+"-deny-inbound")
		robotPods := robotPodTemplates(who, r.m.regs)
		if len(robotPods) != 5 {
			t.Errorf("%s: %d pod templates, want the 2 workers and 3 Jobs", who, len(robotPods))
		}
		ps := authzPolicies(t, who, r)
		for _, p := range robotPods {
			grafana := strings.Contains(p.what, ServerGrafanaSA)
			switch {
			case grafana:
				check(t, who+" "+p.what+" SA", p.serviceAccount, rb.Name()+"-"+server.KindGrafanaSA)
				check(t, who+" "+p.what+" token", p.automount, true)
			default:
				check(t, who+" "+p.what+" SA", p.serviceAccount, rb.ServiceAccount())
				check(t, who+" "+p.what+" token", p.automount, false)
			}
			api := strings.Contains(p.what, ServerAPIWorker)
			covered := false
			for _, pol := range ps {
				if !selects(pol.selector, p.labels) {
					continue
				}
				if api && denyAll(pol) {
					t.Errorf("%s: the deny-all policy %s selects the API pod: the gateway could not reach it", who, pol.name)
				}
				if api && gatewayOnly(pol, c.id) || !api && denyAll(pol) {
					covered = true
				}
			}
			if !covered {
				t.Errorf("%s: pod %s (labels %v) has no policy of its robot", who, p.what, p.labels)
			}
		}
		ownerStack, err := stackname.Tenant(c.crNamespace, c.tenant)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range r.m.all("kubernetes:apps/v1:Deployment") {
			// The owner share counts the Deployment for its owner; the mark rolls no pod.
			in := plainInputs(d.Inputs)
			check(t, who+" "+d.Name+" owner label", dig(t, in, "metadata", "labels", server.LabelRobotOwner), server.OwnerLabelValue(ownerStack))
			if _, on := dig(t, in, "spec", "template", "metadata", "labels").(map[string]any)[server.LabelRobotOwner]; on {
				t.Errorf("%s: %s's pods carry the owner label", who, d.Name)
			}
			sel := map[string]string{}
			for k, v := range dig(t, plainInputs(d.Inputs), "spec", "selector", "matchLabels").(map[string]any) {
				sel[k] = fmt.Sprint(v)
			}
			depSel[who+" "+d.Name] = sel
		}
		pods = append(pods, robotPods...)
		policies = append(policies, ps...)
	}
	// Across robots: a robot's policies and Deployments select its own pods only.
	crossed := 0
	for _, p := range pods {
		for _, pol := range policies {
			if pol.owner != p.owner && selects(pol.selector, p.labels) {
				t.Errorf("policy %s of %s selects %s's pod %s", pol.name, pol.owner, p.owner, p.what)
			}
			crossed++
		}
		for dep, sel := range depSel {
			if who, _, _ := strings.Cut(dep, " "); who != p.owner && selects(sel, p.labels) {
				t.Errorf("Deployment %s selects %s's pod %s", dep, p.owner, p.what)
			}
		}
	}
	t.Logf("%d robots, %d pod templates (%d of the shared middleware), %d policies, %d ServiceAccounts, %d policy×pod pairs checked",
		len(robots), len(pods), len(robotPodTemplates("", shared.m.regs)), len(policies), len(saOf), crossed)
}

// dataNames are the names of a personal robot's data in one run, by what they name: as the
// program renders them (outputs, Confz, Jobs, the cache mount, the Redis ACL key).
func dataNames(t *testing.T, r *serverRun) map[string]string {
	t.Helper()
	cz := confzOf(t, r)
	mc := podSpec(t, r, "kubernetes:batch/v1:Job", ServerMinIOInit+"-job")["containers"].([]any)[0]
	graf := podSpec(t, r, "kubernetes:batch/v1:Job", ServerGrafanaSA+"-job")["containers"].([]any)[0]
	out := map[string]string{
		"schema":        fmt.Sprint(r.out[ServerOutputDBSchema]),
		"pg user":       fmt.Sprint(dig(t, cz, "postgresql", "user")),
		"bucket":        fmt.Sprint(r.out[ServerOutputBucket]),
		"minio user":    envOf(mc)["ROBOT_USER"],
		"vhost":         fmt.Sprint(r.out[ServerOutputRabbitMQVHost]),
		"redis prefix":  fmt.Sprint(r.out[ServerOutputRedisKeyPrefix]),
		"redis user":    fmt.Sprint(dig(t, cz, "redis", "username")),
		"grafana user":  envOf(graf)["SA_NAME"],
		"cache subPath": "",
	}
	c := podSpec(t, r, "kubernetes:apps/v1:Deployment", ServerRobotWorker+"-deployment")["containers"].([]any)[0].(map[string]any)
	for _, m := range c["volumeMounts"].([]any) {
		if m := m.(map[string]any); m["name"] == "shared-cache" {
			out["cache subPath"] = fmt.Sprint(m["subPath"])
		}
	}
	patch := plainInputs(r.m.find(t, "kubernetes:core/v1:SecretPatch", "").Inputs)
	out["redis acl key"] = strings.Join(sortedNames(dig(t, patch, "data").(map[string]any)), ",")
	return out
}

var (
	reSQLIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
	reBucket   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)
)

// A personal robot's data is named after its owner for life: the same owner gets the same
// names run after run (its retained data is its own again), and a robot of another owner
// that reuses the type and id gets names no other (owner, robot) has, legacy names
// included, so it never inherits anything. Rendered through the program for every owner ×
// robot; then the name function alone over a larger generated set.
func TestPersonalRobotDataOwnedForLife(t *testing.T) {
	to := personalTenant(t)
	owners := [][2]string{{"tfrs-system", "alice"}, {"tfrs-system", "bob"}, {"team-a", "alice"}, {"team-a", "alice-2"}}
	robots := trickyRobots()[:14]
	seen := map[string]string{} // name → owner and robot
	legacy := map[string]bool{}
	for _, tr := range trickyRobots() {
		legacy[server.Robot{Type: tr[0], ID: tr[1]}.Name()] = true
	}
	rendered := 0
	for _, o := range owners {
		for _, tr := range robots {
			c := robotCase{crNamespace: o[0], tenant: o[1], typ: tr[0], id: tr[1]}
			names := dataNames(t, runServer(t, ServerInput{Server: c.server(), Tenant: to}))
			again := dataNames(t, runServer(t, ServerInput{Server: c.server(), Tenant: to}))
			check(t, c.String()+" names are stable", again, names)
			owner, _ := stackname.Tenant(o[0], o[1])
			rb := server.Robot{Namespace: to.Namespace, Type: tr[0], ID: tr[1], DataOwner: owner}
			check(t, c.String()+" names", names, map[string]string{
				"schema": rb.Schema(), "pg user": rb.Schema(), "bucket": rb.Bucket(), "minio user": rb.MinIOUser(),
				"vhost": rb.VHost(), "redis prefix": rb.RedisKeyPrefix(), "redis user": rb.RedisUser(),
				"grafana user": rb.DataName(), "cache subPath": "robots/" + rb.DataName(), "redis acl key": rb.RedisUser() + ".acl",
			})
			if !reSQLIdent.MatchString(names["schema"]) || !reBucket.MatchString(names["bucket"]) || strings.Contains(names["bucket"], "--") && strings.HasPrefix(names["bucket"], "xn--") {
				t.Errorf("%s: schema %q or bucket %q is not valid", c, names["schema"], names["bucket"])
			}
			for what, n := range names {
				key := strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(n, ":"), ".acl"), "robots/")
				if what == "schema" || what == "pg user" {
					key = strings.ReplaceAll(strings.TrimPrefix(n, "r_"), "_", "-")
				}
				if legacy[key] {
					t.Errorf("%s: %s %q is a legacy robot's name", c, what, n)
				}
				if other, dup := seen[what+" "+n]; dup && other != c.String() {
					t.Errorf("%s %q of %s is also %s's", what, n, c, other)
				}
				seen[what+" "+n] = c.String()
			}
			rendered++
		}
	}
	// The name function over a larger generated set: 12 owners × every tricky robot and
	// 100 ids more; every (owner, robot) gets its own data name.
	generated, byName := 0, map[string]string{}
	for i := range 12 {
		owner, _ := stackname.Tenant(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("user-%d", i))
		all := trickyRobots()
		for j := range 100 {
			all = append(all, [2]string{"chat", fmt.Sprintf("r-%d", j)})
		}
		for _, tr := range all {
			rb := server.Robot{Namespace: "personal-chat", Type: tr[0], ID: tr[1], DataOwner: owner}
			n := rb.DataName()
			if len(rb.Schema()) > 63 || len(rb.Bucket()) > 63 {
				t.Errorf("%s %s/%s: %q is too long", owner, tr[0], tr[1], n)
			}
			if other, dup := byName[n]; dup {
				t.Errorf("data name %q of %s %s/%s is also %s's", n, owner, tr[0], tr[1], other)
			}
			byName[n] = owner + " " + tr[0] + "/" + tr[1]
			generated++
		}
	}
	t.Logf("%d owner×robot cases rendered (%d names each), %d data names generated, 0 shared", rendered, len(slices.Collect(maps.Keys(dataNames(t, runServer(t, ServerInput{Server: newServer(nil), Tenant: to}))))), generated)
}

// Upgrade: a personal robot's stack that ran before owner-named data keeps its legacy names
// ("{robot}…") for life and records no mark; a new stack names its data after its owner and
// records the mark, which keeps it so even after its credentials rotate.
func TestPersonalRobotLegacyDataNames(t *testing.T) {
	to := personalTenant(t)
	legacyRobot := server.Robot{Namespace: to.Namespace, Type: "chat", ID: "helper-bot"}
	owned := legacyRobot
	owned.DataOwner = "tenant.tfrs-system.acme"
	state := func(names ...string) map[string]string {
		m := map[string]string{CredentialContentHashKey: testServerHashKey}
		for _, n := range names {
			m[n] = "from-state"
		}
		return m
	}
	for _, tc := range []struct {
		what   string
		state  map[string]string
		want   server.Robot
		marked bool
	}{
		{"new stack", state(), owned, true},
		{"legacy stack", state(robotCredentialNames...), legacyRobot, false},
		{"legacy stack, one credential left", state(CredentialRobotRedisPassword), legacyRobot, false},
		{"owner-named stack", state(append(slices.Clone(robotCredentialNames), CredentialRobotDataNames)...), owned, true},
	} {
		r, err := runServerState(ServerInput{Server: newServer(nil), Tenant: to}, tc.state)
		if err != nil {
			t.Fatal(err)
		}
		names := dataNames(t, r)
		check(t, tc.what+" schema", names["schema"], tc.want.Schema())
		check(t, tc.what+" cache", names["cache subPath"], PersonalCacheSubPath(tc.want))
		check(t, tc.what+" redis user", names["redis user"], tc.want.RedisUser())
		marked := false
		for _, c := range r.m.all("tfrs:engine:Credential") {
			marked = marked || c.Name == CredentialRobotDataNames
		}
		check(t, tc.what+" marked", marked, tc.marked)
	}
	// An enterprise robot's data is its tenant's: no owner names, no mark.
	r := runServer(t, ServerInput{Server: newServer(nil), Tenant: enterpriseTenant(t)})
	for _, c := range r.m.all("tfrs:engine:Credential") {
		if c.Name == CredentialRobotDataNames {
			t.Error("an enterprise robot's stack is marked")
		}
	}
}

// The robot's AuthorizationPolicies are accepted by the pinned Istio CRD, as the API server
// would check them (the deny-all rule is one empty rule, "rules: [{}]").
func TestPersonalRobotPoliciesMatchIstioSchema(t *testing.T) {
	upstream.Require(t)
	var crds []UpstreamCRD
	for _, p := range UpstreamCRDs() {
		if p.Project == "istio" {
			crds = append(crds, p)
		}
	}
	if len(crds) != 1 {
		t.Fatalf("pinned Istio CRDs: %v", crds)
	}
	istio, err := upstream.Load(crds[0].Project, crds[0].Version)
	if err != nil {
		t.Fatal(err)
	}
	r := runServer(t, ServerInput{Server: robotCase{"tfrs-system", "alice", "chat", "bob-robot"}.server(), Tenant: personalTenant(t)})
	aps := r.m.all("kubernetes:security.istio.io/v1:AuthorizationPolicy")
	check(t, "policies", len(aps), 2)
	for _, ap := range aps {
		obj := plainInputs(ap.Inputs)
		if errs := upstream.Validate(istio, obj["apiVersion"].(string), obj["kind"].(string), obj); len(errs) > 0 {
			t.Errorf("%s rejected by Istio %s: %v", ap.Name, crds[0].Version, errs)
		}
	}
}
