package stacks

import (
	"errors"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// Node ids of the cluster graph (the seeds' TFRCluster deployment order). They are the
// Pulumi names of the components and what `tfrs graph` prints.
const (
	ClusterCertManager           = "cert-manager"
	ClusterIstio                 = "istio"
	ClusterIstioIngress          = "istio-ingress"
	ClusterGateway               = "gateway"
	ClusterEnvoyFilterCookie     = "envoyfilter-cookie"
	ClusterEnvoyFilterLuaRouting = "envoyfilter-lua-routing"
	ClusterVirtualService        = "cluster-virtualservice"
	ClusterIstioTelemetry        = "istio-telemetry"
	ClusterCNPGOperator          = "cnpg-operator"
	ClusterMinIOOperator         = "minio-operator"
	ClusterRabbitMQOperator      = "rabbitmq-operator"
	ClusterImageRegistry         = "image-registry"
	ClusterOwnership             = "ownership-policy"
)

// clusterDependsOn is the graph: for each component, the components it waits for. The three
// operators and image-registry wait for nothing and install in parallel with the chain.
//
// Removal rule: a component is installed when it is enabled and everything it depends on is
// installed. So disabling a component removes it and, transitively, its dependants (disabling
// istio removes istio-ingress, gateway, both EnvoyFilters, the VirtualService and the
// Telemetry; disabling cert-manager removes all of those and istio). The program never
// creates a resource whose CRD, controller or order it cannot guarantee, and a later `up`
// deletes what a disabled component had installed.
var clusterDependsOn = map[string][]string{
	ClusterIstio:                 {ClusterCertManager},
	ClusterIstioIngress:          {ClusterIstio},
	ClusterGateway:               {ClusterIstioIngress},
	ClusterEnvoyFilterCookie:     {ClusterIstio},
	ClusterEnvoyFilterLuaRouting: {ClusterIstio},
	ClusterVirtualService:        {ClusterGateway, ClusterEnvoyFilterCookie},
	ClusterIstioTelemetry:        {ClusterIstio},
}

// Settings of the cluster program that the TFRCluster spec does not carry.
const (
	// ClusterIssuerName is the ClusterIssuer that signs the API certificate.
	ClusterIssuerName = "tfrs"
	// PullSecretNamespace holds the source copy of the pull Secret. "default" always exists
	// and belongs to no component, so no namespace changes hands.
	PullSecretNamespace = clusterns.PullSecret
	// The mesh tracing provider (OTLP/gRPC) the Telemetry sends spans to.
	clusterTracingProvider = "tfrs-otel"
	clusterTracingService  = "otel-collector." + cluster.IstioNamespace + ".svc.cluster.local"
	clusterTracingPort     = 4317
	clusterTracingSampling = 1.0
)

// ClusterInput is what the cluster program needs.
type ClusterInput struct {
	// Cluster is the TFRCluster; it is defaulted and validated (on a copy) before use.
	Cluster *v1alpha1.TFRCluster
	// Graph, when set, receives the components as the program registers them (see
	// ClusterGraph).
	Graph *Graph
	// APIServer is where the cluster's API server answers, read by the runner (egress.go);
	// empty when nothing could read it (rendering, mocks): no tenant pod gets an allow to it.
	APIServer APIServer
}

// ClusterGraph runs the cluster program under Pulumi mocks (no engine, no cluster) and returns
// the components it registers with their DependsOn edges, and the ones it skipped.
func ClusterGraph(tc *v1alpha1.TFRCluster) (*Graph, error) {
	if tc == nil {
		return nil, errors.New("cluster graph: nil TFRCluster")
	}
	return mockGraph("cluster."+tc.Name, graphMocks{secretKeys: registrySecretKeys(tc)}, func(g *Graph) pulumi.RunFunc {
		return Cluster(ClusterInput{Cluster: tc, Graph: g})
	})
}

// registrySecretKeys are the keys of Secrets the program reads.
func registrySecretKeys(tc *v1alpha1.TFRCluster) []string {
	c := tc.DeepCopy()
	c.Default()
	if r := c.Spec.ImageRegistry; r != nil && r.Credentials != nil && r.Credentials.PasswordSecretRef != nil {
		return []string{r.Credentials.PasswordSecretRef.Key}
	}
	return nil
}

// Cluster is the cluster stack's program.
func Cluster(in ClusterInput) pulumi.RunFunc { return runProgram(in, clusterProgram) }

// clusterProgram registers the components and returns the stack outputs.
func clusterProgram(ctx *pulumi.Context, in ClusterInput) (pulumi.Map, error) {
	tc, err := prepare(stackname.LevelCluster, "TFRCluster", in.Cluster, in.Graph)
	if err != nil {
		return nil, err
	}
	p, err := planCluster(tc)
	if err != nil {
		return nil, err
	}
	p.apiServer = in.APIServer
	if r := p.registry; r != nil && r.PasswordFrom != nil && program.Rendering(ctx) {
		// No cluster to read the password Secret from: the rendered pull Secret carries a
		// placeholder naming it (`tfrs render` says so; --omit-secrets drops the Secret).
		ref := r.PasswordFrom
		r.Password, r.PasswordFrom = program.RenderPlaceholder("Secret "+ref.Namespace+"/"+ref.Name+" key "+ref.Key), nil
	}
	c := &clusterComponents{}
	if err := newGraphBuilder(in.Graph, clusterDependsOn).register(c.steps(ctx, &tc.Spec, p)); err != nil {
		return nil, err
	}
	return c.outputs(&tc.Spec, p), nil
}

// clusterComponents are the components whose outputs the stack exports, set by their steps
// (nil: not installed).
type clusterComponents struct {
	ingress  *cluster.IstioIngress
	cnpg     *cluster.CNPGOperator
	minio    *cluster.MinIOOperator
	rabbitmq *cluster.RabbitMQOperator
	registry *cluster.ImageRegistry
}

// steps are the cluster's components in registration order.
func (c *clusterComponents) steps(ctx *pulumi.Context, spec *v1alpha1.TFRClusterSpec, p *clusterPlan) []step {
	return []step{
		{ClusterCertManager, cluster.CertManagerType, unlessEnabled(spec.CertManager.IsEnabled()), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewCertManager(ctx, ClusterCertManager, p.certManager, o...)
		}},
		{ClusterIstio, cluster.IstioType, unlessEnabled(spec.Istio.IsEnabled()), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewIstio(ctx, ClusterIstio, p.istio, o...)
		}},
		{ClusterIstioIngress, cluster.IstioIngressType, unlessEnabled(spec.IstioIngress.IsEnabled()), func(o ...pulumi.ResourceOption) (r pulumi.Resource, err error) {
			c.ingress, err = cluster.NewIstioIngress(ctx, ClusterIstioIngress, p.istioIngress, o...)
			return c.ingress, err
		}},
		{ClusterGateway, cluster.GatewayType, "", func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewGateway(ctx, ClusterGateway, p.gateway, o...)
		}},
		{ClusterEnvoyFilterCookie, cluster.EnvoyFilterCookieType, "", func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewEnvoyFilterCookie(ctx, ClusterEnvoyFilterCookie, p.envoyFilters, o...)
		}},
		{ClusterEnvoyFilterLuaRouting, cluster.EnvoyFilterLuaRoutingType, "", func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewEnvoyFilterLuaRouting(ctx, ClusterEnvoyFilterLuaRouting, p.envoyFilters, o...)
		}},
		{ClusterVirtualService, cluster.ClusterVirtualServiceType, "", func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewClusterVirtualService(ctx, ClusterVirtualService, p.virtualService, o...)
		}},
		{ClusterIstioTelemetry, cluster.IstioTelemetryType, "", func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewIstioTelemetry(ctx, ClusterIstioTelemetry, p.telemetry, o...)
		}},
		{ClusterCNPGOperator, cluster.CNPGOperatorType, unlessEnabled(spec.CNPGOperator.IsEnabled()), func(o ...pulumi.ResourceOption) (r pulumi.Resource, err error) {
			c.cnpg, err = cluster.NewCNPGOperator(ctx, ClusterCNPGOperator, p.cnpg, o...)
			return c.cnpg, err
		}},
		{ClusterMinIOOperator, cluster.MinIOOperatorType, unlessEnabled(spec.MinIOOperator.IsEnabled()), func(o ...pulumi.ResourceOption) (r pulumi.Resource, err error) {
			c.minio, err = cluster.NewMinIOOperator(ctx, ClusterMinIOOperator, p.minio, o...)
			return c.minio, err
		}},
		{ClusterRabbitMQOperator, cluster.RabbitMQOperatorType, unlessEnabled(spec.RabbitMQOperator.IsEnabled()), func(o ...pulumi.ResourceOption) (r pulumi.Resource, err error) {
			c.rabbitmq, err = cluster.NewRabbitMQOperator(ctx, ClusterRabbitMQOperator, p.rabbitmq, o...)
			return c.rabbitmq, err
		}},
		{ClusterImageRegistry, cluster.ImageRegistryType, unlessEnabled(p.registry != nil), func(o ...pulumi.ResourceOption) (r pulumi.Resource, err error) {
			c.registry, err = cluster.NewImageRegistry(ctx, ClusterImageRegistry, p.registry, o...)
			return c.registry, err
		}},
		{ClusterOwnership, cluster.OwnershipType, "", func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewOwnership(ctx, ClusterOwnership, OwnershipArgs(p.pullSecretName()), o...)
		}},
	}
}

// outputs are the stack outputs: every key, zero values for what is not installed.
func (c *clusterComponents) outputs(spec *v1alpha1.TFRClusterSpec, p *clusterPlan) pulumi.Map {
	out := newExports((&ClusterOutputs{
		Domain: spec.Domain, APIHost: cluster.APIHost(spec.Domain), IngressMode: string(spec.Ingress.Mode),
		ImageRegistry: p.imageMirror, ReservedNamespaces: reservedOutput(spec, p),
		Personal: p.personal, Tenancy: tenancyOutput(&spec.Tenancy),
		Egress:                     egressOutputOf(&spec.Egress, p.apiServer),
		TenantPullSecretsNamespace: OptionalString(p.tenantPullSecrets),
		PullSecretName:             p.tenantPullSecretName,
	}).fields())
	if i := c.ingress; i != nil {
		out.set(ClusterOutputIngressAddress, i.Address)
		out.set(ClusterOutputIngressHTTPPort, i.HTTPPort)
		out.set(ClusterOutputIngressHTTPSPort, i.HTTPSPort)
	}
	if r := c.registry; r != nil {
		out.set(ClusterOutputPullSecretName, r.SecretName)
		out.set(ClusterOutputPullSecretNamespace, pulumi.String(p.registry.Namespace))
		out.set(ClusterOutputDockerConfigJSON, r.DockerConfigJSON)
	}
	if c.cnpg != nil {
		out.set(ClusterOutputCNPGOperatorReady, c.cnpg.Ready)
	}
	if c.minio != nil {
		out.set(ClusterOutputMinIOOperatorReady, c.minio.Ready)
	}
	if c.rabbitmq != nil {
		out.set(ClusterOutputRabbitMQOperatorReady, c.rabbitmq.Ready)
	}
	return out.m
}

// clusterPlan is every component's arguments, computed from the spec before anything is
// registered, so a bad override fails the run before it touches the cluster.
type clusterPlan struct {
	imageMirror    string
	certManager    *cluster.CertManagerArgs
	istio          *cluster.IstioArgs
	istioIngress   *cluster.IstioIngressArgs
	gateway        *cluster.GatewayArgs
	envoyFilters   *cluster.EnvoyFilterArgs
	virtualService *cluster.ClusterVirtualServiceArgs
	telemetry      *cluster.IstioTelemetryArgs
	cnpg           *cluster.CNPGOperatorArgs
	minio          *cluster.MinIOOperatorArgs
	rabbitmq       *cluster.RabbitMQOperatorArgs
	registry       *cluster.ImageRegistryArgs // nil: no credentials, no pull Secret
	personal       OptionalString             // spec.personal as JSON (personal_middleware.go)
	apiServer      APIServer                  // the input's (egress.go)
	// tenantPullSecrets is spec.imageRegistry.tenantCredentialsNamespace and
	// tenantPullSecretName the pull Secret's name in tenant namespaces (shared or own).
	tenantPullSecrets, tenantPullSecretName string
}

func planCluster(tc *v1alpha1.TFRCluster) (*clusterPlan, error) {
	s := &tc.Spec
	p := &clusterPlan{}
	personal, err := encodePersonal(&s.Personal)
	if err != nil {
		return nil, err
	}
	p.personal = personal
	if r := s.ImageRegistry; r != nil {
		p.imageMirror = r.Registry
	}
	var rewrite cluster.ImageRewriter
	if p.imageMirror != "" {
		mirror := p.imageMirror
		rewrite = func(img string) string { return MirrorImage(mirror, img) }
	}

	// Sources are resolved for every component, enabled or not, so a bad override is
	// reported even while its component is off.
	cm, err := resolveCharts(ClusterCertManager, s.CertManager, p.imageMirror)
	if err != nil {
		return nil, err
	}
	istio, err := resolveCharts(ClusterIstio, s.Istio, p.imageMirror)
	if err != nil {
		return nil, err
	}
	// The gateway's proxy must match istiod: the ingress chart follows Istio's version
	// override unless it has its own.
	ingressSrc := s.IstioIngress
	if ingressSrc.Version == "" {
		ingressSrc.Version = s.Istio.Version
	}
	gw, err := resolveCharts(ClusterIstioIngress, ingressSrc, p.imageMirror)
	if err != nil {
		return nil, err
	}
	cnpg, err := resolveManifests(ClusterCNPGOperator, s.CNPGOperator)
	if err != nil {
		return nil, err
	}
	minio, err := resolveCharts(ClusterMinIOOperator, s.MinIOOperator, p.imageMirror)
	if err != nil {
		return nil, err
	}
	rabbit, err := resolveManifests(ClusterRabbitMQOperator, s.RabbitMQOperator)
	if err != nil {
		return nil, err
	}

	p.certManager = &cluster.CertManagerArgs{Chart: cm[0], IssuerName: ClusterIssuerName, Issuer: cluster.IssuerKind(s.TLS.Issuer)}
	if a := s.TLS.ACME; a != nil {
		p.certManager.ACMEEmail, p.certManager.ACMEServer = a.Email, a.Server
	}
	if ca := s.TLS.CA; ca != nil {
		p.certManager.CASecretName = ca.SecretName
	}
	p.istio = &cluster.IstioArgs{
		Base: istio[0], Istiod: istio[1], CNI: istio[2],
		IngressService: cluster.IngressService, IngressSelector: cluster.IngressSelectorValue,
		Tracing: cluster.TracingProvider{Name: clusterTracingProvider, Service: clusterTracingService, Port: clusterTracingPort},
	}
	httpPort, httpsPort := s.Ingress.NodePorts()
	p.istioIngress = &cluster.IstioIngressArgs{
		Chart: gw[0], Mode: cluster.IngressMode(s.Ingress.Mode), ServiceAnnotations: s.Ingress.ServiceAnnotations,
		HTTPNodePort: int(httpPort), HTTPSNodePort: int(httpsPort),
	}
	p.gateway = &cluster.GatewayArgs{
		Domain: s.Domain, IssuerName: ClusterIssuerName,
		// ACME proves names over HTTP-01, which cannot prove a wildcard.
		Wildcard: s.TLS.Issuer != v1alpha1.TLSACME,
	}
	p.envoyFilters = &cluster.EnvoyFilterArgs{Domain: s.Domain, Targets: RoutingTargets(s)} // routing.go
	p.virtualService = &cluster.ClusterVirtualServiceArgs{Domain: s.Domain, Gateway: cluster.GatewayRef()}
	p.telemetry = &cluster.IstioTelemetryArgs{TracingProvider: clusterTracingProvider, SamplingPercent: clusterTracingSampling}
	p.cnpg = &cluster.CNPGOperatorArgs{Manifest: cnpg[0], Images: rewrite}
	p.minio = &cluster.MinIOOperatorArgs{Chart: minio[0]}
	p.rabbitmq = &cluster.RabbitMQOperatorArgs{ClusterOperator: rabbit[0], TopologyOperator: rabbit[1], Images: rewrite}

	if r := s.ImageRegistry; r != nil {
		p.tenantPullSecrets, p.tenantPullSecretName = r.TenantCredentialsNamespace, r.TenantPullSecretName()
	}
	if r := s.ImageRegistry; r != nil && r.Credentials != nil {
		c := r.Credentials
		p.registry = &cluster.ImageRegistryArgs{
			Namespace: PullSecretNamespace, SecretName: c.PullSecretName(),
			Server: c.Server, Username: c.Username, Password: c.Password,
		}
		if ref := c.PasswordSecretRef; ref != nil {
			p.registry.PasswordFrom = &cluster.SecretKeySelector{Namespace: ref.Namespace, Name: ref.Name, Key: ref.Key}
		}
	}
	return p, nil
}

// reservedOutput is ClusterOutputReservedNamespaces: the spec's reserved namespaces and the
// per-tenant pull credentials' namespace, which a tenant that took it could read.
func reservedOutput(spec *v1alpha1.TFRClusterSpec, p *clusterPlan) []string {
	out := slices.Clone(spec.ReservedNamespaces)
	if p.tenantPullSecrets != "" {
		out = append(out, p.tenantPullSecrets)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
