package stacks

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// The stacks' outputs, one typed struct per level (ClusterOutputs, TenantOutputs,
// ServerOutputs, and TenantCluster, the part of the cluster's a tenant reads), each with one
// table binding every output key to its field. The table is the only list of a level's keys:
// the program exports from it (every key, secret keys as Pulumi secrets), the readers parse
// with it (every key present, of its type, secrets still secret), and the key lists the
// runner and the tests use come from it. A key is secret exactly when its field is a
// SecretString, so the flag cannot disagree with the type.

// SecretString is a secret value carried in plain Go (a parent stack's secret output on its
// way into a child program, which turns it back into a Pulumi secret). It never prints.
type SecretString string

// String hides the value.
func (SecretString) String() string { return "[secret]" }

// GoString hides the value from %#v.
func (SecretString) GoString() string { return "[secret]" }

// MarshalJSON hides the value.
func (SecretString) MarshalJSON() ([]byte, error) { return []byte(`"[secret]"`), nil }

// Reveal returns the value; pass it only into a program as a Pulumi secret.
func (s SecretString) Reveal() string { return string(s) }

// secretOf turns a SecretString back into a Pulumi secret.
func secretOf(s SecretString) pulumi.StringOutput {
	return pulumi.ToSecret(pulumi.String(s.Reveal())).(pulumi.StringOutput)
}

// outputValue are the Go types an output field may have.
type outputValue interface {
	string | SecretString | int | bool | []string | OptionalString
}

// OptionalString is a string output that a stack made before the key existed lacks: it
// reads as "" there instead of failing the read.
type OptionalString string

// outputField binds an output key to a field of a level's outputs struct.
type outputField struct {
	key string
	ptr any // *string, *SecretString, *int, *bool, *[]string or *OptionalString: bind allows no other
}

func bind[T outputValue](key string, p *T) outputField { return outputField{key: key, ptr: p} }

func (f outputField) secret() bool {
	_, ok := f.ptr.(*SecretString)
	return ok
}

// export is the field's value as a stack output.
func (f outputField) export() pulumi.Input {
	switch p := f.ptr.(type) {
	case *string:
		return pulumi.String(*p)
	case *SecretString:
		return pulumi.ToSecret(pulumi.String(p.Reveal()))
	case *int:
		return pulumi.Int(*p)
	case *bool:
		return pulumi.Bool(*p)
	case *[]string:
		return pulumi.ToStringArray(*p)
	case *OptionalString:
		return pulumi.String(string(*p))
	}
	panic(fmt.Sprintf("stacks: output %s has a field of type %T", f.key, f.ptr)) // unreachable through field
}

// read sets the field from the stack's outputs.
func (f outputField) read(r *outputReader) {
	switch p := f.ptr.(type) {
	case *string:
		*p = r.str(f.key, false)
	case *SecretString:
		*p = SecretString(r.str(f.key, true))
	case *int:
		*p = r.integer(f.key)
	case *bool:
		*p = r.boolean(f.key)
	case *[]string:
		*p = r.strings(f.key)
	case *OptionalString:
		if _, ok := r.out[f.key]; ok {
			*p = OptionalString(r.str(f.key, false))
		}
	}
}

// outputTable is a level's fields, in the order they are read (the first error wins).
type outputTable []outputField

// keys maps every key to whether it is secret.
func (t outputTable) keys() map[string]bool {
	out := make(map[string]bool, len(t))
	for _, f := range t {
		out[f.key] = f.secret()
	}
	return out
}

// pulumiMap exports the fields, secrets as Pulumi secrets.
func (t outputTable) pulumiMap() pulumi.Map {
	m := make(pulumi.Map, len(t))
	for _, f := range t {
		m[f.key] = f.export()
	}
	return m
}

// readOutputs parses a level's outputs from a stack's through its table. what names the stack
// level in errors.
func readOutputs[T any](what string, out program.Outputs, fields func(*T) outputTable) (T, error) {
	var o T
	r := outputReader{out: out}
	for _, f := range fields(&o) {
		f.read(&r)
	}
	if r.err != nil {
		var zero T
		return zero, fmt.Errorf("%s stack outputs: %w", what, r.err)
	}
	return o, nil
}

// exports is a stack's output map while the program registers: every key of the level's
// table from the start (the zero value, or what the program knows up front), and secret
// keys always wrapped as secrets, whatever a component hands over.
type exports struct {
	m      pulumi.Map
	secret map[string]bool
}

func newExports(initial outputTable) *exports {
	return &exports{m: initial.pulumiMap(), secret: initial.keys()}
}

func (e *exports) set(key string, v pulumi.Input) {
	secret, known := e.secret[key]
	if !known {
		panic("stacks: unknown output " + key) // a programming error, caught by every test
	}
	if secret {
		v = pulumi.ToSecret(v)
	}
	e.m[key] = v
}

// outputReader reads typed values from stack outputs, keeping the first error.
type outputReader struct {
	out program.Outputs
	err error
}

// get returns the value of key (a secret's plaintext).
func (r *outputReader) get(key string, secret bool) (any, bool) {
	if r.err != nil {
		return nil, false
	}
	o, ok := r.out[key]
	switch {
	case !ok:
		r.err = fmt.Errorf("output %q is missing", key)
		return nil, false
	case secret && !o.Secret:
		// A secret that arrives in the clear has already leaked into state; refuse it.
		r.err = fmt.Errorf("output %q is not a secret", key)
		return nil, false
	}
	return o.Reveal(), true
}

func (r *outputReader) str(key string, secret bool) string {
	v, ok := r.get(key, secret)
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		r.err = fmt.Errorf("output %q is a %T, want a string", key, v)
	}
	return s
}

func (r *outputReader) integer(key string) int {
	v, ok := r.get(key, false)
	if !ok {
		return 0
	}
	switch n := v.(type) {
	case float64:
		if n == float64(int(n)) {
			return int(n)
		}
	case int:
		return n
	case int64:
		return int(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
	}
	r.err = fmt.Errorf("output %q is %v (%T), want an integer", key, v, v)
	return 0
}

// strings reads a list of strings. A list key may be absent: the list keys were added after
// the first stacks were brought up, and a stack from before reads as the empty list until its
// next up exports it.
func (r *outputReader) strings(key string) []string {
	if r.err != nil {
		return nil
	}
	if _, ok := r.out[key]; !ok {
		return nil
	}
	v, _ := r.get(key, false)
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, e := range l {
			s, ok := e.(string)
			if !ok {
				r.err = fmt.Errorf("output %q has a %T element, want strings", key, e)
				return nil
			}
			out = append(out, s)
		}
		return out
	case nil:
		return nil
	}
	r.err = fmt.Errorf("output %q is a %T, want a list of strings", key, v)
	return nil
}

func (r *outputReader) boolean(key string) bool {
	v, ok := r.get(key, false)
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.err = fmt.Errorf("output %q is a %T, want a bool", key, v)
	}
	return b
}

// Output keys of the cluster stack. Every key is always exported; a component that is not
// installed exports its zero value (empty, 0, false). ClusterOutputs is the typed form.
const (
	ClusterOutputDomain           = "domain"
	ClusterOutputAPIHost          = "apiHost"
	ClusterOutputIngressMode      = "ingressMode"
	ClusterOutputIngressAddress   = "ingressAddress"   // "" in NodePort mode (any node)
	ClusterOutputIngressHTTPPort  = "ingressHTTPPort"  // node port in NodePort mode, else 80
	ClusterOutputIngressHTTPSPort = "ingressHTTPSPort" // node port in NodePort mode, else 443
	ClusterOutputImageRegistry    = "imageRegistry"    // image mirror prefix, "" for upstream
	ClusterOutputPullSecretName   = "pullSecretName"
	// ClusterOutputPullSecretNamespace is where the source copy of the pull Secret lives.
	ClusterOutputPullSecretNamespace = "pullSecretNamespace"
	// ClusterOutputDockerConfigJSON is the pull Secret's .dockerconfigjson (secret output);
	// tenant stacks write it into their namespaces.
	ClusterOutputDockerConfigJSON      = "dockerConfigJSON"
	ClusterOutputCNPGOperatorReady     = "cnpgOperatorReady"
	ClusterOutputMinIOOperatorReady    = "minioOperatorReady"
	ClusterOutputRabbitMQOperatorReady = "rabbitmqOperatorReady"
	// ClusterOutputReservedNamespaces is the TFRCluster's spec.reservedNamespaces (sorted):
	// namespaces no tenant of the cluster may target, on top of the built-in ones.
	ClusterOutputReservedNamespaces = "reservedNamespaces"
	// ClusterOutputPersonal is the TFRCluster's spec.personal, defaulted, as JSON: the shared
	// middleware of its personal tenants per job type (TenantCluster.PersonalMiddleware).
	ClusterOutputPersonal = "personal"
	// ClusterOutputTenancy is the TFRCluster's spec.tenancy as JSON: its tenants' classes and
	// namespace policy (TenantCluster.Tenancy, tenancy.go).
	ClusterOutputTenancy = "tenancy"
	// ClusterOutputEgress is the TFRCluster's spec.egress and the API server's addresses as
	// JSON: its tenant namespaces' egress policy (TenantCluster.EgressPolicy, egress.go).
	ClusterOutputEgress = "egress"
	// ClusterOutputTenantPullSecretsNamespace is the TFRCluster's
	// spec.imageRegistry.tenantCredentialsNamespace: where each tenant namespace's own pull
	// credential is ("" when they share the cluster's).
	ClusterOutputTenantPullSecretsNamespace = "tenantPullSecretsNamespace"
)

// ClusterOutputs are the cluster stack's outputs, typed. The program exports the values it
// knows before registering from here; the components' own outputs replace the rest.
type ClusterOutputs struct {
	Domain, APIHost, IngressMode, IngressAddress string
	IngressHTTPPort, IngressHTTPSPort            int
	ImageRegistry                                string
	PullSecretName, PullSecretNamespace          string
	DockerConfigJSON                             SecretString
	CNPGOperatorReady, MinIOOperatorReady        bool
	RabbitMQOperatorReady                        bool
	ReservedNamespaces                           []string
	Personal                                     OptionalString
	Tenancy                                      OptionalString
	Egress                                       OptionalString
	TenantPullSecretsNamespace                   OptionalString
}

func (o *ClusterOutputs) fields() outputTable {
	return outputTable{
		bind(ClusterOutputDomain, &o.Domain), bind(ClusterOutputAPIHost, &o.APIHost),
		bind(ClusterOutputIngressMode, &o.IngressMode), bind(ClusterOutputIngressAddress, &o.IngressAddress),
		bind(ClusterOutputIngressHTTPPort, &o.IngressHTTPPort), bind(ClusterOutputIngressHTTPSPort, &o.IngressHTTPSPort),
		bind(ClusterOutputImageRegistry, &o.ImageRegistry),
		bind(ClusterOutputPullSecretName, &o.PullSecretName), bind(ClusterOutputPullSecretNamespace, &o.PullSecretNamespace),
		bind(ClusterOutputDockerConfigJSON, &o.DockerConfigJSON),
		bind(ClusterOutputCNPGOperatorReady, &o.CNPGOperatorReady), bind(ClusterOutputMinIOOperatorReady, &o.MinIOOperatorReady),
		bind(ClusterOutputRabbitMQOperatorReady, &o.RabbitMQOperatorReady),
		bind(ClusterOutputReservedNamespaces, &o.ReservedNamespaces),
		bind(ClusterOutputPersonal, &o.Personal), bind(ClusterOutputTenancy, &o.Tenancy),
		bind(ClusterOutputEgress, &o.Egress), bind(ClusterOutputTenantPullSecretsNamespace, &o.TenantPullSecretsNamespace),
	}
}

// ClusterOutputKeys lists every output key of the cluster stack and whether it is secret.
func ClusterOutputKeys() map[string]bool { return (&ClusterOutputs{}).fields().keys() }

// TenantCluster is what the tenant program takes from its TFRCluster's stack (read with
// TenantClusterFromStack): a few of the cluster's outputs, so a tenant needs no more of the
// cluster stack than these.
type TenantCluster struct {
	// PullSecretName is the registry pull Secret to copy into the namespace; "" when the
	// cluster has no registry credentials.
	PullSecretName string
	// DockerConfigJSON is its .dockerconfigjson.
	DockerConfigJSON SecretString
	// ImageRegistry is the image mirror prefix ("" = upstream registries).
	ImageRegistry string
	// RabbitMQOperatorReady gates the whole program (ErrRabbitMQOperatorNotReady).
	RabbitMQOperatorReady bool
	// ReservedNamespaces extend the built-in reserved namespaces for this cluster's tenants
	// (TFRCluster.spec.reservedNamespaces).
	ReservedNamespaces []string
	// Personal is the cluster's spec.personal as JSON ("" from a cluster stack made before
	// the output existed: every job type takes the defaults); see PersonalMiddleware.
	Personal OptionalString
	// Tenancy is the cluster's spec.tenancy as JSON ("" from a cluster stack made before the
	// output existed: the built-in policy); see TenantCluster.TenancyPolicy.
	Tenancy OptionalString
	// Egress is the cluster's egress policy as JSON ("" from a cluster stack made before the
	// output existed: egress stays open); see TenantCluster.EgressPolicy.
	Egress OptionalString
	// TenantPullSecretsNamespace, when set, holds each tenant namespace's own pull
	// credential (a Secret named after the namespace), copied as PullSecretName instead of
	// DockerConfigJSON.
	TenantPullSecretsNamespace OptionalString
}

func (c *TenantCluster) fields() outputTable {
	return outputTable{
		bind(ClusterOutputPullSecretName, &c.PullSecretName), bind(ClusterOutputDockerConfigJSON, &c.DockerConfigJSON),
		bind(ClusterOutputImageRegistry, &c.ImageRegistry), bind(ClusterOutputRabbitMQOperatorReady, &c.RabbitMQOperatorReady),
		bind(ClusterOutputReservedNamespaces, &c.ReservedNamespaces), bind(ClusterOutputPersonal, &c.Personal),
		bind(ClusterOutputTenancy, &c.Tenancy), bind(ClusterOutputEgress, &c.Egress),
		bind(ClusterOutputTenantPullSecretsNamespace, &c.TenantPullSecretsNamespace),
	}
}

// TenantClusterKeys are the cluster output keys a tenant reads (TenantCluster's), with whether
// each is secret: what a stack reference to the parent cluster fetches, and no more.
func TenantClusterKeys() map[string]bool { return (&TenantCluster{}).fields().keys() }

// TenantClusterFromStack reads a TenantCluster from the cluster stack's outputs, checking
// every key and type.
func TenantClusterFromStack(out program.Outputs) (TenantCluster, error) {
	return readOutputs("cluster", out, (*TenantCluster).fields)
}

// Output keys of the tenant stack. Every key is always exported (a component that is not
// installed exports its zero value); the ones marked secret are Pulumi secrets. TenantOutputs
// is the typed form.
const (
	TenantOutputNamespace      = "namespace"
	TenantOutputTenantType     = "tenantType"
	TenantOutputJobType        = "jobType"     // personal tenants, "" otherwise
	TenantOutputSharedStack    = "sharedStack" // the stack that owns the middleware ("" = this one)
	TenantOutputPullSecretName = "pullSecretName"

	TenantOutputPostgresHost              = "postgresHost" // "{namespace}-pg-rw"
	TenantOutputPostgresPort              = "postgresPort"
	TenantOutputPostgresDatabase          = "postgresDatabase"
	TenantOutputPostgresUser              = "postgresUser"
	TenantOutputPostgresPassword          = "postgresPassword" // secret
	TenantOutputPostgresCredentialsSecret = "postgresCredentialsSecret"

	// TimescaleDB shares the PostgreSQL login (user, password, credentials Secret).
	TenantOutputTimescaleHost     = "timescaleHost" // "{namespace}-tsdb-rw"
	TenantOutputTimescalePort     = "timescalePort"
	TenantOutputTimescaleDatabase = "timescaleDatabase"

	TenantOutputRedisHost     = "redisHost" // "redis.{namespace}.svc.cluster.local"
	TenantOutputRedisPort     = "redisPort"
	TenantOutputRedisPassword = "redisPassword" // secret
	TenantOutputRedisSecret   = "redisSecret"   // Secret with key "password"

	TenantOutputRabbitMQHost      = "rabbitmqHost" // "rabbitmq.{namespace}.svc.cluster.local"
	TenantOutputRabbitMQPort      = "rabbitmqPort"
	TenantOutputRabbitMQUser      = "rabbitmqUser"
	TenantOutputRabbitMQPassword  = "rabbitmqPassword" // secret
	TenantOutputRabbitMQVHost     = "rabbitmqVHost"
	TenantOutputRabbitMQBrokerURL = "rabbitmqBrokerURL" // secret

	TenantOutputMinIOHost      = "minioHost" // "minio.{namespace}.svc.cluster.local"
	TenantOutputMinIOPort      = "minioPort"
	TenantOutputMinIOAccessKey = "minioAccessKey" // secret
	TenantOutputMinIOSecretKey = "minioSecretKey" // secret
	TenantOutputMinIOBucket    = "minioBucket"
	// The minio* keys are the tenant's object storage whichever its provider (an external
	// endpoint's host and port, its Secret's keys, its bucket); these say which it is. A
	// stack made before them lacks them: MinIO.
	TenantOutputObjectStorageProvider = "objectStorageProvider" // "MinIO" or "External"
	TenantOutputObjectStorageURL      = "objectStorageURL"      // the S3 endpoint, http(s)://host:port
	TenantOutputObjectStorageRegion   = "objectStorageRegion"   // "" for MinIO

	TenantOutputOtelEndpoint         = "otelEndpoint"
	TenantOutputJaegerURL            = "jaegerURL"
	TenantOutputPrometheusURL        = "prometheusURL"
	TenantOutputGrafanaURL           = "grafanaURL"
	TenantOutputGrafanaAdminUser     = "grafanaAdminUser"
	TenantOutputGrafanaAdminPassword = "grafanaAdminPassword" // secret
	TenantOutputGrafanaAdminSecret   = "grafanaAdminSecret"
	TenantOutputVectorEndpoint       = "vectorEndpoint"
	TenantOutputFrontURL             = "frontURL"
	TenantOutputSharedCacheClaim     = "sharedCacheClaim"
	TenantOutputSharedCacheDir       = "sharedCacheDir"

	// TenantOutputOwnerShare is a personal job type's owner share as JSON (OwnerShare;
	// ownershare.go), "" for none.
	TenantOutputOwnerShare = "ownerShare"
	// TenantOutputDeletionPolicy is the deletion policy of the tenant's data: the tenant's
	// spec.deletionPolicy, or for a personal tenant its job type's (TFRCluster.spec.personal).
	// Under Delete a personal robot's data goes with the robot (purge.go).
	TenantOutputDeletionPolicy = "deletionPolicy"
)

// TenantOutputs are the tenant stack's outputs, typed: what a server needs to connect, and
// what a personal tenant's member stack re-exports from its shared stack.
type TenantOutputs struct {
	Namespace, TenantType, JobType, SharedStack, PullSecretName string

	PostgresHost                     string
	PostgresPort                     int
	PostgresDatabase, PostgresUser   string
	PostgresPassword                 SecretString
	PostgresCredentialsSecret        string
	TimescaleHost                    string
	TimescalePort                    int
	TimescaleDatabase                string
	RedisHost                        string
	RedisPort                        int
	RedisPassword                    SecretString
	RedisSecret                      string
	RabbitMQHost                     string
	RabbitMQPort                     int
	RabbitMQUser                     string
	RabbitMQPassword                 SecretString
	RabbitMQVHost                    string
	RabbitMQBrokerURL                SecretString
	MinIOHost                        string
	MinIOPort                        int
	MinIOAccessKey, MinIOSecretKey   SecretString
	MinIOBucket                      string
	ObjectStorageProvider            OptionalString
	ObjectStorageURL                 OptionalString
	ObjectStorageRegion              OptionalString
	OtelEndpoint, JaegerURL          string
	PrometheusURL, GrafanaURL        string
	GrafanaAdminUser                 string
	GrafanaAdminPassword             SecretString
	GrafanaAdminSecret               string
	VectorEndpoint, FrontURL         string
	SharedCacheClaim, SharedCacheDir string
	// OwnerShare is "" from a tenant without one and from a stack made before the output.
	OwnerShare OptionalString
	// DeletionPolicy is "" from a stack made before the output (Retain).
	DeletionPolicy OptionalString
}

func (o *TenantOutputs) fields() outputTable {
	return outputTable{
		bind(TenantOutputNamespace, &o.Namespace), bind(TenantOutputTenantType, &o.TenantType),
		bind(TenantOutputJobType, &o.JobType), bind(TenantOutputSharedStack, &o.SharedStack),
		bind(TenantOutputPullSecretName, &o.PullSecretName),
		bind(TenantOutputPostgresHost, &o.PostgresHost), bind(TenantOutputPostgresPort, &o.PostgresPort),
		bind(TenantOutputPostgresDatabase, &o.PostgresDatabase), bind(TenantOutputPostgresUser, &o.PostgresUser),
		bind(TenantOutputPostgresPassword, &o.PostgresPassword), bind(TenantOutputPostgresCredentialsSecret, &o.PostgresCredentialsSecret),
		bind(TenantOutputTimescaleHost, &o.TimescaleHost), bind(TenantOutputTimescalePort, &o.TimescalePort),
		bind(TenantOutputTimescaleDatabase, &o.TimescaleDatabase),
		bind(TenantOutputRedisHost, &o.RedisHost), bind(TenantOutputRedisPort, &o.RedisPort),
		bind(TenantOutputRedisPassword, &o.RedisPassword), bind(TenantOutputRedisSecret, &o.RedisSecret),
		bind(TenantOutputRabbitMQHost, &o.RabbitMQHost), bind(TenantOutputRabbitMQPort, &o.RabbitMQPort),
		bind(TenantOutputRabbitMQUser, &o.RabbitMQUser), bind(TenantOutputRabbitMQPassword, &o.RabbitMQPassword),
		bind(TenantOutputRabbitMQVHost, &o.RabbitMQVHost), bind(TenantOutputRabbitMQBrokerURL, &o.RabbitMQBrokerURL),
		bind(TenantOutputMinIOHost, &o.MinIOHost), bind(TenantOutputMinIOPort, &o.MinIOPort),
		bind(TenantOutputMinIOAccessKey, &o.MinIOAccessKey), bind(TenantOutputMinIOSecretKey, &o.MinIOSecretKey),
		bind(TenantOutputMinIOBucket, &o.MinIOBucket),
		bind(TenantOutputObjectStorageProvider, &o.ObjectStorageProvider), bind(TenantOutputObjectStorageURL, &o.ObjectStorageURL),
		bind(TenantOutputObjectStorageRegion, &o.ObjectStorageRegion),
		bind(TenantOutputOtelEndpoint, &o.OtelEndpoint), bind(TenantOutputJaegerURL, &o.JaegerURL),
		bind(TenantOutputPrometheusURL, &o.PrometheusURL), bind(TenantOutputGrafanaURL, &o.GrafanaURL),
		bind(TenantOutputGrafanaAdminUser, &o.GrafanaAdminUser), bind(TenantOutputGrafanaAdminPassword, &o.GrafanaAdminPassword),
		bind(TenantOutputGrafanaAdminSecret, &o.GrafanaAdminSecret),
		bind(TenantOutputVectorEndpoint, &o.VectorEndpoint), bind(TenantOutputFrontURL, &o.FrontURL),
		bind(TenantOutputSharedCacheClaim, &o.SharedCacheClaim), bind(TenantOutputSharedCacheDir, &o.SharedCacheDir),
		bind(TenantOutputOwnerShare, &o.OwnerShare), bind(TenantOutputDeletionPolicy, &o.DeletionPolicy),
	}
}

// ExternalObjectStorage reports whether the tenant's object storage is an external
// endpoint (a stack made before the provider output is MinIO's).
func (o *TenantOutputs) ExternalObjectStorage() bool {
	return o.ObjectStorageProvider == OptionalString(v1alpha1.ObjectStorageExternal)
}

// TenantOutputKeys lists every output key of the tenant stack and whether it is secret.
func TenantOutputKeys() map[string]bool { return (&TenantOutputs{}).fields().keys() }

// TenantOutputsFromStack reads TenantOutputs from a tenant stack's outputs, checking every key,
// its type and that secret keys are secret.
func TenantOutputsFromStack(out program.Outputs) (TenantOutputs, error) {
	return readOutputs("tenant", out, (*TenantOutputs).fields)
}

// Output keys of the server stack. Every key is always exported and none is secret (a robot's
// credentials live in its Secrets and in the stack's credential state only). ServerOutputs is
// the typed form.
const (
	ServerOutputNamespace  = "namespace"
	ServerOutputTenantType = "tenantType"
	ServerOutputRobotID    = "robotId"
	ServerOutputRobotType  = "robotType"
	// ServerOutputAPIService is the API Service's in-cluster host, read back from the created
	// Service; it equals routing.UpstreamHost for the robot. Its port is ServerOutputAPIPort
	// (routing.UpstreamPort).
	ServerOutputAPIService     = "apiService"
	ServerOutputAPIPort        = "apiPort"
	ServerOutputAPIServiceName = "apiServiceName"
	ServerOutputSecretName     = "secretName"
	ServerOutputConfigMapName  = "configMapName"
	ServerOutputConfzSecret    = "confzSecretName"
	// ServerOutputDBSchema is the robot's schema (TFS_ROBOT__DB_SCHEMA) in a personal
	// tenant, "" in an enterprise tenant.
	ServerOutputDBSchema = "dbSchema"
	// ServerOutputBucket is the robot's bucket (personal) or the tenant's (enterprise).
	ServerOutputBucket         = "bucket"
	ServerOutputRabbitMQVHost  = "rabbitmqVHost"
	ServerOutputRedisKeyPrefix = "redisKeyPrefix" // "" in an enterprise tenant
	// ServerOutputGrafanaToken is the Secret holding the robot's Grafana token ("" without
	// the grafana-sa Job).
	ServerOutputGrafanaToken = "grafanaTokenSecret"
	// ServerOutputChecksum is the workers' server.ChecksumAnnotation value.
	ServerOutputChecksum = "checksum"
)

// ServerOutputs are the server stack's outputs, typed. The program exports the values it
// knows before registering from here; the components' own outputs replace the rest.
type ServerOutputs struct {
	Namespace, TenantType, RobotID, RobotType string
	APIService                                string
	APIPort                                   int
	APIServiceName                            string
	SecretName, ConfigMapName, ConfzSecret    string
	DBSchema, Bucket, RabbitMQVHost           string
	RedisKeyPrefix, GrafanaToken, Checksum    string
}

func (o *ServerOutputs) fields() outputTable {
	return outputTable{
		bind(ServerOutputNamespace, &o.Namespace), bind(ServerOutputTenantType, &o.TenantType),
		bind(ServerOutputRobotID, &o.RobotID), bind(ServerOutputRobotType, &o.RobotType),
		bind(ServerOutputAPIService, &o.APIService), bind(ServerOutputAPIPort, &o.APIPort),
		bind(ServerOutputAPIServiceName, &o.APIServiceName), bind(ServerOutputSecretName, &o.SecretName),
		bind(ServerOutputConfigMapName, &o.ConfigMapName), bind(ServerOutputConfzSecret, &o.ConfzSecret),
		bind(ServerOutputDBSchema, &o.DBSchema), bind(ServerOutputBucket, &o.Bucket),
		bind(ServerOutputRabbitMQVHost, &o.RabbitMQVHost), bind(ServerOutputRedisKeyPrefix, &o.RedisKeyPrefix),
		bind(ServerOutputGrafanaToken, &o.GrafanaToken), bind(ServerOutputChecksum, &o.Checksum),
	}
}

// ServerOutputKeys lists every output key of the server stack, sorted.
func ServerOutputKeys() []string {
	return slices.Sorted(maps.Keys((&ServerOutputs{}).fields().keys()))
}
