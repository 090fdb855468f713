package cluster

import (
	"fmt"

	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
)

// CertManagerNamespace is where cert-manager runs; a CA issuer's key pair Secret must be here
// (cert-manager's cluster resource namespace).
const CertManagerNamespace = clusterns.CertManager

// IssuerKind is the kind of ClusterIssuer to create.
type IssuerKind string

// Issuer kinds (the values of TFRCluster spec.tls.issuer).
const (
	IssuerSelfSigned IssuerKind = "SelfSigned"
	IssuerACME       IssuerKind = "ACME"
	IssuerCA         IssuerKind = "CA"
)

// CertManagerArgs configure the cert-manager component.
type CertManagerArgs struct {
	// Chart is the cert-manager chart.
	Chart ChartRef
	// IssuerName names the ClusterIssuer the gateway certificate is signed by.
	IssuerName string
	// Issuer is the kind of ClusterIssuer.
	Issuer IssuerKind
	// ACMEEmail and ACMEServer are required for IssuerACME.
	ACMEEmail, ACMEServer string
	// CASecretName is the kubernetes.io/tls Secret in CertManagerNamespace holding the CA for
	// IssuerCA.
	CASecretName string
}

// CertManager installs cert-manager (Helm, CRDs included) and the ClusterIssuer of the
// cluster. The certificate for api.<domain> is requested by the Gateway component: Istio reads
// a gateway's TLS Secret from the gateway workload's namespace, which exists only once
// istio-ingress is installed, after this component.
type CertManager struct {
	pulumi.ResourceState
	children.Set

	// IssuerName is the name of the ClusterIssuer.
	IssuerName pulumi.StringOutput `pulumi:"issuerName"`
}

// NewCertManager creates the cert-manager component.
func NewCertManager(ctx *pulumi.Context, name string, args *CertManagerArgs, opts ...pulumi.ResourceOption) (*CertManager, error) {
	if args == nil {
		return nil, fmt.Errorf("cert-manager: nil args")
	}
	issuerSpec, err := args.issuerSpec()
	if err != nil {
		return nil, err
	}
	c := &CertManager{}
	if err := ctx.RegisterComponentResource(CertManagerType, name, c, opts...); err != nil {
		return nil, err
	}
	ns, err := newNamespace(ctx, c, name+"-namespace", CertManagerNamespace)
	if err != nil {
		return nil, err
	}
	chart, err := kit.NewChart(ctx, c, name+"-chart", kit.Chart{Release: "cert-manager", Namespace: ns.Metadata.Name().Elem(), Ref: args.Chart, Values: map[string]any{
		// The CRDs are templates of the chart (since v1.15), rendered with everything else.
		// Not kept on delete: TFRS owns their lifecycle, and destroy must leave nothing
		// behind (certificates are re-issued on the next install).
		"crds": map[string]any{"enabled": true, "keep": false},
		// Its only Helm hook: a post-install Job that just waits for the webhook. Rendered
		// client-side it would be an ordinary Job racing the install, so it is off.
		"startupapicheck": map[string]any{"enabled": false},
	}})
	if err != nil {
		return nil, err
	}
	issuer, err := crs.New(ctx, name+"-issuer", crs.Args{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(args.IssuerName)},
		Spec:     issuerSpec,
	}, pulumi.Parent(c), pulumi.DependsOn([]pulumi.Resource{chart}))
	if err != nil {
		return nil, err
	}
	c.Keep(ns, chart, issuer)
	c.IssuerName = issuer.Metadata.Name().Elem()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"issuerName": c.IssuerName})
}

// issuerSpec is the ClusterIssuer the args ask for.
func (a *CertManagerArgs) issuerSpec() (crs.ClusterIssuerSpec, error) {
	if a.IssuerName == "" {
		return crs.ClusterIssuerSpec{}, fmt.Errorf("cert-manager: issuer name is required")
	}
	switch a.Issuer {
	case IssuerSelfSigned, "":
		return crs.SelfSignedClusterIssuer(), nil
	case IssuerACME:
		if a.ACMEEmail == "" || a.ACMEServer == "" {
			return crs.ClusterIssuerSpec{}, fmt.Errorf("cert-manager: ACME issuer needs an email and a server")
		}
		// HTTP-01 through Istio's Ingress support (istiod's ingressClass "istio", pointed at
		// the istio-ingress gateway by the Istio component).
		return crs.ACMEClusterIssuer(a.ACMEEmail, a.ACMEServer, a.IssuerName+"-account-key", "istio"), nil
	case IssuerCA:
		if a.CASecretName == "" {
			return crs.ClusterIssuerSpec{}, fmt.Errorf("cert-manager: CA issuer needs a secret name")
		}
		return crs.CAClusterIssuer(a.CASecretName), nil
	default:
		return crs.ClusterIssuerSpec{}, fmt.Errorf("cert-manager: unknown issuer kind %q", a.Issuer)
	}
}
