package stacks

// The tenant program (TFRTenant): a namespace with mesh isolation and the tenant's middleware,
// monitoring and TFRobot applications, in the seeds' TFRTenant deployment order.
//
// Personal tenants. Every personal tenant of a job type shares one namespace
// ("personal-<jobType>") and one set of middleware. That set belongs to the job type, not to
// any TFRTenant: it lives in one stack per job type, PersonalSharedStack(jobType)
// ("tenant.personal-<jobType>._shared"; the "_" cannot occur in a TFRTenant-derived stack
// name, so no CR can collide with it). Each personal TFRTenant keeps its own stack
// ("tenant.<ns>.<name>", its status, lock and managed-by tag) as a *member*: it registers
// nothing and re-exports the shared stack's outputs, so servers read their tenant's outputs
// the same way for both tenant types. The program enforces this by its stack name: for a
// personal tenant it registers middleware only when it runs as the job type's shared stack,
// and anywhere else it needs the shared outputs (TenantInput.Shared) and only re-exports
// them. So however many personal tenants of a job type exist, and through whichever door
// they arrive, there is exactly one copy of the middleware, and removing one tenant never
// removes what the others use.
//
// The caller (operator, HTTP API, CLI) drives it: up the shared stack with the spec of
// SharedStackOwner (the oldest live personal tenant of the job type), read its outputs
// (TenantOutputsFromStack), up the tenant's own stack with them; on deletion destroy the own
// stack, and the shared one only when SharedStackOwner finds no live tenant left.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	k8scorev1 "k8s.io/api/core/v1"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/stacks/confz"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
	"github.com/tfrs-io/tfrs-operator/stacks/stackname"
)

// Node ids of the tenant graph (the seeds' TFRTenant deployment order): the Pulumi names of
// the components and what `tfrs graph` prints.
const (
	TenantNamespace     = "namespace"
	TenantPostgreSQL    = "postgresql"
	TenantRedis         = "redis"
	TenantMinIO         = "minio"
	TenantRabbitMQ      = "rabbitmq"
	TenantTimescaleDB   = "timescaledb"
	TenantJaeger        = "jaeger"
	TenantOtelCollector = "otel-collector"
	TenantPrometheus    = "prometheus"
	TenantGrafana       = "grafana"
	TenantVector        = "vector"
	TenantSharedCache   = "shared-cache"
	TenantTFRobotFront  = "tfrobot-front"
	TenantTFRSUtils     = "tfrs-utils"
	// TenantRabbitMQOperatorReady is the seeds' "RabbitMQ Operator Ready": the cluster
	// stack's rabbitmq-operator, an external node of the tenant graph.
	TenantRabbitMQOperatorReady = "rabbitmq-operator-ready"
)

// tenantDependsOn is the graph: for each component, the components it waits for.
//
// It is the seeds' graph (namespace → every component but RabbitMQ; postgresql →
// timescaledb; jaeger → otel-collector; RabbitMQ operator ready → rabbitmq) plus one edge
// the seeds leave implicit: namespace → rabbitmq, because the RabbitmqCluster and its
// default-user Secret live in the namespace. The operator gate is external: the program
// refuses to run while the cluster says the operator is not ready (ErrRabbitMQOperatorNotReady),
// so the edge holds without a cross-stack DependsOn.
//
// Removal rule (as in the cluster stack): a component is installed when it is enabled and
// everything it depends on is installed, so disabling jaeger also removes otel-collector.
var tenantDependsOn = map[string][]string{
	TenantPostgreSQL:    {TenantNamespace},
	TenantRedis:         {TenantNamespace},
	TenantMinIO:         {TenantNamespace},
	TenantRabbitMQ:      {TenantNamespace, TenantRabbitMQOperatorReady},
	TenantTimescaleDB:   {TenantNamespace, TenantPostgreSQL},
	TenantJaeger:        {TenantNamespace},
	TenantOtelCollector: {TenantNamespace, TenantJaeger},
	TenantPrometheus:    {TenantNamespace},
	TenantGrafana:       {TenantNamespace},
	TenantVector:        {TenantNamespace},
	TenantSharedCache:   {TenantNamespace},
	TenantTFRobotFront:  {TenantNamespace},
	TenantTFRSUtils:     {TenantNamespace},
}

// tenantExternal are the nodes of other stacks the tenant graph waits for.
var tenantExternal = map[string]string{TenantRabbitMQOperatorReady: cluster.RabbitMQOperatorType}

// Output keys of the tenant stack. Every key is always exported (a component that is not
// installed exports its zero value); the ones marked secret are Pulumi secrets. TenantOutputs
// is the typed form.
const (
	TenantOutputNamespace      = "namespace"
	TenantOutputTenantType     = "tenantType"
	TenantOutputJobType        = "jobType"     // personal tenants, "" otherwise
	TenantOutputSharedStack    = "sharedStack" // the stack that owns the middleware ("" = this one)
	TenantOutputPullSecretName = "pullSecretName"

	TenantOutputPostgresHost              = "postgresHost" // "{namespace}-pg-rw"
	TenantOutputPostgresPort              = "postgresPort"
	TenantOutputPostgresDatabase          = "postgresDatabase"
	TenantOutputPostgresUser              = "postgresUser"
	TenantOutputPostgresPassword          = "postgresPassword" // secret
	TenantOutputPostgresCredentialsSecret = "postgresCredentialsSecret"

	// TimescaleDB shares the PostgreSQL login (user, password, credentials Secret).
	TenantOutputTimescaleHost     = "timescaleHost" // "{namespace}-tsdb-rw"
	TenantOutputTimescalePort     = "timescalePort"
	TenantOutputTimescaleDatabase = "timescaleDatabase"

	TenantOutputRedisHost     = "redisHost" // "redis.{namespace}.svc.cluster.local"
	TenantOutputRedisPort     = "redisPort"
	TenantOutputRedisPassword = "redisPassword" // secret
	TenantOutputRedisSecret   = "redisSecret"   // Secret with key "password"

	TenantOutputRabbitMQHost      = "rabbitmqHost" // "rabbitmq.{namespace}.svc.cluster.local"
	TenantOutputRabbitMQPort      = "rabbitmqPort"
	TenantOutputRabbitMQUser      = "rabbitmqUser"
	TenantOutputRabbitMQPassword  = "rabbitmqPassword" // secret
	TenantOutputRabbitMQVHost     = "rabbitmqVHost"
	TenantOutputRabbitMQBrokerURL = "rabbitmqBrokerURL" // secret

	TenantOutputMinIOHost      = "minioHost" // "minio.{namespace}.svc.cluster.local"
	TenantOutputMinIOPort      = "minioPort"
	TenantOutputMinIOAccessKey = "minioAccessKey" // secret
	TenantOutputMinIOSecretKey = "minioSecretKey" // secret
	TenantOutputMinIOBucket    = "minioBucket"

	TenantOutputOtelEndpoint         = "otelEndpoint"
	TenantOutputJaegerURL            = "jaegerURL"
	TenantOutputPrometheusURL        = "prometheusURL"
	TenantOutputGrafanaURL           = "grafanaURL"
	TenantOutputGrafanaAdminUser     = "grafanaAdminUser"
	TenantOutputGrafanaAdminPassword = "grafanaAdminPassword" // secret
	TenantOutputGrafanaAdminSecret   = "grafanaAdminSecret"
	TenantOutputVectorEndpoint       = "vectorEndpoint"
	TenantOutputFrontURL             = "frontURL"
	TenantOutputSharedCacheClaim     = "sharedCacheClaim"
	TenantOutputSharedCacheDir       = "sharedCacheDir"
)

// Settings of the tenant program that the TFRTenant spec does not carry.
const (
	// TenantMonitoringNamespace may call into every tenant (cluster-wide monitoring).
	TenantMonitoringNamespace = "monitoring"
	// TenantRabbitMQUser is the generated default user of RabbitMQ.
	TenantRabbitMQUser = "tfrs"
	// Label keys on the tenant namespace.
	LabelTenant     = "tfrs.io/tenant"
	LabelTenantType = "tfrs.io/tenant-type"
	LabelJobType    = "tfrs.io/job-type"
)

// Names of the generated credentials (program.Credential), one per secret the stack owns.
// They are keyed by name in the stack's state, so changing any other part of the spec never
// regenerates them.
const (
	CredentialPostgresPassword = "postgresql-password"
	CredentialRedisPassword    = "redis-password"
	CredentialMinIORootUser    = "minio-root-user"
	CredentialMinIORootPass    = "minio-root-password"
	CredentialRabbitMQPassword = "rabbitmq-password"
	CredentialGrafanaPassword  = "grafana-admin-password"
)

// ErrRabbitMQOperatorNotReady is returned (before anything is registered) while the cluster
// stack reports its RabbitMQ operator as not ready: the seeds' gate before RabbitMQ.
var ErrRabbitMQOperatorNotReady = errors.New("the cluster's RabbitMQ operator is not ready")

// SecretString is a secret value carried in plain Go (a parent stack's secret output on its
// way into a child program, which turns it back into a Pulumi secret). It never prints.
type SecretString string

// String hides the value.
func (SecretString) String() string { return "[secret]" }

// GoString hides the value from %#v.
func (SecretString) GoString() string { return "[secret]" }

// MarshalJSON hides the value.
func (SecretString) MarshalJSON() ([]byte, error) { return []byte(`"[secret]"`), nil }

// Reveal returns the value; pass it only into a program as a Pulumi secret.
func (s SecretString) Reveal() string { return string(s) }

// TenantCluster is what the tenant program takes from its TFRCluster's stack (read with
// TenantClusterFromStack).
type TenantCluster struct {
	// PullSecretName is the registry pull Secret to copy into the namespace; "" when the
	// cluster has no registry credentials.
	PullSecretName string
	// DockerConfigJSON is its .dockerconfigjson.
	DockerConfigJSON SecretString
	// ImageRegistry is the image mirror prefix ("" = upstream registries).
	ImageRegistry string
	// RabbitMQOperatorReady gates the whole program (ErrRabbitMQOperatorNotReady).
	RabbitMQOperatorReady bool
}

// TenantClusterFromStack reads a TenantCluster from the cluster stack's outputs, checking
// every key and type.
func TenantClusterFromStack(out program.Outputs) (TenantCluster, error) {
	return tenantClusterFrom(engineLookup(out))
}

func tenantClusterFrom(lookup outputLookup) (TenantCluster, error) {
	r := outputReader{lookup: lookup}
	c := TenantCluster{
		PullSecretName:        r.str(ClusterOutputPullSecretName, false),
		DockerConfigJSON:      SecretString(r.str(ClusterOutputDockerConfigJSON, true)),
		ImageRegistry:         r.str(ClusterOutputImageRegistry, false),
		RabbitMQOperatorReady: r.boolean(ClusterOutputRabbitMQOperatorReady),
	}
	if r.err != nil {
		return TenantCluster{}, fmt.Errorf("cluster stack outputs: %w", r.err)
	}
	return c, nil
}

// TenantOutputs are the tenant stack's outputs, typed: what a server needs to connect, and
// what a personal tenant's member stack re-exports from its shared stack.
type TenantOutputs struct {
	Namespace, TenantType, JobType, SharedStack, PullSecretName string

	PostgresHost                     string
	PostgresPort                     int
	PostgresDatabase, PostgresUser   string
	PostgresPassword                 SecretString
	PostgresCredentialsSecret        string
	TimescaleHost                    string
	TimescalePort                    int
	TimescaleDatabase                string
	RedisHost                        string
	RedisPort                        int
	RedisPassword                    SecretString
	RedisSecret                      string
	RabbitMQHost                     string
	RabbitMQPort                     int
	RabbitMQUser                     string
	RabbitMQPassword                 SecretString
	RabbitMQVHost                    string
	RabbitMQBrokerURL                SecretString
	MinIOHost                        string
	MinIOPort                        int
	MinIOAccessKey, MinIOSecretKey   SecretString
	MinIOBucket                      string
	OtelEndpoint, JaegerURL          string
	PrometheusURL, GrafanaURL        string
	GrafanaAdminUser                 string
	GrafanaAdminPassword             SecretString
	GrafanaAdminSecret               string
	VectorEndpoint, FrontURL         string
	SharedCacheClaim, SharedCacheDir string
}

// outputField binds an output key to a TenantOutputs field.
type outputField struct {
	key    string
	secret bool
	str    *string
	sec    *SecretString
	num    *int
}

// fields is THE table of tenant output keys: parsing, exporting and the tests use it.
func (o *TenantOutputs) fields() []outputField {
	s := func(k string, p *string) outputField { return outputField{key: k, str: p} }
	x := func(k string, p *SecretString) outputField { return outputField{key: k, secret: true, sec: p} }
	n := func(k string, p *int) outputField { return outputField{key: k, num: p} }
	return []outputField{
		s(TenantOutputNamespace, &o.Namespace), s(TenantOutputTenantType, &o.TenantType),
		s(TenantOutputJobType, &o.JobType), s(TenantOutputSharedStack, &o.SharedStack),
		s(TenantOutputPullSecretName, &o.PullSecretName),
		s(TenantOutputPostgresHost, &o.PostgresHost), n(TenantOutputPostgresPort, &o.PostgresPort),
		s(TenantOutputPostgresDatabase, &o.PostgresDatabase), s(TenantOutputPostgresUser, &o.PostgresUser),
		x(TenantOutputPostgresPassword, &o.PostgresPassword), s(TenantOutputPostgresCredentialsSecret, &o.PostgresCredentialsSecret),
		s(TenantOutputTimescaleHost, &o.TimescaleHost), n(TenantOutputTimescalePort, &o.TimescalePort),
		s(TenantOutputTimescaleDatabase, &o.TimescaleDatabase),
		s(TenantOutputRedisHost, &o.RedisHost), n(TenantOutputRedisPort, &o.RedisPort),
		x(TenantOutputRedisPassword, &o.RedisPassword), s(TenantOutputRedisSecret, &o.RedisSecret),
		s(TenantOutputRabbitMQHost, &o.RabbitMQHost), n(TenantOutputRabbitMQPort, &o.RabbitMQPort),
		s(TenantOutputRabbitMQUser, &o.RabbitMQUser), x(TenantOutputRabbitMQPassword, &o.RabbitMQPassword),
		s(TenantOutputRabbitMQVHost, &o.RabbitMQVHost), x(TenantOutputRabbitMQBrokerURL, &o.RabbitMQBrokerURL),
		s(TenantOutputMinIOHost, &o.MinIOHost), n(TenantOutputMinIOPort, &o.MinIOPort),
		x(TenantOutputMinIOAccessKey, &o.MinIOAccessKey), x(TenantOutputMinIOSecretKey, &o.MinIOSecretKey),
		s(TenantOutputMinIOBucket, &o.MinIOBucket),
		s(TenantOutputOtelEndpoint, &o.OtelEndpoint), s(TenantOutputJaegerURL, &o.JaegerURL),
		s(TenantOutputPrometheusURL, &o.PrometheusURL), s(TenantOutputGrafanaURL, &o.GrafanaURL),
		s(TenantOutputGrafanaAdminUser, &o.GrafanaAdminUser), x(TenantOutputGrafanaAdminPassword, &o.GrafanaAdminPassword),
		s(TenantOutputGrafanaAdminSecret, &o.GrafanaAdminSecret),
		s(TenantOutputVectorEndpoint, &o.VectorEndpoint), s(TenantOutputFrontURL, &o.FrontURL),
		s(TenantOutputSharedCacheClaim, &o.SharedCacheClaim), s(TenantOutputSharedCacheDir, &o.SharedCacheDir),
	}
}

// TenantOutputKeys lists every output key and whether it is secret.
func TenantOutputKeys() map[string]bool {
	out := map[string]bool{}
	for _, f := range (&TenantOutputs{}).fields() {
		out[f.key] = f.secret
	}
	return out
}

// TenantOutputsFromStack reads TenantOutputs from a tenant stack's outputs, checking every key,
// its type and that secret keys are secret.
func TenantOutputsFromStack(out program.Outputs) (TenantOutputs, error) {
	return tenantOutputsFrom(engineLookup(out))
}

func tenantOutputsFrom(lookup outputLookup) (TenantOutputs, error) {
	var o TenantOutputs
	r := outputReader{lookup: lookup}
	for _, f := range o.fields() {
		switch {
		case f.num != nil:
			*f.num = r.integer(f.key)
		case f.sec != nil:
			*f.sec = SecretString(r.str(f.key, true))
		default:
			*f.str = r.str(f.key, false)
		}
	}
	if r.err != nil {
		return TenantOutputs{}, fmt.Errorf("tenant stack outputs: %w", r.err)
	}
	return o, nil
}

// pulumiMap exports the outputs, secrets as Pulumi secrets.
func (o *TenantOutputs) pulumiMap() pulumi.Map {
	m := pulumi.Map{}
	for _, f := range o.fields() {
		switch {
		case f.num != nil:
			m[f.key] = pulumi.Int(*f.num)
		case f.sec != nil:
			m[f.key] = pulumi.ToSecret(pulumi.String(f.sec.Reveal()))
		default:
			m[f.key] = pulumi.String(*f.str)
		}
	}
	return m
}

// outputLookup returns a stack output's value (a secret's plaintext), whether it is secret,
// and whether it exists.
type outputLookup func(key string) (value any, secret, ok bool)

func engineLookup(out program.Outputs) outputLookup {
	return func(key string) (any, bool, bool) {
		v, ok := out[key]
		return v.Reveal(), v.Secret, ok
	}
}

// outputReader reads typed values from stack outputs, keeping the first error.
type outputReader struct {
	lookup outputLookup
	err    error
}

func (r *outputReader) get(key string, secret bool) (any, bool) {
	if r.err != nil {
		return nil, false
	}
	v, isSecret, ok := r.lookup(key)
	switch {
	case !ok:
		r.err = fmt.Errorf("output %q is missing", key)
		return nil, false
	case secret && !isSecret:
		// A secret that arrives in the clear has already leaked into state; refuse it.
		r.err = fmt.Errorf("output %q is not a secret", key)
		return nil, false
	}
	return v, true
}

func (r *outputReader) str(key string, secret bool) string {
	v, ok := r.get(key, secret)
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		r.err = fmt.Errorf("output %q is a %T, want a string", key, v)
	}
	return s
}

func (r *outputReader) integer(key string) int {
	v, ok := r.get(key, false)
	if !ok {
		return 0
	}
	switch n := v.(type) {
	case float64:
		if n == float64(int(n)) {
			return int(n)
		}
	case int:
		return n
	case int64:
		return int(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
	}
	r.err = fmt.Errorf("output %q is %v (%T), want an integer", key, v, v)
	return 0
}

func (r *outputReader) boolean(key string) bool {
	v, ok := r.get(key, false)
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.err = fmt.Errorf("output %q is a %T, want a bool", key, v)
	}
	return b
}

// TenantInput is what the tenant program needs.
type TenantInput struct {
	// Tenant is the TFRTenant; it is defaulted and validated (on a copy) before use. For a
	// personal job type's shared stack it is SharedStackOwner's tenant.
	Tenant *v1alpha1.TFRTenant
	// Cluster is the TFRCluster stack's outputs (TenantClusterFromStack).
	Cluster TenantCluster
	// Shared is, for a personal tenant's own stack, the outputs of its job type's shared stack
	// (TenantOutputsFromStack on PersonalSharedStack). Nil for enterprise tenants and for
	// the shared stack itself.
	Shared *TenantOutputs
	// Graph, when set, receives the components as the program registers them (see
	// TenantGraph).
	Graph *Graph
}

// PersonalSharedStack names the stack that owns the namespace and middleware shared by the
// personal tenants of jobType (the rule is stackname.PersonalShared).
func PersonalSharedStack(jobType string) (string, error) { return stackname.PersonalShared(jobType) }

// TenantStackNames are the stacks of a TFRTenant: its own, and for a personal tenant the
// shared stack of its job type ("" for an enterprise tenant). See TFRTenant.OwnStacks.
func TenantStackNames(t *v1alpha1.TFRTenant) (own, shared string, err error) {
	if t == nil {
		return "", "", errors.New("tenant stack names: nil TFRTenant")
	}
	return t.OwnStacks()
}

// SharedStackOwner picks, among tenants, the personal tenant of jobType whose spec drives the
// job type's shared stack: the oldest one not being deleted (ties by namespace/name, so every
// caller picks the same). Nil means no live tenant uses the shared stack any more: destroy it.
func SharedStackOwner(tenants []v1alpha1.TFRTenant, jobType string) *v1alpha1.TFRTenant {
	var owner *v1alpha1.TFRTenant
	for i := range tenants {
		t := &tenants[i]
		if t.Spec.Type != v1alpha1.TenantPersonal || t.Spec.JobType != jobType || t.DeletionTimestamp != nil {
			continue
		}
		if owner == nil || olderThan(t, owner) {
			owner = t
		}
	}
	return owner
}

func olderThan(a, b *v1alpha1.TFRTenant) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// TenantGraph runs the tenant program under Pulumi mocks (no engine, no cluster) and returns
// the components it registers with their DependsOn edges, the ones it skipped, and the
// external RabbitMQ operator gate. A personal tenant's graph is its job type's shared stack.
func TenantGraph(t *v1alpha1.TFRTenant) (*Graph, error) {
	if t == nil {
		return nil, errors.New("tenant graph: nil TFRTenant")
	}
	stack := "tenant." + t.Name
	if t.Spec.Type == v1alpha1.TenantPersonal {
		s, err := PersonalSharedStack(t.Spec.JobType)
		if err != nil {
			return nil, err
		}
		stack = s
	}
	g := &Graph{}
	in := TenantInput{Tenant: t, Cluster: TenantCluster{RabbitMQOperatorReady: true}, Graph: g}
	err := pulumi.RunErr(Tenant(in), pulumi.WithMocks("tfrs", stack, graphMocks{
		secretKeys: []string{v1alpha1.SecretKeyUsername, v1alpha1.SecretKeyPassword, v1alpha1.SecretKeyRootUser, v1alpha1.SecretKeyRootPassword},
	}))
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Tenant is the tenant stack's program.
func Tenant(in TenantInput) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		if err := awaitTransforms(ctx); err != nil {
			return err
		}
		outputs, err := tenantProgram(ctx, in)
		if err != nil {
			return err
		}
		for k, v := range outputs {
			ctx.Export(k, v)
		}
		return nil
	}
}

// tenantProgram registers the components (or, for a personal member, nothing) and returns
// the stack outputs.
func tenantProgram(ctx *pulumi.Context, in TenantInput) (pulumi.Map, error) {
	if in.Tenant == nil {
		return nil, errors.New("tenant program: nil TFRTenant")
	}
	t := in.Tenant.DeepCopy()
	t.Default()
	if errs := t.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid TFRTenant %q: %w", t.Name, errs.ToAggregate())
	}
	if in.Graph != nil {
		*in.Graph = Graph{}
	}
	shared := ""
	if t.Spec.Type == v1alpha1.TenantPersonal {
		var err error
		if shared, err = PersonalSharedStack(t.Spec.JobType); err != nil {
			return nil, err
		}
		if !isStack(ctx.Stack(), shared) {
			return memberOutputs(t, in, shared)
		}
		if in.Shared != nil {
			return nil, fmt.Errorf("tenant program: stack %s owns the shared middleware; it takes no shared outputs", shared)
		}
	} else if in.Shared != nil {
		return nil, fmt.Errorf("tenant program: enterprise tenant %q owns its middleware; it takes no shared outputs", t.Name)
	}
	if !in.Cluster.RabbitMQOperatorReady {
		return nil, fmt.Errorf("tenant %q: %w (cluster %q); retry once the cluster stack is up", t.Name, ErrRabbitMQOperatorNotReady, t.Spec.ClusterRef)
	}
	p, err := planTenant(t, in.Cluster)
	if err != nil {
		return nil, err
	}
	return registerTenant(ctx, t, p, in.Graph)
}

// isStack reports whether the running stack is name (the engine may qualify it with an
// organization and project).
func isStack(running, name string) bool {
	return running == name || strings.HasSuffix(running, "/"+name)
}

// memberOutputs are a personal tenant's own stack: nothing registered, the shared stack's
// outputs re-exported after checking they are the job type's.
func memberOutputs(t *v1alpha1.TFRTenant, in TenantInput, shared string) (pulumi.Map, error) {
	s := in.Shared
	if s == nil {
		return nil, fmt.Errorf("personal tenant %q: the outputs of %s (the middleware of job type %q) are required; up that stack first", t.Name, shared, t.Spec.JobType)
	}
	ns := t.TargetNamespace()
	switch {
	case s.TenantType != string(v1alpha1.TenantPersonal) || s.JobType != t.Spec.JobType:
		return nil, fmt.Errorf("personal tenant %q: shared outputs are of a %s tenant of job type %q, want job type %q", t.Name, s.TenantType, s.JobType, t.Spec.JobType)
	case s.Namespace != ns:
		return nil, fmt.Errorf("personal tenant %q: job type %q shares namespace %q, but the tenant asks for %q", t.Name, t.Spec.JobType, s.Namespace, ns)
	}
	if in.Graph != nil {
		for _, id := range tenantSteps {
			in.Graph.Skipped = append(in.Graph.Skipped, GraphSkip{ID: id, Reason: "shared: owned by stack " + shared})
		}
	}
	out := *s
	out.SharedStack = shared
	return out.pulumiMap(), nil
}

// tenantSteps is the registration order (dependencies first).
var tenantSteps = []string{
	TenantNamespace, TenantPostgreSQL, TenantRedis, TenantMinIO, TenantRabbitMQ, TenantTimescaleDB,
	TenantJaeger, TenantOtelCollector, TenantPrometheus, TenantGrafana, TenantVector,
	TenantSharedCache, TenantTFRobotFront, TenantTFRSUtils,
}

// tenantPlan is everything computed from the spec before anything is registered, so a bad
// override fails the run before it touches the cluster.
type tenantPlan struct {
	namespace  string
	labels     map[string]string
	retain     bool
	pullSecret *TenantCluster // nil: no pull Secret
	images     tenant.Images
	jaeger     tenant.ChartRef
	grafana    tenant.ChartRef
}

func planTenant(t *v1alpha1.TFRTenant, c TenantCluster) (*tenantPlan, error) {
	s := &t.Spec
	p := &tenantPlan{namespace: t.TargetNamespace(), retain: s.DeletionPolicy != v1alpha1.DeletionDelete}
	p.labels = map[string]string{LabelTenantType: string(s.Type)}
	if s.Type == v1alpha1.TenantPersonal {
		// Shared by every personal tenant of the job type: no single tenant's name.
		p.labels[LabelJobType] = s.JobType
	} else {
		p.labels[LabelTenant] = t.Name
	}
	if c.PullSecretName != "" {
		if c.DockerConfigJSON == "" {
			return nil, fmt.Errorf("cluster pull secret %q comes without its dockerconfigjson", c.PullSecretName)
		}
		cc := c
		p.pullSecret = &cc
	}
	if m := c.ImageRegistry; m != "" {
		p.images = func(img string) string { return MirrorImage(m, img) }
	}
	// Resolved whether enabled or not, so a bad override is reported while the component is off.
	jaeger, err := resolveCharts(TenantJaeger, s.Jaeger.ComponentSource, c.ImageRegistry)
	if err != nil {
		return nil, err
	}
	grafana, err := resolveCharts(TenantGrafana, s.Grafana.ComponentSource, c.ImageRegistry)
	if err != nil {
		return nil, err
	}
	p.jaeger, p.grafana = jaeger[0], grafana[0]
	return p, nil
}

func (p *tenantPlan) image(img string) string {
	if p.images == nil {
		return img
	}
	return p.images(img)
}

func (p *tenantPlan) pullSecretName() string {
	if p.pullSecret == nil {
		return ""
	}
	return p.pullSecret.PullSecretName
}

// registerTenant registers the components in tenantSteps order and returns the outputs.
func registerTenant(ctx *pulumi.Context, t *v1alpha1.TFRTenant, p *tenantPlan, g *Graph) (pulumi.Map, error) {
	s := &t.Spec
	b := &graphBuilder{
		graph: g, built: map[string]pulumi.Resource{}, seen: map[string]bool{},
		dependsOn: tenantDependsOn, external: map[string]bool{},
	}
	for id, typ := range tenantExternal {
		b.external[id] = true
		if g != nil {
			g.Nodes = append(g.Nodes, GraphNode{ID: id, Type: typ, External: true})
		}
	}
	out := newTenantExports(t, p)
	pull := p.pullSecretName()

	var (
		ns       *tenant.Namespace
		pg       *tenant.PostgreSQL
		jaeger   *tenant.Jaeger
		prom     *tenant.Prometheus
		nsOutput pulumi.StringOutput
	)
	steps := map[string]struct {
		typ     string
		enabled bool
		create  func(opts ...pulumi.ResourceOption) (pulumi.Resource, error)
	}{
		TenantNamespace: {tenant.NamespaceType, true, func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			args := &tenant.NamespaceArgs{
				Name: p.namespace, Labels: p.labels, Retain: p.retain,
				AllowedNamespaces: []string{cluster.IngressNamespace, cluster.IstioNamespace, TenantMonitoringNamespace},
			}
			if c := p.pullSecret; c != nil {
				args.PullSecret = &tenant.PullSecret{
					Name:             c.PullSecretName,
					DockerConfigJSON: pulumi.ToSecret(pulumi.String(c.DockerConfigJSON.Reveal())).(pulumi.StringOutput),
				}
			}
			var err error
			if ns, err = tenant.NewNamespace(ctx, TenantNamespace, args, o...); err != nil {
				return nil, err
			}
			nsOutput = ns.Name
			out.set(TenantOutputPullSecretName, ns.PullSecretName)
			return ns, nil
		}},
		TenantPostgreSQL: {tenant.PostgreSQLType, true, func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			pgs := &s.PostgreSQL
			login, err := loginFor(ctx, s.Credentials.PostgreSQL, CredentialPostgresPassword, nil)
			if err != nil {
				return nil, err
			}
			if pg, err = tenant.NewPostgreSQL(ctx, TenantPostgreSQL, &tenant.PostgreSQLArgs{
				Namespace: nsOutput, ClusterName: p.namespace + "-pg", Instances: int(*pgs.Instances),
				ImageName: p.image(pgs.ImageName),
				Storage:   tenant.CNPGStorage{Size: pgs.Size.String(), StorageClass: pgs.StorageClassName},
				Resources: resources(pgs.Resources), Database: t.DatabaseName(), Owner: pgs.Owner,
				CredentialsSecret: p.namespace + "-pg-credentials", Login: login,
				PullSecret: pull, Retain: p.retain,
			}, o...); err != nil {
				return nil, err
			}
			out.set(TenantOutputPostgresHost, pg.Host)
			out.set(TenantOutputPostgresPort, pg.Port)
			out.set(TenantOutputPostgresDatabase, pg.Database)
			out.set(TenantOutputPostgresUser, pg.User)
			out.set(TenantOutputPostgresPassword, pg.Password)
			out.set(TenantOutputPostgresCredentialsSecret, pg.CredentialsSecret)
			return pg, nil
		}},
		TenantRedis: {tenant.RedisType, true, func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			login, err := loginFor(ctx, s.Credentials.Redis, CredentialRedisPassword, nil)
			if err != nil {
				return nil, err
			}
			r, err := tenant.NewRedis(ctx, TenantRedis, &tenant.RedisArgs{
				Namespace: nsOutput, Image: p.image(s.Redis.Image),
				Size: s.Redis.Size.String(), StorageClass: s.Redis.StorageClassName,
				Resources: resources(s.Redis.Resources), Login: login, PullSecret: pull, Retain: p.retain,
			}, o...)
			if err != nil {
				return nil, err
			}
			out.set(TenantOutputRedisHost, r.Host)
			out.set(TenantOutputRedisPort, r.Port)
			out.set(TenantOutputRedisPassword, r.Password)
			out.set(TenantOutputRedisSecret, r.SecretName)
			return r, nil
		}},
		TenantMinIO: {tenant.MinIOType, true, func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			login := tenant.Login{}
			if ref := s.Credentials.MinIO; ref != nil {
				login.ExistingSecret = ref.ExistingSecret
			} else {
				user, err := program.Credential(ctx, CredentialMinIORootUser, program.WithLength(20))
				if err != nil {
					return nil, err
				}
				pw, err := program.Credential(ctx, CredentialMinIORootPass)
				if err != nil {
					return nil, err
				}
				login.User, login.Password = user, pw
			}
			mn := &s.MinIO
			m, err := tenant.NewMinIO(ctx, TenantMinIO, &tenant.MinIOArgs{
				Namespace: nsOutput, Image: p.image(mn.Image),
				Servers: int(*mn.Servers), VolumesPerServer: int(*mn.VolumesPerServer),
				Size: mn.Size.String(), StorageClass: mn.StorageClassName, Resources: resources(mn.Resources),
				Bucket: tenantBucket(p.namespace), Login: login, PullSecret: pull, Retain: p.retain,
			}, o...)
			if err != nil {
				return nil, err
			}
			out.set(TenantOutputMinIOHost, m.Host)
			out.set(TenantOutputMinIOPort, m.Port)
			out.set(TenantOutputMinIOAccessKey, m.AccessKey)
			out.set(TenantOutputMinIOSecretKey, m.SecretKey)
			out.set(TenantOutputMinIOBucket, m.Bucket)
			return m, nil
		}},
		TenantRabbitMQ: {tenant.RabbitMQType, true, func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			login, err := loginFor(ctx, s.Credentials.RabbitMQ, CredentialRabbitMQPassword, pulumi.String(TenantRabbitMQUser))
			if err != nil {
				return nil, err
			}
			mq := &s.RabbitMQ
			r, err := tenant.NewRabbitMQ(ctx, TenantRabbitMQ, &tenant.RabbitMQArgs{
				Namespace: nsOutput, Image: p.image(mq.Image), Replicas: int(*mq.Replicas),
				Size: mq.Size.String(), StorageClass: mq.StorageClassName, Resources: resources(mq.Resources),
				Login: login, PullSecret: pull,
			}, o...)
			if err != nil {
				return nil, err
			}
			out.set(TenantOutputRabbitMQHost, r.Host)
			out.set(TenantOutputRabbitMQPort, r.Port)
			out.set(TenantOutputRabbitMQUser, r.User)
			out.set(TenantOutputRabbitMQPassword, r.Password)
			out.set(TenantOutputRabbitMQVHost, r.VHost)
			out.set(TenantOutputRabbitMQBrokerURL, pulumi.All(r.Host, r.Port, r.User, r.Password, r.VHost).ApplyT(func(v []any) string {
				return BrokerURL(v[0].(string), v[1].(int), v[2].(string), v[3].(string), v[4].(string))
			}).(pulumi.StringOutput))
			return r, nil
		}},
		TenantTimescaleDB: {tenant.TimescaleDBType, s.TimescaleDB.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			ts := &s.TimescaleDB
			r, err := tenant.NewTimescaleDB(ctx, TenantTimescaleDB, &tenant.TimescaleDBArgs{
				Namespace: nsOutput, ClusterName: p.namespace + "-tsdb", ImageName: p.image(ts.Image),
				Storage:   tenant.CNPGStorage{Size: ts.Size.String(), StorageClass: ts.StorageClassName},
				Resources: resources(ts.Resources), Database: t.DatabaseName(),
				Owner: pg.User, CredentialsSecret: pg.CredentialsSecret, PullSecret: pull, Retain: p.retain,
			}, o...)
			if err != nil {
				return nil, err
			}
			out.set(TenantOutputTimescaleHost, r.Host)
			out.set(TenantOutputTimescalePort, r.Port)
			out.set(TenantOutputTimescaleDatabase, r.Database)
			return r, nil
		}},
		TenantJaeger: {tenant.JaegerType, s.Jaeger.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			var err error
			if jaeger, err = tenant.NewJaeger(ctx, TenantJaeger, &tenant.JaegerArgs{
				Namespace: nsOutput, Chart: p.jaeger, Images: p.images, PullSecret: pull,
			}, o...); err != nil {
				return nil, err
			}
			out.set(TenantOutputJaegerURL, jaeger.QueryURL)
			return jaeger, nil
		}},
		TenantOtelCollector: {tenant.OtelCollectorType, s.OtelCollector.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			oc := &s.OtelCollector
			r, err := tenant.NewOtelCollector(ctx, TenantOtelCollector, &tenant.OtelCollectorArgs{
				Namespace: nsOutput, Image: p.image(oc.Image), Replicas: 1, Resources: resources(oc.Resources),
				JaegerEndpoint: jaeger.CollectorEndpoint, PullSecret: pull,
			}, o...)
			if err != nil {
				return nil, err
			}
			out.set(TenantOutputOtelEndpoint, r.Endpoint)
			return r, nil
		}},
		TenantPrometheus: {tenant.PrometheusType, s.Prometheus.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			pr := &s.Prometheus
			var err error
			if prom, err = tenant.NewPrometheus(ctx, TenantPrometheus, &tenant.PrometheusArgs{
				Namespace: nsOutput, Image: p.image(pr.Image), Retention: pr.Retention,
				Resources: resources(pr.Resources), PullSecret: pull,
			}, o...); err != nil {
				return nil, err
			}
			out.set(TenantOutputPrometheusURL, prom.URL)
			return prom, nil
		}},
		TenantGrafana: {tenant.GrafanaType, s.Grafana.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			login, err := loginFor(ctx, s.Credentials.Grafana, CredentialGrafanaPassword, pulumi.String(s.Grafana.AdminUser))
			if err != nil {
				return nil, err
			}
			args := &tenant.GrafanaArgs{Namespace: nsOutput, Chart: p.grafana, Images: p.images, Login: login, PullSecret: pull}
			// Data sources only name URLs: no ordering is needed, so no edge to their components.
			if prom != nil {
				args.PrometheusURL = prom.URL
			}
			if jaeger != nil {
				args.JaegerURL = jaeger.QueryURL
			}
			r, err := tenant.NewGrafana(ctx, TenantGrafana, args, o...)
			if err != nil {
				return nil, err
			}
			out.set(TenantOutputGrafanaURL, r.URL)
			out.set(TenantOutputGrafanaAdminUser, r.AdminUser)
			out.set(TenantOutputGrafanaAdminPassword, r.AdminPassword)
			out.set(TenantOutputGrafanaAdminSecret, r.AdminSecret)
			return r, nil
		}},
		TenantVector: {tenant.VectorType, s.Vector.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			r, err := tenant.NewVector(ctx, TenantVector, &tenant.VectorArgs{
				Namespace: nsOutput, Image: p.image(s.Vector.Image), Replicas: 1,
				Resources: resources(s.Vector.Resources), PullSecret: pull,
			}, o...)
			if err != nil {
				return nil, err
			}
			out.set(TenantOutputVectorEndpoint, r.Endpoint)
			return r, nil
		}},
		TenantSharedCache: {tenant.SharedCacheType, s.SharedCache.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			sc := &s.SharedCache
			r, err := tenant.NewSharedCache(ctx, TenantSharedCache, &tenant.SharedCacheArgs{
				Namespace: nsOutput, Size: sc.Size.String(), StorageClass: sc.StorageClassName,
				AccessMode: string(sc.AccessMode), CacheDir: sc.CacheDir, Retain: p.retain,
			}, o...)
			if err != nil {
				return nil, err
			}
			out.set(TenantOutputSharedCacheClaim, r.ClaimName)
			out.set(TenantOutputSharedCacheDir, r.CacheDir)
			return r, nil
		}},
		TenantTFRobotFront: {tenant.TFRobotFrontType, s.TFRobotFront.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			r, err := tenant.NewTFRobotFront(ctx, TenantTFRobotFront, appArgs(nsOutput, p, s.TFRobotFront.Image, s.TFRobotFront.AppSpec), o...)
			if err != nil {
				return nil, err
			}
			out.set(TenantOutputFrontURL, r.URL)
			return r, nil
		}},
		TenantTFRSUtils: {tenant.TFRSUtilsType, s.TFRSUtils.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return tenant.NewTFRSUtils(ctx, TenantTFRSUtils, appArgs(nsOutput, p, s.TFRSUtils.Image, s.TFRSUtils.AppSpec), o...)
		}},
	}
	for _, id := range tenantSteps {
		st := steps[id]
		if err := b.add(id, st.typ, st.enabled, st.create); err != nil {
			return nil, err
		}
	}
	return out.m, nil
}

// tenantExports builds the output map: every key from the start (zero values), secret keys
// always wrapped as secrets, whatever the component hands over.
type tenantExports struct {
	m      pulumi.Map
	secret map[string]bool
}

func newTenantExports(t *v1alpha1.TFRTenant, p *tenantPlan) *tenantExports {
	zero := TenantOutputs{Namespace: p.namespace, TenantType: string(t.Spec.Type), JobType: t.Spec.JobType}
	return &tenantExports{m: zero.pulumiMap(), secret: TenantOutputKeys()}
}

func (e *tenantExports) set(key string, v pulumi.Input) {
	secret, known := e.secret[key]
	if !known {
		panic("stacks: unknown tenant output " + key) // a programming error, caught by every test
	}
	if secret {
		v = pulumi.ToSecret(v)
	}
	e.m[key] = v
}

// loginFor is a component's login: the user-given Secret when the spec names one (it wins),
// else a generated, stable password (program.Credential) and user (nil: the component's
// default). A credential is only generated for a component that is installed.
func loginFor(ctx *pulumi.Context, ref *v1alpha1.ExistingSecretRef, credential string, user pulumi.StringInput) (tenant.Login, error) {
	if ref != nil {
		return tenant.Login{ExistingSecret: ref.ExistingSecret, User: user}, nil
	}
	pw, err := program.Credential(ctx, credential)
	if err != nil {
		return tenant.Login{}, err
	}
	return tenant.Login{User: user, Password: pw}, nil
}

func appArgs(ns pulumi.StringInput, p *tenantPlan, image string, a v1alpha1.AppSpec) *tenant.AppArgs {
	return &tenant.AppArgs{
		Namespace: ns, Image: p.image(image), Replicas: int(*a.Replicas),
		Resources: resources(a.Resources), PullSecret: p.pullSecretName(),
	}
}

// resources turns Kubernetes resource requirements into the components' form.
func resources(r k8scorev1.ResourceRequirements) tenant.Resources {
	conv := func(l k8scorev1.ResourceList) map[string]string {
		if len(l) == 0 {
			return nil
		}
		out := make(map[string]string, len(l))
		for k, v := range l {
			out[string(k)] = v.String()
		}
		return out
	}
	return tenant.Resources{Requests: conv(r.Requests), Limits: conv(r.Limits)}
}

// tenantBucket is the tenant's default MinIO bucket: the namespace, lengthened when it is
// shorter than the 3 characters S3 requires.
func tenantBucket(namespace string) string {
	if len(namespace) < 3 {
		return namespace + "-data"
	}
	return namespace
}

// BrokerURL is the Celery broker URL of a RabbitMQ login. RabbitMQ's default vhost "/" is
// written as the seeds' Confz example writes it ("amqp://user:pass@host:5672/", which
// Celery/kombu read as vhost "/"); any other vhost is escaped into the path.
func BrokerURL(host string, port int, user, password, vhost string) string {
	if vhost == tenant.RabbitMQDefaultVHost {
		vhost = ""
	}
	return confz.RabbitMQ{Host: host, Port: port, User: user, Password: password, VHost: vhost}.BrokerURL()
}
