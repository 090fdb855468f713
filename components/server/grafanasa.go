package server

import (
	_ "embed"
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	rbacv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/rbac/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
)

//go:embed scripts/grafana-sa.sh
var grafanaSAScript string

// DefaultGrafanaRole is the Grafana role of a robot's service account: robots read
// dashboards and data, they do not edit the tenant's Grafana.
const DefaultGrafanaRole = "Viewer"

// GrafanaSAArgs configure the grafana-sa component.
type GrafanaSAArgs struct {
	Robot Robot
	// Image runs curl and sh (DefaultCurlImage when empty).
	Image string
	// URL is the tenant's Grafana; AdminUser and AdminPassword its admin login.
	URL           string
	AdminUser     string
	AdminPassword pulumi.StringInput
	// Role of the service account (DefaultGrafanaRole when empty).
	Role       string
	PullSecret string
}

// GrafanaSA gives the robot a Grafana service account and puts a token of it into the Secret
// TokenSecret ("{robot}-grafana-token", keys "url" and "token"). The Job writes the token
// itself, through the Kubernetes API, with a service account allowed to get and patch that
// one Secret; Pulumi manages only the Secret's "url", so it never overwrites the token.
type GrafanaSA struct {
	pulumi.ResourceState
	children.Set

	TokenSecret pulumi.StringOutput `pulumi:"tokenSecret"`
	JobName     pulumi.StringOutput `pulumi:"jobName"`
}

// NewGrafanaSA creates the grafana-sa component.
func NewGrafanaSA(ctx *pulumi.Context, name string, args *GrafanaSAArgs, opts ...pulumi.ResourceOption) (*GrafanaSA, error) {
	if args == nil || args.URL == "" || args.AdminUser == "" || args.AdminPassword == nil {
		return nil, fmt.Errorf("grafana-sa: the tenant's Grafana URL and admin login are required")
	}
	if err := args.Robot.Validate(); err != nil {
		return nil, err
	}
	c := &GrafanaSA{}
	if err := ctx.RegisterComponentResource(GrafanaSAType, name, c, opts...); err != nil {
		return nil, err
	}
	r := args.Robot
	img, role := args.Image, args.Role
	if img == "" {
		img = DefaultCurlImage
	}
	if role == "" {
		role = DefaultGrafanaRole
	}
	tokenName, saName := r.Name()+"-grafana-token", r.Name()+"-"+KindGrafanaSA
	token, err := corev1.NewSecret(ctx, name+"-token", &corev1.SecretArgs{
		Metadata:   r.meta(tokenName, KindGrafanaSA),
		Type:       pulumi.String("Opaque"),
		StringData: pulumi.StringMap{"url": pulumi.String(args.URL)},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	sa, err := corev1.NewServiceAccount(ctx, name+"-service-account", &corev1.ServiceAccountArgs{
		Metadata: r.meta(saName, KindGrafanaSA),
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	rl, err := rbacv1.NewRole(ctx, name+"-role", &rbacv1.RoleArgs{
		Metadata: r.meta(saName, KindGrafanaSA),
		Rules: rbacv1.PolicyRuleArray{rbacv1.PolicyRuleArgs{
			ApiGroups:     pulumi.StringArray{pulumi.String("")},
			Resources:     pulumi.StringArray{pulumi.String("secrets")},
			ResourceNames: pulumi.StringArray{token.Metadata.Name().Elem()},
			Verbs:         pulumi.ToStringArray([]string{"get", "patch"}),
		}},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	rb, err := rbacv1.NewRoleBinding(ctx, name+"-role-binding", &rbacv1.RoleBindingArgs{
		Metadata: r.meta(saName, KindGrafanaSA),
		RoleRef: rbacv1.RoleRefArgs{
			ApiGroup: pulumi.String("rbac.authorization.k8s.io"), Kind: pulumi.String("Role"), Name: rl.Metadata.Name().Elem(),
		},
		Subjects: rbacv1.SubjectArray{rbacv1.SubjectArgs{
			Kind: pulumi.String("ServiceAccount"), Name: sa.Metadata.Name().Elem(), Namespace: pulumi.String(r.Namespace),
		}},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	pod := jobPod{
		Main: jobContainer{
			Name: "grafana", Image: img, Command: []string{"/bin/sh", JobDir + "/init.sh"},
			Env: map[string]string{
				"GRAFANA_URL": args.URL, "GRAFANA_USER": args.AdminUser,
				// The Grafana account outlives the robot in a shared Grafana: named by DataName, a
				// robot of another owner that reuses the id gets an account of its own.
				"SA_NAME": r.DataName(), "SA_ROLE": role, "TOKEN_SECRET": tokenName,
			},
			SecretEnv: map[string]string{"GRAFANA_PASSWORD": "admin-password"},
		},
		// The robot's second ServiceAccount, the only one with a token and RBAC (one Secret):
		// the robot's own stays without either.
		ServiceAccount: saName,
		APIToken:       true,
		PullSecret:     args.PullSecret,
	}
	files := map[string]pulumi.StringInput{"init.sh": pulumi.String(grafanaSAScript), "admin-password": args.AdminPassword}
	// The Job writes the token Secret with the binding's rights: nothing flows from them into
	// the Job's spec, hence DependsOn.
	j, err := newJob(ctx, c, name, r, KindGrafanaSA, pod, files, pulumi.DependsOn([]pulumi.Resource{token, sa, rl, rb}))
	if err != nil {
		return nil, err
	}
	c.Keep(token, sa, rl, rb, j.secret, j.job)
	c.TokenSecret = token.Metadata.Name().Elem()
	c.JobName = j.name
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"tokenSecret": c.TokenSecret, "jobName": c.JobName})
}
