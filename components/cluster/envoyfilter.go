package cluster

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

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
}

// EnvoyFilterCookie lets a browser carry X-TF-Namespace, X-TF-RobotId, X-TF-RobotType and
// adminToken as cookies (see components/routing/routing.lua).
type EnvoyFilterCookie struct {
	pulumi.ResourceState

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
	ef, err := newEnvoyFilter(ctx, c, name+"-envoyfilter", CookieFilterName, cookieFilterPriority, []any{luaPatch("tfrs.cookie", code)})
	if err != nil {
		return nil, err
	}
	c.Name = ef.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": c.Name})
}

// EnvoyFilterLuaRouting enforces the routing contract and selects the upstream: a Lua filter
// (routing.lua) that answers 400 or sets routing.HeaderUpstreamCluster, and a route patch
// that makes the API route (APIRouteName, from the cluster-virtualservice component) take its
// cluster from that header.
type EnvoyFilterLuaRouting struct {
	pulumi.ResourceState

	// Name of the EnvoyFilter.
	Name pulumi.StringOutput `pulumi:"name"`
}

// NewEnvoyFilterLuaRouting creates the envoyfilter-lua-routing component.
func NewEnvoyFilterLuaRouting(ctx *pulumi.Context, name string, args *EnvoyFilterArgs, opts ...pulumi.ResourceOption) (*EnvoyFilterLuaRouting, error) {
	if args == nil || args.Domain == "" {
		return nil, fmt.Errorf("envoyfilter-lua-routing: domain is required")
	}
	code, err := routing.RoutingFilterLua(APIHost(args.Domain))
	if err != nil {
		return nil, err
	}
	c := &EnvoyFilterLuaRouting{}
	if err := ctx.RegisterComponentResource(EnvoyFilterLuaRoutingType, name, c, opts...); err != nil {
		return nil, err
	}
	routePatch := map[string]any{
		"applyTo": "HTTP_ROUTE",
		"match": map[string]any{
			"context":            "GATEWAY",
			"routeConfiguration": map[string]any{"vhost": map[string]any{"route": map[string]any{"name": APIRouteName}}},
		},
		"patch": map[string]any{
			// cluster_header is in the same oneof as the cluster Istio generated for the
			// VirtualService's placeholder destination, so MERGE replaces it.
			"operation": "MERGE",
			"value":     map[string]any{"route": map[string]any{"cluster_header": routing.HeaderUpstreamCluster}},
		},
	}
	ef, err := newEnvoyFilter(ctx, c, name+"-envoyfilter", RoutingFilterName, routeFilterPriority, []any{luaPatch("tfrs.routing", code), routePatch})
	if err != nil {
		return nil, err
	}
	c.Name = ef.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": c.Name})
}

// luaPatch inserts an Envoy Lua HTTP filter before the router of the gateway's listeners.
func luaPatch(filterName, code string) map[string]any {
	return map[string]any{
		"applyTo": "HTTP_FILTER",
		"match": map[string]any{
			"context": "GATEWAY",
			"listener": map[string]any{"filterChain": map[string]any{"filter": map[string]any{
				"name":      "envoy.filters.network.http_connection_manager",
				"subFilter": map[string]any{"name": "envoy.filters.http.router"},
			}}},
		},
		"patch": map[string]any{
			"operation": "INSERT_BEFORE",
			"value": map[string]any{
				"name": filterName,
				"typed_config": map[string]any{
					"@type":               "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua",
					"default_source_code": map[string]any{"inline_string": code},
				},
			},
		},
	}
}

func newEnvoyFilter(ctx *pulumi.Context, parent pulumi.Resource, name, k8sName string, priority int, patches []any) (*apiextensions.CustomResource, error) {
	return apiextensions.NewCustomResource(ctx, name, &apiextensions.CustomResourceArgs{
		ApiVersion: pulumi.String(istioNetworkingV1alpha3),
		Kind:       pulumi.String("EnvoyFilter"),
		Metadata:   &metav1.ObjectMetaArgs{Name: pulumi.String(k8sName), Namespace: pulumi.String(IngressNamespace)},
		OtherFields: map[string]any{
			"spec": map[string]any{
				"workloadSelector": map[string]any{"labels": map[string]any{IngressSelectorLabel: IngressSelectorValue}},
				"priority":         priority,
				"configPatches":    patches,
			},
		},
	}, pulumi.Parent(parent))
}
