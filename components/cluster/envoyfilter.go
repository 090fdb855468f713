package cluster

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"

	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
	"github.com/tfrs-io/tfrs-operator/components/routing"
)

// EnvoyFilter names and priorities. Both Lua filters are inserted just before the router;
// Istio applies lower priorities first, so the cookie filter lands before the routing filter
// and the routing filter sees the headers the cookie filter set.
const (
	CookieFilterName     = "tfrs-cookie"
	RoutingFilterName    = "tfrs-lua-routing"
	cookieFilterPriority = 10
	routeFilterPriority  = 20
)

// EnvoyFilterArgs configure both Lua EnvoyFilter components.
type EnvoyFilterArgs struct {
	// Domain of the cluster; the filters act on APIHost(Domain) only.
	Domain string
	// Targets are the namespaces the routing filter refuses as no tenant's. Required by the
	// routing filter: without them it would route to every namespace, so it fails closed.
	Targets routing.Targets
}

// EnvoyFilterCookie lets a browser carry X-TF-Namespace, X-TF-RobotId, X-TF-RobotType and
// adminToken as cookies, refuses ambiguous ones, and drops Set-Cookies for those names from
// every response (see the rule at the top of components/routing/routing.lua).
type EnvoyFilterCookie struct {
	pulumi.ResourceState
	children.Set

	// Name of the EnvoyFilter.
	Name pulumi.StringOutput `pulumi:"name"`
}

// NewEnvoyFilterCookie creates the envoyfilter-cookie component.
func NewEnvoyFilterCookie(ctx *pulumi.Context, name string, args *EnvoyFilterArgs, opts ...pulumi.ResourceOption) (*EnvoyFilterCookie, error) {
	if args == nil || args.Domain == "" {
		return nil, fmt.Errorf("envoyfilter-cookie: domain is required")
	}
	code, err := routing.CookieFilterLua(APIHost(args.Domain))
	if err != nil {
		return nil, err
	}
	c := &EnvoyFilterCookie{}
	if err := ctx.RegisterComponentResource(EnvoyFilterCookieType, name, c, opts...); err != nil {
		return nil, err
	}
	ef, err := newEnvoyFilter(ctx, c, name+"-envoyfilter", CookieFilterName, cookieFilterPriority, crs.LuaFilterPatch("tfrs.cookie", code))
	if err != nil {
		return nil, err
	}
	c.Keep(ef)
	c.Name = ef.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": c.Name})
}

// EnvoyFilterLuaRouting enforces the routing contract and selects the upstream: a Lua filter
// (routing.lua) that answers 400 (ambiguous or invalid values, a reserved namespace) or sets
// routing.HeaderUpstreamCluster, and a route patch
// that makes the API route (APIRouteName, from the cluster-virtualservice component) take its
// cluster from that header.
type EnvoyFilterLuaRouting struct {
	pulumi.ResourceState
	children.Set

	// Name of the EnvoyFilter.
	Name pulumi.StringOutput `pulumi:"name"`
}

// NewEnvoyFilterLuaRouting creates the envoyfilter-lua-routing component.
func NewEnvoyFilterLuaRouting(ctx *pulumi.Context, name string, args *EnvoyFilterArgs, opts ...pulumi.ResourceOption) (*EnvoyFilterLuaRouting, error) {
	if args == nil || args.Domain == "" {
		return nil, fmt.Errorf("envoyfilter-lua-routing: domain is required")
	}
	code, err := routing.RoutingFilterLua(APIHost(args.Domain), args.Targets)
	if err != nil {
		return nil, err
	}
	c := &EnvoyFilterLuaRouting{}
	if err := ctx.RegisterComponentResource(EnvoyFilterLuaRoutingType, name, c, opts...); err != nil {
		return nil, err
	}
	ef, err := newEnvoyFilter(ctx, c, name+"-envoyfilter", RoutingFilterName, routeFilterPriority, crs.LuaFilterPatch("tfrs.routing", code), crs.ClusterHeaderPatch(APIRouteName, routing.HeaderUpstreamCluster))
	if err != nil {
		return nil, err
	}
	c.Keep(ef)
	c.Name = ef.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": c.Name})
}

func newEnvoyFilter(ctx *pulumi.Context, parent pulumi.Resource, name, k8sName string, priority int, patches ...crs.EnvoyConfigPatch) (*apiextensions.CustomResource, error) {
	return crs.New(ctx, name, crs.Args{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(k8sName), Namespace: pulumi.String(IngressNamespace)},
		Spec:     crs.EnvoyFilter(gatewayPods(), priority, patches...),
	}, pulumi.Parent(parent))
}
