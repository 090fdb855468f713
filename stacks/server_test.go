package stacks

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	k8scorev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/routing"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/pulumitest"
	"github.com/tfrs-io/tfrs-operator/stacks/confz"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// serverRun is one run of the server program under mocks.
type serverRun struct {
	m      *recordingMocks
	g      *Graph
	out    map[string]any
	secret bool // whether any output is secret
}

// testServerHashKey is the content-hash key the server stack's state holds in these tests.
const testServerHashKey = "test-server-content-hash-key"

func runServerErr(in ServerInput) (*serverRun, error) {
	return runServerKeyed(in, testServerHashKey)
}

// runServerKeyed runs the program with key as the stack's content-hash key (read back from
// its state, as the engine binds it).
func runServerKeyed(in ServerInput, key string) (*serverRun, error) {
	return runServerState(in, map[string]string{CredentialContentHashKey: key})
}

// runServerState runs the program with state, the credentials its stack's state holds
// (read back and bound by the engine before a run).
func runServerState(in ServerInput, state map[string]string) (*serverRun, error) {
	m := &recordingMocks{stack: "server.tfrs-system.test", prefix: "tfrs:server:"}
	run := &serverRun{m: m, g: &Graph{}}
	in.Graph = run.g
	var (
		values func() map[string]any
		all    pulumi.MapOutput
	)
	err := pulumi.RunErr(program.WithCredentials(func(ctx *pulumi.Context) error {
		outs, err := serverProgram(ctx, in)
		if err != nil {
			return err
		}
		all = outs.ToMapOutput()
		values = pulumitest.Collect[map[string]any](all)
		return nil
	}, state, nil, nil), pulumi.WithMocks(tenantTestProject, m.stack, m))
	if err != nil {
		return run, err
	}
	run.out, run.secret = values(), pulumi.IsSecret(all)
	return run, nil
}

// runServer runs the program and checks the outputs: every key, none secret.
func runServer(t *testing.T, in ServerInput) *serverRun {
	t.Helper()
	r, err := runServerErr(in)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "output keys", sortedNames(r.out), ServerOutputKeys())
	if r.secret {
		t.Error("a server output is secret; the stack exports names and hashes only")
	}
	return r
}

func newServer(mut func(*v1alpha1.TFRServerSpec)) *v1alpha1.TFRServer {
	s := &v1alpha1.TFRServer{
		ObjectMeta: metav1.ObjectMeta{Name: "helper-bot", Namespace: "tfrs-system"},
		Spec: v1alpha1.TFRServerSpec{
			TenantRef: "acme", RobotID: "helper-bot", RobotType: "chat", Image: "tfrobot/tfrobot-server:1.0.0",
			SecretData: map[string]string{"OPENAI_API_KEY": "sk-test"},
			ConfigData: map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1", "TFS_PROFILE": "prod"},
		},
	}
	if mut != nil {
		mut(&s.Spec)
	}
	return s
}

// tenantOutputsOf runs the tenant program (the real one, under mocks) and hands its outputs
// over as a server would read them from the tenant stack.
func tenantOutputsOf(t *testing.T, tt *v1alpha1.TFRTenant, stack string) TenantOutputs {
	t.Helper()
	r := runTenant(t, TenantInput{Tenant: tt, Cluster: testTenantCluster}, stack, nil)
	o, err := TenantOutputsFromStack(r.outputs())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func enterpriseTenant(t *testing.T) TenantOutputs {
	return tenantOutputsOf(t, newEnterprise(nil), enterpriseStack)
}

func personalTenant(t *testing.T) TenantOutputs {
	return tenantOutputsOf(t, newPersonal("alice", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nil), sharedChatStack(t))
}

var allServerComponents = map[string]string{
	ServerSecret: server.SecretType, ServerConfig: server.ConfigType, ServerConfz: server.ConfzType,
	ServerDBInit: server.DBInitType, ServerMinIOInit: server.MinIOInitType, ServerGrafanaSA: server.GrafanaSAType,
	ServerAPIWorker: server.APIWorkerType, ServerRobotWorker: server.RobotWorkerType,
}

// wantServerEdges is the graph, edge by edge (secret, config, confz → jobs →
// workers, and the workers on secret, config, confz directly), without the removed Jobs.
func wantServerEdges(removed ...string) []GraphEdge {
	var out []GraphEdge
	for _, from := range []string{ServerSecret, ServerConfig, ServerConfz} {
		for _, to := range []string{ServerDBInit, ServerMinIOInit, ServerGrafanaSA, ServerAPIWorker, ServerRobotWorker} {
			out = append(out, GraphEdge{from, to})
		}
	}
	for _, from := range []string{ServerDBInit, ServerMinIOInit, ServerGrafanaSA} {
		for _, to := range []string{ServerAPIWorker, ServerRobotWorker} {
			out = append(out, GraphEdge{from, to})
		}
	}
	kept := out[:0]
	for _, e := range out {
		if !contains(removed, e.From) && !contains(removed, e.To) {
			kept = append(kept, e)
		}
	}
	sortEdges(kept)
	return kept
}

// confzOf is the Confz the program stored in the robot's Secret, parsed.
func confzOf(t *testing.T, r *serverRun) map[string]any {
	t.Helper()
	s := plainInputs(r.m.find(t, "kubernetes:core/v1:Secret", ServerConfz+"-secret").Inputs)
	tree, err := confz.Parse(dig(t, s, "stringData", server.ConfzKey).(string))
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// podSpec is the pod spec of the Deployment or Job registered as name.
func podSpec(t *testing.T, r *serverRun, typ, name string) map[string]any {
	t.Helper()
	return dig(t, plainInputs(r.m.find(t, typ, name).Inputs), "spec", "template", "spec").(map[string]any)
}

// envOf is a container's explicit env as name → value.
func envOf(c any) map[string]string {
	out := map[string]string{}
	list, _ := c.(map[string]any)["env"].([]any)
	for _, e := range list {
		em := e.(map[string]any)
		if v, ok := em["value"].(string); ok {
			out[em["name"].(string)] = v
		}
	}
	return out
}

// The seeds' "auto-generated example" of the Confz, verbatim.
const seedsConfz = `
[postgresql]
host = "{namespace}-pg-rw"
port = 5432
user = "app_user"
dbname = "{namespace}"

[redis]
host = "redis.{namespace}.svc.cluster.local"
port = 6379

[celery]
broker_url = "amqp://user:pass@rabbitmq.{namespace}.svc.cluster.local:5672/"

[cos]
host = "minio.{namespace}.svc.cluster.local"
port = 9000
`

func TestServerEnterprise(t *testing.T) {
	to := enterpriseTenant(t)
	r := runServer(t, ServerInput{Server: newServer(nil), Tenant: to})

	comps := r.m.components()
	check(t, "components", sortedNames(comps), sortedNames(allServerComponents))
	for id, typ := range allServerComponents {
		if c, ok := comps[id]; ok && c.Type != typ {
			t.Errorf("%s: type %s, want %s", id, c.Type, typ)
		}
	}
	check(t, "edges under mocks", r.m.edges(), wantServerEdges())
	check(t, "recorded graph", r.g.Edges(), wantServerEdges())
	if len(r.g.Skipped) != 0 {
		t.Errorf("skipped %v", r.g.Skipped)
	}

	check(t, "outputs", r.out, map[string]any{
		ServerOutputNamespace: "acme", ServerOutputTenantType: "enterprise",
		ServerOutputRobotID: "helper-bot", ServerOutputRobotType: "chat",
		ServerOutputAPIService: routing.UpstreamHost("acme", "helper-bot", "chat"), ServerOutputAPIPort: routing.UpstreamPort,
		ServerOutputAPIServiceName: "chat-helper-bot-api",
		ServerOutputSecretName:     r.out[ServerOutputSecretName], ServerOutputConfigMapName: r.out[ServerOutputConfigMapName],
		ServerOutputConfzSecret: r.out[ServerOutputConfzSecret], ServerOutputDBSchema: "", ServerOutputBucket: to.MinIOBucket,
		ServerOutputRabbitMQVHost: "/", ServerOutputRedisKeyPrefix: "", ServerOutputGrafanaToken: "chat-helper-bot-grafana-token",
		ServerOutputChecksum: r.out[ServerOutputChecksum],
	})

	// The robot's objects are "{robot}-secret", "{robot}-config" and "{robot}-confz" with a hash
	// of their content, and the outputs name the objects made.
	for key, reg := range map[string]string{
		ServerOutputSecretName: "kubernetes:core/v1:Secret::" + ServerSecret + "-secret", ServerOutputConfigMapName: "kubernetes:core/v1:ConfigMap::" + ServerConfig + "-configmap",
		ServerOutputConfzSecret: "kubernetes:core/v1:Secret::" + ServerConfz + "-secret",
	} {
		typ, name, _ := strings.Cut(reg, "::")
		check(t, key, r.out[key], dig(t, plainInputs(r.m.find(t, typ, name).Inputs), "metadata", "name"))
	}
	for key, base := range map[string]string{ServerOutputSecretName: "chat-helper-bot-secret-", ServerOutputConfigMapName: "chat-helper-bot-config-", ServerOutputConfzSecret: "chat-helper-bot-confz-"} {
		if !strings.HasPrefix(r.out[key].(string), base) {
			t.Errorf("%s = %v, want %s<hash>", key, r.out[key], base)
		}
	}

	// The Confz of the default case is the seeds' example with the tenant's real names, plus
	// what the example leaves out: the passwords and keys, the bucket and the tracing
	// endpoint. The one value that differs is the MinIO port, taken from the tenant's outputs:
	// the MinIO operator's Service listens on 80 (mapped to MinIO's 9000).
	seeds, err := confz.Parse(strings.NewReplacer(
		"{namespace}", "acme",
		"user:pass", TenantRabbitMQUser+":"+to.RabbitMQPassword.Reveal(),
		"port = 9000", fmt.Sprintf("port = %d", to.MinIOPort),
	).Replace(seedsConfz))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "tenant MinIO port", to.MinIOPort, tenant.MinIOPort)
	want := confz.Merge(seeds, map[string]any{
		"postgresql": map[string]any{"password": to.PostgresPassword.Reveal()},
		"redis":      map[string]any{"password": to.RedisPassword.Reveal()},
		"cos":        map[string]any{"access_key": to.MinIOAccessKey.Reveal(), "secret_key": to.MinIOSecretKey.Reveal(), "bucket": "acme"},
		"tracing":    map[string]any{"endpoint": to.OtelEndpoint},
	})
	got := confzOf(t, r)
	check(t, "confz", got, want)
	if to.OtelEndpoint == "" {
		t.Error("the tenant exports no tracing endpoint; the test needs one")
	}

	// Environment: the Secret and ConfigMap of the spec, loaded by both workers, the shared
	// cache mounted at its dir and injected as an explicit env entry.
	sec := plainInputs(r.m.find(t, "kubernetes:core/v1:Secret", ServerSecret+"-secret").Inputs)
	check(t, "secretData", dig(t, sec, "stringData"), map[string]any{"OPENAI_API_KEY": "sk-test"})
	cm := plainInputs(r.m.find(t, "kubernetes:core/v1:ConfigMap", "").Inputs)
	check(t, "configData", dig(t, cm, "data"), map[string]any{"OPENAI_BASE_URL": "https://api.openai.com/v1", "TFS_PROFILE": "prod"})
	for _, dep := range []string{ServerAPIWorker + "-deployment", ServerRobotWorker + "-deployment"} {
		d := plainInputs(r.m.find(t, "kubernetes:apps/v1:Deployment", dep).Inputs)
		check(t, dep+" checksum", dig(t, d, "spec", "template", "metadata", "annotations", server.ChecksumAnnotation), r.out[ServerOutputChecksum])
		ps := dig(t, d, "spec", "template", "spec").(map[string]any)
		c := ps["containers"].([]any)[0].(map[string]any)
		check(t, dep+" env", envOf(c), map[string]string{
			server.ExtractedImagesDirEnv: to.SharedCacheDir, server.ConfzFileEnv: server.ConfzDir + "/" + server.ConfzKey,
		})
		check(t, dep+" envFrom", c["envFrom"], []any{
			map[string]any{"configMapRef": map[string]any{"name": r.out[ServerOutputConfigMapName]}},
			map[string]any{"secretRef": map[string]any{"name": r.out[ServerOutputSecretName]}},
		})
		check(t, dep+" confz volume", ps["volumes"].([]any)[0], map[string]any{
			"name": "confz", "secret": map[string]any{"secretName": r.out[ServerOutputConfzSecret]},
		})
		check(t, dep+" shared cache", ps["volumes"].([]any)[1], map[string]any{
			"name": "shared-cache", "persistentVolumeClaim": map[string]any{"claimName": to.SharedCacheClaim},
		})
		check(t, dep+" pull secret", ps["imagePullSecrets"], []any{map[string]any{"name": testTenantCluster.PullSecretName}})
	}
	check(t, "checksum", r.out[ServerOutputChecksum], server.Checksum(testServerHashKey, newServer(nil).Spec.SecretData, newServer(nil).Spec.ConfigData,
		dig(t, plainInputs(r.m.find(t, "kubernetes:core/v1:Secret", ServerConfz+"-secret").Inputs), "stringData", server.ConfzKey).(string)))

	// An enterprise robot uses the tenant's logins: no identity of its own, no isolation
	// policy; its one credential is the stack's content-hash key.
	for _, typ := range []string{"kubernetes:rabbitmq.com/v1beta1:Vhost", "kubernetes:security.istio.io/v1:AuthorizationPolicy"} {
		if n := len(r.m.all(typ)); n != 0 {
			t.Errorf("%d %s in an enterprise robot", n, typ)
		}
	}
	var creds []string
	for _, c := range r.m.all(program.CredentialType) {
		creds = append(creds, c.Name)
	}
	check(t, "enterprise credentials", creds, []string{CredentialContentHashKey})
	if ic := podSpec(t, r, "kubernetes:batch/v1:Job", ServerDBInit+"-job")["initContainers"]; ic != nil {
		t.Errorf("enterprise db-init creates a schema: %v", ic)
	}
}

func TestServerPersonal(t *testing.T) {
	to := personalTenant(t)
	check(t, "personal namespace", to.Namespace, "personal-chat")
	objects := map[string]string{} // kind/name → robot
	for _, id := range []string{"r-1", "r-2"} {
		s := newServer(func(s *v1alpha1.TFRServerSpec) { s.RobotID = id })
		s.Name = id
		r := runServer(t, ServerInput{Server: s, Tenant: to})
		robot := server.Robot{Namespace: "personal-chat", ID: id, Type: "chat", DataOwner: "tenant.tfrs-system.acme"}
		check(t, id+" edges", r.m.edges(), wantServerEdges())

		// Its own credentials, generated once per server stack.
		var creds []string
		for _, c := range r.m.all(program.CredentialType) {
			creds = append(creds, c.Name)
		}
		sort.Strings(creds)
		check(t, id+" credentials", creds, []string{CredentialContentHashKey, CredentialRobotDataNames, CredentialRobotMinIOSecretKey, CredentialRobotPostgresPassword, CredentialRobotRabbitMQPassword, CredentialRobotRedisPassword})

		// Its Confz points at its own role and schema, vhost and user, bucket and user, and
		// Redis key prefix, and holds none of the tenant's own passwords.
		cz := confzOf(t, r)
		pg := cz["postgresql"].(map[string]any)
		check(t, id+" pg", []any{pg["user"], pg["schema"], pg["dbname"], pg["host"]}, []any{robot.Schema(), robot.Schema(), to.PostgresDatabase, to.PostgresHost})
		check(t, id+" redis prefix", dig(t, cz, "redis", "key_prefix"), robot.RedisKeyPrefix())
		check(t, id+" redis user", dig(t, cz, "redis", "username"), robot.RedisUser())
		robotRedis := dig(t, cz, "redis", "password").(string)
		if robotRedis == "" || robotRedis == to.RedisPassword.Reveal() {
			t.Errorf("%s: the robot logs into Redis with the tenant's password", id)
		}
		// Its Redis ACL user: its own key of the tenant's redis-acl Secret, the password only
		// as its SHA-256, the keys and channels of its prefix only.
		patch := r.m.find(t, "kubernetes:core/v1:SecretPatch", "")
		if !patch.Inputs["data"].ContainsSecrets() {
			t.Errorf("%s: the Redis ACL line is not secret in the state", id)
		}
		pdata := dig(t, plainInputs(patch.Inputs), "data").(map[string]any)
		check(t, id+" acl key", sortedNames(pdata), []string{robot.RedisUser() + ".acl"})
		line, err := base64.StdEncoding.DecodeString(pdata[robot.RedisUser()+".acl"].(string))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(robotRedis))
		// The command rules are an allowlist (kit.RedisRobotCommands, tested against the
		// pinned Redis command table in components/internal/kit).
		aclHead := "user " + robot.RedisUser() + " on #" + hex.EncodeToString(sum[:]) + " ~" + robot.RedisKeyPrefix() + "* &" + robot.RedisKeyPrefix() + "* -@all "
		if !strings.HasPrefix(string(line), aclHead) || !strings.HasSuffix(string(line), " -@admin -@dangerous -@scripting\n") {
			t.Errorf("%s acl line = %q, want %q… -@scripting", id, line, aclHead)
		}
		check(t, id+" acl secret", dig(t, plainInputs(patch.Inputs), "metadata"), map[string]any{"name": "redis-acl", "namespace": "personal-chat"})
		cos := cz["cos"].(map[string]any)
		check(t, id+" cos", []any{cos["access_key"], cos["bucket"]}, []any{robot.MinIOUser(), robot.Bucket()})
		broker := dig(t, cz, "celery", "broker_url").(string)
		if !strings.HasPrefix(broker, "amqp://"+robot.VHost()+":") || !strings.HasSuffix(broker, "@"+to.RabbitMQHost+":5672/"+robot.VHost()) {
			t.Errorf("%s broker %s", id, broker)
		}
		doc := fmt.Sprint(cz)
		for what, pw := range map[string]SecretString{"postgres": to.PostgresPassword, "rabbitmq": to.RabbitMQPassword, "minio root": to.MinIOSecretKey, "redis": to.RedisPassword} {
			if strings.Contains(doc, pw.Reveal()) {
				t.Errorf("%s: the Confz holds the tenant's %s password", id, what)
			}
		}

		// Its RabbitMQ identity, on the tenant's cluster.
		vh := plainInputs(r.m.find(t, "kubernetes:rabbitmq.com/v1beta1:Vhost", "").Inputs)
		// Kept when the robot goes: the job type's deletionPolicy is Retain, the default.
		check(t, id+" vhost", dig(t, vh, "spec"), map[string]any{"name": robot.VHost(), "rabbitmqClusterReference": map[string]any{"name": tenant.RabbitMQCluster},
			"deletionPolicy": "retain"})
		r.m.find(t, "kubernetes:rabbitmq.com/v1beta1:User", "")
		r.m.find(t, "kubernetes:rabbitmq.com/v1beta1:Permission", "")

		// Its schema and role (db-init), its bucket user (minio-init), its schema in the env.
		job := podSpec(t, r, "kubernetes:batch/v1:Job", ServerDBInit+"-job")
		init := job["initContainers"].([]any)[0]
		check(t, id+" psql login", []string{envOf(init)["PGUSER"], envOf(init)["PGDATABASE"]}, []string{to.PostgresUser, to.PostgresDatabase})
		mc := podSpec(t, r, "kubernetes:batch/v1:Job", ServerMinIOInit+"-job")["containers"].([]any)[0]
		check(t, id+" minio user", []string{envOf(mc)["ROBOT_USER"], envOf(mc)["BUCKET"]}, []string{robot.MinIOUser(), robot.Bucket()})
		api := podSpec(t, r, "kubernetes:apps/v1:Deployment", ServerAPIWorker+"-deployment")["containers"].([]any)[0]
		check(t, id+" schema env", envOf(api)[server.DBSchemaEnv], robot.Schema())

		// Only the gateway, for this robot's X-TF-RobotId, reaches its API pods.
		ap := plainInputs(r.m.find(t, "kubernetes:security.istio.io/v1:AuthorizationPolicy", ServerAPIWorker+"-authorization-policy").Inputs)
		check(t, id+" policy action", dig(t, ap, "spec", "action"), "DENY")
		check(t, id+" policy rules", dig(t, ap, "spec", "rules"), []any{
			map[string]any{"from": []any{map[string]any{"source": map[string]any{"notPrincipals": []any{ServerGatewayPrincipal}}}}},
			map[string]any{"when": []any{map[string]any{"key": "request.headers[x-tf-robotid]", "notValues": []any{id}}}},
		})
		check(t, id+" outputs", []any{r.out[ServerOutputDBSchema], r.out[ServerOutputBucket], r.out[ServerOutputRabbitMQVHost], r.out[ServerOutputRedisKeyPrefix], r.out[ServerOutputAPIService]},
			[]any{robot.Schema(), robot.Bucket(), robot.VHost(), robot.RedisKeyPrefix(), routing.UpstreamHost("personal-chat", id, "chat")})

		// Two robots in one namespace never share an object (a patch of the tenant's
		// redis-acl Secret writes only the robot's own key, checked above).
		for _, reg := range r.m.regs {
			if !reg.Custom || !strings.HasPrefix(reg.Type, "kubernetes:") || strings.HasSuffix(reg.Type, "Patch") {
				continue
			}
			key := reg.Type + "/" + dig(t, plainInputs(reg.Inputs), "metadata", "name").(string)
			if other, ok := objects[key]; ok {
				t.Errorf("%s is made by both %s and %s", key, other, id)
			}
			objects[key] = id
		}
	}
	check(t, "gateway principal", ServerGatewayPrincipal, "cluster.local/ns/istio-ingress/sa/istio-ingress")
}

func TestServerConfzOverrides(t *testing.T) {
	to := enterpriseTenant(t)
	r := runServer(t, ServerInput{Server: newServer(func(s *v1alpha1.TFRServerSpec) {
		s.ConfzData = `
debug = true

[postgresql]
port = 6543

[cos]
bucket = "mine"

[tracing]
endpoint = "http://collector.example:4317"

[llm]
default_model = "gpt-4o-mini"

[llm.limits]
rpm = 60
`
	}), Tenant: to})
	cz := confzOf(t, r)
	check(t, "top-level user key", cz["debug"], true)
	check(t, "user port wins", dig(t, cz, "postgresql", "port"), int64(6543))
	check(t, "generated host kept", dig(t, cz, "postgresql", "host"), to.PostgresHost)
	check(t, "generated password kept", dig(t, cz, "postgresql", "password"), to.PostgresPassword.Reveal())
	check(t, "user bucket wins", dig(t, cz, "cos", "bucket"), "mine")
	check(t, "generated keys kept", dig(t, cz, "cos", "access_key"), to.MinIOAccessKey.Reveal())
	check(t, "user tracing wins", dig(t, cz, "tracing", "endpoint"), "http://collector.example:4317")
	check(t, "user section", dig(t, cz, "llm", "default_model"), "gpt-4o-mini")
	check(t, "user nested section", dig(t, cz, "llm", "limits", "rpm"), int64(60))
	check(t, "untouched section", dig(t, cz, "redis", "host"), to.RedisHost)
}

func TestServerRejectsInvalidInput(t *testing.T) {
	to := enterpriseTenant(t)
	noType := to
	noType.TenantType = ""
	noNamespace := to
	noNamespace.Namespace = ""
	badCache := to
	badCache.SharedCacheDir = ""
	for name, tc := range map[string]struct {
		in  ServerInput
		msg string
	}{
		"invalid TOML": {ServerInput{Server: newServer(func(s *v1alpha1.TFRServerSpec) { s.ConfzData = "[redis]\nport = = 1\n" }), Tenant: to}, "line 2, column"},
		"no image":     {ServerInput{Server: newServer(func(s *v1alpha1.TFRServerSpec) { s.Image = "" }), Tenant: to}, "spec.image"},
		"unroutable": {ServerInput{Server: newServer(func(s *v1alpha1.TFRServerSpec) {
			s.RobotID, s.RobotType = strings.Repeat("i", 40), strings.Repeat("t", 30)
		}), Tenant: to}, "service name"},
		"tenant not up":          {ServerInput{Server: newServer(nil), Tenant: noType}, "want enterprise or personal"},
		"tenant without names":   {ServerInput{Server: newServer(nil), Tenant: noNamespace}, "no namespace"},
		"cache without a dir":    {ServerInput{Server: newServer(nil), Tenant: badCache}, "has no directory"},
		"nil server (no spec)":   {ServerInput{Server: &v1alpha1.TFRServer{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, Tenant: to}, "invalid TFRServer"},
		"tenant outputs missing": {ServerInput{Server: newServer(nil)}, "want enterprise or personal"},
	} {
		r, err := runServerErr(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.msg)
		}
		if len(r.m.regs) != 0 {
			t.Errorf("%s: %d registrations before failing", name, len(r.m.regs))
		}
	}
	var pe *confz.ParseError
	_, err := runServerErr(ServerInput{Server: newServer(func(s *v1alpha1.TFRServerSpec) { s.ConfzData = "a = [" }), Tenant: to})
	if err == nil || errors.As(err, &pe) && pe.Line != 1 {
		t.Errorf("unterminated array: %v", err)
	}
	if _, err := runServerErr(ServerInput{}); err == nil {
		t.Error("nil server accepted")
	}
}

// jobNames are the names of the run's Jobs by component.
func jobNames(t *testing.T, r *serverRun) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, j := range r.m.all("kubernetes:batch/v1:Job") {
		out[strings.TrimSuffix(j.Name, "-job")] = dig(t, plainInputs(j.Inputs), "metadata", "name").(string)
	}
	return out
}

// The workers roll (checksum) when and only when the robot's Secret, ConfigMap or Confz
// change; a Job runs again only when its own inputs change.
func TestServerChecksumAndJobReruns(t *testing.T) {
	to := enterpriseTenant(t)
	run := func(mut func(*v1alpha1.TFRServerSpec)) (string, map[string]string) {
		r := runServer(t, ServerInput{Server: newServer(mut), Tenant: to})
		return r.out[ServerOutputChecksum].(string), jobNames(t, r)
	}
	sum, jobs := run(nil)
	if len(sum) != 64 || len(jobs) != 3 {
		t.Fatalf("checksum %q jobs %v", sum, jobs)
	}
	for name, tc := range map[string]struct {
		mut       func(*v1alpha1.TFRServerSpec)
		rolls     bool
		rerunJobs []string
	}{
		"nothing":        {nil, false, nil},
		"replicas":       {func(s *v1alpha1.TFRServerSpec) { s.RobotWorker.Replicas = ptr.To[int32](3) }, false, nil},
		"image":          {func(s *v1alpha1.TFRServerSpec) { s.Image = "tfrobot/tfrobot-server:1.0.1" }, false, []string{ServerDBInit}},
		"configData":     {func(s *v1alpha1.TFRServerSpec) { s.ConfigData["TFS_PROFILE"] = "dev" }, true, nil},
		"new config key": {func(s *v1alpha1.TFRServerSpec) { s.ConfigData["EXTRA"] = "1" }, true, nil},
		"secretData":     {func(s *v1alpha1.TFRServerSpec) { s.SecretData["OPENAI_API_KEY"] = "sk-other" }, true, nil},
		"confzData":      {func(s *v1alpha1.TFRServerSpec) { s.ConfzData = "[redis]\ndb = 2\n" }, true, []string{ServerDBInit}},
	} {
		gotSum, gotJobs := run(tc.mut)
		if (gotSum != sum) != tc.rolls {
			t.Errorf("%s: checksum changed = %v, want %v", name, gotSum != sum, tc.rolls)
		}
		for id, n := range jobs {
			if (gotJobs[id] != n) != contains(tc.rerunJobs, id) {
				t.Errorf("%s: job %s renamed %v (%s → %s)", name, id, gotJobs[id] != n, n, gotJobs[id])
			}
		}
	}
}

func TestServerInitJobs(t *testing.T) {
	to := enterpriseTenant(t)
	off := false
	r := runServer(t, ServerInput{Server: newServer(func(s *v1alpha1.TFRServerSpec) {
		s.InitJobs.DBInit, s.InitJobs.GrafanaSA = &off, &off
	}), Tenant: to})
	check(t, "edges", r.m.edges(), wantServerEdges(ServerDBInit, ServerGrafanaSA))
	check(t, "graph", r.g.Edges(), wantServerEdges(ServerDBInit, ServerGrafanaSA))
	sort.Slice(r.g.Skipped, func(i, j int) bool { return r.g.Skipped[i].ID < r.g.Skipped[j].ID })
	check(t, "skipped", r.g.Skipped, []GraphSkip{{ServerDBInit, "disabled"}, {ServerGrafanaSA, "disabled"}})
	check(t, "jobs", sortedNames(jobNames(t, r)), []string{ServerMinIOInit})
	check(t, "no token secret", r.out[ServerOutputGrafanaToken], "")

	// All Jobs off: the workers still wait for their Secret, ConfigMap and Confz.
	r = runServer(t, ServerInput{Server: newServer(func(s *v1alpha1.TFRServerSpec) {
		s.InitJobs.DBInit, s.InitJobs.MinIOInit, s.InitJobs.GrafanaSA = &off, &off, &off
	}), Tenant: to})
	check(t, "no jobs", r.m.edges(), wantServerEdges(ServerDBInit, ServerMinIOInit, ServerGrafanaSA))

	// A tenant without Grafana: no service account to make.
	noGrafana := to
	noGrafana.GrafanaURL = ""
	r = runServer(t, ServerInput{Server: newServer(nil), Tenant: noGrafana})
	check(t, "skipped", r.g.Skipped, []GraphSkip{{ServerGrafanaSA, "the tenant has no Grafana"}})
	// Nor a shared cache or tracing: no mount, no env, no [tracing].
	bare := to
	bare.SharedCacheClaim, bare.SharedCacheDir, bare.OtelEndpoint = "", "", ""
	r = runServer(t, ServerInput{Server: newServer(nil), Tenant: bare})
	c := podSpec(t, r, "kubernetes:apps/v1:Deployment", ServerAPIWorker+"-deployment")
	if len(c["volumes"].([]any)) != 1 || envOf(c["containers"].([]any)[0])[server.ExtractedImagesDirEnv] != "" {
		t.Errorf("shared cache without one: %v", c)
	}
	if _, ok := confzOf(t, r)["tracing"]; ok {
		t.Error("[tracing] without a collector")
	}
}

func TestServerWorkloads(t *testing.T) {
	r := runServer(t, ServerInput{Server: newServer(func(s *v1alpha1.TFRServerSpec) {
		s.APIWorker.Replicas = ptr.To[int32](2)
		s.APIWorker.Resources = k8scorev1.ResourceRequirements{Requests: k8scorev1.ResourceList{k8scorev1.ResourceCPU: k8sresource.MustParse("500m")}}
		s.RobotWorker.Replicas = ptr.To[int32](0)
		s.RobotWorker.Resources = k8scorev1.ResourceRequirements{Limits: k8scorev1.ResourceList{k8scorev1.ResourceMemory: k8sresource.MustParse("1Gi")}}
	}), Tenant: enterpriseTenant(t)})
	for dep, want := range map[string][]any{
		ServerAPIWorker + "-deployment":   {2.0, map[string]any{"requests": map[string]any{"cpu": "500m"}}, []any{"api"}},
		ServerRobotWorker + "-deployment": {0.0, map[string]any{"limits": map[string]any{"memory": "1Gi"}}, []any{"worker"}},
	} {
		d := plainInputs(r.m.find(t, "kubernetes:apps/v1:Deployment", dep).Inputs)
		c := dig(t, d, "spec", "template", "spec").(map[string]any)["containers"].([]any)[0].(map[string]any)
		check(t, dep, []any{dig(t, d, "spec", "replicas"), c["resources"], c["args"]}, want)
	}
	// No resources given: none set.
	r = runServer(t, ServerInput{Server: newServer(nil), Tenant: enterpriseTenant(t)})
	c := podSpec(t, r, "kubernetes:apps/v1:Deployment", ServerAPIWorker+"-deployment")["containers"].([]any)[0].(map[string]any)
	if _, set := c["resources"]; set {
		t.Errorf("resources %v", c["resources"])
	}
}

func TestServerGraph(t *testing.T) {
	g, err := ServerGraph(newServer(nil))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
	}
	check(t, "nodes in order", ids, []string{
		ServerSecret, ServerConfig, ServerConfz, ServerDBInit, ServerMinIOInit, ServerGrafanaSA, ServerAPIWorker, ServerRobotWorker,
	})
	check(t, "edges", g.Edges(), wantServerEdges())
	if _, err := ServerGraph(nil); err == nil {
		t.Error("nil accepted")
	}
}

// TestServerStandIns checks that every custom resource a personal robot creates is served by
// a real upstream CRD of the pinned versions, which the integration tests install.
func TestServerStandIns(t *testing.T) {
	served := upstreamServed(t)
	r := runServer(t, ServerInput{Server: newServer(nil), Tenant: personalTenant(t)})
	kinds := map[string]bool{}
	for _, reg := range r.m.regs {
		if group, _, _ := strings.Cut(strings.TrimPrefix(reg.Type, "kubernetes:"), "/"); strings.Contains(group, ".") && !strings.HasSuffix(group, "k8s.io") {
			kinds[reg.Type] = true
		}
	}
	check(t, "custom kinds", sortedNames(kinds), []string{
		"kubernetes:rabbitmq.com/v1beta1:Permission", "kubernetes:rabbitmq.com/v1beta1:User",
		"kubernetes:rabbitmq.com/v1beta1:Vhost", "kubernetes:security.istio.io/v1:AuthorizationPolicy",
	})
	for k := range kinds {
		if !served[k] {
			t.Errorf("no pinned upstream CRD serves %s", k)
		}
	}
}

// Content names and the checksum are keyed by the stack's content-hash key: stable across
// runs of one stack (no rollout without a change), different in another stack with the same
// data, and not the unkeyed sha256 of the data (guessable offline for a short secret).
func TestServerContentHashesKeyed(t *testing.T) {
	in := ServerInput{Server: newServer(nil), Tenant: enterpriseTenant(t)}
	run := func(key string) (map[string]any, *serverRun) {
		t.Helper()
		r, err := runServerKeyed(in, key)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]any{}
		for _, k := range []string{ServerOutputSecretName, ServerOutputConfigMapName, ServerOutputConfzSecret, ServerOutputChecksum} {
			out[k] = r.out[k]
		}
		for _, j := range r.m.all("kubernetes:batch/v1:Job") {
			out[j.Name] = dig(t, plainInputs(j.Inputs), "metadata", "name")
		}
		return out, r
	}
	first, r := run("stack-a-key")
	if len(first) < 5 {
		t.Fatalf("too few content names to compare: %v", first)
	}
	again, _ := run("stack-a-key")
	check(t, "same key, same data: same names", again, first)
	other, _ := run("stack-b-key")
	for k, v := range first {
		if other[k] == v {
			t.Errorf("%s: %v in two stacks", k, v)
		}
	}
	data, err := json.Marshal(in.Server.Spec.SecretData)
	if err != nil {
		t.Fatal(err)
	}
	plain := sha256.Sum256(data)
	check(t, "secret name is keyed", first[ServerOutputSecretName] == server.Robot{Type: "chat", ID: in.Server.Spec.RobotID}.SecretBase()+"-"+hex.EncodeToString(plain[:])[:10], false)
	check(t, "secret name shape", strings.HasPrefix(first[ServerOutputSecretName].(string), in.Server.Spec.RobotType+"-"+in.Server.Spec.RobotID+"-secret-"), true)
	// The key itself is a secret credential of the stack: never in an output or an input in
	// plain text.
	for _, reg := range r.m.regs {
		if strings.Contains(fmt.Sprint(plainInputs(reg.Inputs)), "stack-a-key") && reg.Type != program.CredentialType {
			t.Errorf("%s %s carries the hash key", reg.Type, reg.Name)
		}
	}
	for k, v := range r.out {
		if strings.Contains(fmt.Sprint(v), "stack-a-key") {
			t.Errorf("output %s carries the hash key", k)
		}
	}
}
