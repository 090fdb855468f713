package crs

// CNPGV1 is CloudNativePG's Cluster.
const CNPGV1 = "postgresql.cnpg.io/v1"

// CNPGClusterSpec is a CloudNativePG Cluster. It sets no security context on purpose: CNPG
// makes every pod Pod Security restricted by default (1.30.0 pkg/specs/pods.go
// GetPodSecurityContext: runAsNonRoot, postgresUID/GID, seccomp RuntimeDefault;
// pkg/specs/containers.go GetSecurityContext: no privilege escalation, drop ALL, read-only
// root), and spec.podSecurityContext would only replace that default.
type CNPGClusterSpec struct {
	Instances int         `json:"instances"`
	ImageName string      `json:"imageName"`
	Storage   CNPGStorage `json:"storage"`
	Bootstrap Bootstrap   `json:"bootstrap"`
	// InheritedMetadata is copied onto every object CNPG creates for the cluster, pods
	// included.
	InheritedMetadata *Metadata              `json:"inheritedMetadata,omitempty"`
	Resources         *Resources             `json:"resources,omitempty"`
	ImagePullSecrets  []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	PostgreSQL        *PostgresConfiguration `json:"postgresql,omitempty"`
	PostgresUID       int                    `json:"postgresUID,omitempty"`
	PostgresGID       int                    `json:"postgresGID,omitempty"`
}

// TypeMeta implements Spec.
func (CNPGClusterSpec) TypeMeta() TypeMeta { return TypeMeta{APIVersion: CNPGV1, Kind: "Cluster"} }

// CNPGStorage is each instance's volume.
type CNPGStorage struct {
	Size         string `json:"size"`
	StorageClass string `json:"storageClass,omitempty"`
}

// Bootstrap is how a new cluster is initialised.
type Bootstrap struct {
	InitDB InitDB `json:"initdb"`
}

// InitDB creates the application database and its owner, with the owner's password from a
// basic-auth Secret.
type InitDB struct {
	Database string               `json:"database"`
	Owner    string               `json:"owner"`
	Secret   LocalObjectReference `json:"secret"`
	// PostInitApplicationSQL runs in the application database after it is created.
	PostInitApplicationSQL []string `json:"postInitApplicationSQL,omitempty"`
}

// PostgresConfiguration is the PostgreSQL server configuration.
type PostgresConfiguration struct {
	SharedPreloadLibraries []string `json:"shared_preload_libraries,omitempty"`
}

// CNPGCluster is what a CNPG Cluster is made of.
type CNPGCluster struct {
	Instances int
	Image     string
	Storage   CNPGStorage
	Resources Resources
	// Database, Owner and OwnerSecret (basic-auth) are created by initdb.
	Database, Owner, OwnerSecret string
	// PodAnnotations go on the instance pods (and every other object CNPG creates).
	PodAnnotations map[string]string
	PullSecret     string
	// Extension is preloaded and created in the database ("" = none).
	Extension string
	// UID is the image's postgres user and group (0 = CNPG's default, 26).
	UID int
}

// Cluster is the CNPG Cluster spec of c.
func (c CNPGCluster) Cluster() CNPGClusterSpec {
	s := CNPGClusterSpec{
		Instances: c.Instances, ImageName: c.Image, Storage: c.Storage,
		Bootstrap:        Bootstrap{InitDB: InitDB{Database: c.Database, Owner: c.Owner, Secret: LocalObjectReference{Name: c.OwnerSecret}}},
		Resources:        c.Resources.orNil(),
		ImagePullSecrets: pullSecrets(c.PullSecret),
		PostgresUID:      c.UID, PostgresGID: c.UID,
	}
	if len(c.PodAnnotations) > 0 {
		s.InheritedMetadata = &Metadata{Annotations: c.PodAnnotations}
	}
	if c.Extension != "" {
		s.PostgreSQL = &PostgresConfiguration{SharedPreloadLibraries: []string{c.Extension}}
		s.Bootstrap.InitDB.PostInitApplicationSQL = []string{"CREATE EXTENSION IF NOT EXISTS " + c.Extension}
	}
	return s
}

// Paths of the CNPG Cluster fields that flow from other resources (Flow).
var (
	CNPGOwnerPath       = []string{"bootstrap", "initdb", "owner"}
	CNPGOwnerSecretPath = []string{"bootstrap", "initdb", "secret", "name"}
)
