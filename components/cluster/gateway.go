package cluster

import (
	"fmt"

	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"

	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
)

// Names of the API entry. The Gateway and the certificate Secret live in IngressNamespace:
// Istio reads a gateway's TLS Secret from the namespace of the gateway pods.
const (
	APIGatewayName   = "tfrs-api"
	APITLSSecretName = "tfrs-api-tls"
	apiCertName      = "tfrs-api"
)

// APIHost is the host of the TFRobot API: "api.<domain>".
func APIHost(domain string) string { return "api." + domain }

// gatewayPods selects the ingress gateway pods (the Gateway's and EnvoyFilters' selector).
func gatewayPods() map[string]string {
	return map[string]string{IngressSelectorLabel: IngressSelectorValue}
}

// GatewayRef is how a VirtualService names the API Gateway: "<namespace>/<name>".
func GatewayRef() string { return IngressNamespace + "/" + APIGatewayName }

// GatewayArgs configure the gateway component.
type GatewayArgs struct {
	// Domain of the cluster; the Gateway serves APIHost(Domain).
	Domain string
	// IssuerName is the ClusterIssuer that signs the certificate (from the cert-manager
	// component).
	IssuerName string
	// Wildcard adds *.<domain> to the certificate. Not with ACME HTTP-01, which cannot prove
	// wildcard names.
	Wildcard bool
}

// Gateway is the Istio Gateway for api.<domain>: HTTPS with the cert-manager certificate it
// requests, and HTTP answered with a redirect to HTTPS.
type Gateway struct {
	pulumi.ResourceState
	children.Set

	// Host served, "api.<domain>".
	Host pulumi.StringOutput `pulumi:"host"`
	// GatewayRef is "<namespace>/<name>" of the Istio Gateway.
	GatewayRef pulumi.StringOutput `pulumi:"gatewayRef"`
	// TLSSecretName is the Secret cert-manager writes the certificate to.
	TLSSecretName pulumi.StringOutput `pulumi:"tlsSecretName"`
}

// NewGateway creates the gateway component.
func NewGateway(ctx *pulumi.Context, name string, args *GatewayArgs, opts ...pulumi.ResourceOption) (*Gateway, error) {
	if args == nil || args.Domain == "" || args.IssuerName == "" {
		return nil, fmt.Errorf("gateway: domain and issuer name are required")
	}
	c := &Gateway{}
	if err := ctx.RegisterComponentResource(GatewayType, name, c, opts...); err != nil {
		return nil, err
	}
	host := APIHost(args.Domain)
	dnsNames := []string{host}
	if args.Wildcard {
		dnsNames = append(dnsNames, "*."+args.Domain)
	}
	// Istio serves the Gateway as soon as the Secret appears, so the two need no order.
	cert, err := crs.New(ctx, name+"-certificate", crs.Args{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(apiCertName), Namespace: pulumi.String(IngressNamespace)},
		Spec:     crs.Certificate(APITLSSecretName, host, dnsNames, args.IssuerName),
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	gw, err := crs.New(ctx, name+"-gateway", crs.Args{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(APIGatewayName), Namespace: pulumi.String(IngressNamespace)},
		Spec:     crs.HTTPSGateway(gatewayPods(), host, IngressHTTPPort, IngressHTTPSPort, APITLSSecretName),
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	c.Keep(cert, gw)
	c.Host = pulumi.String(host).ToStringOutput()
	c.GatewayRef = pulumi.All(gw.Metadata.Namespace().Elem(), gw.Metadata.Name().Elem()).ApplyT(func(v []any) string {
		return v[0].(string) + "/" + v[1].(string)
	}).(pulumi.StringOutput)
	c.TLSSecretName = pulumi.String(APITLSSecretName).ToStringOutput()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"host":          c.Host,
		"gatewayRef":    c.GatewayRef,
		"tlsSecretName": c.TLSSecretName,
	})
}
