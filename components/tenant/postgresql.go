package tenant

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
	"github.com/tfrs-io/tfrs-operator/components/internal/crs"
)

// PostgresPort is the port of CNPG's services.
const PostgresPort = 5432

// CNPGStorage is the volume of each instance of a CNPG cluster.
type CNPGStorage struct {
	Size, StorageClass string
}

// PostgreSQLArgs configure the postgresql component.
type PostgreSQLArgs struct {
	// Namespace is the tenant namespace (the namespace component's output).
	Namespace pulumi.StringInput
	// ClusterName is the CNPG Cluster, "{namespace}-pg"; CNPG names its read-write Service
	// "<cluster>-rw".
	ClusterName string
	Instances   int
	// ImageName is the operand image (".../postgresql:16-minimal-bookworm" by default).
	ImageName string
	Storage   CNPGStorage
	Resources Resources
	// Database and Owner are created by initdb.
	Database, Owner string
	// CredentialsSecret is the kubernetes.io/basic-auth Secret with the owner's login,
	// "{namespace}-pg-credentials". Login says where its password comes from (user-given
	// Secret keys "username" (optional, else Owner) and "password").
	CredentialsSecret string
	Login             Login
	PullSecret        string
	// Retain keeps the cluster and the credentials Secret on destroy.
	Retain bool
}

// PostgreSQL is the tenant's CloudNativePG cluster and its owner credentials.
type PostgreSQL struct {
	pulumi.ResourceState
	children.Set

	// Host is the read-write Service, "{cluster}-rw" (same-namespace clients use the short name).
	Host pulumi.StringOutput `pulumi:"host"`
	Port pulumi.IntOutput    `pulumi:"port"`
	// Database and User are the application database and its owner.
	Database pulumi.StringOutput `pulumi:"database"`
	User     pulumi.StringOutput `pulumi:"user"`
	// Password of User (secret).
	Password pulumi.StringOutput `pulumi:"password"`
	// CredentialsSecret is the name of the basic-auth Secret (for secretKeyRef).
	CredentialsSecret pulumi.StringOutput `pulumi:"credentialsSecret"`
}

// NewPostgreSQL creates the postgresql component.
func NewPostgreSQL(ctx *pulumi.Context, name string, args *PostgreSQLArgs, opts ...pulumi.ResourceOption) (*PostgreSQL, error) {
	if args == nil || args.Namespace == nil || args.ClusterName == "" || args.Database == "" || args.Owner == "" || args.CredentialsSecret == "" || args.ImageName == "" {
		return nil, fmt.Errorf("postgresql: namespace, cluster name, image, database, owner and credentials secret are required")
	}
	if err := args.Login.validate("postgresql"); err != nil {
		return nil, err
	}
	c := &PostgreSQL{}
	if err := ctx.RegisterComponentResource(PostgreSQLType, name, c, opts...); err != nil {
		return nil, err
	}
	// The owner role is the login's user: a user-given Secret's "username" may rename it.
	login := args.Login
	login.User = pulumi.String(args.Owner)
	user, password, err := resolveLogin(ctx, c, name, args.Namespace, login, "username", "password", false)
	if err != nil {
		return nil, err
	}
	secret, err := corev1.NewSecret(ctx, name+"-credentials", &corev1.SecretArgs{
		Metadata: retainedSecret(meta(args.CredentialsSecret, args.Namespace, appLabels(args.ClusterName)), args.Retain),
		Type:     pulumi.String("kubernetes.io/basic-auth"),
		StringData: pulumi.StringMap{
			"username": user,
			"password": password,
		},
	}, retain(args.Retain, pulumi.Parent(c))...)
	if err != nil {
		return nil, err
	}
	secretName := secret.Metadata.Name().Elem()
	cl, err := newCNPGCluster(ctx, c, name+"-cluster", &cnpgCluster{
		namespace: args.Namespace, name: args.ClusterName, instances: args.Instances,
		image: args.ImageName, storage: args.Storage, resources: args.Resources,
		database: args.Database, owner: user, secret: secretName,
		pullSecret: args.PullSecret, retain: args.Retain,
	})
	if err != nil {
		return nil, err
	}
	c.Keep(secret, cl)
	c.Host = pulumi.String(args.ClusterName + "-rw").ToStringOutput()
	c.Port = pulumi.Int(PostgresPort).ToIntOutput()
	c.Database = pulumi.String(args.Database).ToStringOutput()
	c.User = user
	c.Password = password
	c.CredentialsSecret = secretName
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"host": c.Host, "port": c.Port, "database": c.Database, "user": c.User,
		"password": c.Password, "credentialsSecret": c.CredentialsSecret,
	})
}

// TimescaleDBArgs configure the timescaledb component.
type TimescaleDBArgs struct {
	Namespace pulumi.StringInput
	// ClusterName is the CNPG Cluster, "{namespace}-tsdb".
	ClusterName string
	// ImageName is a CNPG-compatible image shipping TimescaleDB (timescaledb-ha).
	ImageName string
	Storage   CNPGStorage
	Resources Resources
	// Database and Owner mirror the postgresql component's, so one login serves both.
	Database string
	Owner    pulumi.StringInput
	// CredentialsSecret is the postgresql component's Secret (its output): TimescaleDB is
	// bootstrapped with the same owner login. That data flow is also why it waits for
	// postgresql.
	CredentialsSecret pulumi.StringInput
	PullSecret        string
	Retain            bool
}

// TimescaleDB is a second CNPG cluster with the timescaledb extension preloaded and created.
type TimescaleDB struct {
	pulumi.ResourceState
	children.Set

	Host     pulumi.StringOutput `pulumi:"host"`
	Port     pulumi.IntOutput    `pulumi:"port"`
	Database pulumi.StringOutput `pulumi:"database"`
}

// timescaleUID is the postgres user of the timescaledb-ha images (CNPG defaults to 26).
const timescaleUID = 1000

// NewTimescaleDB creates the timescaledb component.
func NewTimescaleDB(ctx *pulumi.Context, name string, args *TimescaleDBArgs, opts ...pulumi.ResourceOption) (*TimescaleDB, error) {
	if args == nil || args.Namespace == nil || args.ClusterName == "" || args.ImageName == "" || args.Database == "" || args.Owner == nil || args.CredentialsSecret == nil {
		return nil, fmt.Errorf("timescaledb: namespace, cluster name, image, database, owner and credentials secret are required")
	}
	c := &TimescaleDB{}
	if err := ctx.RegisterComponentResource(TimescaleDBType, name, c, opts...); err != nil {
		return nil, err
	}
	cl, err := newCNPGCluster(ctx, c, name+"-cluster", &cnpgCluster{
		namespace: args.Namespace, name: args.ClusterName, instances: 1,
		image: args.ImageName, storage: args.Storage, resources: args.Resources,
		database: args.Database, owner: args.Owner, secret: args.CredentialsSecret,
		pullSecret: args.PullSecret, retain: args.Retain,
		extension: "timescaledb", uid: timescaleUID,
	})
	if err != nil {
		return nil, err
	}
	c.Keep(cl)
	c.Host = pulumi.String(args.ClusterName + "-rw").ToStringOutput()
	c.Port = pulumi.Int(PostgresPort).ToIntOutput()
	c.Database = pulumi.String(args.Database).ToStringOutput()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"host": c.Host, "port": c.Port, "database": c.Database})
}

// cnpgCluster is one CNPG Cluster resource.
type cnpgCluster struct {
	namespace  pulumi.StringInput
	name       string
	instances  int
	image      string
	storage    CNPGStorage
	resources  Resources
	database   string
	owner      pulumi.StringInput
	secret     pulumi.StringInput
	pullSecret string
	retain     bool
	// extension is preloaded and created in the database ("" = none).
	extension string
	// uid is the image's postgres user and group (0 = CNPG's default).
	uid int
}

func newCNPGCluster(ctx *pulumi.Context, parent pulumi.Resource, resourceName string, a *cnpgCluster) (*apiextensions.CustomResource, error) {
	if a.instances < 1 || a.storage.Size == "" {
		return nil, fmt.Errorf("%s: at least one instance and a storage size are required", resourceName)
	}
	spec := crs.CNPGCluster{
		Instances: a.instances, Image: a.image,
		Storage:   crs.CNPGStorage{Size: a.storage.Size, StorageClass: a.storage.StorageClass},
		Resources: crs.Resources(a.resources),
		Database:  a.database, Owner: crs.Flowing, OwnerSecret: crs.Flowing,
		// Propagated to the instance pods; see noSidecar.
		PodAnnotations: noSidecar,
		PullSecret:     a.pullSecret, Extension: a.extension, UID: a.uid,
	}.Cluster()
	return crs.New(ctx, resourceName, crs.Args{
		Metadata: meta(a.name, a.namespace, appLabels(a.name)),
		Spec:     spec,
		// The owner is the login's user (a user-given Secret may rename it, a generated one
		// is secret) and its Secret an output, so the cluster waits for it.
		Flows: []crs.Flow{crs.At(a.owner, crs.CNPGOwnerPath...), crs.At(a.secret, crs.CNPGOwnerSecretPath...)},
	}, retain(a.retain, pulumi.Parent(parent))...)
}
