package crs

import "github.com/tfrs-io/tfrs-operator/components/internal/podsec"

// MinIOV2 is the MinIO operator's Tenant.
const MinIOV2 = "minio.min.io/v2"

// MinIOTenantSpec is a MinIO operator Tenant.
type MinIOTenantSpec struct {
	Image     string      `json:"image"`
	Pools     []MinIOPool `json:"pools"`
	MountPath string      `json:"mountPath"`
	// RequestAutoCert is sent even when false: the operator's default is true.
	RequestAutoCert bool                   `json:"requestAutoCert"`
	Configuration   LocalObjectReference   `json:"configuration"`
	Buckets         []LocalObjectReference `json:"buckets"`
	ImagePullSecret *LocalObjectReference  `json:"imagePullSecret,omitempty"`
}

// TypeMeta implements Spec.
func (MinIOTenantSpec) TypeMeta() TypeMeta { return TypeMeta{APIVersion: MinIOV2, Kind: "Tenant"} }

// MinIOPool is a server pool.
type MinIOPool struct {
	Name             string `json:"name"`
	Servers          int    `json:"servers"`
	VolumesPerServer int    `json:"volumesPerServer"`
	// Annotations go on the pool's pods (and StatefulSet). Per pool, not the Tenant's
	// spec.poolsMetadata: that field exists only since operator 7.0, pool annotations in
	// every version TFRS supports, and both end up on the same pods.
	Annotations         map[string]string   `json:"annotations,omitempty"`
	VolumeClaimTemplate VolumeClaimTemplate `json:"volumeClaimTemplate"`
	Resources           *Resources          `json:"resources,omitempty"`
	// SecurityContext is the pool pods' context; ContainerSecurityContext replaces the
	// operator's for every container of the pod: MinIO, the sidecar and the
	// validate-arguments init container (operator v7.1.1, poolContainerSecurityContext).
	// Without them the operator's pods lack seccomp, dropped capabilities and
	// allowPrivilegeEscalation=false, which Pod Security restricted requires.
	SecurityContext          *podsec.Pod       `json:"securityContext,omitempty"`
	ContainerSecurityContext *podsec.Container `json:"containerSecurityContext,omitempty"`
}

// VolumeClaimTemplate is a PersistentVolumeClaim template.
type VolumeClaimTemplate struct {
	Metadata NameMeta        `json:"metadata"`
	Spec     VolumeClaimSpec `json:"spec"`
}

// NameMeta is metadata with only a name.
type NameMeta struct {
	Name string `json:"name"`
}

// VolumeClaimSpec is a PersistentVolumeClaim spec.
type VolumeClaimSpec struct {
	AccessModes      []string               `json:"accessModes"`
	Resources        VolumeResourceRequests `json:"resources"`
	StorageClassName string                 `json:"storageClassName,omitempty"`
}

// VolumeResourceRequests is a claim's requested size.
type VolumeResourceRequests struct {
	Requests map[string]string `json:"requests"`
}

// MinIOTenant is what a MinIO Tenant is made of: one pool.
type MinIOTenant struct {
	Image                     string
	Servers, VolumesPerServer int
	// Size and StorageClass of each volume.
	Size, StorageClass string
	Resources          Resources
	// ConfigSecret holds config.env (the root credentials).
	ConfigSecret string
	// Bucket is created by the operator.
	Bucket         string
	PodAnnotations map[string]string
	PullSecret     string
}

// minioMountPath is where the pool volumes are mounted in the MinIO container.
const minioMountPath = "/export"

// Tenant is the MinIO Tenant spec of t: one pool ("pool-0") of ReadWriteOnce volumes
// ("data"), no operator-issued certificate (in-mesh traffic is encrypted by Istio).
func (t MinIOTenant) Tenant() MinIOTenantSpec {
	s := MinIOTenantSpec{
		Image: t.Image, MountPath: minioMountPath, RequestAutoCert: false,
		Pools: []MinIOPool{{
			Name: "pool-0", Servers: t.Servers, VolumesPerServer: t.VolumesPerServer,
			Annotations: nonEmpty(t.PodAnnotations),
			VolumeClaimTemplate: VolumeClaimTemplate{Metadata: NameMeta{Name: "data"}, Spec: VolumeClaimSpec{
				AccessModes:      []string{"ReadWriteOnce"},
				Resources:        VolumeResourceRequests{Requests: map[string]string{"storage": t.Size}},
				StorageClassName: t.StorageClass,
			}},
			Resources:                t.Resources.orNil(),
			SecurityContext:          new(podsec.PodContext(podsec.MinIO)),
			ContainerSecurityContext: new(podsec.ContainerContext()),
		}},
		Configuration: LocalObjectReference{Name: t.ConfigSecret},
		Buckets:       []LocalObjectReference{{Name: t.Bucket}},
	}
	if t.PullSecret != "" {
		s.ImagePullSecret = &LocalObjectReference{Name: t.PullSecret}
	}
	return s
}

// MinIOConfigurationPath is the path of the Tenant's configuration Secret name (Flow).
var MinIOConfigurationPath = []string{"configuration", "name"}
