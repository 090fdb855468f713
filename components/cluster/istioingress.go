package cluster

import (
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
)

// The ingress gateway's names. The gateway chart derives the pod labels from the release name:
// app=<release>, istio=<release without "istio-">; Gateway resources select IngressSelector.
const (
	IngressNamespace = clusterns.IstioIngress
	IngressRelease   = "istio-ingress"
	IngressService   = "istio-ingress"
	// IngressSelectorLabel/Value select the gateway pods (Gateway spec.selector, EnvoyFilter
	// workloadSelector, istiod's ingressSelector).
	IngressSelectorLabel = "istio"
	IngressSelectorValue = "ingress"
)

// IngressMode is how the gateway Service is exposed (TFRCluster spec.ingress.mode).
type IngressMode string

// Ingress modes.
const (
	IngressTKECLB        IngressMode = "TKECLB"
	IngressNodePort      IngressMode = "NodePort"
	IngressDockerDesktop IngressMode = "DockerDesktop"
)

// Ports of the gateway Service in LoadBalancer modes (and the container ports in all modes).
const (
	IngressHTTPPort   = 80
	IngressHTTPSPort  = 443
	ingressStatusPort = 15021
)

// IstioIngressArgs configure the istio-ingress component.
type IstioIngressArgs struct {
	// Chart is Istio's "gateway" chart.
	Chart ChartRef
	// Mode shapes the Service.
	Mode IngressMode
	// ServiceAnnotations go on the Service in every mode; in TKECLB mode they carry the CLB
	// settings (e.g. service.kubernetes.io/qcloud-loadbalancer-internal-subnetid).
	ServiceAnnotations map[string]string
	// HTTPNodePort and HTTPSNodePort are the fixed node ports of NodePort mode.
	HTTPNodePort, HTTPSNodePort int
}

// IstioIngress installs the Istio ingress gateway (Helm) and its Service. The chart's own
// Service is switched off (service.type=None) and the component creates the Service itself, so
// that its shape per mode is explicit here and its status (the load balancer address) can be
// read without searching the chart's output.
type IstioIngress struct {
	pulumi.ResourceState
	children.Set

	// Namespace of the gateway pods.
	Namespace pulumi.StringOutput `pulumi:"namespace"`
	// ServiceName of the gateway Service.
	ServiceName pulumi.StringOutput `pulumi:"serviceName"`
	// Address clients use: "localhost" for DockerDesktop, the load balancer IP or hostname for
	// TKECLB, empty for NodePort (any node's address).
	Address pulumi.StringOutput `pulumi:"address"`
	// HTTPPort and HTTPSPort clients use: the node ports in NodePort mode, 80 and 443 otherwise.
	HTTPPort  pulumi.IntOutput `pulumi:"httpPort"`
	HTTPSPort pulumi.IntOutput `pulumi:"httpsPort"`
}

// NewIstioIngress creates the istio-ingress component.
func NewIstioIngress(ctx *pulumi.Context, name string, args *IstioIngressArgs, opts ...pulumi.ResourceOption) (*IstioIngress, error) {
	if args == nil {
		return nil, fmt.Errorf("istio-ingress: nil args")
	}
	svcType, err := args.serviceType()
	if err != nil {
		return nil, err
	}
	c := &IstioIngress{}
	if err := ctx.RegisterComponentResource(IstioIngressType, name, c, opts...); err != nil {
		return nil, err
	}
	ns, err := newNamespace(ctx, c, name+"-namespace", IngressNamespace)
	if err != nil {
		return nil, err
	}
	nsName := ns.Metadata.Name().Elem()
	chart, err := kit.NewChart(ctx, c, name+"-chart", kit.Chart{Release: IngressRelease, Namespace: nsName, Ref: args.Chart, Values: map[string]any{
		"service": map[string]any{"type": "None"},
	}})
	if err != nil {
		return nil, err
	}

	http, https := pulumi.IntPtrInput(nil), pulumi.IntPtrInput(nil)
	if args.Mode == IngressNodePort {
		http, https = pulumi.IntPtr(args.HTTPNodePort), pulumi.IntPtr(args.HTTPSNodePort)
	}
	svc, err := corev1.NewService(ctx, name+"-service", &corev1.ServiceArgs{
		Metadata: &metav1.ObjectMetaArgs{
			Name:        pulumi.String(IngressService),
			Namespace:   nsName,
			Labels:      pulumi.StringMap{"app": pulumi.String(IngressRelease), IngressSelectorLabel: pulumi.String(IngressSelectorValue)},
			Annotations: pulumi.ToStringMap(args.ServiceAnnotations),
		},
		Spec: &corev1.ServiceSpecArgs{
			Type: pulumi.String(svcType),
			Selector: pulumi.StringMap{
				"app":                pulumi.String(IngressRelease),
				IngressSelectorLabel: pulumi.String(IngressSelectorValue),
			},
			Ports: corev1.ServicePortArray{
				// Load balancers (TKE CLB) health-check the gateway on its status port.
				&corev1.ServicePortArgs{Name: pulumi.String("status-port"), Port: pulumi.Int(ingressStatusPort), TargetPort: pulumi.Int(ingressStatusPort), Protocol: pulumi.String("TCP")},
				&corev1.ServicePortArgs{Name: pulumi.String("http2"), Port: pulumi.Int(IngressHTTPPort), TargetPort: pulumi.Int(IngressHTTPPort), Protocol: pulumi.String("TCP"), NodePort: http},
				&corev1.ServicePortArgs{Name: pulumi.String("https"), Port: pulumi.Int(IngressHTTPSPort), TargetPort: pulumi.Int(IngressHTTPSPort), Protocol: pulumi.String("TCP"), NodePort: https},
			},
		},
		// The provider waits for a Service to have endpoints; after the chart (whose
		// Deployment it awaits) that wait is short instead of racing the pods.
	}, pulumi.Parent(c), pulumi.DependsOn([]pulumi.Resource{chart}))
	if err != nil {
		return nil, err
	}

	c.Keep(ns, chart, svc)
	c.Namespace = nsName
	c.ServiceName = svc.Metadata.Name().Elem()
	switch args.Mode {
	case IngressNodePort:
		c.Address = pulumi.String("").ToStringOutput()
		c.HTTPPort = pulumi.Int(args.HTTPNodePort).ToIntOutput()
		c.HTTPSPort = pulumi.Int(args.HTTPSNodePort).ToIntOutput()
	case IngressDockerDesktop:
		// Docker Desktop publishes LoadBalancer Services on the host's localhost.
		c.Address = pulumi.String("localhost").ToStringOutput()
		c.HTTPPort = pulumi.Int(IngressHTTPPort).ToIntOutput()
		c.HTTPSPort = pulumi.Int(IngressHTTPSPort).ToIntOutput()
	default:
		c.Address = svc.Status.ApplyT(loadBalancerAddress).(pulumi.StringOutput)
		c.HTTPPort = pulumi.Int(IngressHTTPPort).ToIntOutput()
		c.HTTPSPort = pulumi.Int(IngressHTTPSPort).ToIntOutput()
	}
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"namespace":   c.Namespace,
		"serviceName": c.ServiceName,
		"address":     c.Address,
		"httpPort":    c.HTTPPort,
		"httpsPort":   c.HTTPSPort,
	})
}

func (a *IstioIngressArgs) serviceType() (string, error) {
	switch a.Mode {
	case IngressTKECLB, IngressDockerDesktop:
		return "LoadBalancer", nil
	case IngressNodePort:
		for _, p := range []int{a.HTTPNodePort, a.HTTPSNodePort} {
			if p < 30000 || p > 32767 {
				return "", fmt.Errorf("istio-ingress: node port %d outside 30000-32767", p)
			}
		}
		if a.HTTPNodePort == a.HTTPSNodePort {
			return "", fmt.Errorf("istio-ingress: HTTP and HTTPS node ports are both %d", a.HTTPNodePort)
		}
		return "NodePort", nil
	default:
		return "", fmt.Errorf("istio-ingress: unknown ingress mode %q", a.Mode)
	}
}

// loadBalancerAddress is the first load balancer ingress address (IP, else hostname).
func loadBalancerAddress(s *corev1.ServiceStatus) string {
	if s == nil || s.LoadBalancer == nil {
		return ""
	}
	for _, in := range s.LoadBalancer.Ingress {
		if in.Ip != nil && *in.Ip != "" {
			return *in.Ip
		}
		if in.Hostname != nil && *in.Hostname != "" {
			return *in.Hostname
		}
	}
	return ""
}
