package stacks

// The tenant program (TFRTenant): a namespace with mesh isolation and the tenant's middleware,
// monitoring and TFRobot applications, in the seeds' TFRTenant deployment order. Its steps
// live in tenant_steps.go; a personal tenant's shared and member stacks in personal.go.

import (
	"errors"
	"fmt"

	k8scorev1 "k8s.io/api/core/v1"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/stacks/confz"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// Node ids of the tenant graph (the seeds' TFRTenant deployment order): the Pulumi names of
// the components and what `tfrs graph` prints.
const (
	TenantNamespace  = "namespace"
	TenantPostgreSQL = "postgresql"
	TenantRedis      = "redis"
	TenantMinIO      = "minio"
	// TenantObjectStorage is an external object storage (spec.objectStorage.provider
	// External), in MinIO's place.
	TenantObjectStorage = "object-storage"
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
	TenantObjectStorage: {TenantNamespace},
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

// Settings of the tenant program that the TFRTenant spec does not carry.
const (
	// TenantMonitoringNamespace may call into every tenant (cluster-wide monitoring).
	TenantMonitoringNamespace = clusterns.Monitoring
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

// TenantInput is what the tenant program needs.
type TenantInput struct {
	// Tenant is the TFRTenant; it is defaulted and validated (on a copy) before use. For a
	// personal job type's shared stack it is any personal tenant of the job type (the one
	// whose run brings the stack up): the middleware is the cluster's (Cluster.Personal).
	Tenant *v1alpha1.TFRTenant
	// Cluster is the TFRCluster stack's outputs (TenantClusterFromStack).
	Cluster TenantCluster
	// Shared is, for a personal tenant's own stack, the outputs of its job type's shared stack
	// (TenantOutputsFromStack on PersonalSharedStack). Nil for enterprise tenants and for
	// the shared stack itself.
	Shared *TenantOutputs
	// Namespace is the target namespace as the caller found it before the run (see
	// nsowner.go); nil when it was not read (render mode, graphs, a run without cluster
	// access): then nothing is refused and the Namespace is kept on destroy.
	Namespace *NamespaceState
	// Graph, when set, receives the components as the program registers them (see
	// TenantGraph).
	Graph *Graph
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
	mocks := graphMocks{
		secretKeys: []string{v1alpha1.SecretKeyUsername, v1alpha1.SecretKeyPassword, v1alpha1.SecretKeyRootUser, v1alpha1.SecretKeyRootPassword},
	}
	return mockGraph(stack, mocks, func(g *Graph) pulumi.RunFunc {
		return Tenant(TenantInput{Tenant: t, Cluster: TenantCluster{RabbitMQOperatorReady: true}, Graph: g})
	})
}

// Tenant is the tenant stack's program.
func Tenant(in TenantInput) pulumi.RunFunc { return runProgram(in, tenantProgram) }

// tenantProgram registers the components (or, for a personal member, nothing) and returns
// the stack outputs.
func tenantProgram(ctx *pulumi.Context, in TenantInput) (pulumi.Map, error) {
	t, err := prepare(stackname.LevelTenant, "TFRTenant", in.Tenant, in.Graph)
	if err != nil {
		return nil, err
	}
	shared, member, err := personalRole(ctx.Stack(), t, in)
	if err != nil {
		return nil, err
	}
	if member {
		return memberOutputs(t, in, shared)
	}
	if shared != "" {
		// The job type's shared stack: its middleware is the cluster's (personal_middleware.go).
		if t, err = sharedTenant(t, in.Cluster); err != nil {
			return nil, err
		}
	}
	if !in.Cluster.RabbitMQOperatorReady {
		return nil, fmt.Errorf("tenant %q: %w (cluster %q); retry once the cluster stack is up", t.Name, ErrRabbitMQOperatorNotReady, t.Spec.ClusterRef)
	}
	p, err := planTenant(t, in.Cluster)
	if err != nil {
		return nil, err
	}
	// The runner refused a namespace that is not this stack's before the engine started;
	// checked again here so no caller of the program can skip it.
	stack := runningStack(ctx.Stack())
	if errs := TenantNamespaceErrors(t, in.Cluster, stack, in.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("tenant %q: %w", t.Name, errs.ToAggregate())
	}
	decision, _ := DecideNamespace(p.namespace, stack, in.Namespace)
	p.owner = stack
	// A namespace whose ownership could not be checked is never deleted by this stack.
	p.retainNamespace = p.retain || decision == NamespaceUnverified
	if err := (boundary{namespace: p.namespace, ownsNamespace: true}).register(ctx); err != nil {
		return nil, err
	}
	if err := (ownership{stack: stack}).register(ctx); err != nil {
		return nil, err
	}
	return registerTenant(ctx, t, p, in.Graph)
}

// tenantPlan is everything computed from the spec before anything is registered, so a bad
// override fails the run before it touches the cluster.
type tenantPlan struct {
	namespace string
	labels    map[string]string
	retain    bool
	// owner is the stack written into the namespace's AnnotationOwner.
	owner string
	// retainNamespace keeps the Namespace on destroy: the deletion policy's Retain, or an
	// ownership that was not verified.
	retainNamespace bool
	pullSecret      *TenantCluster // nil: no pull Secret
	quota           *tenant.Quota  // the namespace's class (tenancy.go)
	ownerShare      OptionalString // a personal job type's owner share (ownershare.go)
	egress          *tenant.Egress // the cluster's egress policy (egress.go); nil: open
	images          tenant.Images
	jaeger          tenant.ChartRef
	grafana         tenant.ChartRef
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
		if c.DockerConfigJSON == "" && c.TenantPullSecretsNamespace == "" {
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
	if p.egress, err = c.EgressPolicy(); err != nil {
		return nil, err
	}
	if p.quota, err = tenantQuota(t, c); err != nil {
		return nil, err
	}
	if s.Type == v1alpha1.TenantPersonal {
		if p.ownerShare, err = ownerShareOutput(c, p.quota); err != nil {
			return nil, err
		}
	}
	if err := exportSecretNameErrors(t, c); err != nil {
		return nil, err
	}
	return p, nil
}

// deletionPolicy is the policy the plan applies (TenantOutputDeletionPolicy).
func (p *tenantPlan) deletionPolicy() v1alpha1.DeletionPolicy {
	if p.retain {
		return v1alpha1.DeletionRetain
	}
	return v1alpha1.DeletionDelete
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

// loginFor is a component's login: the user-given Secret when the spec names one (it wins),
// else a generated, stable password (program.Credential) and user (nil: the component's
// default). A credential is only generated for a component that is installed.
func loginFor(ctx *pulumi.Context, ref *v1alpha1.ExistingSecretRef, credential string, user pulumi.StringInput) (tenant.Login, error) {
	if ref != nil {
		return tenant.Login{ExistingSecret: ref.ExistingSecret, User: user, Unread: unread(ctx, ref.ExistingSecret)}, nil
	}
	pw, err := program.Credential(ctx, credential)
	if err != nil {
		return tenant.Login{}, err
	}
	return tenant.Login{User: user, Password: pw}, nil
}

// unread is the placeholder of a user-given Secret's keys when rendering without a cluster
// (tenant.Login.Unread), "" when the Secret is read.
func unread(ctx *pulumi.Context, secret string) string {
	if !program.Rendering(ctx) {
		return ""
	}
	return program.RenderPlaceholder("Secret " + secret)
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
