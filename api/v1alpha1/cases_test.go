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
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testNamespace holds the namespaced objects of the tests.
const testNamespace = "default"

// validated is what every kind implements.
type validated interface {
	client.Object
	Validate() field.ErrorList
}

// validationCase is one row of the table shared by the unit test (Validate) and the integration
// test (the API server with the generated CRDs).
type validationCase struct {
	name string
	obj  validated
	// fields are the paths that must be reported; none means the object is valid.
	fields []string
	// goOnly marks a rule no schema can express (TOML): the API server accepts the object.
	goOnly bool
	// detail, when set, must appear in the Validate error detail.
	detail string
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name}
}

func nsMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: testNamespace}
}

func newCluster(mut ...func(*TFRCluster)) *TFRCluster {
	c := &TFRCluster{ObjectMeta: meta("main"), Spec: TFRClusterSpec{Domain: "tfrs.example.com"}}
	for _, m := range mut {
		m(c)
	}
	return c
}

// externalTenant is a tenant with an external object storage, changed by edit and then by
// the tenant mutations.
func externalTenant(edit ...any) *TFRTenant {
	return newTenant(func(t *TFRTenant) {
		e := &ExternalObjectStorage{Endpoint: "https://s3.storage.example.com", CredentialsSecret: "acme-s3"}
		t.Spec.ObjectStorage = ObjectStorageSpec{Provider: ObjectStorageExternal, External: e}
		for _, f := range edit {
			switch f := f.(type) {
			case func(*ExternalObjectStorage):
				f(e)
			case func(*TFRTenant):
				f(t)
			}
		}
	})
}

// badEndpoints are endpoints the schema and Validate refuse, each for its own part.
var badEndpoints = []string{
	"s3.example.com",                               // no scheme
	"ftp://s3.example.com",                         // not http(s)
	"file:///var/lib/tfrs",                         // a local path
	"https://",                                     // no host
	"https://s3.example.com/bucket",                // a path
	"https://s3.example.com?x-id=1",                // a query
	"https://s3.example.com#frag",                  // a fragment
	"https://key:secret@s3.example.com",            // user info
	"https://" + strings.Repeat("a", 510) + ".com", // too long
}

func newTenant(mut ...func(*TFRTenant)) *TFRTenant {
	t := &TFRTenant{ObjectMeta: nsMeta("acme"), Spec: TFRTenantSpec{ClusterRef: "main", Type: TenantEnterprise}}
	for _, m := range mut {
		m(t)
	}
	return t
}

func newServer(mut ...func(*TFRServer)) *TFRServer {
	s := &TFRServer{ObjectMeta: nsMeta("robot-a"), Spec: TFRServerSpec{
		TenantRef: "acme", RobotID: "r-001", RobotType: "chat", Image: "ghcr.io/tfrs-io/tfrobot:1.0.0",
	}}
	for _, m := range mut {
		m(s)
	}
	return s
}

func qty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func validationCases() []validationCase {
	cases := []validationCase{
		// TFRCluster
		{name: "cluster/minimal", obj: newCluster()},
		{name: "cluster/full", obj: newCluster(func(c *TFRCluster) {
			c.Spec.Ingress = IngressSpec{Mode: IngressTKECLB, ServiceAnnotations: map[string]string{
				"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-123"}}
			c.Spec.TLS = TLSSpec{Issuer: TLSACME, ACME: &ACMEIssuer{Email: "ops@example.com", Server: "https://acme-v02.api.letsencrypt.org/directory"}}
			c.Spec.ImageRegistry = &ImageRegistrySpec{Registry: "mirror.example.cn:5000/tfrs", Credentials: &RegistryCredentials{
				Server: "mirror.example.cn:5000", Username: "robot",
				PasswordSecretRef: &SecretKeyRef{Name: "mirror-login", Namespace: "tfrs-system"}}}
			c.Spec.CertManager = ComponentSource{Version: "v1.21.2", ChartRepo: "oci://mirror.example.cn/charts",
				Values: &apiextensionsv1.JSON{Raw: []byte(`{"crds":{"enabled":true}}`)}}
			c.Spec.CNPGOperator = ComponentSource{ManifestURL: "file:///opt/tfrs/cnpg-1.25.yaml"}
			c.Spec.MinIOOperator = ComponentSource{Toggle: Toggle{Enabled: ptr.To(false)}}
			c.Spec.RabbitMQOperator = ComponentSource{LocalPath: "/opt/tfrs/rabbitmq"}
		})},
		{name: "cluster/nodeport-ports", obj: newCluster(func(c *TFRCluster) {
			c.Spec.Ingress = IngressSpec{HTTPPort: ptr.To[int32](30080), HTTPSPort: ptr.To[int32](30443)}
			c.Spec.TLS = TLSSpec{Issuer: TLSCA, CA: &CAIssuer{SecretName: "tfrs-ca"}}
			c.Spec.ImageRegistry = &ImageRegistrySpec{Credentials: &RegistryCredentials{Name: "ccr", Server: "ccr.ccs.tencentyun.com", Username: "u", Password: "p"}}
		})},
		{name: "cluster/bad-name", obj: newCluster(func(c *TFRCluster) { c.Name = "main.cluster" }), fields: []string{"metadata.name"}},
		{name: "cluster/missing-domain", obj: newCluster(func(c *TFRCluster) { c.Spec.Domain = "" }), fields: []string{"spec.domain"}},
		{name: "cluster/bad-domain", obj: newCluster(func(c *TFRCluster) { c.Spec.Domain = "Bad_Domain.com" }), fields: []string{"spec.domain"}},
		{name: "cluster/unknown-ingress-mode", obj: newCluster(func(c *TFRCluster) { c.Spec.Ingress.Mode = "Ingress" }), fields: []string{"spec.ingress.mode"}},
		{name: "cluster/tkeclb-without-annotations", obj: newCluster(func(c *TFRCluster) { c.Spec.Ingress.Mode = IngressTKECLB }), fields: []string{"spec.ingress.serviceAnnotations"}},
		{name: "cluster/nodeport-out-of-range", obj: newCluster(func(c *TFRCluster) { c.Spec.Ingress.HTTPPort = ptr.To[int32](80) }), fields: []string{"spec.ingress.httpPort"}},
		{name: "cluster/port-without-nodeport", obj: newCluster(func(c *TFRCluster) {
			c.Spec.Ingress = IngressSpec{Mode: IngressDockerDesktop, HTTPPort: ptr.To[int32](30080)}
		}), fields: []string{"spec.ingress.httpPort"}},
		{name: "cluster/same-ports", obj: newCluster(func(c *TFRCluster) {
			c.Spec.Ingress = IngressSpec{HTTPPort: ptr.To[int32](30080), HTTPSPort: ptr.To[int32](30080)}
		}), fields: []string{"spec.ingress.httpsPort"}},
		{name: "cluster/unknown-issuer", obj: newCluster(func(c *TFRCluster) { c.Spec.TLS.Issuer = "Vault" }), fields: []string{"spec.tls.issuer"}},
		{name: "cluster/acme-without-settings", obj: newCluster(func(c *TFRCluster) { c.Spec.TLS.Issuer = TLSACME }), fields: []string{"spec.tls.acme"}},
		{name: "cluster/acme-bad-server", obj: newCluster(func(c *TFRCluster) {
			c.Spec.TLS = TLSSpec{Issuer: TLSACME, ACME: &ACMEIssuer{Email: "ops@example.com", Server: "http://acme.example.com"}}
		}), fields: []string{"spec.tls.acme.server"}},
		{name: "cluster/acme-missing-email", obj: newCluster(func(c *TFRCluster) {
			c.Spec.TLS = TLSSpec{Issuer: TLSACME, ACME: &ACMEIssuer{Server: "https://acme.example.com/dir"}}
		}), fields: []string{"spec.tls.acme.email"}},
		{name: "cluster/ca-without-secret", obj: newCluster(func(c *TFRCluster) { c.Spec.TLS.Issuer = TLSCA }), fields: []string{"spec.tls.ca"}},
		{name: "cluster/ca-with-selfsigned", obj: newCluster(func(c *TFRCluster) { c.Spec.TLS.CA = &CAIssuer{SecretName: "ca"} }), fields: []string{"spec.tls.ca"}},
		{name: "cluster/registry-password-and-ref", obj: newCluster(func(c *TFRCluster) {
			c.Spec.ImageRegistry = &ImageRegistrySpec{Credentials: &RegistryCredentials{Server: "r.example.com", Username: "u", Password: "p",
				PasswordSecretRef: &SecretKeyRef{Name: "s", Namespace: "ns"}}}
		}), fields: []string{"spec.imageRegistry.credentials"}},
		{name: "cluster/registry-no-password", obj: newCluster(func(c *TFRCluster) {
			c.Spec.ImageRegistry = &ImageRegistrySpec{Credentials: &RegistryCredentials{Server: "r.example.com", Username: "u"}}
		}), fields: []string{"spec.imageRegistry.credentials"}},
		{name: "cluster/registry-ref-without-namespace", obj: newCluster(func(c *TFRCluster) {
			c.Spec.ImageRegistry = &ImageRegistrySpec{Credentials: &RegistryCredentials{Server: "r.example.com", Username: "u",
				PasswordSecretRef: &SecretKeyRef{Name: "s"}}}
		}), fields: []string{"spec.imageRegistry.credentials.passwordSecretRef.namespace"}},
		{name: "cluster/bad-registry-prefix", obj: newCluster(func(c *TFRCluster) {
			c.Spec.ImageRegistry = &ImageRegistrySpec{Registry: "https://mirror.example.cn"}
		}), fields: []string{"spec.imageRegistry.registry"}},
		{name: "cluster/two-sources", obj: newCluster(func(c *TFRCluster) {
			c.Spec.Istio = ComponentSource{ChartRepo: "https://charts.example.cn/istio", LocalPath: "/charts/istio"}
		}), fields: []string{"spec.istio"}},
		{name: "cluster/bad-chart-repo", obj: newCluster(func(c *TFRCluster) { c.Spec.CertManager.ChartRepo = "ftp://charts.example.cn" }), fields: []string{"spec.certManager.chartRepo"}},
		{name: "cluster/drift-off", obj: newCluster(func(c *TFRCluster) {
			c.Spec.DriftDetection = DriftDetectionSpec{Interval: &metav1.Duration{}, AutoRemediate: true}
		})},
		{name: "cluster/drift-interval-too-short", obj: newCluster(func(c *TFRCluster) {
			c.Spec.DriftDetection.Interval = &metav1.Duration{Duration: 30 * time.Second}
		}), fields: []string{"spec.driftDetection.interval"}},
		{name: "cluster/drift-interval-negative", obj: newCluster(func(c *TFRCluster) {
			c.Spec.DriftDetection.Interval = &metav1.Duration{Duration: -time.Hour}
		}), fields: []string{"spec.driftDetection.interval"}},
		{name: "cluster/values-not-object", obj: newCluster(func(c *TFRCluster) {
			c.Spec.IstioIngress.Values = &apiextensionsv1.JSON{Raw: []byte(`["a"]`)}
		}), fields: []string{"spec.istioIngress.values"}},
		{name: "cluster/egress-full", obj: newCluster(func(c *TFRCluster) {
			c.Spec.Egress = EgressSpec{PublicInternet: PublicInternetDeny,
				AllowedCIDRs: []string{"10.20.0.0/16", "2001:db8::/32", "169.254.20.10/32"}, BlockedCIDRs: []string{"34.0.0.0/8"},
				DNS: &EgressDNS{Namespace: "openshift-dns", PodLabels: map[string]string{"dns.operator.openshift.io/daemonset-dns": "default"}, Port: 5353}}
		})},
		{name: "cluster/egress-unknown-mode", obj: newCluster(func(c *TFRCluster) { c.Spec.Egress.PublicInternet = "Sometimes" }),
			fields: []string{"spec.egress.publicInternet"}},
		{name: "cluster/egress-host-bits", obj: newCluster(func(c *TFRCluster) { c.Spec.Egress.AllowedCIDRs = []string{"10.0.0.1/8"} }),
			fields: []string{"spec.egress.allowedCIDRs[0]"}, detail: "must be a network address: 10.0.0.0/8"},
		{name: "cluster/egress-not-a-cidr", obj: newCluster(func(c *TFRCluster) { c.Spec.Egress.AllowedCIDRs = []string{"169.254.169.254"} }),
			fields: []string{"spec.egress.allowedCIDRs[0]"}},
		{name: "cluster/egress-mapped", obj: newCluster(func(c *TFRCluster) { c.Spec.Egress.AllowedCIDRs = []string{"::ffff:10.0.0.0/104"} }),
			fields: []string{"spec.egress.allowedCIDRs[0]"}, detail: "IPv4-mapped"},
		{name: "cluster/egress-block-everything", obj: newCluster(func(c *TFRCluster) { c.Spec.Egress.BlockedCIDRs = []string{"0.0.0.0/0"} }),
			fields: []string{"spec.egress.blockedCIDRs[0]"}, detail: "publicInternet: Deny"},
		{name: "cluster/egress-dns-without-labels", obj: newCluster(func(c *TFRCluster) {
			c.Spec.Egress.DNS = &EgressDNS{Namespace: "kube-system"}
		}), fields: []string{"spec.egress.dns.podLabels"}},

		// TFRTenant
		{name: "tenant/enterprise-minimal", obj: newTenant()},
		{name: "tenant/personal-minimal", obj: newTenant(func(t *TFRTenant) {
			t.Name = "personal-a"
			t.Spec.Type, t.Spec.JobType = TenantPersonal, "translate"
		})},
		{name: "tenant/enterprise-full", obj: newTenant(func(t *TFRTenant) {
			s := &t.Spec
			s.Namespace, s.DeletionPolicy = "acme-prod", DeletionDelete
			s.Credentials = TenantCredentials{PostgreSQL: &ExistingSecretRef{ExistingSecret: "acme-pg"}, MinIO: &ExistingSecretRef{ExistingSecret: "acme-minio"}}
			s.PostgreSQL = PostgreSQLSpec{Instances: ptr.To[int32](3), Size: qty("50Gi"), StorageClassName: "cbs-ssd", Database: "acme_prod", Owner: "acme",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}
			s.Redis = RedisSpec{Image: "mirror.example.cn/redis-stack-server:7.4.0-v3", Size: qty("2Gi")}
			s.MinIO = MinIOSpec{Servers: ptr.To[int32](4), VolumesPerServer: ptr.To[int32](2), Size: qty("100Gi")}
			s.RabbitMQ = RabbitMQSpec{Replicas: ptr.To[int32](3)}
			s.TimescaleDB.Enabled = ptr.To(false)
			s.Jaeger.ChartRepo = "https://jaegertracing.github.io/helm-charts"
			s.Grafana = GrafanaSpec{ComponentSource: ComponentSource{LocalPath: "/charts/grafana"}, AdminUser: "root"}
			s.Prometheus.Retention = "30d"
			s.SharedCache = SharedCacheSpec{Size: qty("20Gi"), AccessMode: corev1.ReadWriteOnce, CacheDir: "/cache"}
			s.TFRobotFront.Replicas = ptr.To[int32](2)
			s.TFRSUtils.Enabled = ptr.To(false)
		})},
		{name: "tenant/bad-name", obj: newTenant(func(t *TFRTenant) { t.Name = "acme.corp" }), fields: []string{"metadata.name"}},
		{name: "tenant/missing-cluster-ref", obj: newTenant(func(t *TFRTenant) { t.Spec.ClusterRef = "" }), fields: []string{"spec.clusterRef"}},
		{name: "tenant/reserved-namespace", obj: newTenant(func(t *TFRTenant) { t.Spec.Namespace = "kube-system" }), fields: []string{"spec.namespace"}, detail: "reserved"},
		{name: "tenant/reserved-default-namespace", obj: newTenant(func(t *TFRTenant) { t.Name = "default" }), fields: []string{"spec.namespace"}, goOnly: true, detail: "reserved"},
		{name: "cluster/bad-reserved-namespace", obj: newCluster(func(c *TFRCluster) { c.Spec.ReservedNamespaces = []string{"Team_A"} }), fields: []string{"spec.reservedNamespaces[0]"}},
		{name: "tenant/missing-type", obj: newTenant(func(t *TFRTenant) { t.Spec.Type = "" }), fields: []string{"spec.type"}},
		{name: "tenant/unknown-type", obj: newTenant(func(t *TFRTenant) { t.Spec.Type = "team" }), fields: []string{"spec.type"}},
		{name: "tenant/personal-without-job-type", obj: newTenant(func(t *TFRTenant) { t.Spec.Type = TenantPersonal }), fields: []string{"spec.jobType"}},
		{name: "tenant/enterprise-with-job-type", obj: newTenant(func(t *TFRTenant) { t.Spec.JobType = "translate" }), fields: []string{"spec.jobType"}},
		{name: "tenant/bad-job-type", obj: newTenant(func(t *TFRTenant) { t.Spec.Type, t.Spec.JobType = TenantPersonal, "Job_1" }), fields: []string{"spec.jobType"}},
		{name: "tenant/job-type-too-long", obj: newTenant(func(t *TFRTenant) {
			t.Spec.Type, t.Spec.JobType = TenantPersonal, strings.Repeat("j", MaxJobTypeLength+1)
		}), fields: []string{"spec.jobType"}},
		{name: "tenant/bad-namespace", obj: newTenant(func(t *TFRTenant) { t.Spec.Namespace = "Acme" }), fields: []string{"spec.namespace"}},
		{name: "tenant/unknown-deletion-policy", obj: newTenant(func(t *TFRTenant) { t.Spec.DeletionPolicy = "Orphan" }), fields: []string{"spec.deletionPolicy"}},
		{name: "tenant/bad-existing-secret", obj: newTenant(func(t *TFRTenant) {
			t.Spec.Credentials.Redis = &ExistingSecretRef{ExistingSecret: "Redis_Secret"}
		}), fields: []string{"spec.credentials.redis.existingSecret"}},
		{name: "tenant/pg-too-many-instances", obj: newTenant(func(t *TFRTenant) { t.Spec.PostgreSQL.Instances = ptr.To[int32](10) }), fields: []string{"spec.postgresql.instances"}},
		{name: "tenant/pg-bad-owner", obj: newTenant(func(t *TFRTenant) { t.Spec.PostgreSQL.Owner = "App-User" }), fields: []string{"spec.postgresql.owner"}},
		{name: "tenant/redis-negative-size", obj: newTenant(func(t *TFRTenant) { t.Spec.Redis.Size = qty("-1Gi") }), fields: []string{"spec.redis.size"}},
		{name: "tenant/minio-zero-servers", obj: newTenant(func(t *TFRTenant) { t.Spec.MinIO.Servers = ptr.To[int32](0) }), fields: []string{"spec.minio.servers"}},
		{name: "tenant/minio-bad-storage-class", obj: newTenant(func(t *TFRTenant) { t.Spec.MinIO.StorageClassName = "Fast SSD" }), fields: []string{"spec.minio.storageClassName"}},
		{name: "tenant/external-object-storage", obj: externalTenant()},
		{name: "tenant/external-object-storage-full", obj: externalTenant(func(e *ExternalObjectStorage) {
			e.Endpoint, e.Region, e.Bucket, e.BucketPolicy = "http://rgw.storage.svc.cluster.local:8080/", "eu-central-1", "acme.data-1", BucketExisting
		})},
		{name: "tenant/external-without-endpoint-block", obj: newTenant(func(t *TFRTenant) { t.Spec.ObjectStorage.Provider = ObjectStorageExternal }),
			fields: []string{"spec.objectStorage.external"}},
		{name: "tenant/external-block-with-minio", obj: externalTenant(func(*ExternalObjectStorage) {}, func(t *TFRTenant) {
			t.Spec.ObjectStorage.Provider = ObjectStorageMinIO
		}), fields: []string{"spec.objectStorage.external"}},
		{name: "tenant/unknown-object-storage-provider", obj: newTenant(func(t *TFRTenant) { t.Spec.ObjectStorage.Provider = "Ceph" }),
			fields: []string{"spec.objectStorage.provider"}},
		{name: "tenant/external-with-minio-credentials", obj: externalTenant(func(*ExternalObjectStorage) {}, func(t *TFRTenant) {
			t.Spec.Credentials.MinIO = &ExistingSecretRef{ExistingSecret: "acme-minio"}
		}), fields: []string{"spec.credentials.minio"}},
		{name: "tenant/external-bad-bucket", obj: externalTenant(func(e *ExternalObjectStorage) { e.Bucket = "Acme_Data" }),
			fields: []string{"spec.objectStorage.external.bucket"}},
		{name: "tenant/external-bad-region", obj: externalTenant(func(e *ExternalObjectStorage) { e.Region = "EU West" }),
			fields: []string{"spec.objectStorage.external.region"}},
		{name: "tenant/external-bad-bucket-policy", obj: externalTenant(func(e *ExternalObjectStorage) { e.BucketPolicy = "Adopt" }),
			fields: []string{"spec.objectStorage.external.bucketPolicy"}},
		{name: "tenant/external-bad-credentials-secret", obj: externalTenant(func(e *ExternalObjectStorage) { e.CredentialsSecret = "S3 Keys" }),
			fields: []string{"spec.objectStorage.external.credentialsSecret"}},
		{name: "tenant/rabbitmq-zero-replicas", obj: newTenant(func(t *TFRTenant) { t.Spec.RabbitMQ.Replicas = ptr.To[int32](0) }), fields: []string{"spec.rabbitmq.replicas"}},
		{name: "tenant/grafana-two-sources", obj: newTenant(func(t *TFRTenant) {
			t.Spec.Grafana.ChartRepo, t.Spec.Grafana.ManifestURL = "https://grafana.github.io/helm-charts", "https://example.com/g.yaml"
		}), fields: []string{"spec.grafana"}},
		{name: "tenant/bad-retention", obj: newTenant(func(t *TFRTenant) { t.Spec.Prometheus.Retention = "15 days" }), fields: []string{"spec.prometheus.retention"}},
		{name: "tenant/relative-cache-dir", obj: newTenant(func(t *TFRTenant) { t.Spec.SharedCache.CacheDir = "data/cache" }), fields: []string{"spec.sharedCache.cacheDir"}},
		{name: "tenant/unknown-access-mode", obj: newTenant(func(t *TFRTenant) { t.Spec.SharedCache.AccessMode = "ReadWriteSome" }), fields: []string{"spec.sharedCache.accessMode"}},
		{name: "tenant/drift-every-10m-remediate", obj: newTenant(func(t *TFRTenant) {
			t.Spec.DriftDetection = DriftDetectionSpec{Interval: &metav1.Duration{Duration: 10 * time.Minute}, AutoRemediate: true}
		})},
		{name: "tenant/export-outputs", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "acme-middleware", Labels: map[string]LabelValue{"app": "legacy", "example.com/team": "data"}, KeyTemplate: "TFRS_{COMPONENT}_{FIELD}"}
		})},
		{name: "tenant/export-outputs-default-template", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "acme-middleware"}
		})},
		{name: "tenant/export-outputs-missing-secret-name", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{}
		}), fields: []string{"spec.exportOutputs.secretName"}},
		{name: "tenant/export-outputs-bad-secret-name", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "Acme_Middleware"}
		}), fields: []string{"spec.exportOutputs.secretName"}},
		{name: "tenant/export-outputs-personal", obj: newTenant(func(t *TFRTenant) {
			t.Spec.Type, t.Spec.JobType = TenantPersonal, "translate"
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "shared-middleware"}
		}), fields: []string{"spec.exportOutputs"}, detail: "enterprise tenants"},
		{name: "tenant/export-outputs-reserved-label", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "m", Labels: map[string]LabelValue{"tfrs.io/tenant": "other"}}
		}), fields: []string{"spec.exportOutputs.labels"}, detail: "reserved"},
		{name: "tenant/export-outputs-reserved-label-subdomain", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "m", Labels: map[string]LabelValue{"app.kubernetes.io/managed-by": "me"}}
		}), fields: []string{"spec.exportOutputs.labels"}, detail: "app.kubernetes.io/managed-by"},
		{name: "tenant/export-outputs-bad-label-key", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "m", Labels: map[string]LabelValue{"bad key": "x"}}
		}), fields: []string{"spec.exportOutputs.labels"}, detail: "qualified names"},
		{name: "tenant/export-outputs-bad-label-value", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "m", Labels: map[string]LabelValue{"app": "-legacy"}}
		}), fields: []string{"spec.exportOutputs.labels"}, detail: "label values"},
		{name: "tenant/export-outputs-template-bad-chars", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "m", KeyTemplate: "{component}/{field}"}
		}), fields: []string{"spec.exportOutputs.keyTemplate"}},
		{name: "tenant/export-outputs-template-unknown-placeholder", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "m", KeyTemplate: "{component}_{key}"}
		}), fields: []string{"spec.exportOutputs.keyTemplate"}},
		{name: "tenant/export-outputs-template-without-field", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "m", KeyTemplate: "{component}"}
		}), fields: []string{"spec.exportOutputs.keyTemplate"}, detail: "collide"},
		{name: "tenant/export-outputs-template-without-component", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "m", KeyTemplate: "DB_{FIELD}"}
		}), fields: []string{"spec.exportOutputs.keyTemplate"}, detail: "collide"},
		{name: "tenant/export-outputs-template-too-long", obj: newTenant(func(t *TFRTenant) {
			t.Spec.ExportOutputs = &ExportOutputsSpec{SecretName: "m", KeyTemplate: strings.Repeat("x", 120) + "{component}{field}"}
		}), fields: []string{"spec.exportOutputs.keyTemplate"}},
		{name: "tenant/front-too-many-replicas", obj: newTenant(func(t *TFRTenant) { t.Spec.TFRobotFront.Replicas = ptr.To[int32](101) }), fields: []string{"spec.tfrobotFront.replicas"}},

		// TFRServer
		{name: "server/minimal", obj: newServer()},
		{name: "server/full", obj: newServer(func(s *TFRServer) {
			s.Spec.APIWorker = WorkloadSpec{Replicas: ptr.To[int32](2), Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}
			s.Spec.RobotWorker.Replicas = ptr.To[int32](0)
			s.Spec.SecretData = map[string]string{"OPENAI_API_KEY": "sk-test", "_PRIVATE": "x"}
			s.Spec.ConfigData = map[string]string{"OPENAI_BASE_URL": "https://api.example.com/v1", "TFS_PROFILE": "prod"}
			s.Spec.ConfzData = "[postgresql]\nport = 5433\n\n[redis]\nhost = \"redis.acme.svc.cluster.local\"\n"
			s.Spec.InitJobs = InitJobs{GrafanaSA: ptr.To(false)}
		})},
		{name: "server/bad-name", obj: newServer(func(s *TFRServer) { s.Name = "Robot-A" }), fields: []string{"metadata.name"}},
		{name: "server/missing-tenant-ref", obj: newServer(func(s *TFRServer) { s.Spec.TenantRef = "" }), fields: []string{"spec.tenantRef"}},
		{name: "server/bad-robot-id", obj: newServer(func(s *TFRServer) { s.Spec.RobotID = "Robot_1" }), fields: []string{"spec.robotId"}},
		{name: "server/robot-id-too-long", obj: newServer(func(s *TFRServer) { s.Spec.RobotID = strings.Repeat("r", 41) }), fields: []string{"spec.robotId"}},
		{name: "server/missing-robot-type", obj: newServer(func(s *TFRServer) { s.Spec.RobotType = "" }), fields: []string{"spec.robotType"}},
		{name: "server/bad-robot-type", obj: newServer(func(s *TFRServer) { s.Spec.RobotType = "chat.bot" }), fields: []string{"spec.robotType"}},
		{name: "server/missing-image", obj: newServer(func(s *TFRServer) { s.Spec.Image = "" }), fields: []string{"spec.image"}},
		{name: "server/negative-api-replicas", obj: newServer(func(s *TFRServer) { s.Spec.APIWorker.Replicas = ptr.To[int32](-1) }), fields: []string{"spec.apiWorker.replicas"}},
		{name: "server/too-many-robot-replicas", obj: newServer(func(s *TFRServer) { s.Spec.RobotWorker.Replicas = ptr.To[int32](101) }), fields: []string{"spec.robotWorker.replicas"}},
		{name: "server/bad-secret-key", obj: newServer(func(s *TFRServer) {
			s.Spec.SecretData = map[string]string{"OPENAI_API_KEY": "sk", "1BAD": "x"}
		}), fields: []string{"spec.secretData"}, detail: "1BAD"},
		{name: "server/bad-config-key", obj: newServer(func(s *TFRServer) {
			s.Spec.ConfigData = map[string]string{"openai-base-url": "x"}
		}), fields: []string{"spec.configData"}, detail: "openai-base-url"},
		{name: "server/nul-in-secret-value", obj: newServer(func(s *TFRServer) {
			s.Spec.SecretData = map[string]string{"OPENAI_API_KEY": "sk-\x00hidden"}
		}), fields: []string{"spec.secretData[OPENAI_API_KEY]"}, goOnly: true, detail: "NUL"},
		{name: "server/nul-in-config-value", obj: newServer(func(s *TFRServer) {
			s.Spec.ConfigData = map[string]string{"TFS_PROFILE": "prod\x00"}
		}), fields: []string{"spec.configData[TFS_PROFILE]"}, goOnly: true, detail: "NUL"},
		{name: "server/drift-disabled", obj: newServer(func(s *TFRServer) { s.Spec.DriftDetection.Enabled = ptr.To(false) })},
		{name: "server/drift-interval-too-short", obj: newServer(func(s *TFRServer) {
			s.Spec.DriftDetection.Interval = &metav1.Duration{Duration: time.Second}
		}), fields: []string{"spec.driftDetection.interval"}},
		{name: "server/bad-toml", obj: newServer(func(s *TFRServer) {
			s.Spec.ConfzData = "[postgresql]\nport = = 5432\n"
		}), fields: []string{"spec.confzData"}, goOnly: true, detail: "line 2, column"},
	}
	for i, ep := range badEndpoints {
		cases = append(cases, validationCase{name: fmt.Sprintf("tenant/external-bad-endpoint-%d", i),
			obj: externalTenant(func(e *ExternalObjectStorage) { e.Endpoint = ep }), fields: []string{"spec.objectStorage.external.endpoint"}})
	}
	// A personal job type's middleware keeps MinIO, the shared one and a job type's own.
	ext := TenantMiddleware{ObjectStorage: ObjectStorageSpec{Provider: ObjectStorageExternal,
		External: &ExternalObjectStorage{Endpoint: "https://s3.storage.example.com", CredentialsSecret: "s3"}}}
	return append(cases,
		validationCase{name: "cluster/personal-external-object-storage", obj: newCluster(func(c *TFRCluster) { c.Spec.Personal.Middleware = ext }),
			fields: []string{"spec.personal.middleware.objectStorage.provider"}},
		validationCase{name: "cluster/personal-job-type-external-object-storage", obj: newCluster(func(c *TFRCluster) {
			c.Spec.Personal.JobTypes = map[string]TenantMiddleware{"chat": ext}
		}), fields: []string{"spec.personal.jobTypes"}, detail: "jobTypes[chat].objectStorage.provider"},
	)
}

// updateCase is an update from old to updated, shared by the unit test (ValidateUpdate) and the
// integration test (the CEL transition rules of the CRDs).
type updateCase struct {
	name         string
	old, updated validated
	fields       []string
	check        func() field.ErrorList
}

func tenantUpdate(name string, mut func(*TFRTenant), fields ...string) updateCase {
	old := newTenant()
	n := old.DeepCopy()
	mut(n)
	return updateCase{name: name, old: old, updated: n, fields: fields, check: func() field.ErrorList { return n.ValidateUpdate(old) }}
}

func serverUpdate(name string, mut func(*TFRServer), fields ...string) updateCase {
	old := newServer()
	n := old.DeepCopy()
	mut(n)
	return updateCase{name: name, old: old, updated: n, fields: fields, check: func() field.ErrorList { return n.ValidateUpdate(old) }}
}

func clusterUpdate(name string, mut func(*TFRCluster), fields ...string) updateCase {
	old := newCluster()
	n := old.DeepCopy()
	mut(n)
	return updateCase{name: name, old: old, updated: n, fields: fields, check: func() field.ErrorList { return n.ValidateUpdate(old) }}
}

func updateCases() []updateCase {
	return []updateCase{
		clusterUpdate("cluster/domain-may-change", func(c *TFRCluster) { c.Spec.Domain = "new.example.com" }),
		clusterUpdate("cluster/invalid-update", func(c *TFRCluster) { c.Spec.Ingress.Mode = IngressTKECLB }, "spec.ingress.serviceAnnotations"),
		tenantUpdate("tenant/deletion-policy-may-change", func(t *TFRTenant) { t.Spec.DeletionPolicy = DeletionDelete }),
		tenantUpdate("tenant/type-is-immutable", func(t *TFRTenant) { t.Spec.Type, t.Spec.JobType = TenantPersonal, "translate" }, "spec.type"),
		tenantUpdate("tenant/cluster-ref-is-immutable", func(t *TFRTenant) { t.Spec.ClusterRef = "other" }, "spec.clusterRef"),
		tenantUpdate("tenant/namespace-cannot-be-added", func(t *TFRTenant) { t.Spec.Namespace = "acme" }, "spec.namespace"),
		serverUpdate("server/image-and-replicas-may-change", func(s *TFRServer) {
			s.Spec.Image = "ghcr.io/tfrs-io/tfrobot:1.0.1"
			s.Spec.APIWorker.Replicas = ptr.To[int32](3)
		}),
		serverUpdate("server/robot-id-is-immutable", func(s *TFRServer) { s.Spec.RobotID = "r-002" }, "spec.robotId"),
		serverUpdate("server/robot-type-is-immutable", func(s *TFRServer) { s.Spec.RobotType = "voice" }, "spec.robotType"),
		serverUpdate("server/tenant-ref-is-immutable", func(s *TFRServer) { s.Spec.TenantRef = "other" }, "spec.tenantRef"),
	}
}
