package cluster

import (
	"fmt"

	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"

	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
	"github.com/tfrs-io/tfrs-operator/components/routing"
)

const (
	// APIVirtualServiceName is the VirtualService of api.<domain>.
	APIVirtualServiceName = "tfrs-api"
	// APIRouteName names its HTTP route; the routing EnvoyFilter patches the route by this
	// name.
	APIRouteName = "tfrs-api"
	// unroutedHost is the route's nominal destination. Istio needs one to generate the route;
	// the routing EnvoyFilter replaces it with the cluster the Lua filter picked, so traffic
	// never goes there (if the patch were missing, requests would fail with 503, not leak).
	unroutedHost = "tfrs-unrouted." + IngressNamespace + ".svc." + routing.ClusterDomain
)

// ClusterVirtualServiceArgs configure the cluster-virtualservice component.
type ClusterVirtualServiceArgs struct {
	// Domain of the cluster; the VirtualService serves APIHost(Domain).
	Domain string
	// Gateway is the "<namespace>/<name>" of the API Gateway.
	Gateway string
}

// ClusterVirtualService is the VirtualService that binds api.<domain> on the API Gateway to
// the route the routing filter steers.
type ClusterVirtualService struct {
	pulumi.ResourceState
	children.Set

	// Host served.
	Host pulumi.StringOutput `pulumi:"host"`
}

// NewClusterVirtualService creates the cluster-virtualservice component.
func NewClusterVirtualService(ctx *pulumi.Context, name string, args *ClusterVirtualServiceArgs, opts ...pulumi.ResourceOption) (*ClusterVirtualService, error) {
	if args == nil || args.Domain == "" || args.Gateway == "" {
		return nil, fmt.Errorf("cluster-virtualservice: domain and gateway are required")
	}
	c := &ClusterVirtualService{}
	if err := ctx.RegisterComponentResource(ClusterVirtualServiceType, name, c, opts...); err != nil {
		return nil, err
	}
	host := APIHost(args.Domain)
	vs, err := crs.New(ctx, name+"-virtualservice", crs.Args{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(APIVirtualServiceName), Namespace: pulumi.String(IngressNamespace)},
		Spec:     crs.SingleRouteVirtualService(host, args.Gateway, APIRouteName, unroutedHost, routing.UpstreamPort),
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	c.Keep(vs)
	c.Host = pulumi.String(host).ToStringOutput()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"host": c.Host})
}
