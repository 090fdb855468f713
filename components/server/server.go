// Package server holds the components of the server stack (TFRServer): one ComponentResource
// per node of the server graph, each with a tfrs:server:<Name> type token.
//
// Like the tenant components they know nothing of the TFRServer CRD, of the tenant stack or
// of how credentials are made: the program (stacks.Server) reads the tenant's outputs,
// generates the robot's own credentials and passes plain values and Pulumi inputs in. Every
// secret arrives as a Pulumi secret and reaches a pod only through a Kubernetes Secret
// (envFrom, secretKeyRef or a volume), never as a literal in a pod spec.
//
// Names. A robot is known in its namespace by (robotType, robotId), the pair the gateway
// routes on, so Robot.Name, "<robotType>-<robotId>", is the "{robot}" of the seeds'
// "{robot}-secret" and "{robot}-config" and prefixes every object of the robot: with no '-'
// allowed in the type the name is unambiguous, two distinct robots in a personal tenant's
// shared namespace can never collide, and the API Service is exactly the one
// routing.RobotServiceName names. Objects whose data the provider treats as immutable
// (Secrets, ConfigMaps, Jobs) end with a hash of their content; see contentName.
//
// The package imports the components' kit (components/internal/kit: pull secrets, labels,
// the AuthorizationPolicy) and the routing contract, never another component package. A
// container's resources arrive in their typed form (tenant.Resources.Args, in the program).
package server

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/contenthash"
	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
	"github.com/tfrs-io/tfrs-operator/components/routing"
)

// Type tokens of the server components.
const (
	SecretType      = "tfrs:server:Secret"
	ConfigType      = "tfrs:server:Config"
	ConfzType       = "tfrs:server:Confz"
	DBInitType      = "tfrs:server:DBInit"
	MinIOInitType   = "tfrs:server:MinIOInit"
	GrafanaSAType   = "tfrs:server:GrafanaSA"
	APIWorkerType   = "tfrs:server:APIWorker"
	RobotWorkerType = "tfrs:server:RobotWorker"
)

// Labels on every object of a robot. The pod selectors use LabelInstance and LabelComponent,
// both at most 63 characters (Robot.Validate guarantees it for the instance). The
// app.kubernetes.io labels are the kit's, shared with the tenant components, and named here
// again because programs match on them.
const (
	LabelName      = kit.LabelName
	LabelInstance  = kit.LabelInstance
	LabelComponent = kit.LabelComponent
	LabelPartOf    = kit.LabelPartOf
	LabelRobotID   = "tfrs.io/robot-id"
	LabelRobotType = "tfrs.io/robot-type"
	// LabelInbound is on every pod of a robot and says who may reach it: InboundGateway for
	// the API worker, InboundNone for every other pod (robot worker, init Jobs). The robot's
	// AuthorizationPolicies select pods by it, so a pod is covered by the label its builder
	// gives it (podLabels), not by a list of components.
	LabelInbound = "tfrs.io/inbound"
	appName      = kit.RobotAppName
)

// Values of LabelInbound.
const (
	InboundGateway = "gateway"
	InboundNone    = "none"
)

// Components as the LabelComponent value.
const (
	ComponentAPIWorker   = "api-worker"
	ComponentRobotWorker = "robot-worker"
)

// Robot identifies one robot: its namespace (the tenant's) and its routing values.
type Robot struct {
	Namespace, ID, Type string
	// HashKey keys the hashes in content names and the config checksum (the server stack's
	// content-hash key credential; see contenthash). Components that content-name an object
	// refuse to run without it.
	HashKey pulumi.StringInput
	// Owner is the server stack that runs the robot, written on its API Service as
	// OwnerAnnotation: before a run, the caller reads it to refuse a second TFRServer whose
	// robot has the same names in the namespace ("" writes none).
	Owner string
	// DataOwner is who owns the robot's data in the shared middleware of a personal job type:
	// its personal tenant (the tenant stack's name). Every data name (DataName: schema and
	// role, bucket and MinIO user, vhost and RabbitMQ user, Redis user and key prefix, cache
	// directory) carries a hash of it, so a robot of another owner that reuses the robot type
	// and id maps to other names and never inherits this one's data. "" keeps the legacy
	// names, "{robot}" alone: robots whose data predates owner-named data (see DataName).
	DataOwner string
	// ShareOwner is the personal tenant (its stack's name) whose share of the job type's
	// namespace the robot's workers count against: LabelRobotOwner on its Deployments.
	// Unlike DataOwner it is set for every personal robot, legacy data names or not; ""
	// for an enterprise robot.
	ShareOwner string
}

// LabelRobotOwner marks a personal robot's Deployments with its owner (OwnerLabelValue of
// Robot.ShareOwner), so the runner can list what one owner runs in a shared namespace and
// hold it to the cluster's spec.personal.ownerShare (stacks/ownershare.go). It is on the
// Deployments only, not on their pods: adding it rolls no pod.
const LabelRobotOwner = "tfrs.io/robot-owner"

// OwnerLabelValue is LabelRobotOwner's value for owner: dataHashLength characters of base32
// of SHA-256 over the owner, a valid label value whatever the owner's length.
func OwnerLabelValue(owner string) string {
	sum := sha256.Sum256([]byte("robot-owner\x00" + owner))
	return dataHash.EncodeToString(sum[:])[:dataHashLength]
}

// OwnerAnnotation on a robot's API Service names the server stack that owns the robot's names
// in its namespace.
const OwnerAnnotation = "tfrs.io/owner"

// Validate accepts exactly the robots the gateway can route to (routing.Validate): the names
// below are then valid DNS labels, label values, bucket names and SQL identifiers.
func (r Robot) Validate() error {
	if err := routing.Validate(r.Namespace, r.ID, r.Type); err != nil {
		return fmt.Errorf("robot %s/%s: %w", r.Type, r.ID, err)
	}
	return nil
}

// Name is "{robot}": "<robotType>-<robotId>", at most 59 characters. It is injective over
// valid robots: Validate refuses a '-' in the type (routing.Validate), so the first '-' of a
// name ends the type and chat-bot/1 (refused) cannot take chat/bot-1's names. Every other
// name of a robot (objects, schema, bucket, vhost, key prefix) is built on it.
func (r Robot) Name() string { return r.Type + "-" + r.ID }

// SecretBase, ConfigMapBase and ConfzSecretBase name the robot's Secret of spec.secretData,
// ConfigMap of spec.configData and Secret of its Confz: "{robot}-secret", "{robot}-config",
// "{robot}-confz", each followed by a hash of its data (see contentName).
func (r Robot) SecretBase() string { return r.Name() + "-secret" }

// ConfigMapBase: see SecretBase.
func (r Robot) ConfigMapBase() string { return r.Name() + "-config" }

// ConfzSecretBase: see SecretBase.
func (r Robot) ConfzSecretBase() string { return r.Name() + "-confz" }

// APIName names the API worker's Deployment and its Service: routing.RobotServiceName, the
// one function the gateway's Lua filter mirrors.
func (r Robot) APIName() string { return routing.RobotServiceName(r.ID, r.Type) }

// WorkerName names the robot worker's Deployment.
func (r Robot) WorkerName() string { return r.Name() + "-worker" }

// APIHost is the in-cluster host of the API Service, routing.UpstreamHost (port
// routing.UpstreamPort).
func (r Robot) APIHost() string { return routing.UpstreamHost(r.Namespace, r.ID, r.Type) }

// ServiceAccount is the robot's own ServiceAccount, "{robot}-robot": every pod of the robot
// runs as it (the grafana-sa Job excepted, see GrafanaSA), so its mesh identity,
// "cluster.local/ns/<namespace>/sa/{robot}-robot", is the robot's alone. It has no token
// mounted and no RBAC. The suffix keeps it apart from every robot's "{robot}-grafana-sa":
// the names of two robots end differently or have different {robot}s (Name is injective).
func (r Robot) ServiceAccount() string { return r.Name() + kit.RobotServiceAccountSuffix }

// Data names. A personal robot's data outlives its objects: the schema, bucket, Redis keys
// and cache directory stay in the job type's shared middleware after the robot's stack is
// destroyed. So the names of its data say whose they are. dataHashLength characters of
// base32 (80 bits) of SHA-256 over (DataOwner, type, id) end every data name: a robot of
// another owner with the same type and id gets another hash, and so other names; finding an
// owner whose hash equals a given one is a second preimage of 80 bits. The hash covers the
// whole robot, so cutting {robot} to fit a limit never makes two robots share a name.
const (
	dataHashLength = 16
	// maxDataName keeps Schema ("r_" + DataName) within PostgreSQL's 63 and the bucket within
	// S3's 63.
	maxDataName = 61
)

// dataHash encodes with the lowercase RFC 4648 alphabet: valid in identifiers, bucket names,
// label values, Redis and RabbitMQ names alike.
var dataHash = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// DataName is the base of the robot's data names: "{robot}-<hash of owner, type and id>",
// {robot} cut (and stripped of a trailing '-') so the whole has at most maxDataName
// characters; "{robot}" when DataOwner is "" (the legacy names, kept for robots whose stack
// predates owner-named data).
func (r Robot) DataName() string {
	if r.DataOwner == "" {
		return r.Name()
	}
	sum := sha256.Sum256([]byte(r.DataOwner + "\x00" + r.Type + "\x00" + r.ID))
	h := dataHash.EncodeToString(sum[:])[:dataHashLength]
	base := r.Name()
	if n := maxDataName - dataHashLength - 1; len(base) > n {
		base = strings.TrimRight(base[:n], "-")
	}
	return base + "-" + h
}

// Schema is the PostgreSQL schema and role of a robot of a personal tenant: "r_" and
// DataName with '-' turned into '_' (at most 63 characters, and a plain identifier whatever
// the robot's first character is). '-' is the only character turned, and robot values never
// hold '_', so distinct data names never share a schema.
func (r Robot) Schema() string { return "r_" + strings.ReplaceAll(r.DataName(), "-", "_") }

// Bucket is the MinIO bucket of a robot of a personal tenant: DataName, a valid S3 bucket name.
func (r Robot) Bucket() string { return r.DataName() }

// MinIOUser is the access key of a personal robot's own MinIO user (its policy is
// MinIOUser + "-bucket").
func (r Robot) MinIOUser() string { return r.DataName() }

// VHost is the RabbitMQ vhost and user name of a robot of a personal tenant.
func (r Robot) VHost() string { return r.DataName() }

// RedisUser is the Redis ACL user of a robot of a personal tenant.
func (r Robot) RedisUser() string { return r.DataName() }

// RedisKeyPrefix prefixes every Redis key of a robot of a personal tenant.
func (r Robot) RedisKeyPrefix() string { return r.DataName() + ":" }

// Labels are the labels of the robot's objects of one component ("" for objects of the robot
// as a whole).
func (r Robot) Labels(component string) map[string]string {
	l := map[string]string{
		LabelName: appName, LabelInstance: r.Name(), LabelPartOf: kit.PartOf,
		LabelRobotID: r.ID, LabelRobotType: r.Type,
	}
	if component != "" {
		l[LabelComponent] = component
	}
	return l
}

// selector selects the pods of one component of the robot.
func (r Robot) selector(component string) map[string]string {
	return map[string]string{LabelInstance: r.Name(), LabelComponent: component}
}

// inbound is who may reach the pods of a component: only the API worker serves anything.
func inbound(component string) string {
	if component == ComponentAPIWorker {
		return InboundGateway
	}
	return InboundNone
}

// podLabels are the labels of every pod template of the robot (workers and Jobs): Labels and
// LabelInbound. The robot's AuthorizationPolicies select by them (policySelector).
func (r Robot) podLabels(component string) map[string]string {
	l := r.Labels(component)
	l[LabelInbound] = inbound(component)
	return l
}

// policySelector selects, for an AuthorizationPolicy, the robot's pods whose LabelInbound is
// in: app name, instance ({robot}, injective) and LabelInbound. Only the robot's own pods
// carry its instance under the server's app name.
func (r Robot) policySelector(in string) map[string]string {
	return map[string]string{LabelName: appName, LabelInstance: r.Name(), LabelInbound: in}
}

// meta is the metadata of one of the robot's objects.
func (r Robot) meta(name, component string) *metav1.ObjectMetaArgs {
	return r.metaNamed(pulumi.String(name), component)
}

// workloadMeta is meta for one of the robot's Deployments: with LabelRobotOwner when the
// robot has a ShareOwner.
func (r Robot) workloadMeta(name, component string) *metav1.ObjectMetaArgs {
	m := r.meta(name, component)
	if r.ShareOwner != "" {
		l := r.Labels(component)
		l[LabelRobotOwner] = OwnerLabelValue(r.ShareOwner)
		m.Labels = pulumi.ToStringMap(l)
	}
	return m
}

// metaNamed is meta with a computed name (contentName).
func (r Robot) metaNamed(name pulumi.StringInput, component string) *metav1.ObjectMetaArgs {
	return &metav1.ObjectMetaArgs{
		Name:      name,
		Namespace: pulumi.String(r.Namespace),
		Labels:    pulumi.ToStringMap(r.Labels(component)),
	}
}

// ChecksumAnnotation is on the pod template of both workers. Its value, Checksum, changes
// exactly when the robot's Secret, ConfigMap or Confz change, so such a change rolls the pods
// (envFrom is read only when a container starts) and nothing else does.
const ChecksumAnnotation = "tfrs.io/config-checksum"

// Checksum is the keyed hash (HMAC-SHA256 under key, hex; see contenthash) of the robot's
// secretData, configData and Confz. It is published (pod annotation, stack output, status),
// and keyed so that it says nothing about the secrets in it without the stack's key; a nil
// map counts as an empty one.
func Checksum(key string, secretData, configData map[string]string, confz string) string {
	if secretData == nil {
		secretData = map[string]string{}
	}
	if configData == nil {
		configData = map[string]string{}
	}
	// encoding/json sorts map keys: the same content always gives the same bytes.
	b, err := json.Marshal(struct {
		Secret, Config map[string]string
		Confz          string
	}{secretData, configData, confz})
	if err != nil {
		panic("server: checksum of string maps: " + err.Error()) // cannot happen
	}
	return contenthash.Sum(key, b)
}

// ChecksumOf is Checksum over the Confz output under the (secret) key. It is computed inside
// Apply, on the secret values, and leaves as a plain (non-secret) output: a keyed hash
// reveals nothing and a secret annotation would hide every pod-template diff.
func ChecksumOf(key pulumi.StringInput, secretData, configData map[string]string, confz pulumi.StringInput) (pulumi.StringOutput, error) {
	return contenthash.Of(key, confz, func(k string, c any) string { return Checksum(k, secretData, configData, c.(string)) })
}

// contentHashLength hex digits of a hash end content-named objects and Jobs.
const contentHashLength = 10

// contentName is "<base>-<keyed hash of data>" (the robot's HashKey), computed inside Apply
// on the (possibly secret) values and returned in the clear: a keyed hash reveals nothing.
//
// Why the data is in the name: the Kubernetes provider treats a Secret's or ConfigMap's data
// as immutable and replaces the object when it changes. Under a fixed name that replacement
// must delete the old object before creating the new one — a window in which starting pods
// cannot load their environment — and Pulumi then replaces every dependant that references
// it, the Deployments included. Under a content name the new object is created first, the
// workers are updated to it (a rolling update), and the old one is deleted last; unchanged
// data keeps its name (the key is stable for the stack's life), so nothing happens.
func contentName(r Robot, base string, data pulumi.StringMapInput) (pulumi.StringOutput, error) {
	return contenthash.Of(r.HashKey, data, func(key string, d any) string {
		b, err := json.Marshal(d.(map[string]string)) // sorted keys: the same data, the same name
		if err != nil {
			panic("server: content name of a string map: " + err.Error()) // cannot happen
		}
		return base + "-" + contenthash.Short(key, b, contentHashLength)
	})
}

// secretStrings wraps plain values as one Pulumi secret map.
func secretStrings(m map[string]string) pulumi.StringMapOutput {
	return pulumi.ToSecret(pulumi.ToStringMap(m)).(pulumi.StringMapOutput)
}
