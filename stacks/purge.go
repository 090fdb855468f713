package stacks

// Removing a deleted personal robot's data. A personal robot's data (its PostgreSQL role
// and schema, MinIO user and bucket, RabbitMQ vhost and user, Redis ACL user and keys,
// Grafana service account and shared-cache directory) lives in its job type's shared
// middleware under its owner's names (server.Robot.DataName). Destroying the robot's stack
// removes only what the stack created; the data stays. Under the job type's deletionPolicy
// Delete (TFRCluster.spec.personal), the runner removes it first, in two ups of the robot's
// own stack before the destroy (stacks/runner/purge.go):
//
//  1. PurgeStop: the stack keeps only the robot's identity (its ServiceAccount and deny-all
//     inbound policy). The workers and Jobs go, and so do its RabbitMQ vhost, user and
//     permission (the topology operator deletes the vhost with its custom resource) and its
//     Redis ACL line: nothing of the robot runs or logs in any more.
//  2. PurgeData: the same, plus the data purge Job (server.DataPurge), which removes the rest
//     with the tenant's logins, revoking the robot's own logins first.
//
// Both stages are idempotent, so a purge or destroy that failed half-way converges when the
// destroy runs again.

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
)

// PurgeStage is a stage of the removal of a personal robot's data.
type PurgeStage int

const (
	PurgeNone PurgeStage = iota
	// PurgeStop keeps only the robot's identity: every writer goes.
	PurgeStop
	// PurgeData adds the data purge Job.
	PurgeData
)

// PurgeStages are the stages in the order the runner runs them.
var PurgeStages = []PurgeStage{PurgeStop, PurgeData}

func (s PurgeStage) String() string {
	switch s {
	case PurgeStop:
		return "stop"
	case PurgeData:
		return "data"
	}
	return "none"
}

// ServerDataPurge is the node id of the data purge Job.
const ServerDataPurge = "data-purge"

// DeletesRobotData reports whether a server of this tenant has its data removed when it is
// deleted: a personal job type whose deletionPolicy is Delete. An enterprise robot's data is
// its tenant's (it goes with the tenant, under the tenant's policy), and a tenant stack made
// before the output keeps the data (Retain, the default).
func (o *TenantOutputs) DeletesRobotData() bool {
	return v1alpha1.TenantType(o.TenantType) == v1alpha1.TenantPersonal &&
		v1alpha1.DeletionPolicy(o.DeletionPolicy) == v1alpha1.DeletionDelete
}

// registerPurge registers a purge stage of a personal robot's stack (see the top of this
// file) and returns its outputs: the robot's data names, as every run exports them.
func registerPurge(ctx *pulumi.Context, s *v1alpha1.TFRServer, p *serverPlan, stage PurgeStage) (pulumi.Map, error) {
	if !p.personal {
		return nil, fmt.Errorf("server %q: only a personal robot's data is purged; its tenant is %s", s.Name, p.t.TenantType)
	}
	creds, err := p.credentials(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := p.bindHashKey(ctx); err != nil {
		return nil, err
	}
	rb, t := p.robot, &p.t
	cz, err := server.NewConfz(ctx, ServerConfz, &server.ConfzArgs{Robot: rb, TOML: p.confzTOML(creds), Isolate: true})
	if err != nil {
		return nil, err
	}
	if stage == PurgeData {
		args := &server.DataPurgeArgs{
			Robot: rb,
			Postgres: server.PurgeLogin{Host: t.PostgresHost, Port: t.PostgresPort, Database: t.PostgresDatabase,
				User: t.PostgresUser, Password: secretOf(t.PostgresPassword)},
			MinIO: server.PurgeLogin{Host: t.MinIOHost, Port: t.MinIOPort,
				UserSecret: secretOf(t.MinIOAccessKey), Password: secretOf(t.MinIOSecretKey)},
			Redis:      server.PurgeLogin{Host: t.RedisHost, Port: t.RedisPort, Password: secretOf(t.RedisPassword)},
			PullSecret: t.PullSecretName,
		}
		if t.GrafanaURL != "" {
			args.Grafana = &server.PurgeLogin{Host: t.GrafanaURL, User: t.GrafanaAdminUser, Password: secretOf(t.GrafanaAdminPassword)}
		}
		if p.sharedCache != nil {
			c := *p.sharedCache
			args.Cache = &c
		}
		if _, err := server.NewDataPurge(ctx, ServerDataPurge, args, pulumi.DependsOn([]pulumi.Resource{cz})); err != nil {
			return nil, err
		}
	}
	known := ServerOutputs{
		Namespace: rb.Namespace, TenantType: t.TenantType, RobotID: rb.ID, RobotType: rb.Type,
		Bucket: creds.bucket, RabbitMQVHost: creds.rabbitmqVHost, DBSchema: rb.Schema(), RedisKeyPrefix: rb.RedisKeyPrefix(),
	}
	// The workers' outputs (the API Service, Secret names) are empty: they are gone.
	return newExports(known.fields()).m, nil
}
