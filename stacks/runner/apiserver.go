package runner

import (
	"context"
	"net/netip"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/stacks"
)

// The API server's addresses for the tenant namespaces' egress policy (stacks/egress.go):
// read before a cluster's program runs, from the cluster the provider applies to, as the
// namespaces are. The "kubernetes" Service in "default" is the API server's in-cluster name
// on every distribution: its ClusterIP and port, and its EndpointSlices' addresses and ports.

// APIServerGetter reads where the API server answers. A NamespaceGetter that also implements
// it (client-go's) feeds the cluster program; one that does not (a test fake) feeds nothing.
type APIServerGetter interface {
	GetAPIServer(ctx context.Context) (stacks.APIServer, error)
}

// APIServer is kinds.APIServers for the runner's parents.
func (p ownershipParents) APIServer(ctx context.Context) (stacks.APIServer, error) {
	get, err := p.r.namespaceGetter()
	if err != nil {
		return stacks.APIServer{}, err
	}
	var api stacks.APIServer
	if g, ok := get.(APIServerGetter); ok {
		if api, err = g.GetAPIServer(ctx); err != nil {
			return api, err
		}
	}
	p.in.addJSON("apiserver", api)
	return api, nil
}

// KubeVersionGetter reads the cluster's Kubernetes version (discovery's /version). A
// NamespaceGetter that also implements it (client-go's) gets cluster programs checked against
// the support matrix; one that does not (a test fake) gets nothing checked.
type KubeVersionGetter interface {
	GetKubeVersion(ctx context.Context) (string, error)
}

// KubeVersion is kinds.KubeVersions for the runner's parents.
func (p ownershipParents) KubeVersion(ctx context.Context) (string, error) {
	get, err := p.r.namespaceGetter()
	if err != nil {
		return "", err
	}
	v := ""
	if g, ok := get.(KubeVersionGetter); ok {
		if v, err = g.GetKubeVersion(ctx); err != nil {
			return "", err
		}
	}
	p.in.add("kube-version", v)
	return v, nil
}

func (k *kubeNamespaces) GetKubeVersion(context.Context) (string, error) {
	v, err := k.c.Discovery().ServerVersion()
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

func (k *kubeNamespaces) GetAPIServer(ctx context.Context) (stacks.APIServer, error) {
	var out stacks.APIServer
	addrs, ports := map[string]bool{}, map[int32]bool{}
	svc, err := k.c.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return out, err
	default:
		for _, ip := range svc.Spec.ClusterIPs {
			addrs[ip] = true
		}
		for _, p := range svc.Spec.Ports {
			ports[p.Port] = true
		}
	}
	slices, err := k.c.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return out, err
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				addrs[a] = true
			}
		}
		for _, p := range s.Ports {
			if p.Port != nil {
				ports[*p.Port] = true
			}
		}
	}
	for a := range addrs {
		if _, err := netip.ParseAddr(a); err == nil { // an FQDN endpoint is no ipBlock
			out.Addresses = append(out.Addresses, a)
		}
	}
	for p := range ports {
		out.Ports = append(out.Ports, p)
	}
	return out, nil
}
