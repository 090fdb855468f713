package stacks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
)

var reDropRole = regexp.MustCompile(`(?m)^DROP ROLE IF EXISTS "([^"]+)";$`)

// purgeNames are the data names the purge Job removes, read from its containers as the
// kubelet would run them: the same keys as dataNames.
func purgeNames(t *testing.T, r *serverRun) map[string]string {
	t.Helper()
	ps := podSpec(t, r, "kubernetes:batch/v1:Job", ServerDataPurge+"-job")
	byName := map[string]map[string]string{}
	for _, c := range append(ps["initContainers"].([]any), ps["containers"].([]any)...) {
		byName[c.(map[string]any)["name"].(string)] = envOf(c)
	}
	sql := dig(t, plainInputs(r.m.find(t, "kubernetes:core/v1:Secret", ServerDataPurge+"-secret").Inputs), "stringData", "purge.sql").(string)
	role := reDropRole.FindStringSubmatch(sql)
	if role == nil {
		t.Fatalf("no DROP ROLE in\n%s", sql)
	}
	out := map[string]string{
		"schema":       role[1],
		"bucket":       byName["minio"]["BUCKET"],
		"minio user":   byName["minio"]["ROBOT_USER"],
		"redis prefix": strings.TrimSuffix(byName["redis"]["PATTERN"], "*"),
		"redis user":   byName["redis"]["ROBOT_USER"],
		"grafana user": byName["grafana"]["SA_NAME"],
	}
	if c, ok := byName["cache"]; ok {
		out["cache subPath"] = "robots/" + c["ROBOT_DIR"]
	}
	return out
}

// The purge removes exactly the data the robot's own runs made, for every owner and robot,
// legacy names included: its names come from the same plan. Rendered through the program
// for generated owners × robots, each compared with the names of a normal run of the same
// stack state.
func TestPurgeReachesOnlyTheRobotsOwnData(t *testing.T) {
	to := personalTenant(t)
	to.DeletionPolicy = OptionalString(v1alpha1.DeletionDelete)
	keys := []string{"schema", "bucket", "minio user", "redis prefix", "redis user", "grafana user", "cache subPath"}
	seen := map[string]string{}
	cases := 0
	for _, o := range [][2]string{{"tfrs-system", "alice"}, {"tfrs-system", "bob"}, {"team-a", "alice"}} {
		for _, tr := range trickyRobots()[:10] {
			for _, legacy := range []bool{false, true} {
				c := robotCase{crNamespace: o[0], tenant: o[1], typ: tr[0], id: tr[1]}
				state := map[string]string{CredentialContentHashKey: testServerHashKey}
				if legacy {
					for _, n := range robotCredentialNames {
						state[n] = "from-state"
					}
				}
				normal, err := runServerState(ServerInput{Server: c.server(), Tenant: to}, state)
				if err != nil {
					t.Fatal(err)
				}
				purge, err := runServerState(ServerInput{Server: c.server(), Tenant: to, Purge: PurgeData}, state)
				if err != nil {
					t.Fatal(err)
				}
				want, got := dataNames(t, normal), purgeNames(t, purge)
				for _, k := range keys {
					check(t, fmt.Sprintf("%s legacy=%v %s", c, legacy, k), got[k], want[k])
				}
				// No two (owner, robot) purges reach the same data; a legacy robot's names are
				// its own (the same across owners, as its data was).
				id := fmt.Sprintf("%s legacy=%v", c, legacy)
				if legacy {
					id = fmt.Sprintf("%s/%s legacy", tr[0], tr[1])
				}
				for _, k := range keys {
					if prev, dup := seen[k+"="+got[k]]; dup && prev != id {
						t.Errorf("%s %q is purged by %s and %s", k, got[k], prev, id)
					}
					seen[k+"="+got[k]] = id
				}
				cases++
			}
		}
	}
	if cases < 60 {
		t.Fatalf("only %d cases", cases)
	}
}

// The stages: PurgeStop keeps only the robot's identity (its ServiceAccount and deny-all
// policy): no worker, no Job, no RabbitMQ user or vhost, no Redis ACL line, so nothing of
// the robot runs or logs in. PurgeData adds only the purge Job, after the identity.
func TestPurgeStages(t *testing.T) {
	to := personalTenant(t)
	to.DeletionPolicy = OptionalString(v1alpha1.DeletionDelete)
	types := func(r *serverRun) []string {
		var out []string
		for _, reg := range r.m.regs {
			if reg.Custom && !strings.HasPrefix(reg.Type, "tfrs:engine:") && !strings.HasPrefix(reg.Type, "pulumi:providers:") {
				out = append(out, reg.Type+"::"+reg.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	identity := []string{
		"kubernetes:core/v1:Secret::" + ServerConfz + "-secret",
		"kubernetes:core/v1:ServiceAccount::" + ServerConfz + "-service-account",
		"kubernetes:security.istio.io/v1:AuthorizationPolicy::" + ServerConfz + "-deny-inbound",
	}
	stop := runServer(t, ServerInput{Server: newServer(nil), Tenant: to, Purge: PurgeStop})
	check(t, "stop keeps the identity only", types(stop), identity)
	data := runServer(t, ServerInput{Server: newServer(nil), Tenant: to, Purge: PurgeData})
	want := append(slices.Clone(identity), "kubernetes:batch/v1:Job::"+ServerDataPurge+"-job", "kubernetes:core/v1:Secret::"+ServerDataPurge+"-secret")
	slices.Sort(want)
	check(t, "data adds the purge Job", types(data), want)
	job := data.m.find(t, server.DataPurgeType, ServerDataPurge)
	for _, id := range []string{"::" + ServerConfz + "-service-account", "::" + ServerConfz + "-deny-inbound"} {
		if !slices.ContainsFunc(job.Deps, func(d string) bool { return strings.HasSuffix(d, id) }) {
			t.Errorf("the purge Job does not wait for the robot's identity (%s): %v", id, job.Deps)
		}
	}
	check(t, "outputs name the data", data.out[ServerOutputDBSchema] != "" && data.out[ServerOutputBucket] != "", true)

	// An enterprise robot's data is its tenant's: no purge stage runs on it.
	if _, err := runServerErr(ServerInput{Server: newServer(nil), Tenant: enterpriseTenant(t), Purge: PurgeData}); err == nil ||
		!strings.Contains(err.Error(), "only a personal robot's data is purged") {
		t.Errorf("enterprise purge: %v", err)
	}
}

// Only a personal job type under deletionPolicy Delete removes robot data; an enterprise
// tenant and a stack made before the output (no policy) keep it.
func TestDeletesRobotData(t *testing.T) {
	for _, tc := range []struct {
		typ    v1alpha1.TenantType
		policy OptionalString
		want   bool
	}{
		{v1alpha1.TenantPersonal, "Delete", true},
		{v1alpha1.TenantPersonal, "Retain", false},
		{v1alpha1.TenantPersonal, "", false},
		{v1alpha1.TenantEnterprise, "Delete", false},
	} {
		o := TenantOutputs{TenantType: string(tc.typ), DeletionPolicy: tc.policy}
		check(t, fmt.Sprintf("%s %q", tc.typ, tc.policy), o.DeletesRobotData(), tc.want)
	}
	// The policy travels from the cluster's spec.personal through the shared stack and every
	// member's re-export; an enterprise tenant exports its own.
	check(t, "personal default", personalTenant(t).DeletionPolicy, OptionalString(v1alpha1.DeletionRetain))
	del := tenantOutputsOf(t, newEnterprise(func(s *v1alpha1.TFRTenantSpec) { s.DeletionPolicy = v1alpha1.DeletionDelete }), enterpriseStack)
	check(t, "enterprise", del.DeletionPolicy, OptionalString(v1alpha1.DeletionDelete))
}

// A personal robot's vhost follows its job type's deletionPolicy: kept (the topology
// operator's deletionPolicy retain) under Retain and for a tenant stack without the policy
// output; under Delete the operator deletes it with its resource, in the purge's first stage.
func TestRobotVhostFollowsTheDeletionPolicy(t *testing.T) {
	for policy, want := range map[OptionalString]any{
		OptionalString(v1alpha1.DeletionRetain): "retain",
		"":                                      "retain",
		OptionalString(v1alpha1.DeletionDelete): nil,
	} {
		to := personalTenant(t)
		to.DeletionPolicy = policy
		r := runServer(t, ServerInput{Server: newServer(nil), Tenant: to})
		vhost := plainInputs(r.m.find(t, "kubernetes:rabbitmq.com/v1beta1:Vhost", "").Inputs)
		check(t, fmt.Sprintf("policy %q", policy), dig(t, vhost, "spec").(map[string]any)["deletionPolicy"], want)
	}
}
