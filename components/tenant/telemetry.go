package tenant

import (
	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
)

// A personal job type's Prometheus, Jaeger and Grafana are shared by the robots of every
// user of the job type: they hold every robot's metrics and traces. A DENY policy of the
// shared namespace refuses every robot's mesh identity ("*-robot": each robot runs as its own
// ServiceAccount "{robot}-robot", and nothing else in TFRS ends so) on the read ports of the
// meshed telemetry workloads: Jaeger's query API and Grafana. Robots still write: the
// OpenTelemetry Collector and Jaeger's collector ports stay open to them. A robot's
// grafana-sa Job, which runs as its own "{robot}-grafana-sa" account, still reaches Grafana
// to make the robot's Viewer token; the robot's own pods cannot use it. DENY policies are
// evaluated before ALLOW ones and win.
//
// Prometheus is not covered: it runs without a sidecar (it scrapes pods outside the mesh), and
// an AuthorizationPolicy is enforced by the destination's sidecar, so it would hold nothing
// there (docs/security/trust-and-personal.md says what stays open).

// RobotsNoTelemetryPolicy names the policy.
const RobotsNoTelemetryPolicy = "tfrs-robots-no-telemetry"

// GrafanaPort is Grafana's container port (the chart's service maps 80 to it); Istio matches
// a workload's ports.
const GrafanaPort = 3000

// RobotsNoTelemetry is the policy's spec: the whole namespace (no selector), robots' peers to
// the read ports of Jaeger and Grafana.
func RobotsNoTelemetry() crs.AuthorizationPolicySpec {
	return crs.AuthorizationPolicy(nil, crs.Deny,
		crs.FromPrincipalsToPorts([]string{"*" + kit.RobotServiceAccountSuffix}, JaegerQueryPort, GrafanaPort))
}
