package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/routing"
	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// testHashKey is the robot's content-hash key in these tests (a stack credential in a run).
const testHashKey = "test-content-hash-key"

var robot = Robot{Namespace: "acme", ID: "r-1", Type: "chat", HashKey: pulumi.String(testHashKey)}

// secretIn is a value as the program hands it over: a Pulumi secret.
func secretIn(s string) pulumi.StringOutput {
	return pulumi.ToSecret(pulumi.String(s)).(pulumi.StringOutput)
}

// Names of the robot's objects as the program hands them to the workers.
const (
	testSecret    = "chat-r-1-secret-0123456789"
	testConfigMap = "chat-r-1-config-0123456789"
	testConfz     = "chat-r-1-confz-0123456789"
)

func pod() Pod {
	return Pod{
		Image: "tfrobot/server:1", SecretName: pulumi.String(testSecret), ConfigMapName: pulumi.String(testConfigMap),
		ConfzSecretName: pulumi.String(testConfz), SharedCache: &SharedCache{Claim: "shared-cache", Dir: "/data/shared-cache"},
		Env: map[string]string{DBSchemaEnv: robot.Schema()}, PullSecret: "pull",
	}
}

func TestRobotNames(t *testing.T) {
	pt.Eq(t, "name", robot.Name(), "chat-r-1")
	pt.Eq(t, "secret", robot.SecretBase(), "chat-r-1-secret")
	pt.Eq(t, "config", robot.ConfigMapBase(), "chat-r-1-config")
	pt.Eq(t, "confz", robot.ConfzSecretBase(), "chat-r-1-confz")
	pt.Eq(t, "api", robot.APIName(), routing.RobotServiceName("r-1", "chat"))
	pt.Eq(t, "host", robot.APIHost(), routing.UpstreamHost("acme", "r-1", "chat"))
	pt.Eq(t, "schema", robot.Schema(), "r_chat_r_1")
	pt.Eq(t, "schema of a digit-first robot", Robot{Namespace: "a", ID: "1", Type: "9x"}.Schema(), "r_9x_1")
	pt.Eq(t, "bucket", robot.Bucket(), "chat-r-1")
	pt.Eq(t, "redis prefix", robot.RedisKeyPrefix(), "chat-r-1:")
	if err := robot.Validate(); err != nil {
		t.Fatal(err)
	}
	// The longest robot the gateway routes to still has valid names everywhere.
	long := Robot{Namespace: "acme", ID: strings.Repeat("i", 29), Type: strings.Repeat("t", 29)}
	if err := long.Validate(); err != nil {
		t.Fatal(err)
	}
	for what, n := range map[string]int{"api": len(long.APIName()), "instance label": len(long.Name()), "schema": len(long.Schema()), "bucket": len(long.Bucket())} {
		if n > 63 {
			t.Errorf("%s has %d characters", what, n)
		}
	}
	for _, bad := range []Robot{
		{Namespace: "acme", ID: "r_1", Type: "chat"}, {Namespace: "acme", ID: "-r", Type: "chat"},
		{Namespace: "acme", ID: strings.Repeat("i", 40), Type: strings.Repeat("t", 30)}, {ID: "r", Type: "chat"},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// envNames runs the secret and config components over data and returns the names of the
// objects they made.
func envNames(t *testing.T, secretData, configData map[string]string) (secret, config string, m *pt.Mocks) {
	t.Helper()
	return envNamesKeyed(t, robot, secretData, configData)
}

func envNamesKeyed(t *testing.T, r Robot, secretData, configData map[string]string) (secret, config string, m *pt.Mocks) {
	t.Helper()
	m = &pt.Mocks{}
	var s, c func() string
	m.Run(t, func(ctx *pulumi.Context) error {
		sec, err := NewSecret(ctx, "secret", &EnvArgs{Robot: r, Data: secretData})
		if err != nil {
			return err
		}
		cfg, err := NewConfig(ctx, "config", &EnvArgs{Robot: r, Data: configData})
		if err != nil {
			return err
		}
		s, c = pt.Collect[string](sec.Name), pt.Collect[string](cfg.Name)
		return nil
	})
	return s(), c(), m
}

func TestEnvSources(t *testing.T) {
	secretName, configName, m := envNames(t, map[string]string{"OPENAI_API_KEY": "sk-1"}, map[string]string{"TFS_PROFILE": "prod"})
	s := m.Find(t, "kubernetes:core/v1:Secret", "secret-secret")
	pt.Eq(t, "secret name", pt.At(t, pt.Plain(s.Inputs), "metadata", "name"), secretName)
	pt.Eq(t, "secret data", pt.At(t, pt.Plain(s.Inputs), "stringData"), map[string]any{"OPENAI_API_KEY": "sk-1"})
	if !s.Inputs["stringData"].ContainsSecrets() {
		t.Error("secretData is not a Pulumi secret")
	}
	cm := pt.Plain(m.Find(t, "kubernetes:core/v1:ConfigMap", "config-configmap").Inputs)
	pt.Eq(t, "config name", pt.At(t, cm, "metadata", "name"), configName)
	pt.Eq(t, "config", pt.At(t, cm, "data"), map[string]any{"TFS_PROFILE": "prod"})
	pt.Eq(t, "labels", pt.At(t, cm, "metadata", "labels", LabelInstance), "chat-r-1")
	pt.Eq(t, "parent", s.Parent, m.Find(t, SecretType, "").URN)

	// Content names: "{robot}-secret-<hash>", the same for the same data in any order, another
	// for any other data (a key, a value, a key moved between the two).
	for what, n := range map[string]string{"secret": secretName, "config": configName} {
		base := map[string]string{"secret": robot.SecretBase(), "config": robot.ConfigMapBase()}[what]
		if !strings.HasPrefix(n, base+"-") || len(n) != len(base)+1+contentHashLength {
			t.Errorf("%s name %q", what, n)
		}
	}
	s2, c2, _ := envNames(t, map[string]string{"OPENAI_API_KEY": "sk-1"}, map[string]string{"TFS_PROFILE": "prod"})
	pt.Eq(t, "same data, same names", []string{s2, c2}, []string{secretName, configName})
	s3, c3, _ := envNames(t, map[string]string{"OPENAI_API_KEY": "sk-2"}, map[string]string{"TFS_PROFILE": "prod", "X": ""})
	if s3 == secretName || c3 == configName {
		t.Errorf("changed data kept its name: %s %s", s3, c3)
	}
	_, c4, _ := envNames(t, nil, map[string]string{"TFS_PROFILE": "dev"})
	if c4 == configName {
		t.Error("changed value kept its name")
	}

	// Keyed: another stack's key names the same data otherwise, and the name is not the
	// plain sha256 of the data (guessable offline for a short secret).
	other := robot
	other.HashKey = pulumi.String("another-stack-key")
	s5, c5, _ := envNamesKeyed(t, other, map[string]string{"OPENAI_API_KEY": "sk-1"}, map[string]string{"TFS_PROFILE": "prod"})
	if s5 == secretName || c5 == configName {
		t.Errorf("two keys, one name: %s %s", s5, c5)
	}
	plain := sha256.Sum256([]byte(`{"OPENAI_API_KEY":"sk-1"}`))
	if secretName == robot.SecretBase()+"-"+hex.EncodeToString(plain[:])[:contentHashLength] {
		t.Errorf("secret name %s is the unkeyed sha256 of its data", secretName)
	}
	// Without a key nothing is content-named.
	nokey := robot
	nokey.HashKey = nil
	if err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
		_, err := NewSecret(ctx, "secret", &EnvArgs{Robot: nokey})
		return err
	}); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("no key: err = %v", err)
	}

	// Empty data still makes the object: envFrom on a missing one keeps pods from starting.
	_, _, m = envNames(t, nil, nil)
	m.Find(t, "kubernetes:core/v1:ConfigMap", "")
	// Without stringData: an empty secret map comes back from the state absent, which would
	// replace the Secret (and its dependants) on every run.
	if _, set := pt.Plain(m.Find(t, "kubernetes:core/v1:Secret", "").Inputs)["stringData"]; set {
		t.Error("empty secretData written as an empty stringData")
	}
}

func TestConfz(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewConfz(ctx, "confz", &ConfzArgs{Robot: robot, TOML: secretIn("[redis]\nport = 6379\n")})
		return err
	})
	m.AssertChildren(t, ConfzType, "kubernetes:core/v1:Secret::confz-secret", "kubernetes:core/v1:ServiceAccount::confz-service-account")
	s := m.Find(t, "kubernetes:core/v1:Secret", "")
	pt.Eq(t, "confz", pt.At(t, pt.Plain(s.Inputs), "stringData", ConfzKey), "[redis]\nport = 6379\n")
	if n := pt.At(t, pt.Plain(s.Inputs), "metadata", "name").(string); !strings.HasPrefix(n, "chat-r-1-confz-") {
		t.Errorf("confz secret %q", n)
	}
	// The robot's account names its stack: the robot's claim on its names (stacks/kinds).
	owned := robot
	owned.Owner = "server.acme.chat-r-1"
	m = &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewConfz(ctx, "confz", &ConfzArgs{Robot: owned, TOML: secretIn("x = 1\n")})
		return err
	})
	sa := pt.Plain(m.Find(t, "kubernetes:core/v1:ServiceAccount", "").Inputs)
	pt.Eq(t, "account owner", pt.At(t, sa, "metadata", "annotations"), map[string]any{OwnerAnnotation: "server.acme.chat-r-1"})

	// A personal robot's own RabbitMQ identity.
	m = &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewConfz(ctx, "confz", &ConfzArgs{Robot: robot, TOML: secretIn("x = 1\n"),
			Broker: &BrokerArgs{Cluster: "rabbitmq", VHost: "chat-r-1", User: "chat-r-1", Password: secretIn("mq-pw")}})
		return err
	})
	m.AssertChildren(t, ConfzType, "kubernetes:core/v1:Secret::confz-secret", "kubernetes:core/v1:ServiceAccount::confz-service-account", "kubernetes:core/v1:Secret::confz-rabbitmq-credentials",
		"kubernetes:rabbitmq.com/v1beta1:Vhost::confz-vhost", "kubernetes:rabbitmq.com/v1beta1:User::confz-user",
		"kubernetes:rabbitmq.com/v1beta1:Permission::confz-permission")
	creds := pt.Plain(m.Find(t, "kubernetes:core/v1:Secret", "confz-rabbitmq-credentials").Inputs)
	pt.Eq(t, "credentials", pt.At(t, creds, "stringData"), map[string]any{"username": "chat-r-1", "password": "mq-pw"})
	ref := map[string]any{"name": "rabbitmq"}
	vh := pt.Plain(m.Find(t, "kubernetes:rabbitmq.com/v1beta1:Vhost", "").Inputs)
	pt.Eq(t, "vhost", pt.At(t, vh, "spec"), map[string]any{"name": "chat-r-1", "rabbitmqClusterReference": ref})
	retained := &pt.Mocks{}
	retained.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewConfz(ctx, "confz", &ConfzArgs{Robot: robot, TOML: secretIn("x = 1\n"),
			Broker: &BrokerArgs{Cluster: "rabbitmq", VHost: "chat-r-1", User: "chat-r-1", Password: secretIn("mq-pw"), Retain: true}})
		return err
	})
	pt.Eq(t, "retained vhost", pt.At(t, pt.Plain(retained.Find(t, "kubernetes:rabbitmq.com/v1beta1:Vhost", "").Inputs), "spec", "deletionPolicy"), "retain")
	u := pt.Plain(m.Find(t, "kubernetes:rabbitmq.com/v1beta1:User", "").Inputs)
	pt.Eq(t, "user imports", pt.At(t, u, "spec", "importCredentialsSecret", "name"), "chat-r-1-rabbitmq")
	permReg := m.Find(t, "kubernetes:rabbitmq.com/v1beta1:Permission", "")
	perm := pt.Plain(permReg.Inputs)
	pt.Eq(t, "permission", pt.At(t, perm, "spec"), map[string]any{
		"vhost": "chat-r-1", "userReference": map[string]any{"name": "chat-r-1"}, "rabbitmqClusterReference": ref,
		"permissions": map[string]any{"configure": ".*", "write": ".*", "read": ".*"},
	})
	deps := strings.Join(permReg.Deps, " ")
	if !strings.Contains(deps, "confz-vhost") || !strings.Contains(deps, "confz-user") {
		t.Errorf("permission deps %v, want the vhost and the user", permReg.Deps)
	}

	if err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error {
		_, err := NewConfz(ctx, "confz", &ConfzArgs{Robot: robot, TOML: secretIn(""), Broker: &BrokerArgs{Cluster: "rabbitmq"}})
		return err
	}); err == nil {
		t.Error("broker without a user accepted")
	}
}

// kubeletEnv resolves a container's environment as the kubelet does: envFrom sources in order
// (a later source wins a key), then env entries on top. configMaps and secrets are the data
// of the objects by name.
func kubeletEnv(t *testing.T, container map[string]any, configMaps, secrets map[string]map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	from, _ := container["envFrom"].([]any)
	for _, f := range from {
		src := f.(map[string]any)
		var data map[string]string
		switch {
		case src["configMapRef"] != nil:
			data = configMaps[pt.At(t, src, "configMapRef", "name").(string)]
		case src["secretRef"] != nil:
			data = secrets[pt.At(t, src, "secretRef", "name").(string)]
		}
		for k, v := range data {
			out[k] = v
		}
	}
	env, _ := container["env"].([]any)
	for _, e := range env {
		out[pt.At(t, e, "name").(string)] = pt.At(t, e, "value").(string)
	}
	return out
}

func TestEnvPrecedence(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewRobotWorker(ctx, "robot-worker", &WorkerArgs{Robot: robot, Pod: pod(), Replicas: 1, Checksum: pulumi.String("c")})
		return err
	})
	c := pt.At(t, pt.Plain(m.Find(t, "kubernetes:apps/v1:Deployment", "").Inputs), "spec", "template", "spec", "containers", 0).(map[string]any)
	config := map[string]string{ExtractedImagesDirEnv: "/tmp/elsewhere", DBSchemaEnv: "public", "BOTH": "config", "ONLY_CONFIG": "c"}
	secret := map[string]string{"BOTH": "secret", ConfzFileEnv: "/tmp/other.toml", "ONLY_SECRET": "s"}
	got := kubeletEnv(t, c, map[string]map[string]string{testConfigMap: config}, map[string]map[string]string{testSecret: secret})
	pt.Eq(t, "environment", got, map[string]string{
		ExtractedImagesDirEnv: "/data/shared-cache", // the operator's env beats the ConfigMap
		DBSchemaEnv:           "r_chat_r_1",
		ConfzFileEnv:          ConfzDir + "/" + ConfzKey, // and the Secret
		"BOTH":                "secret",                  // the Secret beats the ConfigMap
		"ONLY_CONFIG":         "c",
		"ONLY_SECRET":         "s",
	})
}

func TestWorkers(t *testing.T) {
	m := &pt.Mocks{}
	var host func() string
	var port func() int
	m.Run(t, func(ctx *pulumi.Context) error {
		a, err := NewAPIWorker(ctx, "api-worker", &WorkerArgs{Robot: robot, Pod: pod(), Args: []string{"api"}, Replicas: 2,
			Checksum: pulumi.String("abc"), Isolation: &Isolation{GatewayPrincipal: "cluster.local/ns/istio-ingress/sa/istio-ingress"}})
		if err != nil {
			return err
		}
		host, port = pt.Collect[string](a.Host), pt.Collect[int](a.Port)
		return nil
	})
	m.AssertChildren(t, APIWorkerType, "kubernetes:apps/v1:Deployment::api-worker-deployment", "kubernetes:core/v1:Service::api-worker-service",
		"kubernetes:security.istio.io/v1:AuthorizationPolicy::api-worker-authorization-policy")
	pt.Eq(t, "host", host(), routing.UpstreamHost("acme", "r-1", "chat"))
	pt.Eq(t, "port", port(), routing.UpstreamPort)

	d := pt.Plain(m.Find(t, "kubernetes:apps/v1:Deployment", "").Inputs)
	pt.Eq(t, "deployment", pt.At(t, d, "metadata", "name"), "chat-r-1-api")
	pt.Eq(t, "replicas", pt.At(t, d, "spec", "replicas"), 2.0)
	sel := map[string]any{LabelInstance: "chat-r-1", LabelComponent: ComponentAPIWorker}
	pt.Eq(t, "selector", pt.At(t, d, "spec", "selector", "matchLabels"), sel)
	pt.Eq(t, "checksum", pt.At(t, d, "spec", "template", "metadata", "annotations", ChecksumAnnotation), "abc")
	ps := pt.At(t, d, "spec", "template", "spec").(map[string]any)
	pt.Eq(t, "pull secret", ps["imagePullSecrets"], []any{map[string]any{"name": "pull"}})
	pt.Eq(t, "volumes", ps["volumes"], []any{
		map[string]any{"name": "confz", "secret": map[string]any{"secretName": testConfz}},
		map[string]any{"name": "shared-cache", "persistentVolumeClaim": map[string]any{"claimName": "shared-cache"}},
	})
	pt.Eq(t, "mounts", pt.At(t, ps, "containers", 0, "volumeMounts"), []any{
		map[string]any{"name": "confz", "mountPath": ConfzDir, "readOnly": true},
		map[string]any{"name": "shared-cache", "mountPath": "/data/shared-cache"},
	})
	pt.Eq(t, "args", pt.At(t, ps, "containers", 0, "args"), []any{"api"})
	pt.Eq(t, "port", pt.At(t, ps, "containers", 0, "ports"), []any{map[string]any{"name": "http", "containerPort": float64(APIPort)}})

	svc := pt.Plain(m.Find(t, "kubernetes:core/v1:Service", "").Inputs)
	pt.Eq(t, "service", pt.At(t, svc, "metadata", "name"), routing.RobotServiceName("r-1", "chat"))
	pt.Eq(t, "service selector", pt.At(t, svc, "spec", "selector"), sel)
	pt.Eq(t, "service ports", pt.At(t, svc, "spec", "ports"), []any{map[string]any{"name": "http", "port": float64(routing.UpstreamPort), "targetPort": "http"}})

	ap := pt.Plain(m.Find(t, "kubernetes:security.istio.io/v1:AuthorizationPolicy", "").Inputs)
	pt.Eq(t, "policy", pt.At(t, ap, "spec"), map[string]any{
		"selector": map[string]any{"matchLabels": sel},
		"action":   "DENY",
		"rules": []any{
			map[string]any{"from": []any{map[string]any{"source": map[string]any{"notPrincipals": []any{"cluster.local/ns/istio-ingress/sa/istio-ingress"}}}}},
			map[string]any{"when": []any{map[string]any{"key": "request.headers[x-tf-robotid]", "notValues": []any{"r-1"}}}},
		},
	})

	// The robot worker: no Service, no policy, no ports; without a shared cache, no mount.
	m = &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		p := pod()
		p.SharedCache = nil
		_, err := NewRobotWorker(ctx, "robot-worker", &WorkerArgs{Robot: robot, Pod: p, Replicas: 0, Checksum: pulumi.String("abc"),
			Isolation: &Isolation{GatewayPrincipal: "x"}})
		return err
	})
	m.AssertChildren(t, RobotWorkerType, "kubernetes:apps/v1:Deployment::robot-worker-deployment")
	d = pt.Plain(m.Find(t, "kubernetes:apps/v1:Deployment", "").Inputs)
	pt.Eq(t, "worker", pt.At(t, d, "metadata", "name"), "chat-r-1-worker")
	pt.Eq(t, "scaled to zero", pt.At(t, d, "spec", "replicas"), 0.0)
	c := pt.At(t, d, "spec", "template", "spec", "containers", 0).(map[string]any)
	if c["ports"] != nil || c["readinessProbe"] != nil {
		t.Errorf("robot worker serves: %v", c)
	}
	for _, e := range c["env"].([]any) {
		if pt.At(t, e, "name") == ExtractedImagesDirEnv {
			t.Error("shared-cache dir set without a shared cache")
		}
	}

	for name, a := range map[string]*WorkerArgs{
		"no checksum":         {Robot: robot, Pod: pod(), Replicas: 1},
		"no image":            {Robot: robot, Pod: Pod{SecretName: pulumi.String("s")}, Replicas: 1, Checksum: pulumi.String("c")},
		"negative":            {Robot: robot, Pod: pod(), Replicas: -1, Checksum: pulumi.String("c")},
		"isolation, nobody":   {Robot: robot, Pod: pod(), Replicas: 1, Checksum: pulumi.String("c"), Isolation: &Isolation{}},
		"unroutable robot":    {Robot: Robot{Namespace: "acme", ID: "R", Type: "chat"}, Pod: pod(), Replicas: 1, Checksum: pulumi.String("c")},
		"cache without a dir": {Robot: robot, Pod: func() Pod { p := pod(); p.SharedCache = &SharedCache{Claim: "c"}; return p }(), Replicas: 1, Checksum: pulumi.String("c")},
	} {
		if err := (&pt.Mocks{}).RunErr(func(ctx *pulumi.Context) error { _, err := NewAPIWorker(ctx, "api-worker", a); return err }); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestChecksum(t *testing.T) {
	const k = testHashKey
	base := Checksum(k, map[string]string{"K": "v"}, map[string]string{"A": "1", "B": "2"}, "confz")
	pt.Eq(t, "stable", Checksum(k, map[string]string{"K": "v"}, map[string]string{"B": "2", "A": "1"}, "confz"), base)
	pt.Eq(t, "nil is empty", Checksum(k, nil, nil, ""), Checksum(k, map[string]string{}, map[string]string{}, ""))
	for name, sum := range map[string]string{
		"secret value": Checksum(k, map[string]string{"K": "w"}, map[string]string{"A": "1", "B": "2"}, "confz"),
		"config key":   Checksum(k, map[string]string{"K": "v"}, map[string]string{"A": "1", "B": "2", "C": ""}, "confz"),
		"confz":        Checksum(k, map[string]string{"K": "v"}, map[string]string{"A": "1", "B": "2"}, "confz\n"),
		// A key moved between the two sources is a change: the Secret wins over the ConfigMap.
		"moved key": Checksum(k, map[string]string{"K": "v", "A": "1"}, map[string]string{"B": "2"}, "confz"),
		// Another stack (another key) hashes the same content otherwise.
		"other key": Checksum("another-stack-key", map[string]string{"K": "v"}, map[string]string{"A": "1", "B": "2"}, "confz"),
	} {
		if sum == base {
			t.Errorf("%s: checksum unchanged", name)
		}
	}
	plain := sha256.Sum256([]byte(`{"Secret":{"K":"v"},"Config":{"A":"1","B":"2"},"Confz":"confz"}`))
	if base == hex.EncodeToString(plain[:]) {
		t.Error("the checksum is the unkeyed sha256 of the content")
	}

	var out func() string
	var secret bool
	(&pt.Mocks{}).Run(t, func(ctx *pulumi.Context) error {
		o, err := ChecksumOf(pulumi.ToSecret(pulumi.String(k)).(pulumi.StringOutput), nil, map[string]string{"A": "1"}, secretIn("confz"))
		if err != nil {
			return err
		}
		out = pt.Collect[string](o)
		secret = pulumi.IsSecret(o)
		return nil
	})
	pt.Eq(t, "output", out(), Checksum(k, nil, map[string]string{"A": "1"}, "confz"))
	pt.Eq(t, "output is not secret", secret, false)
}

// runJob runs create and returns the mocks and the Job's name.
func runJob(t *testing.T, create func(ctx *pulumi.Context) (pulumi.StringOutput, error)) (*pt.Mocks, string) {
	t.Helper()
	m := &pt.Mocks{}
	var name func() string
	m.Run(t, func(ctx *pulumi.Context) error {
		n, err := create(ctx)
		if err != nil {
			return err
		}
		name = pt.Collect[string](n)
		return nil
	})
	return m, name()
}

func dbInit(confz string, schema bool) func(ctx *pulumi.Context) (pulumi.StringOutput, error) {
	return func(ctx *pulumi.Context) (pulumi.StringOutput, error) {
		args := &DBInitArgs{Robot: robot, Image: "tfrobot/server:1", Args: []string{"db-init"}, Confz: secretIn(confz),
			Env: map[string]string{DBSchemaEnv: robot.Schema()}, PullSecret: "pull"}
		if schema {
			args.Schema = &SchemaArgs{Host: "acme-pg-rw", Port: 5432, Database: "acme", AdminUser: "app_user",
				AdminPassword: secretIn("admin-pw"), Role: robot.Schema(), Password: secretIn("robot-pw")}
		}
		c, err := NewDBInit(ctx, "db-init", args)
		if err != nil {
			return pulumi.StringOutput{}, err
		}
		return c.JobName, nil
	}
}

func TestDBInit(t *testing.T) {
	m, name := runJob(t, dbInit("[postgresql]\nhost = \"h\"\n", true))
	m.AssertChildren(t, DBInitType, "kubernetes:core/v1:Secret::db-init-secret", "kubernetes:batch/v1:Job::db-init-job")
	if !strings.HasPrefix(name, "chat-r-1-db-init-") || len(name) != len("chat-r-1-db-init-")+contentHashLength {
		t.Errorf("job name %q", name)
	}
	job := pt.Plain(m.Find(t, "kubernetes:batch/v1:Job", "").Inputs)
	pt.Eq(t, "job name", pt.At(t, job, "metadata", "name"), name)
	pt.Eq(t, "a failed job runs again on the next up", pt.At(t, job, "metadata", "annotations"), map[string]any{replaceUnready: "true"})
	pt.Eq(t, "backoff", pt.At(t, job, "spec", "backoffLimit"), float64(jobBackoffLimit))
	pt.Eq(t, "deadline", pt.At(t, job, "spec", "activeDeadlineSeconds"), float64(jobDeadlineSeconds))
	pt.Eq(t, "native sidecar", pt.At(t, job, "spec", "template", "metadata", "annotations"), map[string]any{nativeSidecar: "true"})
	ps := pt.At(t, job, "spec", "template", "spec").(map[string]any)
	pt.Eq(t, "restart", ps["restartPolicy"], "Never")
	pt.Eq(t, "no token", ps["automountServiceAccountToken"], false)
	pt.Eq(t, "pull", ps["imagePullSecrets"], []any{map[string]any{"name": "pull"}})
	pt.Eq(t, "volumes: each container's files of the Secret of the same name", ps["volumes"], []any{
		map[string]any{"name": "job-schema", "secret": map[string]any{"secretName": name, "items": []any{map[string]any{"key": "schema.sql", "path": "schema.sql"}}}},
		map[string]any{"name": "job-migrate", "secret": map[string]any{"secretName": name, "items": []any{map[string]any{"key": ConfzKey, "path": ConfzKey}}}},
	})
	init := pt.At(t, ps, "initContainers", 0).(map[string]any)
	pt.Eq(t, "psql", init["command"], []any{"psql", "-v", "ON_ERROR_STOP=1", "-f", JobDir + "/schema.sql"})
	pt.Eq(t, "psql image", init["image"], DefaultPSQLImage)
	pt.Eq(t, "psql env", init["env"], []any{
		map[string]any{"name": "PGCONNECT_TIMEOUT", "value": "10"}, map[string]any{"name": "PGDATABASE", "value": "acme"},
		map[string]any{"name": "PGHOST", "value": "acme-pg-rw"}, map[string]any{"name": "PGPORT", "value": "5432"},
		map[string]any{"name": "PGUSER", "value": "app_user"},
		map[string]any{"name": "PGPASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": name, "key": "admin-password"}}},
	})
	main := pt.At(t, ps, "containers", 0).(map[string]any)
	pt.Eq(t, "server image", main["image"], "tfrobot/server:1")
	pt.Eq(t, "server args", main["args"], []any{"db-init"})
	pt.Eq(t, "server env", main["env"], []any{
		map[string]any{"name": ConfzFileEnv, "value": JobDir + "/" + ConfzKey},
		map[string]any{"name": DBSchemaEnv, "value": "r_chat_r_1"},
	})
	if main["envFrom"] != nil {
		t.Error("db-init loads the robot's env: every configData edit would re-run it")
	}
	sec := m.Find(t, "kubernetes:core/v1:Secret", "")
	files := pt.At(t, pt.Plain(sec.Inputs), "stringData").(map[string]any)
	pt.Eq(t, "files", sortedAnyKeys(files), []string{"admin-password", ConfzKey, "schema.sql"})
	pt.Eq(t, "sql", files["schema.sql"], SchemaSQL("r_chat_r_1", "robot-pw", "acme"))
	if !sec.Inputs["stringData"].ContainsSecrets() {
		t.Error("the job's files are not secret")
	}
	// Passwords reach the pod only through the Secret.
	if spec := fmt.Sprint(job); strings.Contains(spec, "robot-pw") || strings.Contains(spec, "admin-pw") {
		t.Errorf("password in the Job: %s", spec)
	}

	// Same inputs, same Job; any input changed, a new Job (a replacement that runs again).
	_, again := runJob(t, dbInit("[postgresql]\nhost = \"h\"\n", true))
	pt.Eq(t, "same inputs keep the name", again, name)
	_, other := runJob(t, dbInit("[postgresql]\nhost = \"other\"\n", true))
	_, enterprise := runJob(t, dbInit("[postgresql]\nhost = \"h\"\n", false))
	if other == name || enterprise == name || other == enterprise {
		t.Errorf("names %q %q %q: a changed input must rename the Job", name, other, enterprise)
	}

	m, _ = runJob(t, dbInit("x = 1", false))
	if ic := pt.At(t, pt.Plain(m.Find(t, "kubernetes:batch/v1:Job", "").Inputs), "spec", "template", "spec").(map[string]any)["initContainers"]; ic != nil {
		t.Errorf("enterprise db-init creates a schema: %v", ic)
	}
}

func sortedAnyKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestJobNameFits(t *testing.T) {
	long := Robot{Namespace: "acme", ID: strings.Repeat("i", 29), Type: strings.Repeat("t", 29)}
	for _, kind := range []string{KindDBInit, KindMinIOInit, KindGrafanaSA} {
		n := jobName(long, kind, strings.Repeat("a", contentHashLength))
		if len(n) > maxJobName || !strings.HasSuffix(n, "-"+kind+"-aaaaaaaaaa") {
			t.Errorf("%s: %q (%d)", kind, n, len(n))
		}
	}
	pt.Eq(t, "short", jobName(robot, KindDBInit, "0123456789"), "chat-r-1-db-init-0123456789")
}

func TestSchemaSQL(t *testing.T) {
	sql := SchemaSQL("r_chat_r_1", "pw", "acme")
	for _, want := range []string{
		`SELECT format('CREATE ROLE %I LOGIN', 'r_chat_r_1') WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'r_chat_r_1')\gexec`,
		`ALTER ROLE "r_chat_r_1" WITH LOGIN PASSWORD 'pw';`,
		`CREATE SCHEMA IF NOT EXISTS "r_chat_r_1" AUTHORIZATION "r_chat_r_1";`,
		`ALTER ROLE "r_chat_r_1" SET search_path = "r_chat_r_1";`,
		`GRANT CONNECT ON DATABASE "acme" TO "r_chat_r_1";`,
	} {
		if !strings.Contains(sql, want+"\n") {
			t.Errorf("missing %s in\n%s", want, sql)
		}
	}
	// Hostile values stay inside their quotes.
	evil := SchemaSQL(`x"; DROP TABLE t; --`, `p'; DROP TABLE t; --`, `d"b`)
	for _, want := range []string{`"x""; DROP TABLE t; --"`, `'p''; DROP TABLE t; --'`, `"d""b"`} {
		if !strings.Contains(evil, want) {
			t.Errorf("missing quoted %s in\n%s", want, evil)
		}
	}
}

func TestMinIOInit(t *testing.T) {
	run := func(user bool) (*pt.Mocks, string) {
		return runJob(t, func(ctx *pulumi.Context) (pulumi.StringOutput, error) {
			args := &MinIOInitArgs{Robot: robot, Host: "minio.acme.svc.cluster.local", Port: 80,
				RootUser: secretIn("root"), RootPassword: secretIn("p@ss/word"), Bucket: "chat-r-1"}
			if user {
				args.User = &MinIOUser{AccessKey: "chat-r-1", SecretKey: secretIn("robot-secret")}
			}
			c, err := NewMinIOInit(ctx, "minio-init", args)
			if err != nil {
				return pulumi.StringOutput{}, err
			}
			return c.JobName, nil
		})
	}
	m, name := run(true)
	files := pt.At(t, pt.Plain(m.Find(t, "kubernetes:core/v1:Secret", "").Inputs), "stringData").(map[string]any)
	pt.Eq(t, "mc host", files["mc-host"], "http://root:p%40ss%2Fword@minio.acme.svc.cluster.local:80")
	pt.Eq(t, "policy", files["policy.json"], BucketPolicy("chat-r-1"))
	pt.Eq(t, "secret key", files["secret-key"], "robot-secret")
	pt.Eq(t, "script", files["init.sh"], minioInitScript)
	c := pt.At(t, pt.Plain(m.Find(t, "kubernetes:batch/v1:Job", "").Inputs), "spec", "template", "spec", "containers", 0).(map[string]any)
	pt.Eq(t, "image", c["image"], DefaultMCImage)
	pt.Eq(t, "env", c["env"], []any{
		map[string]any{"name": "BUCKET", "value": "chat-r-1"}, map[string]any{"name": "MC_CONFIG_DIR", "value": "/tmp/mc"},
		map[string]any{"name": "POLICY", "value": "chat-r-1-bucket"}, map[string]any{"name": "ROBOT_USER", "value": "chat-r-1"},
		map[string]any{"name": "MC_HOST_tenant", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": name, "key": "mc-host"}}},
		map[string]any{"name": "ROBOT_SECRET_KEY", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": name, "key": "secret-key"}}},
	})
	pt.Eq(t, "bucket policy", BucketPolicy("b"), `{"Statement":[{"Action":["s3:*"],"Effect":"Allow","Resource":["arn:aws:s3:::b","arn:aws:s3:::b/*"]}],"Version":"2012-10-17"}`)

	m, _ = run(false)
	files = pt.At(t, pt.Plain(m.Find(t, "kubernetes:core/v1:Secret", "").Inputs), "stringData").(map[string]any)
	pt.Eq(t, "enterprise files", sortedAnyKeys(files), []string{"init.sh", "mc-host"})
}

func TestGrafanaSA(t *testing.T) {
	var token func() string
	m, name := runJob(t, func(ctx *pulumi.Context) (pulumi.StringOutput, error) {
		c, err := NewGrafanaSA(ctx, "grafana-sa", &GrafanaSAArgs{Robot: robot, URL: "http://grafana.acme.svc.cluster.local",
			AdminUser: "admin", AdminPassword: secretIn("admin-pw")})
		if err != nil {
			return pulumi.StringOutput{}, err
		}
		token = pt.Collect[string](c.TokenSecret)
		return c.JobName, nil
	})
	m.AssertChildren(t, GrafanaSAType, "kubernetes:core/v1:Secret::grafana-sa-token", "kubernetes:core/v1:ServiceAccount::grafana-sa-service-account",
		"kubernetes:rbac.authorization.k8s.io/v1:Role::grafana-sa-role", "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding::grafana-sa-role-binding",
		"kubernetes:core/v1:Secret::grafana-sa-secret", "kubernetes:batch/v1:Job::grafana-sa-job")
	pt.Eq(t, "token secret", token(), "chat-r-1-grafana-token")
	if !strings.HasPrefix(name, "chat-r-1-grafana-sa-") {
		t.Errorf("job %q", name)
	}
	tok := pt.Plain(m.Find(t, "kubernetes:core/v1:Secret", "grafana-sa-token").Inputs)
	pt.Eq(t, "pulumi manages the url only", pt.At(t, tok, "stringData"), map[string]any{"url": "http://grafana.acme.svc.cluster.local"})
	role := pt.Plain(m.Find(t, "kubernetes:rbac.authorization.k8s.io/v1:Role", "").Inputs)
	pt.Eq(t, "rules", role["rules"], []any{map[string]any{
		"apiGroups": []any{""}, "resources": []any{"secrets"}, "resourceNames": []any{"chat-r-1-grafana-token"}, "verbs": []any{"get", "patch"},
	}})
	rb := pt.Plain(m.Find(t, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "").Inputs)
	pt.Eq(t, "subject", rb["subjects"], []any{map[string]any{"kind": "ServiceAccount", "name": "chat-r-1-grafana-sa", "namespace": "acme"}})
	jobReg := m.Find(t, "kubernetes:batch/v1:Job", "")
	ps := pt.At(t, pt.Plain(jobReg.Inputs), "spec", "template", "spec").(map[string]any)
	pt.Eq(t, "service account", ps["serviceAccountName"], "chat-r-1-grafana-sa")
	pt.Eq(t, "the grafana job needs its token", ps["automountServiceAccountToken"], true)
	pt.Eq(t, "env", pt.At(t, ps, "containers", 0, "env"), []any{
		map[string]any{"name": "GRAFANA_URL", "value": "http://grafana.acme.svc.cluster.local"}, map[string]any{"name": "GRAFANA_USER", "value": "admin"},
		map[string]any{"name": "SA_NAME", "value": "chat-r-1"}, map[string]any{"name": "SA_ROLE", "value": DefaultGrafanaRole},
		map[string]any{"name": "TOKEN_SECRET", "value": "chat-r-1-grafana-token"},
		map[string]any{"name": "GRAFANA_PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": name, "key": "admin-password"}}},
	})
	deps := strings.Join(jobReg.Deps, " ")
	for _, d := range []string{"grafana-sa-role-binding", "grafana-sa-role", "grafana-sa-token"} {
		if !strings.Contains(deps, "::"+d) {
			t.Errorf("job does not wait for %s: %v", d, jobReg.Deps)
		}
	}
}

// Every component: its children are parented to it, and Children() lists every one.
func TestComponentsListTheirChildren(t *testing.T) {
	for typ, create := range map[string]func(ctx *pulumi.Context) (pt.ChildLister, error){
		SecretType: func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewSecret(ctx, "secret", &EnvArgs{Robot: robot})
		},
		ConfzType: func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewConfz(ctx, "confz", &ConfzArgs{Robot: robot, TOML: secretIn(""), Isolate: true, Broker: &BrokerArgs{Cluster: "c", VHost: "v", User: "u", Password: secretIn("p")}})
		},
		GrafanaSAType: func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewGrafanaSA(ctx, "grafana-sa", &GrafanaSAArgs{Robot: robot, URL: "http://g", AdminUser: "a", AdminPassword: secretIn("p")})
		},
		APIWorkerType: func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewAPIWorker(ctx, "api-worker", &WorkerArgs{Robot: robot, Pod: pod(), Replicas: 1, Checksum: pulumi.String("c"), Isolation: &Isolation{GatewayPrincipal: "g"}})
		},
		ConfigType: func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewConfig(ctx, "config", &EnvArgs{Robot: robot, Data: map[string]string{"A": "1"}})
		},
		DBInitType: func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewDBInit(ctx, "db-init", &DBInitArgs{Robot: robot, Image: "i", Confz: secretIn("")})
		},
		MinIOInitType: func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewMinIOInit(ctx, "minio-init", &MinIOInitArgs{Robot: robot, Host: "h", Port: 80, RootUser: secretIn("u"), RootPassword: secretIn("p"), Bucket: "b"})
		},
		RobotWorkerType: func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewRobotWorker(ctx, "robot-worker", &WorkerArgs{Robot: robot, Pod: pod(), Replicas: 1, Checksum: pulumi.String("c")})
		},
		DataPurgeType: func(ctx *pulumi.Context) (pt.ChildLister, error) {
			return NewDataPurge(ctx, "data-purge", &DataPurgeArgs{Robot: personalRobot,
				Postgres: PurgeLogin{Host: "h", Port: 1, Database: "d", User: "u", Password: secretIn("p")},
				MinIO:    PurgeLogin{Host: "h", Port: 1, UserSecret: secretIn("u"), Password: secretIn("p")},
				Redis:    PurgeLogin{Host: "h", Port: 1, Password: secretIn("p")}})
		},
	} {
		t.Run(typ, func(t *testing.T) { pt.AssertChildrenListed(t, typ, create) })
	}
}

// The Job scripts are never run by the tests' simulated kubelet; at least they must parse.
func TestScriptsParse(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("sh is needed to check the Job scripts: %v", err)
	}
	dir := t.TempDir()
	for name, src := range map[string]string{"minio-init.sh": minioInitScript, "grafana-sa.sh": grafanaSAScript,
		"data-purge-minio.sh": purgeMinIOScript, "data-purge-redis.sh": purgeRedisScript, "data-purge-grafana.sh": purgeGrafanaScript} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(sh, "-n", p).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
		if !strings.HasPrefix(src, "#!/bin/sh\n") || !strings.Contains(src, "set -eu\n") {
			t.Errorf("%s: want a POSIX sh script that stops on the first error", name)
		}
	}
}
