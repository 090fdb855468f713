/*
Copyright 2026 The TFRS Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantType is the isolation model of a tenant.
// +kubebuilder:validation:Enum=enterprise;personal
type TenantType string

// Tenant types.
const (
	// TenantEnterprise has a dedicated namespace and its own middleware instances.
	TenantEnterprise TenantType = "enterprise"
	// TenantPersonal shares a namespace and middleware per job type; robots are separated by RobotId.
	TenantPersonal TenantType = "personal"
)

// DeletionPolicy says what happens to stateful data (PostgreSQL, MinIO, PVCs) when the tenant goes.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

// Deletion policies.
const (
	DeletionRetain DeletionPolicy = "Retain"
	DeletionDelete DeletionPolicy = "Delete"
)

// ExistingSecretRef names a user-given Secret in the tenant's target namespace. When absent, the
// operator generates the credentials once and keeps them stable.
type ExistingSecretRef struct {
	// ExistingSecret is the Secret name. Expected keys: "username" and "password" (PostgreSQL,
	// RabbitMQ, Grafana admin), "password" (Redis), "rootUser" and "rootPassword" (MinIO).
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ExistingSecret string `json:"existingSecret"`
}

// Keys expected in an ExistingSecretRef Secret.
const (
	SecretKeyUsername     = "username"
	SecretKeyPassword     = "password"
	SecretKeyRootUser     = "rootUser"
	SecretKeyRootPassword = "rootPassword"
)

// TenantCredentials are optional user-given Secrets per middleware; absent means generated.
type TenantCredentials struct {
	// +optional
	PostgreSQL *ExistingSecretRef `json:"postgresql,omitempty"`
	// +optional
	Redis *ExistingSecretRef `json:"redis,omitempty"`
	// +optional
	MinIO *ExistingSecretRef `json:"minio,omitempty"`
	// +optional
	RabbitMQ *ExistingSecretRef `json:"rabbitmq,omitempty"`
	// +optional
	Grafana *ExistingSecretRef `json:"grafana,omitempty"`
}

// PostgreSQLSpec is the tenant's CloudNativePG Cluster.
type PostgreSQLSpec struct {
	// Instances of the CNPG cluster (1 primary + replicas).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	// +optional
	Instances *int32 `json:"instances,omitempty"`

	// ImageName is the PostgreSQL operand image.
	// +kubebuilder:default="ghcr.io/cloudnative-pg/postgresql:16-minimal-bookworm"
	// +kubebuilder:validation:MaxLength=512
	// +optional
	ImageName string `json:"imageName,omitempty"`

	// Size of each instance's volume.
	// +kubebuilder:default="10Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="size must be positive"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the volumes; empty means the cluster default.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`

	// Database to create; empty means the target namespace name (see TFRTenant.DatabaseName).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9_][a-z0-9_-]*$`
	// +optional
	Database string `json:"database,omitempty"`

	// Owner role of the database.
	// +kubebuilder:default=app_user
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	// +optional
	Owner string `json:"owner,omitempty"`

	// Resources of each instance.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// RedisSpec is the tenant's Redis (Deployment + PVC). Its password is generated unless
// spec.credentials.redis names a Secret.
type RedisSpec struct {
	// Image of redis-stack-server.
	// +kubebuilder:default="redis/redis-stack-server:7.4.0-v3"
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// Size of the data volume.
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="size must be positive"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the volume; empty means the cluster default.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`

	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// MinIOSpec is the tenant's MinIO Tenant CR.
type MinIOSpec struct {
	// Servers in the MinIO pool.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	// +optional
	Servers *int32 `json:"servers,omitempty"`

	// VolumesPerServer in the MinIO pool.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	// +optional
	VolumesPerServer *int32 `json:"volumesPerServer,omitempty"`

	// Size of each volume.
	// +kubebuilder:default="10Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="size must be positive"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the volumes; empty means the cluster default.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`

	// Image of the MinIO server.
	// +kubebuilder:default="quay.io/minio/minio:RELEASE.2025-04-22T22-12-26Z"
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// ObjectStorageProvider is where a tenant's objects live.
// +kubebuilder:validation:Enum=MinIO;External
type ObjectStorageProvider string

const (
	// ObjectStorageMinIO (the default, as the seeds say): the tenant's own MinIO Tenant, made
	// by the MinIO operator from spec.minio.
	ObjectStorageMinIO ObjectStorageProvider = "MinIO"
	// ObjectStorageExternal: an S3-compatible endpoint the platform provides
	// (spec.objectStorage.external); no MinIO runs in the tenant.
	ObjectStorageExternal ObjectStorageProvider = "External"
)

// BucketPolicy is what the tenant program does about an external bucket.
// +kubebuilder:validation:Enum=Create;Existing
type BucketPolicy string

const (
	// BucketCreate (the default) creates the bucket when it does not exist.
	BucketCreate BucketPolicy = "Create"
	// BucketExisting requires the bucket to exist; the tenant's run fails, naming it, when
	// it does not. For credentials that may not create buckets.
	BucketExisting BucketPolicy = "Existing"
)

// Keys of the Secret spec.objectStorage.external.credentialsSecret names.
const (
	SecretKeyAccessKey = "accessKey"
	SecretKeySecretKey = "secretKey"
)

// ObjectStorageSpec chooses the tenant's object storage: its MinIO (spec.minio) or an
// external S3-compatible endpoint.
// +kubebuilder:validation:XValidation:rule="!has(self.provider) || self.provider != 'External' || has(self.external)",message="provider External needs spec.objectStorage.external",fieldPath=".external"
// +kubebuilder:validation:XValidation:rule="(has(self.provider) && self.provider == 'External') || !has(self.external)",message="external is only valid with provider External",fieldPath=".external"
type ObjectStorageSpec struct {
	// Provider is MinIO (default) or External.
	// +kubebuilder:default=MinIO
	// +optional
	Provider ObjectStorageProvider `json:"provider,omitempty"`

	// External is the platform's S3-compatible endpoint; required with provider External.
	// +optional
	External *ExternalObjectStorage `json:"external,omitempty"`
}

// ExternalObjectStorage is an S3-compatible endpoint the platform provides. Its host must
// be allowed by the source policy of every door (--source-allow-host), as a chart
// repository's is: the tfrs process connects to it to check or create the bucket. The
// tenant's pods reach it under the cluster's egress policy (spec.egress): a public
// endpoint with publicInternet Allow, a private one only through spec.egress.allowedCIDRs.
type ExternalObjectStorage struct {
	// Endpoint is the S3 API's base URL: https://host[:port], or http:// for an endpoint
	// the mesh or the network already encrypts. No path, query, fragment or user info.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['https', 'http'] && url(self).getHostname() != '' && url(self).getEscapedPath() in ['', '/'] && !self.contains('@') && !self.contains('?') && !self.contains('#')",message="endpoint must be http(s)://host[:port] with no path, query, fragment or user info"
	Endpoint string `json:"endpoint"`

	// Region of the bucket, as the endpoint's request signing expects it.
	// +kubebuilder:default="us-east-1"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Region string `json:"region,omitempty"`

	// Bucket is the tenant's bucket; empty means the name MinIO's bucket would have (the
	// tenant's namespace; "<namespace>-data" when the namespace is shorter than 3 characters).
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	// +optional
	Bucket string `json:"bucket,omitempty"`

	// BucketPolicy is Create (default: made when missing) or Existing (must exist). TFRS
	// never deletes an external bucket, whatever the deletion policy.
	// +kubebuilder:default=Create
	// +optional
	BucketPolicy BucketPolicy `json:"bucketPolicy,omitempty"`

	// CredentialsSecret names a Secret in the tenant's namespace with the keys "accessKey"
	// and "secretKey": the credentials of the tenant's bucket, which its robots share.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	CredentialsSecret string `json:"credentialsSecret"`
}

// RabbitMQSpec is the tenant's RabbitmqCluster CR.
type RabbitMQSpec struct {
	// Replicas of the RabbitMQ cluster.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Image of RabbitMQ (with the management plugin).
	// +kubebuilder:default="rabbitmq:4.2.6-management"
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// Size of each node's persistent volume.
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="size must be positive"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the volumes; empty means the cluster default.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`

	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// TimescaleDBSpec is a CNPG cluster with the TimescaleDB extension.
type TimescaleDBSpec struct {
	Toggle `json:",inline"`

	// Image is a CNPG-compatible PostgreSQL image that ships TimescaleDB.
	// +kubebuilder:default="timescale/timescaledb-ha:pg16.6-ts2.17.2"
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// Size of the volume.
	// +kubebuilder:default="10Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="size must be positive"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the volume; empty means the cluster default.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`

	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// JaegerSpec is the Jaeger Helm chart.
type JaegerSpec struct {
	ComponentSource `json:",inline"`
}

// GrafanaSpec is the Grafana Helm chart. The admin password is generated unless
// spec.credentials.grafana names a Secret.
type GrafanaSpec struct {
	ComponentSource `json:",inline"`

	// AdminUser of Grafana.
	// +kubebuilder:default=admin
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+$`
	// +optional
	AdminUser string `json:"adminUser,omitempty"`
}

// PrometheusSpec is the Prometheus Deployment.
type PrometheusSpec struct {
	Toggle `json:",inline"`

	// Image of Prometheus.
	// +kubebuilder:default="prom/prometheus:v3.5.0"
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// Retention of the TSDB, a Prometheus duration such as "15d".
	// +kubebuilder:default="15d"
	// +kubebuilder:validation:Pattern=`^[0-9]+(ms|s|m|h|d|w|y)$`
	// +optional
	Retention string `json:"retention,omitempty"`

	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// OtelCollectorSpec is the OpenTelemetry Collector Deployment (exports traces to Jaeger).
type OtelCollectorSpec struct {
	Toggle `json:",inline"`

	// Image of the collector.
	// +kubebuilder:default="otel/opentelemetry-collector-contrib:0.120.0"
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// VectorSpec is the Vector log collector Deployment.
type VectorSpec struct {
	Toggle `json:",inline"`

	// Image of Vector.
	// +kubebuilder:default="timberio/vector:0.45.0-debian"
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// SharedCacheSpec is the shared image-cache PVC mounted by every robot of the tenant.
type SharedCacheSpec struct {
	Toggle `json:",inline"`

	// Size of the PVC.
	// +kubebuilder:default="10Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="size must be positive"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the PVC; it must support the access mode. Empty means the cluster default.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`

	// AccessMode of the PVC. Defaults to ReadWriteMany.
	// +kubebuilder:default=ReadWriteMany
	// +kubebuilder:validation:Enum=ReadWriteMany;ReadWriteOnce;ReadOnlyMany;ReadWriteOncePod
	// +optional
	AccessMode corev1.PersistentVolumeAccessMode `json:"accessMode,omitempty"`

	// CacheDir is the absolute mount path in the robot containers; it is injected as
	// TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR.
	// +kubebuilder:default="/data/shared-cache"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\s]*$`
	// +optional
	CacheDir string `json:"cacheDir,omitempty"`
}

// AppSpec is a TFRobot application Deployment of the tenant (TFRobotFront, TFRSUtils).
type AppSpec struct {
	Toggle       `json:",inline"`
	WorkloadSpec `json:",inline"`
}

// TFRobotFrontSpec is the TFRobot web front end.
type TFRobotFrontSpec struct {
	AppSpec `json:",inline"`

	// Image of the front end.
	// +kubebuilder:default="tfrobot/tfrobot-front:latest"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`
}

// TFRSUtilsSpec is the TFRS utilities service.
type TFRSUtilsSpec struct {
	AppSpec `json:",inline"`

	// Image of the utilities service.
	// +kubebuilder:default="tfrobot/tfrs-utils:latest"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`
}

// TenantMiddleware is what a tenant stack provisions in its namespace besides the namespace
// itself: the middleware, monitoring and TFRobot applications, their credentials and the
// deletion policy of their data. An enterprise tenant sets it in its own spec
// (TFRTenantSpec, inline); the personal tenants of a job type share one, set by the platform
// admin in TFRCluster.spec.personal.
type TenantMiddleware struct {
	// DeletionPolicy of stateful data (PostgreSQL, MinIO, PVCs). Defaults to Retain.
	// +kubebuilder:default=Retain
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Credentials are optional user-given Secrets; absent ones are generated.
	// +optional
	Credentials TenantCredentials `json:"credentials,omitempty"`

	// +kubebuilder:default={}
	// +optional
	PostgreSQL PostgreSQLSpec `json:"postgresql,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Redis RedisSpec `json:"redis,omitempty"`
	// MinIO is the tenant's MinIO, used when spec.objectStorage.provider is MinIO.
	// +kubebuilder:default={}
	// +optional
	MinIO MinIOSpec `json:"minio,omitempty"`
	// ObjectStorage chooses the tenant's object storage: its MinIO (default) or an external
	// S3-compatible endpoint.
	// +kubebuilder:default={}
	// +optional
	ObjectStorage ObjectStorageSpec `json:"objectStorage,omitempty"`
	// +kubebuilder:default={}
	// +optional
	RabbitMQ RabbitMQSpec `json:"rabbitmq,omitempty"`
	// +kubebuilder:default={}
	// +optional
	TimescaleDB TimescaleDBSpec `json:"timescaledb,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Jaeger JaegerSpec `json:"jaeger,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Grafana GrafanaSpec `json:"grafana,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Prometheus PrometheusSpec `json:"prometheus,omitempty"`
	// +kubebuilder:default={}
	// +optional
	OtelCollector OtelCollectorSpec `json:"otelCollector,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Vector VectorSpec `json:"vector,omitempty"`
	// +kubebuilder:default={}
	// +optional
	SharedCache SharedCacheSpec `json:"sharedCache,omitempty"`
	// +kubebuilder:default={}
	// +optional
	TFRobotFront TFRobotFrontSpec `json:"tfrobotFront,omitempty"`
	// +kubebuilder:default={}
	// +optional
	TFRSUtils TFRSUtilsSpec `json:"tfrsUtils,omitempty"`
}

// TFRTenantSpec is a tenant environment.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'personal' || has(self.jobType)",message="jobType is required when type is personal",fieldPath=".jobType"
// +kubebuilder:validation:XValidation:rule="self.type == 'personal' || !has(self.jobType)",message="jobType is only valid when type is personal",fieldPath=".jobType"
// +kubebuilder:validation:XValidation:rule="has(self.namespace) == has(oldSelf.namespace)",message="namespace cannot be added or removed after creation",fieldPath=".namespace"
// +kubebuilder:validation:XValidation:rule="self.type != 'personal' || !has(self.class)",message="class is only valid for enterprise tenants: a personal tenant's job type takes the cluster's spec.tenancy.personalClass",fieldPath=".class"
// +kubebuilder:validation:XValidation:rule="!has(self.objectStorage) || !has(self.objectStorage.provider) || self.objectStorage.provider != 'External' || !has(self.credentials) || !has(self.credentials.minio)",message="credentials.minio is MinIO's root login: with an external object storage its credentials come from objectStorage.external.credentialsSecret",fieldPath=".credentials.minio"
// +kubebuilder:validation:XValidation:rule="self.type != 'personal' || !has(self.exportOutputs)",message="exportOutputs is only valid for enterprise tenants: a personal tenant's middleware is shared by its job type",fieldPath=".exportOutputs"
type TFRTenantSpec struct {
	// ClusterRef is the name of the TFRCluster the tenant runs on.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable"
	ClusterRef string `json:"clusterRef"`

	// Type of tenant: enterprise (dedicated namespace and middleware) or personal (shared per job type).
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	Type TenantType `json:"type"`

	// JobType groups personal tenants: they share one namespace and one set of middleware per job type.
	// Required for personal tenants, forbidden for enterprise ones.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=54
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="jobType is immutable"
	// +optional
	JobType string `json:"jobType,omitempty"`

	// Namespace the tenant's workloads go to. Empty means: the TFRTenant's own name for an enterprise
	// tenant, "personal-<jobType>" for a personal one (see TargetNamespace). Immutable once set.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="namespace is immutable"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('kube-') && !(self in ['cert-manager', 'cnpg-system', 'default', 'istio-ingress', 'istio-system', 'minio-operator', 'rabbitmq-system', 'tfrs-system'])",message="namespace is reserved (kube-*, default, the cluster stack's namespaces, tfrs-system): pick another name"
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Class is the resource class of the tenant's namespace, one of its cluster's
	// spec.tenancy.classes; empty means the cluster's defaultClass. Personal tenants cannot
	// pick one (their job type's shared namespace takes spec.tenancy.personalClass). See
	// tenancy_types.go.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Class string `json:"class,omitempty"`

	// TenantMiddleware is what the tenant's stack provisions in its namespace. A personal
	// tenant may not set it: its job type's shared middleware takes its settings from the
	// cluster's spec.personal (see personal_rules.go).
	TenantMiddleware `json:",inline"`

	// ExportOutputs writes the connection info of the tenant's middleware into a Secret of
	// its namespace, for applications that are not TFRServers (see ExportOutputsSpec).
	// Enterprise tenants only.
	// +optional
	ExportOutputs *ExportOutputsSpec `json:"exportOutputs,omitempty"`

	// Suspend stops every operation on the object while true: no up (spec, parent or revision
	// change, retry, reconcile request), no drift check and no destroy runs
	// until it is cleared. An operation already running finishes. Clearing it is a spec change:
	// the next up runs, through the approval gate when spec.approval asks for one.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// DriftDetection configures the periodic drift check (refresh + preview).
	// +kubebuilder:default={}
	// +optional
	DriftDetection DriftDetectionSpec `json:"driftDetection,omitempty"`

	// Approval says which changes wait for approval of their saved plan (Auto, Manual or
	// OnDataLoss, the default).
	// +kubebuilder:default={}
	// +optional
	Approval ApprovalSpec `json:"approval,omitempty"`
}

// TFRTenantStatus is the observed state of a TFRTenant.
type TFRTenantStatus struct {
	StackStatus `json:",inline"`

	// TargetNamespace is the namespace the tenant's workloads run in.
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`
}

// TFRTenant is a tenant environment: namespace, databases, cache, object storage, message queue
// and monitoring. Its name must be a DNS-1123 label.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=tfrt,categories=tfrs
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=`.spec.jobType`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.status.targetNamespace`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision.id`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label (at most 63 lowercase alphanumerics or '-')"
type TFRTenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:Required
	Spec   TFRTenantSpec   `json:"spec"`
	Status TFRTenantStatus `json:"status,omitempty"`
}

// TargetNamespace is the namespace the tenant's workloads go to: spec.namespace when set, else the
// TFRTenant's name for an enterprise tenant and "personal-<jobType>" for a personal one.
func (t *TFRTenant) TargetNamespace() string {
	if t.Spec.Namespace != "" {
		return t.Spec.Namespace
	}
	if t.Spec.Type == TenantPersonal {
		return PersonalNamespacePrefix + t.Spec.JobType
	}
	return t.Name
}

// DatabaseName is the PostgreSQL database of the tenant: spec.postgresql.database when set, else
// the target namespace.
func (t *TFRTenant) DatabaseName() string {
	if t.Spec.PostgreSQL.Database != "" {
		return t.Spec.PostgreSQL.Database
	}
	return t.TargetNamespace()
}

// TFRTenantList is a list of TFRTenant.
//
// +kubebuilder:object:root=true
type TFRTenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TFRTenant `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TFRTenant{}, &TFRTenantList{})
}
