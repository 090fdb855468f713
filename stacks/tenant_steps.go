package stacks

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// The tenant program's steps: one method per component, each registering it from the plan
// and setting the outputs it provides.

// registerTenant registers the components in step order and returns the outputs.
func registerTenant(ctx *pulumi.Context, t *v1alpha1.TFRTenant, p *tenantPlan, g *Graph) (pulumi.Map, error) {
	r := &tenantRegistrar{ctx: ctx, t: t, spec: &t.Spec, p: p, pull: p.pullSecretName()}
	r.out = newExports((&TenantOutputs{Namespace: p.namespace, TenantType: string(t.Spec.Type), JobType: t.Spec.JobType, OwnerShare: p.ownerShare,
		DeletionPolicy: OptionalString(p.deletionPolicy())}).fields())
	b := newGraphBuilder(g, tenantGraphDeps(&t.Spec))
	b.addExternal(tenantExternal)
	if err := b.register(r.steps()); err != nil {
		return nil, err
	}
	return r.out.m, nil
}

// tenantRegistrar is one registration of a tenant's components: what the steps read, and
// what earlier steps hand the later ones.
type tenantRegistrar struct {
	ctx  *pulumi.Context
	t    *v1alpha1.TFRTenant
	spec *v1alpha1.TFRTenantSpec
	p    *tenantPlan
	pull string // the pull Secret's name in the namespace, "" for none
	out  *exports

	// Set by their steps for the ones after (the dependsOn table orders them).
	ns     pulumi.StringOutput // the namespace's name
	pg     *tenant.PostgreSQL
	redis  *tenant.Redis
	store  *objectStore // MinIO's or the external endpoint's
	mq     *tenant.RabbitMQ
	tsdb   *tenant.TimescaleDB // nil when switched off
	jaeger *tenant.Jaeger
	prom   *tenant.Prometheus
}

// steps are the tenant's components in registration order (dependencies first). Listing them
// reads only the spec, never the plan: a personal member lists their ids without one.
func (r *tenantRegistrar) steps() []step {
	s := &r.t.Spec
	steps := []step{
		{TenantNamespace, tenant.NamespaceType, "", r.addNamespace},
		{TenantPostgreSQL, tenant.PostgreSQLType, "", r.addPostgreSQL},
		{TenantRedis, tenant.RedisType, "", r.addRedis},
		r.objectStorageStep(),
		{TenantRabbitMQ, tenant.RabbitMQType, "", r.addRabbitMQ},
		{TenantTimescaleDB, tenant.TimescaleDBType, unlessEnabled(s.TimescaleDB.IsEnabled()), r.addTimescaleDB},
	}
	if s.ExportOutputs != nil {
		// Only listed when asked for: it is no component a tenant has switched off.
		steps = append(steps, step{TenantExportOutputs, tenant.ExportedOutputsType, "", r.addExportOutputs})
	}
	return append(steps, []step{
		{TenantJaeger, tenant.JaegerType, unlessEnabled(s.Jaeger.IsEnabled()), r.addJaeger},
		{TenantOtelCollector, tenant.OtelCollectorType, unlessEnabled(s.OtelCollector.IsEnabled()), r.addOtelCollector},
		{TenantPrometheus, tenant.PrometheusType, unlessEnabled(s.Prometheus.IsEnabled()), r.addPrometheus},
		{TenantGrafana, tenant.GrafanaType, unlessEnabled(s.Grafana.IsEnabled()), r.addGrafana},
		{TenantVector, tenant.VectorType, unlessEnabled(s.Vector.IsEnabled()), r.addVector},
		{TenantSharedCache, tenant.SharedCacheType, unlessEnabled(s.SharedCache.IsEnabled()), r.addSharedCache},
		{TenantTFRobotFront, tenant.TFRobotFrontType, unlessEnabled(s.TFRobotFront.IsEnabled()), r.addTFRobotFront},
		{TenantTFRSUtils, tenant.TFRSUtilsType, unlessEnabled(s.TFRSUtils.IsEnabled()), r.addTFRSUtils},
	}...)
}

func (r *tenantRegistrar) addNamespace(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	p := r.p
	args := &tenant.NamespaceArgs{
		Name: p.namespace, Labels: p.labels, Retain: p.retainNamespace, Quota: p.quota, Egress: p.egress,
		// A personal job type's telemetry is every user's robots': no robot reads it.
		RobotsReadNoTelemetry: r.t.Spec.Type == v1alpha1.TenantPersonal,
		NoMinIO:               r.spec.External() != nil,
		Annotations:           map[string]string{AnnotationOwner: p.owner},
		AllowedNamespaces:     clusterns.Trusted(), // the mesh trusts names: the reserved ones (see clusterns)
	}
	if c := p.pullSecret; c != nil {
		args.PullSecret = &tenant.PullSecret{Name: c.PullSecretName, DockerConfigJSON: secretOf(c.DockerConfigJSON)}
		if from := string(c.TenantPullSecretsNamespace); from != "" {
			// The namespace's own credential, which the admin keeps named after it.
			args.PullSecret = &tenant.PullSecret{Name: c.PullSecretName, From: &tenant.SecretRef{Namespace: from, Name: p.namespace}}
			if program.Rendering(r.ctx) {
				args.PullSecret.From, args.PullSecret.DockerConfigJSON = nil, pulumi.String(program.RenderPlaceholder("Secret "+from+"/"+p.namespace))
			}
		}
	}
	if program.Applying(r.ctx) {
		prov, err := program.Provisioner(r.ctx)
		if err != nil {
			return nil, err
		}
		args.Applier = &tenant.Applier{Provider: prov, Ready: program.ApplierReady(r.ctx)}
	}
	ns, err := tenant.NewNamespace(r.ctx, TenantNamespace, args, o...)
	if err != nil {
		return nil, err
	}
	r.ns = ns.Name
	r.out.set(TenantOutputPullSecretName, ns.PullSecretName)
	return ns, nil
}

func (r *tenantRegistrar) addPostgreSQL(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	pgs, p := &r.spec.PostgreSQL, r.p
	login, err := loginFor(r.ctx, r.spec.Credentials.PostgreSQL, CredentialPostgresPassword, nil)
	if err != nil {
		return nil, err
	}
	if r.pg, err = tenant.NewPostgreSQL(r.ctx, TenantPostgreSQL, &tenant.PostgreSQLArgs{
		Namespace: r.ns, ClusterName: p.namespace + "-pg", Instances: int(*pgs.Instances),
		ImageName: p.image(pgs.ImageName),
		Storage:   tenant.CNPGStorage{Size: pgs.Size.String(), StorageClass: pgs.StorageClassName},
		Resources: resources(pgs.Resources), Database: r.t.DatabaseName(), Owner: pgs.Owner,
		CredentialsSecret: p.namespace + "-pg-credentials", Login: login,
		PullSecret: r.pull, Retain: p.retain,
	}, o...); err != nil {
		return nil, err
	}
	r.out.set(TenantOutputPostgresHost, r.pg.Host)
	r.out.set(TenantOutputPostgresPort, r.pg.Port)
	r.out.set(TenantOutputPostgresDatabase, r.pg.Database)
	r.out.set(TenantOutputPostgresUser, r.pg.User)
	r.out.set(TenantOutputPostgresPassword, r.pg.Password)
	r.out.set(TenantOutputPostgresCredentialsSecret, r.pg.CredentialsSecret)
	return r.pg, nil
}

func (r *tenantRegistrar) addRedis(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	rs := &r.spec.Redis
	login, err := loginFor(r.ctx, r.spec.Credentials.Redis, CredentialRedisPassword, nil)
	if err != nil {
		return nil, err
	}
	c, err := tenant.NewRedis(r.ctx, TenantRedis, &tenant.RedisArgs{
		Namespace: r.ns, Image: r.p.image(rs.Image),
		Size: rs.Size.String(), StorageClass: rs.StorageClassName,
		Resources: resources(rs.Resources), Login: login, PullSecret: r.pull, Retain: r.p.retain,
		// The robots of a personal job type share this Redis, each as its own ACL user.
		RobotUsers: r.t.Spec.Type == v1alpha1.TenantPersonal,
	}, o...)
	if err != nil {
		return nil, err
	}
	r.redis = c
	r.out.set(TenantOutputRedisHost, c.Host)
	r.out.set(TenantOutputRedisPort, c.Port)
	r.out.set(TenantOutputRedisPassword, c.Password)
	r.out.set(TenantOutputRedisSecret, c.SecretName)
	return c, nil
}

func (r *tenantRegistrar) addMinIO(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	login, err := r.minIOLogin()
	if err != nil {
		return nil, err
	}
	mn := &r.spec.MinIO
	c, err := tenant.NewMinIO(r.ctx, TenantMinIO, &tenant.MinIOArgs{
		Namespace: r.ns, Image: r.p.image(mn.Image),
		Servers: int(*mn.Servers), VolumesPerServer: int(*mn.VolumesPerServer),
		Size: mn.Size.String(), StorageClass: mn.StorageClassName, Resources: resources(mn.Resources),
		Bucket: tenantBucket(r.p.namespace), Login: login, PullSecret: r.pull, Retain: r.p.retain,
	}, o...)
	if err != nil {
		return nil, err
	}
	url := pulumi.All(c.Host, c.Port).ApplyT(func(v []any) string {
		return "http://" + net.JoinHostPort(v[0].(string), strconv.Itoa(v[1].(int)))
	}).(pulumi.StringOutput)
	r.setObjectStore(v1alpha1.ObjectStorageMinIO, &objectStore{host: c.Host, port: c.Port, accessKey: c.AccessKey,
		secretKey: c.SecretKey, bucket: c.Bucket, url: url, region: pulumi.String("").ToStringOutput()})
	return c, nil
}

// objectStore is the tenant's object storage as the later steps and the outputs see it,
// whichever its provider.
type objectStore struct {
	host                         pulumi.StringOutput
	port                         pulumi.IntOutput
	accessKey, secretKey, bucket pulumi.StringOutput
	url, region                  pulumi.StringOutput
}

// objectStorageStep is MinIO, or the external endpoint in its place (a node of its own, so
// switching providers deletes the MinIO Tenant as a change the approval gate sees).
func (r *tenantRegistrar) objectStorageStep() step {
	if r.t.Spec.External() != nil {
		return step{TenantObjectStorage, tenant.ObjectStorageType, "", r.addExternalObjectStorage}
	}
	return step{TenantMinIO, tenant.MinIOType, "", r.addMinIO}
}

func (r *tenantRegistrar) setObjectStore(provider v1alpha1.ObjectStorageProvider, s *objectStore) {
	r.store = s
	r.out.set(TenantOutputMinIOHost, s.host)
	r.out.set(TenantOutputMinIOPort, s.port)
	r.out.set(TenantOutputMinIOAccessKey, s.accessKey)
	r.out.set(TenantOutputMinIOSecretKey, s.secretKey)
	r.out.set(TenantOutputMinIOBucket, s.bucket)
	r.out.set(TenantOutputObjectStorageProvider, pulumi.String(string(provider)))
	r.out.set(TenantOutputObjectStorageURL, s.url)
	r.out.set(TenantOutputObjectStorageRegion, s.region)
}

// addExternalObjectStorage reads the endpoint's credentials from the user's Secret and
// checks the bucket (creating it under bucketPolicy Create) through the door's source
// policy before any later step uses it. A preview connects nowhere.
func (r *tenantRegistrar) addExternalObjectStorage(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	e := r.spec.External()
	endpoint, host, port, err := e.Parts()
	if err != nil {
		return nil, fmt.Errorf("spec.objectStorage.external.endpoint: %w", err)
	}
	bucket := e.Bucket
	if bucket == "" {
		bucket = tenantBucket(r.p.namespace)
	}
	args := &tenant.ExternalObjectStorageArgs{
		Namespace: r.ns, Endpoint: endpoint, Host: host, Port: port,
		Region: e.Region, Bucket: bucket, CredentialsSecret: e.CredentialsSecret, Unread: unread(r.ctx, e.CredentialsSecret),
	}
	if be := bucketEnsurer(); be != nil && !r.ctx.DryRun() && !program.Rendering(r.ctx) {
		args.Ensure = func(accessKey, secretKey string) error {
			ctx, cancel := context.WithTimeout(context.Background(), sourcepolicy.BucketTimeout)
			defer cancel()
			_, err := be.EnsureBucket(ctx, sourcepolicy.Bucket{Endpoint: args.Endpoint, Region: e.Region, Name: bucket,
				AccessKey: accessKey, SecretKey: secretKey, Create: e.BucketPolicy != v1alpha1.BucketExisting})
			return err
		}
	}
	c, err := tenant.NewExternalObjectStorage(r.ctx, TenantObjectStorage, args, o...)
	if err != nil {
		return nil, err
	}
	r.setObjectStore(v1alpha1.ObjectStorageExternal, &objectStore{host: c.Host, port: c.Port, accessKey: c.AccessKey,
		secretKey: c.SecretKey, bucket: c.Bucket, url: c.Endpoint, region: c.Region})
	return c, nil
}

// minIOLogin is MinIO's root login: the user-given Secret, else a generated root user and
// password (MinIO has no default user, unlike the other components of loginFor).
func (r *tenantRegistrar) minIOLogin() (tenant.Login, error) {
	if ref := r.spec.Credentials.MinIO; ref != nil {
		return tenant.Login{ExistingSecret: ref.ExistingSecret, Unread: unread(r.ctx, ref.ExistingSecret)}, nil
	}
	user, err := program.Credential(r.ctx, CredentialMinIORootUser, program.WithLength(20))
	if err != nil {
		return tenant.Login{}, err
	}
	pw, err := program.Credential(r.ctx, CredentialMinIORootPass)
	if err != nil {
		return tenant.Login{}, err
	}
	return tenant.Login{User: user, Password: pw}, nil
}

func (r *tenantRegistrar) addRabbitMQ(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	login, err := loginFor(r.ctx, r.spec.Credentials.RabbitMQ, CredentialRabbitMQPassword, pulumi.String(TenantRabbitMQUser))
	if err != nil {
		return nil, err
	}
	mq := &r.spec.RabbitMQ
	c, err := tenant.NewRabbitMQ(r.ctx, TenantRabbitMQ, &tenant.RabbitMQArgs{
		Namespace: r.ns, Image: r.p.image(mq.Image), Replicas: int(*mq.Replicas),
		Size: mq.Size.String(), StorageClass: mq.StorageClassName, Resources: resources(mq.Resources),
		Login: login, PullSecret: r.pull,
	}, o...)
	if err != nil {
		return nil, err
	}
	r.mq = c
	r.out.set(TenantOutputRabbitMQHost, c.Host)
	r.out.set(TenantOutputRabbitMQPort, c.Port)
	r.out.set(TenantOutputRabbitMQUser, c.User)
	r.out.set(TenantOutputRabbitMQPassword, c.Password)
	r.out.set(TenantOutputRabbitMQVHost, c.VHost)
	r.out.set(TenantOutputRabbitMQBrokerURL, pulumi.All(c.Host, c.Port, c.User, c.Password, c.VHost).ApplyT(func(v []any) string {
		return BrokerURL(v[0].(string), v[1].(int), v[2].(string), v[3].(string), v[4].(string))
	}).(pulumi.StringOutput))
	return c, nil
}

// addTimescaleDB shares PostgreSQL's login: same owner, same credentials Secret.
func (r *tenantRegistrar) addTimescaleDB(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	ts := &r.spec.TimescaleDB
	c, err := tenant.NewTimescaleDB(r.ctx, TenantTimescaleDB, &tenant.TimescaleDBArgs{
		Namespace: r.ns, ClusterName: r.p.namespace + "-tsdb", ImageName: r.p.image(ts.Image),
		Storage:   tenant.CNPGStorage{Size: ts.Size.String(), StorageClass: ts.StorageClassName},
		Resources: resources(ts.Resources), Database: r.t.DatabaseName(),
		Owner: r.pg.User, CredentialsSecret: r.pg.CredentialsSecret, PullSecret: r.pull, Retain: r.p.retain,
	}, o...)
	if err != nil {
		return nil, err
	}
	r.tsdb = c
	r.out.set(TenantOutputTimescaleHost, c.Host)
	r.out.set(TenantOutputTimescalePort, c.Port)
	r.out.set(TenantOutputTimescaleDatabase, c.Database)
	return c, nil
}

func (r *tenantRegistrar) addJaeger(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	var err error
	if r.jaeger, err = tenant.NewJaeger(r.ctx, TenantJaeger, &tenant.JaegerArgs{
		Namespace: r.ns, Chart: r.p.jaeger, Images: r.p.images, PullSecret: r.pull,
	}, o...); err != nil {
		return nil, err
	}
	r.out.set(TenantOutputJaegerURL, r.jaeger.QueryURL)
	return r.jaeger, nil
}

func (r *tenantRegistrar) addOtelCollector(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	oc := &r.spec.OtelCollector
	c, err := tenant.NewOtelCollector(r.ctx, TenantOtelCollector, &tenant.OtelCollectorArgs{
		Namespace: r.ns, Image: r.p.image(oc.Image), Replicas: 1, Resources: resources(oc.Resources),
		JaegerEndpoint: r.jaeger.CollectorEndpoint, PullSecret: r.pull,
	}, o...)
	if err != nil {
		return nil, err
	}
	r.out.set(TenantOutputOtelEndpoint, c.Endpoint)
	return c, nil
}

func (r *tenantRegistrar) addPrometheus(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	pr := &r.spec.Prometheus
	var err error
	if r.prom, err = tenant.NewPrometheus(r.ctx, TenantPrometheus, &tenant.PrometheusArgs{
		Namespace: r.ns, Image: r.p.image(pr.Image), Retention: pr.Retention,
		Resources: resources(pr.Resources), PullSecret: r.pull,
	}, o...); err != nil {
		return nil, err
	}
	r.out.set(TenantOutputPrometheusURL, r.prom.URL)
	return r.prom, nil
}

func (r *tenantRegistrar) addGrafana(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	login, err := loginFor(r.ctx, r.spec.Credentials.Grafana, CredentialGrafanaPassword, pulumi.String(r.spec.Grafana.AdminUser))
	if err != nil {
		return nil, err
	}
	args := &tenant.GrafanaArgs{Namespace: r.ns, Chart: r.p.grafana, Images: r.p.images, Login: login, PullSecret: r.pull}
	// Data sources only name URLs: no ordering is needed, so no edge to their components.
	if r.prom != nil {
		args.PrometheusURL = r.prom.URL
	}
	if r.jaeger != nil {
		args.JaegerURL = r.jaeger.QueryURL
	}
	c, err := tenant.NewGrafana(r.ctx, TenantGrafana, args, o...)
	if err != nil {
		return nil, err
	}
	r.out.set(TenantOutputGrafanaURL, c.URL)
	r.out.set(TenantOutputGrafanaAdminUser, c.AdminUser)
	r.out.set(TenantOutputGrafanaAdminPassword, c.AdminPassword)
	r.out.set(TenantOutputGrafanaAdminSecret, c.AdminSecret)
	return c, nil
}

func (r *tenantRegistrar) addVector(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	vs := &r.spec.Vector
	c, err := tenant.NewVector(r.ctx, TenantVector, &tenant.VectorArgs{
		Namespace: r.ns, Image: r.p.image(vs.Image), Replicas: 1,
		Resources: resources(vs.Resources), PullSecret: r.pull,
	}, o...)
	if err != nil {
		return nil, err
	}
	r.out.set(TenantOutputVectorEndpoint, c.Endpoint)
	return c, nil
}

func (r *tenantRegistrar) addSharedCache(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	sc := &r.spec.SharedCache
	c, err := tenant.NewSharedCache(r.ctx, TenantSharedCache, &tenant.SharedCacheArgs{
		Namespace: r.ns, Size: sc.Size.String(), StorageClass: sc.StorageClassName,
		AccessMode: string(sc.AccessMode), CacheDir: sc.CacheDir, Retain: r.p.retain,
	}, o...)
	if err != nil {
		return nil, err
	}
	r.out.set(TenantOutputSharedCacheClaim, c.ClaimName)
	r.out.set(TenantOutputSharedCacheDir, c.CacheDir)
	return c, nil
}

func (r *tenantRegistrar) addTFRobotFront(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	app := &r.spec.TFRobotFront
	c, err := tenant.NewTFRobotFront(r.ctx, TenantTFRobotFront, r.appArgs(app.Image, app.AppSpec), o...)
	if err != nil {
		return nil, err
	}
	r.out.set(TenantOutputFrontURL, c.URL)
	return c, nil
}

func (r *tenantRegistrar) addTFRSUtils(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
	app := &r.spec.TFRSUtils
	return tenant.NewTFRSUtils(r.ctx, TenantTFRSUtils, r.appArgs(app.Image, app.AppSpec), o...)
}

// appArgs are a TFRobot application's arguments (front end and utils alike).
func (r *tenantRegistrar) appArgs(image string, a v1alpha1.AppSpec) *tenant.AppArgs {
	return &tenant.AppArgs{
		Namespace: r.ns, Image: r.p.image(image), Replicas: int(*a.Replicas),
		Resources: resources(a.Resources), PullSecret: r.pull,
	}
}
