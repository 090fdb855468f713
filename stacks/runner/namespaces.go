package runner

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// Namespace ownership (stacks/nsowner.go): before a tenant's programs run, the runner reads
// its target namespace with the Kubernetes API (the same cluster the provider applies to) and
// asks the engine whether the stack that creates it already manages it. kinds.ProgramsOf
// refuses a namespace that is not the stack's with an *kinds.InvalidError at spec.namespace,
// so nothing runs and every door answers as for any invalid spec.

// NamespaceGetter reads one namespace: whether it exists and its annotations.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (exists bool, annotations map[string]string, err error)
}

// resourceLister is the part of *engine.Engine that reads a stack's resources; an Engine
// without it (a test fake) never shows a namespace in state.
type resourceLister interface {
	Resources(ctx context.Context, stack string) ([]engine.ManagedResource, error)
}

// namespaceType is the type token of a Kubernetes Namespace in a stack's state.
const namespaceType = "kubernetes:core/v1:Namespace"

// ownershipParents adds the namespace read (kinds.Namespaces) to the runner's parents.
type ownershipParents struct {
	kinds.Parents
	r  *Runner
	in *inputs // records what is read (inputs.go); nil: nothing is
}

func (p ownershipParents) Namespace(ctx context.Context, name, stack string) (*stacks.NamespaceState, error) {
	get, err := p.r.namespaceGetter()
	if err != nil {
		return nil, err
	}
	exists, ann, err := get.GetNamespace(ctx, name)
	if err != nil {
		return nil, err
	}
	st := &stacks.NamespaceState{Exists: exists, Owner: ann[stacks.AnnotationOwner]}
	if lister, ok := p.r.eng.(resourceLister); ok && exists && st.Owner == "" {
		res, err := lister.Resources(ctx, stack)
		if err != nil {
			return nil, fmt.Errorf("reading the resources of stack %s: %w", stack, err)
		}
		for _, r := range res {
			if r.Type == namespaceType && r.ID == name {
				st.InState = true
			}
		}
	}
	p.in.add("namespace "+name, namespaceInput(name, stack, st))
	return st, nil
}

// parents is what the programs read their parents (and, unless rendering, their namespaces)
// through.
func (r *Runner) parents() kinds.Parents {
	if r.opts.RenderDir != "" {
		return r.opts.Parents // no cluster to read from
	}
	if _, ok := r.opts.Parents.(kinds.Namespaces); ok {
		return r.opts.Parents
	}
	return ownershipParents{Parents: r.opts.Parents, r: r}
}

// namespaceGetter is Options.Namespaces, else a client of the cluster the provider applies to.
func (r *Runner) namespaceGetter() (NamespaceGetter, error) {
	if r.opts.Namespaces != nil {
		return r.opts.Namespaces, nil
	}
	r.kubeOnce.Do(func() { r.kube, r.kubeErr = newKubeNamespaces(r.opts.Kubeconfig, r.opts.KubeContext) })
	return r.kube, r.kubeErr
}

// kubeNamespaces reads namespaces with client-go.
type kubeNamespaces struct{ c kubernetes.Interface }

// newKubeNamespaces builds the client the way the provider finds its cluster: the kubeconfig
// contents when given, else $KUBECONFIG / ~/.kube/config, else the in-cluster service account.
func newKubeNamespaces(kubeconfig, kubeContext string) (*kubeNamespaces, error) {
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	var cc clientcmd.ClientConfig
	if kubeconfig != "" {
		raw, err := clientcmd.Load([]byte(kubeconfig))
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		cc = clientcmd.NewNonInteractiveClientConfig(*raw, kubeContext, overrides, nil)
	} else {
		cc = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), overrides)
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster access: %w", err)
	}
	// client-go's default client-side limit (5 requests/s, bursts of 10) made a fleet
	// preview of 100 tenants wait 18 s on its namespace reads alone (0.5 s of CPU); the API
	// server's own priority and fairness is the limit that matters.
	cfg.QPS, cfg.Burst = 50, 100
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &kubeNamespaces{c: c}, nil
}

func (k *kubeNamespaces) GetNamespace(ctx context.Context, name string) (bool, map[string]string, error) {
	ns, err := k.c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	return true, ns.Annotations, nil
}

// namespaceInput is what a program's resources take from the namespace read: the decision on
// it, where "create" (before the first up) and "ours" (after it) make the same resources, so a
// stack's first up proves as well as any later one.
func namespaceInput(name, stack string, st *stacks.NamespaceState) string {
	d, err := stacks.DecideNamespace(name, stack, st)
	switch {
	case err != nil:
		return "refused"
	case d == stacks.NamespaceCreate:
		return string(stacks.NamespaceOurs)
	}
	return string(d)
}
