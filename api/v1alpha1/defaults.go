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
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
)

// Default values. Each one is written twice: here and in a +kubebuilder:default marker (markers
// cannot reference Go constants). TestCRDDefaultsMatchGo parses the generated CRDs and fails when
// the two disagree, so change both together.
const (
	DefaultIngressMode              = IngressNodePort
	DefaultTLSIssuer                = TLSSelfSigned
	DefaultRegistrySecretName       = "registry"
	DefaultSecretKey                = SecretKeyPassword
	DefaultDeletionPolicy           = DeletionRetain
	DefaultReplicas           int32 = 1

	DefaultPostgresInstances int32 = 1
	DefaultPostgresImage           = "ghcr.io/cloudnative-pg/postgresql:16-minimal-bookworm"
	DefaultPostgresSize            = "10Gi"
	DefaultPostgresOwner           = "app_user"

	DefaultRedisImage = "redis/redis-stack-server:7.4.0-v3"

	DefaultMinIOServers          int32 = 1
	DefaultMinIOVolumesPerServer int32 = 1
	DefaultMinIOSize                   = "10Gi"
	DefaultMinIOImage                  = "quay.io/minio/minio:RELEASE.2025-04-22T22-12-26Z"
	DefaultObjectStorageRegion         = "us-east-1"

	DefaultRabbitMQReplicas int32 = 1
	DefaultRabbitMQImage          = "rabbitmq:4.2.6-management"
	DefaultRabbitMQSize           = "1Gi"

	DefaultTimescaleDBImage = "timescale/timescaledb-ha:pg16.6-ts2.17.2"
	DefaultTimescaleDBSize  = "10Gi"

	DefaultGrafanaAdminUser = "admin"

	DefaultPrometheusImage     = "prom/prometheus:v3.5.0"
	DefaultPrometheusRetention = "15d"

	DefaultOtelCollectorImage = "otel/opentelemetry-collector-contrib:0.120.0"
	DefaultVectorImage        = "timberio/vector:0.45.0-debian"

	DefaultSharedCacheSize       = "10Gi"
	DefaultSharedCacheAccessMode = "ReadWriteMany"
	DefaultSharedCacheDir        = "/data/shared-cache"

	DefaultTFRobotFrontImage = "tfrobot/tfrobot-front:latest"
	DefaultTFRSUtilsImage    = "tfrobot/tfrs-utils:latest"

	DefaultDriftInterval = time.Hour
)

// DefaultRedisSize is the Redis volume's default size. A variable only so that the fleet
// tests' second build (cmd/tfrs/second_build.go, build tag tfrs_second_build) can change one
// tenant-level default; nothing else sets it.
var DefaultRedisSize = "1Gi"

// Values computed by the programs rather than stored by the API server.
const (
	// DefaultNodePortHTTP and DefaultNodePortHTTPS are the node ports of NodePort mode when the
	// spec leaves them out (see IngressSpec.NodePorts).
	DefaultNodePortHTTP  int32 = 30080
	DefaultNodePortHTTPS int32 = 30443

	// PersonalNamespacePrefix prefixes the job type to name a personal tenant's shared namespace
	// (the job type's shared stack is named after it, hence defined with the stack names).
	PersonalNamespacePrefix = stackname.PersonalNamespacePrefix
)

// Default sets the defaults the CRD schema sets. It is pure and idempotent; the API server does
// the same for objects created with kubectl, and the HTTP API and CLI call it before Validate.
func (x *TFRCluster) Default() {
	s := &x.Spec
	setDefault(&s.Ingress.Mode, DefaultIngressMode)
	setDefault(&s.TLS.Issuer, DefaultTLSIssuer)
	if r := s.ImageRegistry; r != nil && r.Credentials != nil {
		setDefault(&r.Credentials.Name, DefaultRegistrySecretName)
		if ref := r.Credentials.PasswordSecretRef; ref != nil {
			setDefault(&ref.Key, DefaultSecretKey)
		}
	}
	for _, c := range []*ComponentSource{&s.CertManager, &s.Istio, &s.IstioIngress, &s.CNPGOperator, &s.MinIOOperator, &s.RabbitMQOperator} {
		c.Default()
	}
	s.DriftDetection.Default()
	s.Approval.Default()
	s.Personal.Default()
}

// Default sets the defaults the CRD schema sets. spec.namespace is left alone: it is derived by
// TargetNamespace, which a schema default cannot express.
func (x *TFRTenant) Default() {
	s := &x.Spec
	setDefault(&s.DeletionPolicy, DefaultDeletionPolicy)

	pg := &s.PostgreSQL
	setDefaultPtr(&pg.Instances, DefaultPostgresInstances)
	setDefault(&pg.ImageName, DefaultPostgresImage)
	setDefaultQuantity(&pg.Size, DefaultPostgresSize)
	setDefault(&pg.Owner, DefaultPostgresOwner)

	setDefault(&s.Redis.Image, DefaultRedisImage)
	setDefaultQuantity(&s.Redis.Size, DefaultRedisSize)

	mn := &s.MinIO
	setDefaultPtr(&mn.Servers, DefaultMinIOServers)
	setDefaultPtr(&mn.VolumesPerServer, DefaultMinIOVolumesPerServer)
	setDefaultQuantity(&mn.Size, DefaultMinIOSize)
	setDefault(&mn.Image, DefaultMinIOImage)
	setDefault(&s.ObjectStorage.Provider, ObjectStorageMinIO)
	if e := s.ObjectStorage.External; e != nil {
		setDefault(&e.Region, DefaultObjectStorageRegion)
		setDefault(&e.BucketPolicy, BucketCreate)
	}

	mq := &s.RabbitMQ
	setDefaultPtr(&mq.Replicas, DefaultRabbitMQReplicas)
	setDefault(&mq.Image, DefaultRabbitMQImage)
	setDefaultQuantity(&mq.Size, DefaultRabbitMQSize)

	s.TimescaleDB.Toggle.Default()
	setDefault(&s.TimescaleDB.Image, DefaultTimescaleDBImage)
	setDefaultQuantity(&s.TimescaleDB.Size, DefaultTimescaleDBSize)

	s.Jaeger.ComponentSource.Default()
	s.Grafana.ComponentSource.Default()
	setDefault(&s.Grafana.AdminUser, DefaultGrafanaAdminUser)

	s.Prometheus.Toggle.Default()
	setDefault(&s.Prometheus.Image, DefaultPrometheusImage)
	setDefault(&s.Prometheus.Retention, DefaultPrometheusRetention)

	s.OtelCollector.Toggle.Default()
	setDefault(&s.OtelCollector.Image, DefaultOtelCollectorImage)
	s.Vector.Toggle.Default()
	setDefault(&s.Vector.Image, DefaultVectorImage)

	sc := &s.SharedCache
	sc.Toggle.Default()
	setDefaultQuantity(&sc.Size, DefaultSharedCacheSize)
	setDefault(&sc.AccessMode, DefaultSharedCacheAccessMode)
	setDefault(&sc.CacheDir, DefaultSharedCacheDir)

	s.TFRobotFront.AppSpec.Default()
	setDefault(&s.TFRobotFront.Image, DefaultTFRobotFrontImage)
	s.TFRSUtils.AppSpec.Default()
	setDefault(&s.TFRSUtils.Image, DefaultTFRSUtilsImage)
	if s.ExportOutputs != nil {
		s.ExportOutputs.Default()
	}
	s.DriftDetection.Default()
	s.Approval.Default()
}

// Default sets the defaults the CRD schema sets.
func (x *TFRServer) Default() {
	s := &x.Spec
	s.APIWorker.Default()
	s.RobotWorker.Default()
	setDefaultPtr(&s.InitJobs.DBInit, true)
	setDefaultPtr(&s.InitJobs.MinIOInit, true)
	setDefaultPtr(&s.InitJobs.GrafanaSA, true)
	s.DriftDetection.Default()
	s.Approval.Default()
}

// Default turns the drift check on, every DefaultDriftInterval.
func (d *DriftDetectionSpec) Default() {
	setDefaultPtr(&d.Enabled, true)
	setDefaultPtr(&d.Interval, metav1.Duration{Duration: DefaultDriftInterval})
}

// Default sets the approval mode (OnDataLoss).
func (a *ApprovalSpec) Default() { setDefault(&a.Mode, ApprovalOnDataLoss) }

// Default turns the component on unless it was switched off.
func (t *Toggle) Default() { setDefaultPtr(&t.Enabled, true) }

// Default sets the ComponentSource defaults.
func (c *ComponentSource) Default() { c.Toggle.Default() }

// Default sets the WorkloadSpec defaults.
func (w *WorkloadSpec) Default() { setDefaultPtr(&w.Replicas, DefaultReplicas) }

// Default sets the AppSpec defaults.
func (a *AppSpec) Default() {
	a.Toggle.Default()
	a.WorkloadSpec.Default()
}

func setDefault[T ~string](p *T, v T) {
	if *p == "" {
		*p = v
	}
}

func setDefaultPtr[T any](p **T, v T) {
	if *p == nil {
		*p = ptr.To(v)
	}
}

func setDefaultQuantity(p **resource.Quantity, v string) {
	if *p == nil {
		q := resource.MustParse(v)
		*p = &q
	}
}
