package stacks

// The server program (TFRServer): one robot's environment, Confz, init Jobs and workers, in
// the tenant's namespace, configured entirely from the tenant stack's outputs
// (ServerInput.Tenant) — the program reads no other stack and derives no middleware name.
//
// Enterprise and personal robots differ only inside components: a robot of a personal tenant
// (Tenant.TenantType "personal") shares its job type's namespace and middleware with other
// robots, so it gets its own PostgreSQL role and schema (db-init), bucket and MinIO user
// (minio-init), RabbitMQ vhost and user (confz), Redis key prefix, and an AuthorizationPolicy
// that lets only the gateway reach its API, and only for its X-TF-RobotId. Those credentials
// are generated once per server stack (program.Credential) and stay stable. A robot of an
// enterprise tenant uses the tenant's own logins.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
	"github.com/tfrs-io/tfrs-operator/components/routing"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/stacks/confz"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// Node ids of the server graph: the Pulumi names of the components and what `tfrs graph`
// prints.
const (
	ServerSecret      = "secret"
	ServerConfig      = "config"
	ServerConfz       = "confz"
	ServerDBInit      = "db-init"
	ServerMinIOInit   = "minio-init"
	ServerGrafanaSA   = "grafana-sa"
	ServerAPIWorker   = "api-worker"
	ServerRobotWorker = "robot-worker"
)

// serverDependsOn is the graph: secret, config and confz → the db-init, minio-init and
// grafana-sa Jobs → the api-worker and robot-worker Deployments. The workers also wait for
// secret, config and confz directly: they load them, and with every Job switched off
// (spec.initJobs) that is the only ordering left.
//
// The Jobs are optional without taking the workers with them (unlike the cluster and tenant
// graphs, where a missing dependency removes its dependants): serverDeps drops a Job that
// does not run from the workers' lists.
var serverDependsOn = map[string][]string{
	ServerDBInit:      {ServerSecret, ServerConfig, ServerConfz},
	ServerMinIOInit:   {ServerSecret, ServerConfig, ServerConfz},
	ServerGrafanaSA:   {ServerSecret, ServerConfig, ServerConfz},
	ServerAPIWorker:   {ServerSecret, ServerConfig, ServerConfz, ServerDBInit, ServerMinIOInit, ServerGrafanaSA},
	ServerRobotWorker: {ServerSecret, ServerConfig, ServerConfz, ServerDBInit, ServerMinIOInit, ServerGrafanaSA},
}

// serverDeps is serverDependsOn without the Jobs in skipped.
func serverDeps(skipped map[string]string) map[string][]string {
	out := make(map[string][]string, len(serverDependsOn))
	for id, deps := range serverDependsOn {
		out[id] = slices.DeleteFunc(slices.Clone(deps), func(d string) bool { _, skip := skipped[d]; return skip })
	}
	return out
}

// Names of a personal robot's generated credentials (program.Credential), kept in its server
// stack's state.
const (
	CredentialRobotPostgresPassword = "robot-postgresql-password"
	CredentialRobotRabbitMQPassword = "robot-rabbitmq-password"
	CredentialRobotMinIOSecretKey   = "robot-minio-secret-key"
	CredentialRobotRedisPassword    = "robot-redis-password"
)

// CredentialContentHashKey is every server stack's generated key of the hashes in the robot's
// content names and checksum (HMAC-SHA256; see components/contenthash). It never leaves the
// state in plain text.
const CredentialContentHashKey = "content-hash-key"

// ServerGatewayPrincipal is the ingress gateway's mTLS identity, the only caller a personal
// robot's API admits: "<trust domain>/ns/<namespace>/sa/<service account>", with Istio's
// default trust domain (cluster.local) and the service account the gateway chart names after
// its release.
const ServerGatewayPrincipal = routing.ClusterDomain + "/ns/" + cluster.IngressNamespace + "/sa/" + cluster.IngressRelease

// The server image's entry contract: one image, its role picked by the arguments.
var (
	serverAPIArgs    = []string{"api"}
	serverWorkerArgs = []string{"worker"}
	serverDBInitArgs = []string{"db-init"}
)

// ServerInput is what the server program needs.
type ServerInput struct {
	// Server is the TFRServer; it is defaulted and validated (on a copy) before use.
	Server *v1alpha1.TFRServer
	// Tenant is its tenant stack's outputs (TenantOutputsFromStack on the tenant's own
	// stack; for a personal tenant they are the job type's shared middleware).
	Tenant TenantOutputs
	// Graph, when set, receives the components as the program registers them (see
	// ServerGraph).
	Graph *Graph
	// Purge, for a personal robot being deleted under its job type's deletionPolicy Delete,
	// is the stage of the removal of its data (purge.go); PurgeNone for every other run.
	Purge PurgeStage
}

// Server is the server stack's program.
func Server(in ServerInput) pulumi.RunFunc { return runProgram(in, serverProgram) }

// ServerGraph runs the server program under Pulumi mocks (no engine, no cluster) over an
// enterprise tenant with every component, and returns the components it registers with their
// DependsOn edges and the Jobs spec.initJobs switches off. A personal robot has the same graph:
// its isolation lives inside the components.
func ServerGraph(s *v1alpha1.TFRServer) (*Graph, error) {
	if s == nil {
		return nil, errors.New("server graph: nil TFRServer")
	}
	return mockGraph("server."+s.Name, graphMocks{}, func(g *Graph) pulumi.RunFunc {
		return Server(ServerInput{Server: s, Tenant: graphTenant(), Graph: g})
	})
}

// graphTenant is a stand-in for a tenant stack's outputs: an enterprise tenant with Grafana
// and a shared cache, so every node shows.
func graphTenant() TenantOutputs {
	const ns = "tenant"
	return TenantOutputs{
		Namespace: ns, TenantType: string(v1alpha1.TenantEnterprise),
		PostgresHost: ns + "-pg-rw", PostgresPort: tenant.PostgresPort, PostgresDatabase: ns, PostgresUser: "app_user", PostgresPassword: "placeholder",
		RedisHost: tenant.ServiceHost(tenant.RedisService, ns), RedisPort: tenant.RedisPort, RedisPassword: "placeholder",
		RabbitMQHost: tenant.ServiceHost(tenant.RabbitMQCluster, ns), RabbitMQPort: tenant.RabbitMQPort, RabbitMQUser: TenantRabbitMQUser,
		RabbitMQPassword: "placeholder", RabbitMQVHost: tenant.RabbitMQDefaultVHost,
		MinIOHost: tenant.ServiceHost(tenant.MinIOService, ns), MinIOPort: tenant.MinIOPort, MinIOAccessKey: "placeholder",
		MinIOSecretKey: "placeholder", MinIOBucket: ns,
		GrafanaURL: "http://" + tenant.ServiceHost(tenant.GrafanaService, ns), GrafanaAdminUser: "admin", GrafanaAdminPassword: "placeholder",
		SharedCacheClaim: tenant.SharedCacheClaim, SharedCacheDir: v1alpha1.DefaultSharedCacheDir,
	}
}

// serverProgram registers the components and returns the stack outputs. Everything that can
// be wrong with the input (spec, confzData TOML, routing values, tenant outputs) is checked
// before anything is registered.
func serverProgram(ctx *pulumi.Context, in ServerInput) (pulumi.Map, error) {
	s, err := prepare(stackname.LevelServer, "TFRServer", in.Server, in.Graph)
	if err != nil {
		return nil, err
	}
	owner, err := robotDataOwner(ctx, s, in.Tenant)
	if err != nil {
		return nil, err
	}
	p, err := planServer(s, in.Tenant, owner)
	if err != nil {
		return nil, err
	}
	p.robot.Owner = runningStack(ctx.Stack())
	if err := (boundary{namespace: p.t.Namespace}).register(ctx); err != nil {
		return nil, err
	}
	if err := (ownership{stack: p.robot.Owner}).register(ctx); err != nil {
		return nil, err
	}
	if in.Purge != PurgeNone {
		return registerPurge(ctx, s, p, in.Purge)
	}
	return registerServer(ctx, s, p, in.Graph)
}

// serverPlan is everything computed before anything is registered.
type serverPlan struct {
	robot    server.Robot
	personal bool
	t        TenantOutputs
	// user is spec.confzData, parsed.
	user map[string]any
	// skipped are the Jobs that do not run, with why.
	skipped     map[string]string
	sharedCache *server.SharedCache
}

func planServer(s *v1alpha1.TFRServer, t TenantOutputs, dataOwner string) (*serverPlan, error) {
	p := &serverPlan{t: t, skipped: map[string]string{}}
	switch v1alpha1.TenantType(t.TenantType) {
	case v1alpha1.TenantEnterprise:
	case v1alpha1.TenantPersonal:
		p.personal = true
	default:
		return nil, fmt.Errorf("server %q: tenant outputs of type %q; want enterprise or personal (is the tenant stack up?)", s.Name, t.TenantType)
	}
	for what, v := range map[string]string{
		"namespace": t.Namespace, "PostgreSQL host": t.PostgresHost, "PostgreSQL user": t.PostgresUser,
		"Redis host": t.RedisHost, "RabbitMQ host": t.RabbitMQHost, "MinIO host": t.MinIOHost, "MinIO bucket": t.MinIOBucket,
	} {
		if v == "" {
			return nil, fmt.Errorf("server %q: the tenant's outputs have no %s", s.Name, what)
		}
	}
	if t.PostgresPort <= 0 || t.RedisPort <= 0 || t.RabbitMQPort <= 0 || t.MinIOPort <= 0 {
		return nil, fmt.Errorf("server %q: the tenant's outputs have a middleware port <= 0", s.Name)
	}
	p.robot = server.Robot{Namespace: t.Namespace, ID: s.Spec.RobotID, Type: s.Spec.RobotType, DataOwner: dataOwner}
	if err := p.robot.Validate(); err != nil {
		return nil, fmt.Errorf("server %q: %w", s.Name, err)
	}
	if p.personal {
		owner, err := ShareOwner(s)
		if err != nil {
			return nil, err
		}
		p.robot.ShareOwner = owner
	}
	user, err := confz.Parse(s.Spec.ConfzData)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", s.Name, err)
	}
	p.user = user
	if t.SharedCacheClaim != "" {
		if t.SharedCacheDir == "" {
			return nil, fmt.Errorf("server %q: the tenant's shared cache %q has no directory", s.Name, t.SharedCacheClaim)
		}
		p.sharedCache = &server.SharedCache{Claim: t.SharedCacheClaim, Dir: t.SharedCacheDir}
		if p.personal {
			p.sharedCache.SubPath = PersonalCacheSubPath(p.robot)
		}
	}
	jobs := &s.Spec.InitJobs
	for id, on := range map[string]bool{ServerDBInit: *jobs.DBInit, ServerMinIOInit: *jobs.MinIOInit, ServerGrafanaSA: *jobs.GrafanaSA} {
		if !on {
			p.skipped[id] = "disabled"
		}
	}
	if _, off := p.skipped[ServerGrafanaSA]; !off && t.GrafanaURL == "" {
		p.skipped[ServerGrafanaSA] = "the tenant has no Grafana"
	}
	if t.ExternalObjectStorage() {
		if p.personal {
			// Validation keeps personal job types on MinIO; outputs that say otherwise are
			// not a tenant this program can give robots their own buckets in.
			return nil, fmt.Errorf("server %q: the personal tenant's outputs name an external object storage; personal robots need MinIO", s.Name)
		}
		// No MinIO to make users in, and the tenant program checked or made the bucket.
		p.skipped[ServerMinIOInit] = "the tenant's object storage is external: its bucket is the tenant's"
	}
	return p, nil
}

// CredentialRobotDataNames marks a personal robot's stack whose data is named after its owner
// (server.Robot.DataOwner). Its value is never used: its presence in the state is the mark.
const CredentialRobotDataNames = "robot-data-names"

// robotCredentialNames are the credentials every personal robot's stack has held since its
// first run.
var robotCredentialNames = []string{CredentialRobotPostgresPassword, CredentialRobotRabbitMQPassword, CredentialRobotMinIOSecretKey, CredentialRobotRedisPassword}

// robotDataOwner is server.Robot.DataOwner for s: "" for an enterprise robot (its data is
// its tenant's, named by the tenant's outputs); for a personal robot its tenant's stack,
// "tenant.<namespace>.<tenantRef>", the personal TFRTenant that owns it for life.
//
// Upgrade. A personal robot's stack that ran before owner-named data (its state holds the
// robot's credentials but not CredentialRobotDataNames) keeps the legacy names "{robot}…"
// for its whole life: its schema, bucket, vhost, Redis keys and cache directory stay where
// they are. Every other stack names its data after the owner and records the mark on its
// first run, so the choice never changes under a stack. A legacy robot's data left behind
// by a destroyed stack is under names no new stack produces (every new data name ends with
// the owner hash), so a reused robot id does not inherit it either.
func robotDataOwner(ctx *pulumi.Context, s *v1alpha1.TFRServer, t TenantOutputs) (string, error) {
	if s == nil || v1alpha1.TenantType(t.TenantType) != v1alpha1.TenantPersonal {
		return "", nil
	}
	if !program.Remembered(ctx, CredentialRobotDataNames) && slices.ContainsFunc(robotCredentialNames, func(n string) bool { return program.Remembered(ctx, n) }) {
		return "", nil
	}
	owner, err := ShareOwner(s)
	if err != nil {
		return "", err
	}
	if _, err := program.Credential(ctx, CredentialRobotDataNames); err != nil {
		return "", err
	}
	return owner, nil
}

// ShareOwner is the owner of a personal robot: its personal TFRTenant's stack,
// "tenant.<namespace>.<tenantRef>" (server.Robot.ShareOwner).
func ShareOwner(s *v1alpha1.TFRServer) (string, error) {
	owner, err := stackname.Tenant(s.Namespace, s.Spec.TenantRef)
	if err != nil {
		return "", fmt.Errorf("server %q: spec.tenantRef: %w", s.Name, err)
	}
	return owner, nil
}

// robotCredentials are the secrets the robot's Confz and Jobs carry: a personal robot's own,
// generated once, or an enterprise tenant's.
type robotCredentials struct {
	postgresUser                              string
	postgres, rabbitmq, minioKey, minioSecret pulumi.StringOutput
	rabbitmqUser, rabbitmqVHost, bucket       string
	// redisUser and redis are a personal robot's own Redis ACL user; "" and the tenant's
	// password (the default user) for an enterprise robot.
	redisUser string
	redis     pulumi.StringOutput
}

func (p *serverPlan) credentials(ctx *pulumi.Context) (*robotCredentials, error) {
	t, r := &p.t, p.robot
	if !p.personal {
		return &robotCredentials{
			postgresUser: t.PostgresUser, postgres: secretOf(t.PostgresPassword),
			rabbitmqUser: t.RabbitMQUser, rabbitmq: secretOf(t.RabbitMQPassword), rabbitmqVHost: t.RabbitMQVHost,
			minioKey: secretOf(t.MinIOAccessKey), minioSecret: secretOf(t.MinIOSecretKey), bucket: t.MinIOBucket,
			redis: secretOf(t.RedisPassword),
		}, nil
	}
	c := &robotCredentials{
		postgresUser: r.Schema(), rabbitmqUser: r.VHost(), rabbitmqVHost: r.VHost(),
		minioKey: pulumi.ToSecret(pulumi.String(r.MinIOUser())).(pulumi.StringOutput), bucket: r.Bucket(),
		redisUser: r.RedisUser(),
	}
	for name, dst := range map[string]*pulumi.StringOutput{
		CredentialRobotPostgresPassword: &c.postgres,
		CredentialRobotRabbitMQPassword: &c.rabbitmq,
		CredentialRobotMinIOSecretKey:   &c.minioSecret,
		CredentialRobotRedisPassword:    &c.redis,
	} {
		v, err := program.Credential(ctx, name)
		if err != nil {
			return nil, err
		}
		*dst = v
	}
	return c, nil
}

// connections is the Confz's connection info from the tenant's outputs and the robot's
// credentials (plain values: this runs inside Apply).
func (p *serverPlan) connections(c *robotCredentials, pgPassword, mqPassword, s3Key, s3Secret, redisPassword string) confz.Connections {
	t := &p.t
	vhost := c.rabbitmqVHost
	if vhost == tenant.RabbitMQDefaultVHost {
		vhost = "" // as BrokerURL writes it: the seeds' "amqp://user:pass@host:5672/"
	}
	out := confz.Connections{
		Postgres: confz.Postgres{Host: t.PostgresHost, Port: t.PostgresPort, User: c.postgresUser, Password: pgPassword, DBName: t.PostgresDatabase},
		Redis:    confz.Redis{Host: t.RedisHost, Port: t.RedisPort, User: c.redisUser, Password: redisPassword},
		RabbitMQ: confz.RabbitMQ{Host: t.RabbitMQHost, Port: t.RabbitMQPort, User: c.rabbitmqUser, Password: mqPassword, VHost: vhost},
		COS: confz.COS{Host: t.MinIOHost, Port: t.MinIOPort, AccessKey: s3Key, SecretKey: s3Secret, Bucket: c.bucket,
			External: t.ExternalObjectStorage(), Secure: strings.HasPrefix(string(t.ObjectStorageURL), "https://"),
			Region: string(t.ObjectStorageRegion)},
		// The collector's OTLP endpoint ("" when the tenant has none: no [tracing]).
		TracingEndpoint: t.OtelEndpoint,
	}
	if p.personal {
		out.Postgres.Schema = p.robot.Schema()
		out.Redis.KeyPrefix = p.robot.RedisKeyPrefix()
	}
	return out
}

// confzTOML renders the robot's Confz (a secret output): generated sections with
// spec.confzData, already parsed, merged on top.
func (p *serverPlan) confzTOML(c *robotCredentials) pulumi.StringOutput {
	toml := pulumi.All(c.postgres, c.rabbitmq, c.minioKey, c.minioSecret, c.redis).ApplyT(func(v []any) (string, error) {
		conns := p.connections(c, v[0].(string), v[1].(string), v[2].(string), v[3].(string), v[4].(string))
		return confz.Encode(confz.Merge(confz.Generated(conns), p.user))
	}).(pulumi.StringOutput)
	return pulumi.ToSecret(toml).(pulumi.StringOutput)
}

// bindHashKey sets the key of every content hash the robot publishes (content names, the
// checksum): one generated credential of this stack, so names stay stable run after run and
// differ from every other stack's.
func (p *serverPlan) bindHashKey(ctx *pulumi.Context) (pulumi.StringOutput, error) {
	key, err := program.Credential(ctx, CredentialContentHashKey, program.WithLength(64))
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	p.robot.HashKey = key
	return key, nil
}

// registerServer registers the components in step order and returns the outputs.
func registerServer(ctx *pulumi.Context, s *v1alpha1.TFRServer, p *serverPlan, g *Graph) (pulumi.Map, error) {
	creds, err := p.credentials(ctx)
	if err != nil {
		return nil, err
	}
	key, err := p.bindHashKey(ctx)
	if err != nil {
		return nil, err
	}
	r := &serverRegistrar{ctx: ctx, spec: &s.Spec, p: p, creds: creds, env: map[string]string{}}
	r.toml = p.confzTOML(creds)
	if r.checksum, err = server.ChecksumOf(key, s.Spec.SecretData, s.Spec.ConfigData, r.toml); err != nil {
		return nil, err
	}
	if p.personal {
		r.env[server.DBSchemaEnv] = p.robot.Schema()
	}
	if err := newGraphBuilder(g, serverDeps(p.skipped)).register(r.steps()); err != nil {
		return nil, err
	}
	return r.outputs(), nil
}

// serverRegistrar is one registration of a robot's components: what the steps read, and
// what earlier steps hand the later ones and the outputs.
type serverRegistrar struct {
	ctx      *pulumi.Context
	spec     *v1alpha1.TFRServerSpec
	p        *serverPlan
	creds    *robotCredentials
	toml     pulumi.StringOutput // the Confz, secret
	checksum pulumi.StringOutput // of the env and Confz: a change rolls the workers
	env      map[string]string   // explicit env of the Jobs and workers

	// Set by their steps (nil: not installed).
	secret    *server.Secret
	config    *server.Config
	cz        *server.Confz
	grafanaSA *server.GrafanaSA
	api       *server.APIWorker
}

// steps are the robot's components in registration order. The Jobs spec.initJobs switches
// off (p.skipped) are skipped without their dependants: serverDeps drops them from the
// workers' lists.
func (r *serverRegistrar) steps() []step {
	ctx, spec, p, creds := r.ctx, r.spec, r.p, r.creds
	rb, t, pull := p.robot, &p.t, p.t.PullSecretName
	return []step{
		{ServerSecret, server.SecretType, "", func(o ...pulumi.ResourceOption) (res pulumi.Resource, err error) {
			r.secret, err = server.NewSecret(ctx, ServerSecret, &server.EnvArgs{Robot: rb, Data: spec.SecretData}, o...)
			return r.secret, err
		}},
		{ServerConfig, server.ConfigType, "", func(o ...pulumi.ResourceOption) (res pulumi.Resource, err error) {
			r.config, err = server.NewConfig(ctx, ServerConfig, &server.EnvArgs{Robot: rb, Data: spec.ConfigData}, o...)
			return r.config, err
		}},
		{ServerConfz, server.ConfzType, "", func(o ...pulumi.ResourceOption) (res pulumi.Resource, err error) {
			args := &server.ConfzArgs{Robot: rb, TOML: r.toml, Isolate: p.personal}
			if p.personal {
				args.Broker = &server.BrokerArgs{Cluster: tenant.RabbitMQCluster, VHost: creds.rabbitmqVHost, User: creds.rabbitmqUser, Password: creds.rabbitmq,
					Retain: !p.t.DeletesRobotData()}
				args.RedisUser = &server.RedisUserArgs{User: creds.redisUser, Prefix: rb.RedisKeyPrefix(), Password: creds.redis}
			}
			r.cz, err = server.NewConfz(ctx, ServerConfz, args, o...)
			return r.cz, err
		}},
		{ServerDBInit, server.DBInitType, p.skipped[ServerDBInit], func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			args := &server.DBInitArgs{Robot: rb, Image: spec.Image, Args: serverDBInitArgs, Confz: r.toml, Env: r.env, PullSecret: pull}
			if p.personal {
				args.Schema = &server.SchemaArgs{
					Host: t.PostgresHost, Port: t.PostgresPort, Database: t.PostgresDatabase,
					AdminUser: t.PostgresUser, AdminPassword: secretOf(t.PostgresPassword),
					Role: rb.Schema(), Password: creds.postgres,
				}
			}
			return server.NewDBInit(ctx, ServerDBInit, args, o...)
		}},
		{ServerMinIOInit, server.MinIOInitType, p.skipped[ServerMinIOInit], func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			args := &server.MinIOInitArgs{
				Robot: rb, Host: t.MinIOHost, Port: t.MinIOPort,
				RootUser: secretOf(t.MinIOAccessKey), RootPassword: secretOf(t.MinIOSecretKey),
				Bucket: creds.bucket, PullSecret: pull,
			}
			if p.personal {
				args.User = &server.MinIOUser{AccessKey: rb.MinIOUser(), SecretKey: creds.minioSecret}
			}
			return server.NewMinIOInit(ctx, ServerMinIOInit, args, o...)
		}},
		{ServerGrafanaSA, server.GrafanaSAType, p.skipped[ServerGrafanaSA], func(o ...pulumi.ResourceOption) (res pulumi.Resource, err error) {
			r.grafanaSA, err = server.NewGrafanaSA(ctx, ServerGrafanaSA, &server.GrafanaSAArgs{
				Robot: rb, URL: t.GrafanaURL, AdminUser: t.GrafanaAdminUser, AdminPassword: secretOf(t.GrafanaAdminPassword), PullSecret: pull,
			}, o...)
			return r.grafanaSA, err
		}},
		{ServerAPIWorker, server.APIWorkerType, "", func(o ...pulumi.ResourceOption) (res pulumi.Resource, err error) {
			args := &server.WorkerArgs{Robot: rb, Pod: r.pod(spec.APIWorker), Args: serverAPIArgs, Replicas: int(*spec.APIWorker.Replicas), Checksum: r.checksum}
			if p.personal {
				args.Isolation = &server.Isolation{GatewayPrincipal: ServerGatewayPrincipal}
			}
			r.api, err = server.NewAPIWorker(ctx, ServerAPIWorker, args, o...)
			return r.api, err
		}},
		{ServerRobotWorker, server.RobotWorkerType, "", func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return server.NewRobotWorker(ctx, ServerRobotWorker, &server.WorkerArgs{
				Robot: rb, Pod: r.pod(spec.RobotWorker), Args: serverWorkerArgs, Replicas: int(*spec.RobotWorker.Replicas), Checksum: r.checksum,
			}, o...)
		}},
	}
}

// pod is a worker's pod: it loads the robot's Secret, ConfigMap and Confz, so it comes after
// their steps.
func (r *serverRegistrar) pod(w v1alpha1.WorkloadSpec) server.Pod {
	return server.Pod{
		Image: r.spec.Image, SecretName: r.secret.Name, ConfigMapName: r.config.Name, ConfzSecretName: r.cz.SecretName,
		SharedCache: r.p.sharedCache, Env: r.env, PullSecret: r.p.t.PullSecretName, Resources: resources(w.Resources).Args(),
	}
}

// outputs are the stack outputs: every key, none secret.
func (r *serverRegistrar) outputs() pulumi.Map {
	p, rb, c := r.p, r.p.robot, r.creds
	known := ServerOutputs{
		Namespace: rb.Namespace, TenantType: p.t.TenantType, RobotID: rb.ID, RobotType: rb.Type,
		Bucket: c.bucket, RabbitMQVHost: c.rabbitmqVHost,
	}
	if p.personal {
		known.DBSchema, known.RedisKeyPrefix = rb.Schema(), rb.RedisKeyPrefix()
	}
	out := newExports(known.fields())
	out.set(ServerOutputAPIService, r.api.Host)
	out.set(ServerOutputAPIPort, r.api.Port)
	out.set(ServerOutputAPIServiceName, r.api.ServiceName)
	out.set(ServerOutputSecretName, r.secret.Name)
	out.set(ServerOutputConfigMapName, r.config.Name)
	out.set(ServerOutputConfzSecret, r.cz.SecretName)
	out.set(ServerOutputChecksum, r.checksum)
	if r.grafanaSA != nil {
		out.set(ServerOutputGrafanaToken, r.grafanaSA.TokenSecret)
	}
	return out.m
}
