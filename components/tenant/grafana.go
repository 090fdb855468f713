package tenant

import (
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
	"github.com/tfrs-io/tfrs-operator/components/internal/podsec"
)

// Names of the tenant's Grafana.
const (
	GrafanaRelease     = "grafana"
	GrafanaService     = "grafana"
	GrafanaAdminSecret = "grafana-admin"
	grafanaUserKey     = "admin-user"
	grafanaPasswordKey = "admin-password"
)

// GrafanaArgs configure the grafana component.
type GrafanaArgs struct {
	Namespace pulumi.StringInput
	// Chart is Grafana's "grafana" chart (values merged over the component's).
	Chart  ChartRef
	Images Images
	// Login is the admin user (user-given Secret keys "username" (optional, else User) and
	// "password", or generated).
	Login Login
	// PrometheusURL and JaegerURL become data sources; nil leaves one out (its component is
	// not installed).
	PrometheusURL, JaegerURL pulumi.StringInput
	PullSecret               string
}

// Grafana is the Grafana chart with its admin Secret and the tenant's data sources.
type Grafana struct {
	pulumi.ResourceState
	children.Set

	// URL is "http://grafana.<namespace>.svc.cluster.local" (the chart's Service, port 80).
	URL           pulumi.StringOutput `pulumi:"url"`
	AdminUser     pulumi.StringOutput `pulumi:"adminUser"`
	AdminPassword pulumi.StringOutput `pulumi:"adminPassword"`
	// AdminSecret holds "admin-user" and "admin-password" (for the server stack's Grafana
	// service-account job).
	AdminSecret pulumi.StringOutput `pulumi:"adminSecret"`
}

// NewGrafana creates the grafana component.
func NewGrafana(ctx *pulumi.Context, name string, args *GrafanaArgs, opts ...pulumi.ResourceOption) (*Grafana, error) {
	if args == nil || args.Namespace == nil {
		return nil, fmt.Errorf("grafana: a namespace is required")
	}
	if err := args.Login.validate("grafana"); err != nil {
		return nil, err
	}
	c := &Grafana{}
	if err := ctx.RegisterComponentResource(GrafanaType, name, c, opts...); err != nil {
		return nil, err
	}
	user, password, err := resolveLogin(ctx, c, name, args.Namespace, args.Login, "username", "password", false)
	if err != nil {
		return nil, err
	}
	secret, err := corev1.NewSecret(ctx, name+"-admin", &corev1.SecretArgs{
		Metadata:   meta(GrafanaAdminSecret, args.Namespace, appLabels(GrafanaService)),
		StringData: pulumi.StringMap{grafanaUserKey: user, grafanaPasswordKey: password},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	secretName := secret.Metadata.Name().Elem()
	var sources []any
	if args.PrometheusURL != nil {
		sources = append(sources, map[string]any{
			"name": "Prometheus", "type": "prometheus", "uid": "prometheus", "access": "proxy",
			"url": args.PrometheusURL, "isDefault": true,
		})
	}
	if args.JaegerURL != nil {
		sources = append(sources, map[string]any{
			"name": "Jaeger", "type": "jaeger", "uid": "jaeger", "access": "proxy", "url": args.JaegerURL,
		})
	}
	own := map[string]any{
		"fullnameOverride": GrafanaRelease,
		// The admin login comes from the Secret, so it never appears in the chart's values.
		"admin": map[string]any{"existingSecret": secretName, "userKey": grafanaUserKey, "passwordKey": grafanaPasswordKey},
		// Namespaced RBAC: a ClusterRole named after the release would collide between
		// tenants and reach beyond the namespace.
		"rbac": map[string]any{"namespaced": true},
		// The chart's test pod is a Helm hook; Chart v4 does not run hooks.
		"testFramework": map[string]any{"enabled": false},
	}
	for k, v := range grafanaPodSecurity() {
		own[k] = v
	}
	if len(sources) > 0 {
		own["datasources"] = map[string]any{"datasources.yaml": map[string]any{"apiVersion": 1, "datasources": sources}}
	}
	chart, err := kit.NewChart(ctx, c, name+"-chart", kit.Chart{
		Release: GrafanaRelease, Namespace: args.Namespace, Ref: args.Chart, Values: own, Images: args.Images, PullSecret: args.PullSecret,
	})
	if err != nil {
		return nil, err
	}
	c.Keep(secret, chart)
	c.URL = hostOf(GrafanaService, args.Namespace).ApplyT(func(h string) string { return "http://" + h }).(pulumi.StringOutput)
	c.AdminUser = user
	c.AdminPassword = password
	c.AdminSecret = secretName
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"url": c.URL, "adminUser": c.AdminUser, "adminPassword": c.AdminPassword, "adminSecret": c.AdminSecret,
	})
}

// grafanaPodSecurity are the chart values (grafana-community/helm-charts 12.11.1) that keep
// every pod it renders Pod Security restricted. Upstream's defaults nearly are: its pod runs
// as 472 and its containers drop ALL with RuntimeDefault seccomp, but only per container, and
// with persistence on, init-chown-data runs as root adding CHOWN and DAC_OVERRIDE. So: the
// pod context carries seccomp for any container; the Grafana, dashboard-download and sidecar
// containers get TFRS's one container context; init-chown-data is off (the volume is the
// pod's fsGroup's, no chown needed).
func grafanaPodSecurity() map[string]any {
	c := podsec.Values(podsec.ContainerContext())
	return map[string]any{
		"securityContext":          podsec.Values(podsec.PodContext(podsec.Grafana)),
		"containerSecurityContext": c,
		"initChownData":            map[string]any{"enabled": false},
		"downloadDashboards":       map[string]any{"securityContext": c},
		"sidecar":                  map[string]any{"securityContext": c},
	}
}
