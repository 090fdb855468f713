package stacks

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/cluster"
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

// Output keys of the cluster stack. Every key is always exported; a component that is not
// installed exports its zero value (empty, 0, false).
const (
	ClusterOutputDomain           = "domain"
	ClusterOutputAPIHost          = "apiHost"
	ClusterOutputIngressMode      = "ingressMode"
	ClusterOutputIngressAddress   = "ingressAddress"   // "" in NodePort mode (any node)
	ClusterOutputIngressHTTPPort  = "ingressHTTPPort"  // node port in NodePort mode, else 80
	ClusterOutputIngressHTTPSPort = "ingressHTTPSPort" // node port in NodePort mode, else 443
	ClusterOutputImageRegistry    = "imageRegistry"    // image mirror prefix, "" for upstream
	ClusterOutputPullSecretName   = "pullSecretName"
	// ClusterOutputPullSecretNamespace is where the source copy of the pull Secret lives.
	ClusterOutputPullSecretNamespace = "pullSecretNamespace"
	// ClusterOutputDockerConfigJSON is the pull Secret's .dockerconfigjson (secret output);
	// tenant stacks write it into their namespaces.
	ClusterOutputDockerConfigJSON      = "dockerConfigJSON"
	ClusterOutputCNPGOperatorReady     = "cnpgOperatorReady"
	ClusterOutputMinIOOperatorReady    = "minioOperatorReady"
	ClusterOutputRabbitMQOperatorReady = "rabbitmqOperatorReady"
)

// Settings of the cluster program that the TFRCluster spec does not carry.
const (
	// ClusterIssuerName is the ClusterIssuer that signs the API certificate.
	ClusterIssuerName = "tfrs"
	// PullSecretNamespace holds the source copy of the pull Secret. "default" always exists
	// and belongs to no component, so no namespace changes hands.
	PullSecretNamespace = "default"
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
}

// GraphNode is a component of a stack's graph.
type GraphNode struct {
	// ID is the node id, e.g. "istio".
	ID string `json:"id"`
	// Type is the component's Pulumi type token, e.g. "tfrs:cluster:Istio".
	Type string `json:"type"`
	// DependsOn are the ids of the components it waits for.
	DependsOn []string `json:"dependsOn,omitempty"`
	// External marks a node of another stack that this one waits for (a gate the program
	// checks before registering anything, e.g. the cluster's RabbitMQ operator for a
	// tenant). It is not registered by this stack.
	External bool `json:"external,omitempty"`
}

// GraphSkip is a component the program did not install, and why.
type GraphSkip struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// GraphEdge From -> To: To waits for From.
type GraphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Graph is the component graph a program registered, in registration order.
type Graph struct {
	Nodes   []GraphNode `json:"nodes"`
	Skipped []GraphSkip `json:"skipped,omitempty"`
}

// Edges lists every edge, sorted.
func (g *Graph) Edges() []GraphEdge {
	var out []GraphEdge
	for _, n := range g.Nodes {
		for _, d := range n.DependsOn {
			out = append(out, GraphEdge{From: d, To: n.ID})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return out[i].From < out[j].From
		}
		return out[i].To < out[j].To
	})
	return out
}

// ClusterGraph runs the cluster program under Pulumi mocks (no engine, no cluster) and returns
// the components it registers with their DependsOn edges, and the ones it skipped.
func ClusterGraph(tc *v1alpha1.TFRCluster) (*Graph, error) {
	if tc == nil {
		return nil, errors.New("cluster graph: nil TFRCluster")
	}
	g := &Graph{}
	err := pulumi.RunErr(Cluster(ClusterInput{Cluster: tc, Graph: g}),
		pulumi.WithMocks("tfrs", "cluster."+tc.Name, graphMocks{secretKeys: registrySecretKeys(tc)}))
	if err != nil {
		return nil, err
	}
	return g, nil
}

// graphMocks answer every registration with its inputs. A read Secret (the registry password)
// gets placeholder data under the keys the program will look up, since nothing real is read.
type graphMocks struct{ secretKeys []string }

func (m graphMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	if args.ReadRPC != nil && args.TypeToken == "kubernetes:core/v1:Secret" {
		data := resource.PropertyMap{}
		for _, k := range m.secretKeys {
			data[resource.PropertyKey(k)] = resource.NewProperty("cGxhY2Vob2xkZXI=") // "placeholder"
		}
		return args.ID, resource.PropertyMap{"data": resource.NewProperty(data)}, nil
	}
	return args.Name, args.Inputs, nil
}

func (graphMocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
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
func Cluster(in ClusterInput) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		if err := awaitTransforms(ctx); err != nil {
			return err
		}
		outputs, err := clusterProgram(ctx, in)
		if err != nil {
			return err
		}
		for k, v := range outputs {
			ctx.Export(k, v)
		}
		return nil
	}
}

// clusterProgram registers the components and returns the stack outputs.
func clusterProgram(ctx *pulumi.Context, in ClusterInput) (pulumi.Map, error) {
	if in.Cluster == nil {
		return nil, errors.New("cluster program: nil TFRCluster")
	}
	tc := in.Cluster.DeepCopy()
	tc.Default()
	if errs := tc.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid TFRCluster %q: %w", tc.Name, errs.ToAggregate())
	}
	p, err := planCluster(tc)
	if err != nil {
		return nil, err
	}
	if in.Graph != nil {
		*in.Graph = Graph{}
	}
	b := &graphBuilder{graph: in.Graph, built: map[string]pulumi.Resource{}, seen: map[string]bool{}, dependsOn: clusterDependsOn}
	spec := &tc.Spec

	var (
		ingress  *cluster.IstioIngress
		cnpg     *cluster.CNPGOperator
		minio    *cluster.MinIOOperator
		rabbitmq *cluster.RabbitMQOperator
		registry *cluster.ImageRegistry
	)
	steps := []struct {
		id, typ string
		enabled bool
		create  func(opts ...pulumi.ResourceOption) (pulumi.Resource, error)
	}{
		{ClusterCertManager, cluster.CertManagerType, spec.CertManager.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewCertManager(ctx, ClusterCertManager, p.certManager, o...)
		}},
		{ClusterIstio, cluster.IstioType, spec.Istio.IsEnabled(), func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewIstio(ctx, ClusterIstio, p.istio, o...)
		}},
		{ClusterIstioIngress, cluster.IstioIngressType, spec.IstioIngress.IsEnabled(), func(o ...pulumi.ResourceOption) (r pulumi.Resource, err error) {
			ingress, err = cluster.NewIstioIngress(ctx, ClusterIstioIngress, p.istioIngress, o...)
			return ingress, err
		}},
		{ClusterGateway, cluster.GatewayType, true, func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewGateway(ctx, ClusterGateway, p.gateway, o...)
		}},
		{ClusterEnvoyFilterCookie, cluster.EnvoyFilterCookieType, true, func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewEnvoyFilterCookie(ctx, ClusterEnvoyFilterCookie, p.envoyFilters, o...)
		}},
		{ClusterEnvoyFilterLuaRouting, cluster.EnvoyFilterLuaRoutingType, true, func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewEnvoyFilterLuaRouting(ctx, ClusterEnvoyFilterLuaRouting, p.envoyFilters, o...)
		}},
		{ClusterVirtualService, cluster.ClusterVirtualServiceType, true, func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewClusterVirtualService(ctx, ClusterVirtualService, p.virtualService, o...)
		}},
		{ClusterIstioTelemetry, cluster.IstioTelemetryType, true, func(o ...pulumi.ResourceOption) (pulumi.Resource, error) {
			return cluster.NewIstioTelemetry(ctx, ClusterIstioTelemetry, p.telemetry, o...)
		}},
		{ClusterCNPGOperator, cluster.CNPGOperatorType, spec.CNPGOperator.IsEnabled(), func(o ...pulumi.ResourceOption) (r pulumi.Resource, err error) {
			cnpg, err = cluster.NewCNPGOperator(ctx, ClusterCNPGOperator, p.cnpg, o...)
			return cnpg, err
		}},
		{ClusterMinIOOperator, cluster.MinIOOperatorType, spec.MinIOOperator.IsEnabled(), func(o ...pulumi.ResourceOption) (r pulumi.Resource, err error) {
			minio, err = cluster.NewMinIOOperator(ctx, ClusterMinIOOperator, p.minio, o...)
			return minio, err
		}},
		{ClusterRabbitMQOperator, cluster.RabbitMQOperatorType, spec.RabbitMQOperator.IsEnabled(), func(o ...pulumi.ResourceOption) (r pulumi.Resource, err error) {
			rabbitmq, err = cluster.NewRabbitMQOperator(ctx, ClusterRabbitMQOperator, p.rabbitmq, o...)
			return rabbitmq, err
		}},
		{ClusterImageRegistry, cluster.ImageRegistryType, p.registry != nil, func(o ...pulumi.ResourceOption) (r pulumi.Resource, err error) {
			registry, err = cluster.NewImageRegistry(ctx, ClusterImageRegistry, p.registry, o...)
			return registry, err
		}},
	}
	for _, s := range steps {
		if err := b.add(s.id, s.typ, s.enabled, s.create); err != nil {
			return nil, err
		}
	}
	return clusterOutputs(spec, p, ingress, registry, cnpg, minio, rabbitmq), nil
}

// clusterOutputs are the stack outputs (every key, zero values for what is not installed).
func clusterOutputs(spec *v1alpha1.TFRClusterSpec, p *clusterPlan, ingress *cluster.IstioIngress, registry *cluster.ImageRegistry,
	cnpg *cluster.CNPGOperator, minio *cluster.MinIOOperator, rabbitmq *cluster.RabbitMQOperator,
) pulumi.Map {
	out := pulumi.Map{
		ClusterOutputDomain:                pulumi.String(spec.Domain),
		ClusterOutputAPIHost:               pulumi.String(cluster.APIHost(spec.Domain)),
		ClusterOutputIngressMode:           pulumi.String(string(spec.Ingress.Mode)),
		ClusterOutputIngressAddress:        pulumi.String(""),
		ClusterOutputIngressHTTPPort:       pulumi.Int(0),
		ClusterOutputIngressHTTPSPort:      pulumi.Int(0),
		ClusterOutputImageRegistry:         pulumi.String(p.imageMirror),
		ClusterOutputPullSecretName:        pulumi.String(""),
		ClusterOutputPullSecretNamespace:   pulumi.String(""),
		ClusterOutputDockerConfigJSON:      pulumi.ToSecret(pulumi.String("")),
		ClusterOutputCNPGOperatorReady:     readyOutput(cnpg, func(c *cluster.CNPGOperator) pulumi.BoolOutput { return c.Ready }),
		ClusterOutputMinIOOperatorReady:    readyOutput(minio, func(c *cluster.MinIOOperator) pulumi.BoolOutput { return c.Ready }),
		ClusterOutputRabbitMQOperatorReady: readyOutput(rabbitmq, func(c *cluster.RabbitMQOperator) pulumi.BoolOutput { return c.Ready }),
	}
	if ingress != nil {
		out[ClusterOutputIngressAddress] = ingress.Address
		out[ClusterOutputIngressHTTPPort] = ingress.HTTPPort
		out[ClusterOutputIngressHTTPSPort] = ingress.HTTPSPort
	}
	if registry != nil {
		out[ClusterOutputPullSecretName] = registry.SecretName
		out[ClusterOutputPullSecretNamespace] = pulumi.String(p.registry.Namespace)
		out[ClusterOutputDockerConfigJSON] = registry.DockerConfigJSON
	}
	return out
}

func readyOutput[T any](c *T, ready func(*T) pulumi.BoolOutput) pulumi.BoolInput {
	if c == nil {
		return pulumi.Bool(false)
	}
	return ready(c)
}

// graphBuilder registers components with DependsOn on the components its dependsOn table
// names (clusterDependsOn, tenantDependsOn), applying the removal rule, and records the graph.
type graphBuilder struct {
	graph     *Graph
	built     map[string]pulumi.Resource
	seen      map[string]bool
	dependsOn map[string][]string
	// external are dependencies on other stacks: recorded in the graph, checked by the
	// program before anything is registered, never passed to DependsOn.
	external map[string]bool
}

// childLister is a component that names its direct children. Pulumi's Go SDK attaches
// children to a component asynchronously, so DependsOn on the component alone can miss the
// ones attached a moment late; depending on the listed children as well cannot.
type childLister interface{ Children() []pulumi.Resource }

func (b *graphBuilder) add(id, typ string, enabled bool, create func(...pulumi.ResourceOption) (pulumi.Resource, error)) error {
	b.seen[id] = true
	deps := b.dependsOn[id]
	reason := ""
	if !enabled {
		reason = "disabled"
	}
	var after []pulumi.Resource
	for _, d := range deps {
		if b.external[d] {
			continue
		}
		if !b.seen[d] {
			// A step listed before its dependency would silently lose it; fail loudly.
			return fmt.Errorf("graph: %s is registered before %s, which it depends on", id, d)
		}
		r, ok := b.built[d]
		if !ok && reason == "" {
			reason = "depends on " + d + ", which is not installed"
		}
		after = append(after, r)
		if cl, ok := r.(childLister); ok {
			after = append(after, cl.Children()...)
		}
	}
	if reason != "" {
		if b.graph != nil {
			b.graph.Skipped = append(b.graph.Skipped, GraphSkip{ID: id, Reason: reason})
		}
		return nil
	}
	var opts []pulumi.ResourceOption
	if len(after) > 0 {
		opts = append(opts, pulumi.DependsOn(after))
	}
	r, err := create(opts...)
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	b.built[id] = r
	if b.graph != nil {
		b.graph.Nodes = append(b.graph.Nodes, GraphNode{ID: id, Type: typ, DependsOn: slices.Clone(deps)})
	}
	return nil
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
}

func planCluster(tc *v1alpha1.TFRCluster) (*clusterPlan, error) {
	s := &tc.Spec
	p := &clusterPlan{}
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
		Base: istio[0], Istiod: istio[1],
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
	p.envoyFilters = &cluster.EnvoyFilterArgs{Domain: s.Domain}
	p.virtualService = &cluster.ClusterVirtualServiceArgs{Domain: s.Domain, Gateway: cluster.GatewayRef()}
	p.telemetry = &cluster.IstioTelemetryArgs{TracingProvider: clusterTracingProvider, SamplingPercent: clusterTracingSampling}
	p.cnpg = &cluster.CNPGOperatorArgs{Manifest: cnpg[0], Images: rewrite}
	p.minio = &cluster.MinIOOperatorArgs{Chart: minio[0]}
	p.rabbitmq = &cluster.RabbitMQOperatorArgs{ClusterOperator: rabbit[0], TopologyOperator: rabbit[1], Images: rewrite}

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
