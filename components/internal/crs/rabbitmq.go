package crs

import "github.com/tfrs-io/tfrs-operator/components/internal/podsec"

// RabbitMQV1beta1 is the RabbitMQ operators' RabbitmqCluster, Vhost, User and Permission.
const RabbitMQV1beta1 = "rabbitmq.com/v1beta1"

// RabbitmqClusterSpec is a RabbitMQ cluster operator RabbitmqCluster.
type RabbitmqClusterSpec struct {
	Replicas         int                    `json:"replicas"`
	Image            string                 `json:"image"`
	Persistence      RabbitMQPersistence    `json:"persistence"`
	Override         RabbitMQOverride       `json:"override"`
	Resources        *Resources             `json:"resources,omitempty"`
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// TypeMeta implements Spec.
func (RabbitmqClusterSpec) TypeMeta() TypeMeta {
	return TypeMeta{APIVersion: RabbitMQV1beta1, Kind: "RabbitmqCluster"}
}

// RabbitMQPersistence is each node's volume.
type RabbitMQPersistence struct {
	Storage          string `json:"storage"`
	StorageClassName string `json:"storageClassName,omitempty"`
}

// RabbitMQOverride patches what the operator generates; TFRS only annotates the pods.
type RabbitMQOverride struct {
	StatefulSet StatefulSetOverride `json:"statefulSet"`
}

// StatefulSetOverride patches the server StatefulSet.
type StatefulSetOverride struct {
	Spec StatefulSetSpecOverride `json:"spec"`
}

// StatefulSetSpecOverride patches its spec.
type StatefulSetSpecOverride struct {
	Template PodTemplateOverride `json:"template"`
}

// PodTemplateOverride patches its pod template.
type PodTemplateOverride struct {
	Metadata Metadata        `json:"metadata"`
	Spec     PodSpecOverride `json:"spec"`
}

// PodSpecOverride patches the pod spec (a strategic merge: containers by name).
type PodSpecOverride struct {
	SecurityContext podsec.Pod          `json:"securityContext"`
	InitContainers  []ContainerOverride `json:"initContainers"`
	Containers      []ContainerOverride `json:"containers"`
}

// ContainerOverride patches the operator's container of that name.
type ContainerOverride struct {
	Name            string           `json:"name"`
	SecurityContext podsec.Container `json:"securityContext"`
}

// The containers of the RabbitMQ cluster operator's pods (internal/resource/statefulset.go).
const (
	rabbitMQContainer      = "rabbitmq"
	rabbitMQSetupContainer = "setup-container"
)

// restrictedRabbitMQPod is Pod Security restricted spelled out over the operator's pod: the
// pod non-root with the runtime's seccomp profile, its server and setup containers without
// privilege escalation or capabilities. Operator 2.22.3 already sets exactly these (its user
// 999, fsGroup 0, are kept: podsec.Operator), so on it the patch changes nothing; it holds
// the property on an operator version that does not.
func restrictedRabbitMQPod() PodSpecOverride {
	c := podsec.ContainerContext()
	return PodSpecOverride{
		SecurityContext: podsec.PodContext(podsec.Operator),
		InitContainers:  []ContainerOverride{{Name: rabbitMQSetupContainer, SecurityContext: c}},
		Containers:      []ContainerOverride{{Name: rabbitMQContainer, SecurityContext: c}},
	}
}

// RabbitMQCluster is what a RabbitmqCluster is made of.
type RabbitMQCluster struct {
	Replicas int
	Image    string
	// Size and StorageClass of each node's volume.
	Size, StorageClass string
	Resources          Resources
	PodAnnotations     map[string]string
	PullSecret         string
}

// Cluster is the RabbitmqCluster spec of c.
func (c RabbitMQCluster) Cluster() RabbitmqClusterSpec {
	return RabbitmqClusterSpec{
		Replicas: c.Replicas, Image: c.Image,
		Persistence: RabbitMQPersistence{Storage: c.Size, StorageClassName: c.StorageClass},
		Override: RabbitMQOverride{StatefulSet: StatefulSetOverride{Spec: StatefulSetSpecOverride{Template: PodTemplateOverride{
			Metadata: Metadata{Annotations: c.PodAnnotations},
			Spec:     restrictedRabbitMQPod(),
		}}}},
		Resources:        c.Resources.orNil(),
		ImagePullSecrets: pullSecrets(c.PullSecret),
	}
}

// ClusterReference names the RabbitmqCluster (in the same namespace) a topology object
// belongs to.
type ClusterReference struct {
	Name string `json:"name"`
}

// VhostSpec is a messaging topology operator Vhost.
type VhostSpec struct {
	Name                     string           `json:"name"`
	RabbitmqClusterReference ClusterReference `json:"rabbitmqClusterReference"`
	// DeletionPolicy "retain" keeps the vhost, with its queues, when the custom resource is
	// deleted; empty is the operator's default, "delete" (the field came with the
	// operator's 1.16 line; the pin serves it).
	DeletionPolicy string `json:"deletionPolicy,omitempty"`
}

// VhostRetain is VhostSpec.DeletionPolicy's value that keeps the vhost.
const VhostRetain = "retain"

// TypeMeta implements Spec.
func (VhostSpec) TypeMeta() TypeMeta { return TypeMeta{APIVersion: RabbitMQV1beta1, Kind: "Vhost"} }

// Vhost is the vhost name on cluster.
func Vhost(cluster, name string) VhostSpec {
	return VhostSpec{Name: name, RabbitmqClusterReference: ClusterReference{Name: cluster}}
}

// UserSpec is a messaging topology operator User.
type UserSpec struct {
	// Tags is sent even when empty: no tags is an ordinary user, not management access.
	Tags                     []string             `json:"tags"`
	RabbitmqClusterReference ClusterReference     `json:"rabbitmqClusterReference"`
	ImportCredentialsSecret  LocalObjectReference `json:"importCredentialsSecret"`
}

// TypeMeta implements Spec.
func (UserSpec) TypeMeta() TypeMeta { return TypeMeta{APIVersion: RabbitMQV1beta1, Kind: "User"} }

// User is a user without tags on cluster, its username and password read from the Secret
// credentialsSecret.
func User(cluster, credentialsSecret string) UserSpec {
	return UserSpec{
		Tags: []string{}, RabbitmqClusterReference: ClusterReference{Name: cluster},
		ImportCredentialsSecret: LocalObjectReference{Name: credentialsSecret},
	}
}

// UserCredentialsSecretPath is the path of the User's credentials Secret name (Flow).
var UserCredentialsSecretPath = []string{"importCredentialsSecret", "name"}

// PermissionSpec is a messaging topology operator Permission.
type PermissionSpec struct {
	Vhost                    string               `json:"vhost"`
	UserReference            LocalObjectReference `json:"userReference"`
	Permissions              VhostPermissions     `json:"permissions"`
	RabbitmqClusterReference ClusterReference     `json:"rabbitmqClusterReference"`
}

// TypeMeta implements Spec.
func (PermissionSpec) TypeMeta() TypeMeta {
	return TypeMeta{APIVersion: RabbitMQV1beta1, Kind: "Permission"}
}

// VhostPermissions are the configure, write and read patterns of a permission.
type VhostPermissions struct {
	Configure string `json:"configure"`
	Write     string `json:"write"`
	Read      string `json:"read"`
}

// FullPermission gives the User object user every right on vhost of cluster, and none
// elsewhere.
func FullPermission(cluster, vhost, user string) PermissionSpec {
	return PermissionSpec{
		Vhost: vhost, UserReference: LocalObjectReference{Name: user},
		Permissions:              VhostPermissions{Configure: ".*", Write: ".*", Read: ".*"},
		RabbitmqClusterReference: ClusterReference{Name: cluster},
	}
}

// PermissionUserPath is the path of the Permission's User name (Flow).
var PermissionUserPath = []string{"userReference", "name"}
