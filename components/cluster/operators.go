package cluster

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/clusterns"
	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
)

// Where the operators run: MinIOOperatorNamespace is the one the MinIO chart is installed
// into; the CNPG and RabbitMQ release manifests carry their own namespaces, named here so the
// reserved-namespace list (clusterns.All) has them.
const (
	MinIOOperatorNamespace    = clusterns.MinIOOperator
	CNPGOperatorNamespace     = clusterns.CNPGOperator
	RabbitMQOperatorNamespace = clusterns.RabbitMQOperator
)

// CNPGOperatorArgs configure the cnpg-operator component.
type CNPGOperatorArgs struct {
	// Manifest is CloudNativePG's release manifest (CRDs, namespace, operator).
	Manifest ManifestRef
	// Images rewrites the operator's images (a mirror); nil keeps them.
	Images ImageRewriter
}

// CNPGOperator installs the CloudNativePG operator from its YAML manifest.
type CNPGOperator struct {
	pulumi.ResourceState
	children.Set

	// Ready is true once every object of the manifest is ready (the operator Deployment
	// available): tenants may then create Cluster resources.
	Ready pulumi.BoolOutput `pulumi:"ready"`
}

// NewCNPGOperator creates the cnpg-operator component.
func NewCNPGOperator(ctx *pulumi.Context, name string, args *CNPGOperatorArgs, opts ...pulumi.ResourceOption) (*CNPGOperator, error) {
	if args == nil {
		return nil, fmt.Errorf("cnpg-operator: nil args")
	}
	c := &CNPGOperator{}
	if err := ctx.RegisterComponentResource(CNPGOperatorType, name, c, opts...); err != nil {
		return nil, err
	}
	m, err := newManifest(ctx, c, name+"-manifest", args.Manifest, args.Images)
	if err != nil {
		return nil, err
	}
	c.Keep(m)
	c.Ready = readyWhenDone(m.Resources)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"ready": c.Ready})
}

// MinIOOperatorArgs configure the minio-operator component.
type MinIOOperatorArgs struct {
	// Chart is MinIO's "operator" chart.
	Chart ChartRef
}

// MinIOOperator installs the MinIO operator (Helm: the chart is MinIO's supported install and
// takes the image mirror as a value).
type MinIOOperator struct {
	pulumi.ResourceState
	children.Set

	// Ready is true once the operator is ready: tenants may then create Tenant resources.
	Ready pulumi.BoolOutput `pulumi:"ready"`
}

// NewMinIOOperator creates the minio-operator component.
func NewMinIOOperator(ctx *pulumi.Context, name string, args *MinIOOperatorArgs, opts ...pulumi.ResourceOption) (*MinIOOperator, error) {
	if args == nil {
		return nil, fmt.Errorf("minio-operator: nil args")
	}
	c := &MinIOOperator{}
	if err := ctx.RegisterComponentResource(MinIOOperatorType, name, c, opts...); err != nil {
		return nil, err
	}
	ns, err := newNamespace(ctx, c, name+"-namespace", MinIOOperatorNamespace)
	if err != nil {
		return nil, err
	}
	chart, err := kit.NewChart(ctx, c, name+"-chart", kit.Chart{Release: "minio-operator", Namespace: ns.Metadata.Name().Elem(), Ref: args.Chart})
	if err != nil {
		return nil, err
	}
	c.Keep(ns, chart)
	c.Ready = readyWhenDone(chart.Resources)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"ready": c.Ready})
}

// RabbitMQOperatorArgs configure the rabbitmq-operator component.
type RabbitMQOperatorArgs struct {
	// ClusterOperator is the RabbitMQ cluster operator manifest; TopologyOperator the
	// messaging-topology operator manifest (it needs the cluster operator's CRDs).
	ClusterOperator, TopologyOperator ManifestRef
	// Images rewrites the operators' images (a mirror); nil keeps them.
	Images ImageRewriter
}

// RabbitMQOperator installs the RabbitMQ cluster operator and then the messaging-topology
// operator from their YAML manifests.
type RabbitMQOperator struct {
	pulumi.ResourceState
	children.Set

	// Ready is true once both operators are ready; the tenant stack waits for it before it
	// creates a RabbitmqCluster.
	Ready pulumi.BoolOutput `pulumi:"ready"`
}

// NewRabbitMQOperator creates the rabbitmq-operator component.
func NewRabbitMQOperator(ctx *pulumi.Context, name string, args *RabbitMQOperatorArgs, opts ...pulumi.ResourceOption) (*RabbitMQOperator, error) {
	if args == nil {
		return nil, fmt.Errorf("rabbitmq-operator: nil args")
	}
	c := &RabbitMQOperator{}
	if err := ctx.RegisterComponentResource(RabbitMQOperatorType, name, c, opts...); err != nil {
		return nil, err
	}
	cluster, err := newManifest(ctx, c, name+"-cluster-operator", args.ClusterOperator, args.Images)
	if err != nil {
		return nil, err
	}
	// The topology operator watches RabbitmqCluster objects, whose CRD the cluster operator
	// installs.
	topology, err := newManifest(ctx, c, name+"-topology-operator", args.TopologyOperator, args.Images,
		pulumi.DependsOn([]pulumi.Resource{cluster}))
	if err != nil {
		return nil, err
	}
	c.Keep(cluster, topology)
	c.Ready = pulumi.All(readyWhenDone(cluster.Resources), readyWhenDone(topology.Resources)).ApplyT(func(v []any) bool {
		return v[0].(bool) && v[1].(bool)
	}).(pulumi.BoolOutput)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"ready": c.Ready})
}
