package program

import (
	"context"
	"fmt"
	"time"

	kubernetes "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Least privilege in the API server (components/tenant/applier.go has the model). The runner
// sets these on tenant and server stacks: the default provider's kubeconfig impersonates the
// namespace's applier and ConfigApplier names it. The one explicit provider that creates the
// namespace and the applier, the provisioner, uses the same kubeconfig without the
// impersonation: the runner's own identity, with no second copy of the credential in the
// stack's config (and no second `config set --secret` process). Without ConfigApplier
// (rendering, a program run outside the runner) the default provider does everything, as it
// did before the applier existed.
const (
	ConfigApplier     = "tfrs:applier"
	ConfigKubeconfig  = "kubernetes:kubeconfig"
	ConfigKubeContext = "kubernetes:context"
)

// Applying reports whether the stack applies as its namespace's applier.
func Applying(ctx *pulumi.Context) bool { return config.Get(ctx, ConfigApplier) != "" }

// Provisioner registers the explicit provider with the runner's own identity: the applier's
// kubeconfig without its impersonation (or the ambient one when there is none).
func Provisioner(ctx *pulumi.Context) (pulumi.ProviderResource, error) {
	args := &kubernetes.ProviderArgs{}
	if kc := config.Get(ctx, ConfigKubeconfig); kc != "" {
		own, err := WithoutImpersonation(kc)
		if err != nil {
			return nil, err
		}
		args.Kubeconfig = pulumi.ToSecret(pulumi.String(own)).(pulumi.StringOutput)
	}
	if c := config.Get(ctx, ConfigKubeContext); c != "" {
		args.Context = pulumi.String(c)
	}
	return kubernetes.NewProvider(ctx, "provisioner", args)
}

// WithoutImpersonation is kubeconfig with every user acting as itself.
func WithoutImpersonation(kubeconfig string) (string, error) {
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate, a.ImpersonateUID, a.ImpersonateGroups, a.ImpersonateUserExtra = "", "", nil, nil
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	return string(b), nil
}

// ApplierReady waits until the API server authorizes the applier of namespace to apply there:
// RBAC reads Roles and RoleBindings from a cache, so for a moment after the binding is
// created the applier would still be refused. It asks as the applier itself (the default
// provider's kubeconfig, which impersonates it) with a SelfSubjectAccessReview.
func ApplierReady(ctx *pulumi.Context) func(namespace string) error {
	kubeconfig, kubeContext := config.Get(ctx, ConfigKubeconfig), config.Get(ctx, ConfigKubeContext)
	return func(namespace string) error {
		raw, err := clientcmd.Load([]byte(kubeconfig))
		if err != nil {
			return fmt.Errorf("applier kubeconfig: %w", err)
		}
		rc, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
		if err != nil {
			return fmt.Errorf("applier kubeconfig: %w", err)
		}
		cs, err := k8s.NewForConfig(rc)
		if err != nil {
			return err
		}
		wait, cancel := context.WithTimeout(ctx.Context(), applierReadyTimeout)
		defer cancel()
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Resource: "secrets"},
		}}
		for {
			got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(wait, review, metav1.CreateOptions{})
			if err == nil && got.Status.Allowed {
				return nil
			}
			select {
			case <-wait.Done():
				if err == nil {
					err = fmt.Errorf("not allowed: %s", got.Status.Reason)
				}
				return fmt.Errorf("the applier of namespace %s is not authorized after %s (%v): does the provisioner's RBAC hold every rule of the applier Role?", namespace, applierReadyTimeout, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

const applierReadyTimeout = 60 * time.Second
