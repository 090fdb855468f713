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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Patterns. Each one is also written, verbatim, in the +kubebuilder:validation:Pattern markers
// (and CEL rules) of the types; TestCRDPatternsMatchGo checks that the CRDs use these strings.
const (
	PatternDNSLabel     = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	PatternDNSSubdomain = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// PatternRoutingName is the shape of robotId and robotType, the X-TF-RobotId and X-TF-RobotType
	// routing headers.
	PatternRoutingName = `^[a-z0-9-]+$`
	PatternEnvVarName  = `^[A-Za-z_][A-Za-z0-9_]*$`
	PatternVersion     = `^[A-Za-z0-9][A-Za-z0-9.+_-]*$`
	PatternChartRepo   = `^(https?|oci)://\S+$`
	PatternManifestURL = `^(https?|file)://\S+$`
	// PatternBucket is an S3 bucket name (3-63 characters, checked apart).
	PatternBucket       = `^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	PatternEmail        = `^[^@\s]+@[^@\s]+$`
	PatternACMEServer   = `^https://\S+$`
	PatternRegistry     = `^[a-zA-Z0-9]([a-zA-Z0-9.:-]*[a-zA-Z0-9])?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*$`
	PatternSecretKey    = `^[-._a-zA-Z0-9]+$`
	PatternDatabase     = `^[a-z0-9_][a-z0-9_-]*$`
	PatternPGRole       = `^[a-z_][a-z0-9_]*$`
	PatternGrafanaUser  = `^[A-Za-z0-9._-]+$`
	PatternDuration     = `^[0-9]+(ms|s|m|h|d|w|y)$`
	PatternAbsolutePath = `^/[^\s]*$`
)

// Length limits shared by markers and Go.
const (
	MaxNameLength      = 63
	MaxRoutingNameLen  = 40
	MaxJobTypeLength   = MaxNameLength - len(PersonalNamespacePrefix)
	MaxImageLength     = 512
	MaxEnvEntries      = 256
	MaxConfzDataLength = 262144
	// MaxReservedNamespaces bounds TFRCluster.spec.reservedNamespaces.
	MaxReservedNamespaces = 256
)

var (
	reDNSLabel     = regexp.MustCompile(PatternDNSLabel)
	reDNSSubdomain = regexp.MustCompile(PatternDNSSubdomain)
	reRoutingName  = regexp.MustCompile(PatternRoutingName)
	reEnvVarName   = regexp.MustCompile(PatternEnvVarName)
	reVersion      = regexp.MustCompile(PatternVersion)
	reChartRepo    = regexp.MustCompile(PatternChartRepo)
	reManifestURL  = regexp.MustCompile(PatternManifestURL)
	reEmail        = regexp.MustCompile(PatternEmail)
	reACMEServer   = regexp.MustCompile(PatternACMEServer)
	reRegistry     = regexp.MustCompile(PatternRegistry)
	reSecretKey    = regexp.MustCompile(PatternSecretKey)
	reDatabase     = regexp.MustCompile(PatternDatabase)
	rePGRole       = regexp.MustCompile(PatternPGRole)
	reGrafanaUser  = regexp.MustCompile(PatternGrafanaUser)
	reDuration     = regexp.MustCompile(PatternDuration)
	reAbsolutePath = regexp.MustCompile(PatternAbsolutePath)
)

// Validate reports what the API server would reject in the object (after defaulting a copy, as
// the API server does), with the same field paths, plus what a schema cannot check.
func (x *TFRCluster) Validate() field.ErrorList {
	c := x.DeepCopy()
	c.Default()
	errs := validateName(c.Name, c.GenerateName)
	s, p := &c.Spec, field.NewPath("spec")

	errs = append(errs, str(p.Child("domain"), s.Domain, required, 1, 253, reDNSSubdomain)...)

	ip := p.Child("ingress")
	in := &s.Ingress
	errs = append(errs, enum(ip.Child("mode"), in.Mode, IngressTKECLB, IngressNodePort, IngressDockerDesktop)...)
	errs = append(errs, maxProps(ip.Child("serviceAnnotations"), len(in.ServiceAnnotations), 64)...)
	errs = append(errs, intRange(ip.Child("httpPort"), in.HTTPPort, 30000, 32767)...)
	errs = append(errs, intRange(ip.Child("httpsPort"), in.HTTPSPort, 30000, 32767)...)
	if in.Mode == IngressTKECLB && len(in.ServiceAnnotations) == 0 {
		errs = append(errs, field.Required(ip.Child("serviceAnnotations"), "serviceAnnotations (the TKE CLB annotations) are required when mode is TKECLB"))
	}
	if in.Mode != IngressNodePort {
		if in.HTTPPort != nil {
			errs = append(errs, field.Forbidden(ip.Child("httpPort"), "httpPort is only valid when mode is NodePort"))
		}
		if in.HTTPSPort != nil {
			errs = append(errs, field.Forbidden(ip.Child("httpsPort"), "httpsPort is only valid when mode is NodePort"))
		}
	}
	if in.HTTPPort != nil && in.HTTPSPort != nil && *in.HTTPPort == *in.HTTPSPort {
		errs = append(errs, field.Invalid(ip.Child("httpsPort"), *in.HTTPSPort, "httpPort and httpsPort must differ"))
	}

	tp := p.Child("tls")
	tls := &s.TLS
	errs = append(errs, enum(tp.Child("issuer"), tls.Issuer, TLSSelfSigned, TLSACME, TLSCA)...)
	switch {
	case tls.Issuer == TLSACME && tls.ACME == nil:
		errs = append(errs, field.Required(tp.Child("acme"), "acme (email and server) is required when issuer is ACME"))
	case tls.Issuer != TLSACME && tls.ACME != nil:
		errs = append(errs, field.Forbidden(tp.Child("acme"), "acme is only valid when issuer is ACME"))
	}
	switch {
	case tls.Issuer == TLSCA && tls.CA == nil:
		errs = append(errs, field.Required(tp.Child("ca"), "ca (secretName) is required when issuer is CA"))
	case tls.Issuer != TLSCA && tls.CA != nil:
		errs = append(errs, field.Forbidden(tp.Child("ca"), "ca is only valid when issuer is CA"))
	}
	if a := tls.ACME; a != nil {
		errs = append(errs, str(tp.Child("acme", "email"), a.Email, required, 0, 254, reEmail)...)
		errs = append(errs, str(tp.Child("acme", "server"), a.Server, required, 0, 2048, reACMEServer)...)
	}
	if ca := tls.CA; ca != nil {
		errs = append(errs, str(tp.Child("ca", "secretName"), ca.SecretName, required, 0, 253, reDNSSubdomain)...)
	}

	if r := s.ImageRegistry; r != nil {
		rp := p.Child("imageRegistry")
		errs = append(errs, str(rp.Child("registry"), r.Registry, optional, 1, 253, reRegistry)...)
		errs = append(errs, str(rp.Child("tenantCredentialsNamespace"), r.TenantCredentialsNamespace, optional, 1, MaxNameLength, reDNSLabel)...)
		if cr := r.Credentials; cr != nil {
			cp := rp.Child("credentials")
			errs = append(errs, str(cp.Child("name"), cr.Name, optional, 0, 50, reDNSLabel)...)
			errs = append(errs, str(cp.Child("server"), cr.Server, required, 1, 253, nil)...)
			errs = append(errs, str(cp.Child("username"), cr.Username, required, 1, 256, nil)...)
			errs = append(errs, str(cp.Child("password"), cr.Password, optional, 1, 4096, nil)...)
			if (cr.Password != "") == (cr.PasswordSecretRef != nil) {
				errs = append(errs, field.Invalid(cp, field.OmitValueType{}, "exactly one of password and passwordSecretRef must be set"))
			}
			if ref := cr.PasswordSecretRef; ref != nil {
				errs = append(errs, validateSecretKeyRef(cp.Child("passwordSecretRef"), ref)...)
			}
		}
	}

	for _, cs := range s.components() {
		errs = append(errs, validateComponentSource(p.Child(cs.name), cs.src)...)
	}
	errs = append(errs, validateDriftDetection(p.Child("driftDetection"), &s.DriftDetection)...)
	rp := p.Child("reservedNamespaces")
	if len(s.ReservedNamespaces) > MaxReservedNamespaces {
		errs = append(errs, field.TooMany(rp, len(s.ReservedNamespaces), MaxReservedNamespaces))
	}
	seen := map[string]bool{}
	for i, ns := range s.ReservedNamespaces {
		errs = append(errs, str(rp.Index(i), ns, required, 1, MaxNameLength, reDNSLabel)...)
		if seen[ns] {
			errs = append(errs, field.Duplicate(rp.Index(i), ns))
		}
		seen[ns] = true
	}
	errs = append(errs, s.Personal.validate(p.Child("personal"))...)            // personal_rules.go
	errs = append(errs, s.Tenancy.validate(p.Child("tenancy"), &s.Personal)...) // tenancy.go
	errs = append(errs, s.Egress.validate(p.Child("egress"))...)                // egress.go
	return errs
}

// ValidateUpdate is Validate plus the rules on changes (none for a cluster yet).
func (x *TFRCluster) ValidateUpdate(old Object) field.ErrorList {
	if _, errs := previous(x, old); errs != nil {
		return errs
	}
	return x.Validate()
}

// Validate reports what the API server would reject in the object (after defaulting a copy, as
// the API server does), with the same field paths, plus the chart values allowlist
// (values_policy.go).
func (x *TFRTenant) Validate() field.ErrorList { return x.validate(validateTenantValues) }

// validate is Validate with chartValues as the rule on spec.jaeger.values and
// spec.grafana.values: a tenant's allowlist, or the admin's free form (ValidateWithAdminValues).
func (x *TFRTenant) validate(chartValues chartValuesRule) field.ErrorList {
	t := x.DeepCopy()
	t.Default()
	errs := validateName(t.Name, t.GenerateName)
	s, p := &t.Spec, field.NewPath("spec")

	errs = append(errs, str(p.Child("clusterRef"), s.ClusterRef, required, 1, MaxNameLength, reDNSLabel)...)
	if s.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "enterprise or personal"))
	} else {
		errs = append(errs, enum(p.Child("type"), s.Type, TenantEnterprise, TenantPersonal)...)
	}
	errs = append(errs, str(p.Child("jobType"), s.JobType, optional, 1, MaxJobTypeLength, reDNSLabel)...)
	switch {
	case s.Type == TenantPersonal && s.JobType == "":
		errs = append(errs, field.Required(p.Child("jobType"), "jobType is required when type is personal"))
	case s.Type != TenantPersonal && s.JobType != "":
		errs = append(errs, field.Forbidden(p.Child("jobType"), "jobType is only valid when type is personal"))
	}
	errs = append(errs, str(p.Child("namespace"), s.Namespace, optional, 1, MaxNameLength, reDNSLabel)...)
	errs = append(errs, ReservedNamespaceErrors(t)...)
	errs = append(errs, tenantClassErrors(t)...) // tenancy.go
	errs = append(errs, enum(p.Child("deletionPolicy"), s.DeletionPolicy, DeletionRetain, DeletionDelete)...)

	cp := p.Child("credentials")
	for _, c := range []struct {
		name string
		ref  *ExistingSecretRef
	}{
		{"postgresql", s.Credentials.PostgreSQL},
		{"redis", s.Credentials.Redis},
		{"minio", s.Credentials.MinIO},
		{"rabbitmq", s.Credentials.RabbitMQ},
		{"grafana", s.Credentials.Grafana},
	} {
		if c.ref != nil {
			errs = append(errs, str(cp.Child(c.name, "existingSecret"), c.ref.ExistingSecret, required, 0, 253, reDNSSubdomain)...)
		}
	}

	pp := p.Child("postgresql")
	pg := &s.PostgreSQL
	errs = append(errs, intRange(pp.Child("instances"), pg.Instances, 1, 9)...)
	errs = append(errs, image(pp.Child("imageName"), pg.ImageName, optional)...)
	errs = append(errs, storage(pp, pg.Size, pg.StorageClassName)...)
	errs = append(errs, str(pp.Child("database"), pg.Database, optional, 0, 63, reDatabase)...)
	errs = append(errs, str(pp.Child("owner"), pg.Owner, optional, 0, 63, rePGRole)...)

	rp := p.Child("redis")
	errs = append(errs, image(rp.Child("image"), s.Redis.Image, optional)...)
	errs = append(errs, storage(rp, s.Redis.Size, s.Redis.StorageClassName)...)

	mp := p.Child("minio")
	mn := &s.MinIO
	errs = append(errs, intRange(mp.Child("servers"), mn.Servers, 1, 32)...)
	errs = append(errs, intRange(mp.Child("volumesPerServer"), mn.VolumesPerServer, 1, 16)...)
	errs = append(errs, storage(mp, mn.Size, mn.StorageClassName)...)
	errs = append(errs, image(mp.Child("image"), mn.Image, optional)...)
	errs = append(errs, objectStorageErrors(p.Child("objectStorage"), &s.TenantMiddleware)...) // objectstorage.go

	qp := p.Child("rabbitmq")
	mq := &s.RabbitMQ
	errs = append(errs, intRange(qp.Child("replicas"), mq.Replicas, 1, 9)...)
	errs = append(errs, image(qp.Child("image"), mq.Image, optional)...)
	errs = append(errs, storage(qp, mq.Size, mq.StorageClassName)...)

	tsp := p.Child("timescaledb")
	errs = append(errs, image(tsp.Child("image"), s.TimescaleDB.Image, optional)...)
	errs = append(errs, storage(tsp, s.TimescaleDB.Size, s.TimescaleDB.StorageClassName)...)

	errs = append(errs, validateComponentSource(p.Child("jaeger"), &s.Jaeger.ComponentSource)...)
	errs = append(errs, chartValues(p.Child("jaeger"), ChartJaeger, &s.Jaeger.ComponentSource)...)
	gp := p.Child("grafana")
	errs = append(errs, validateComponentSource(gp, &s.Grafana.ComponentSource)...)
	errs = append(errs, chartValues(gp, ChartGrafana, &s.Grafana.ComponentSource)...)
	errs = append(errs, str(gp.Child("adminUser"), s.Grafana.AdminUser, optional, 1, 63, reGrafanaUser)...)

	prp := p.Child("prometheus")
	errs = append(errs, image(prp.Child("image"), s.Prometheus.Image, optional)...)
	errs = append(errs, str(prp.Child("retention"), s.Prometheus.Retention, optional, 0, 0, reDuration)...)

	errs = append(errs, image(p.Child("otelCollector", "image"), s.OtelCollector.Image, optional)...)
	errs = append(errs, image(p.Child("vector", "image"), s.Vector.Image, optional)...)

	scp := p.Child("sharedCache")
	sc := &s.SharedCache
	errs = append(errs, storage(scp, sc.Size, sc.StorageClassName)...)
	errs = append(errs, enum(scp.Child("accessMode"), sc.AccessMode, "ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany", "ReadWriteOncePod")...)
	errs = append(errs, str(scp.Child("cacheDir"), sc.CacheDir, optional, 0, 1024, reAbsolutePath)...)

	fp := p.Child("tfrobotFront")
	errs = append(errs, validateWorkload(fp, &s.TFRobotFront.WorkloadSpec)...)
	errs = append(errs, image(fp.Child("image"), s.TFRobotFront.Image, optional)...)
	up := p.Child("tfrsUtils")
	errs = append(errs, validateWorkload(up, &s.TFRSUtils.WorkloadSpec)...)
	errs = append(errs, image(up.Child("image"), s.TFRSUtils.Image, optional)...)
	errs = append(errs, validateDriftDetection(p.Child("driftDetection"), &s.DriftDetection)...)
	errs = append(errs, personalMiddlewareErrors(t)...)                        // personal_rules.go
	errs = append(errs, validateExportOutputs(p.Child("exportOutputs"), t)...) // export_outputs.go
	return errs
}

// ValidateUpdate is Validate plus the immutability rules: clusterRef, type, jobType and
// namespace cannot change.
func (x *TFRTenant) ValidateUpdate(prev Object) field.ErrorList {
	old, errs := previous(x, prev)
	if errs != nil {
		return errs
	}
	errs = x.Validate()
	p := field.NewPath("spec")
	errs = append(errs, immutable(p.Child("clusterRef"), x.Spec.ClusterRef, old.Spec.ClusterRef, true)...)
	errs = append(errs, immutable(p.Child("type"), string(x.Spec.Type), string(old.Spec.Type), true)...)
	errs = append(errs, immutable(p.Child("jobType"), x.Spec.JobType, old.Spec.JobType, false)...)
	if (x.Spec.Namespace == "") != (old.Spec.Namespace == "") {
		errs = append(errs, field.Invalid(p.Child("namespace"), x.Spec.Namespace, "namespace cannot be added or removed after creation"))
	} else {
		errs = append(errs, immutable(p.Child("namespace"), x.Spec.Namespace, old.Spec.Namespace, false)...)
	}
	return errs
}

// Validate reports what the API server would reject in the object (after defaulting a copy, as
// the API server does), with the same field paths, plus a parse of spec.confzData as TOML.
func (x *TFRServer) Validate() field.ErrorList {
	v := x.DeepCopy()
	v.Default()
	errs := validateName(v.Name, v.GenerateName)
	s, p := &v.Spec, field.NewPath("spec")

	errs = append(errs, str(p.Child("tenantRef"), s.TenantRef, required, 1, MaxNameLength, reDNSLabel)...)
	errs = append(errs, str(p.Child("robotId"), s.RobotID, required, 1, MaxRoutingNameLen, reRoutingName)...)
	errs = append(errs, str(p.Child("robotType"), s.RobotType, required, 1, MaxRoutingNameLen, reRoutingName)...)
	errs = append(errs, robotTypeErrors(p.Child("robotType"), s.RobotType)...) // robot_rules.go
	errs = append(errs, image(p.Child("image"), s.Image, required)...)
	errs = append(errs, validateWorkload(p.Child("apiWorker"), &s.APIWorker)...)
	errs = append(errs, validateWorkload(p.Child("robotWorker"), &s.RobotWorker)...)
	errs = append(errs, envMap(p.Child("secretData"), s.SecretData)...)
	errs = append(errs, envMap(p.Child("configData"), s.ConfigData)...)
	cp := p.Child("confzData")
	if len(s.ConfzData) > MaxConfzDataLength {
		errs = append(errs, field.TooLong(cp, "", MaxConfzDataLength))
	} else if err := CheckTOML(s.ConfzData); err != nil {
		errs = append(errs, field.Invalid(cp, field.OmitValueType{}, err.Error()))
	}
	errs = append(errs, validateDriftDetection(p.Child("driftDetection"), &s.DriftDetection)...)
	return errs
}

// validateDriftDetection mirrors the CEL rule of interval: 0s (off) or at least MinDriftInterval.
func validateDriftDetection(p *field.Path, d *DriftDetectionSpec) field.ErrorList {
	if d.Interval == nil {
		return nil
	}
	if v := d.Interval.Duration; v != 0 && v < MinDriftInterval {
		return field.ErrorList{field.Invalid(p.Child("interval"), d.Interval.Duration.String(), "interval must be 0s (off) or at least 1m")}
	}
	return nil
}

// ValidateUpdate is Validate plus the immutability rules: tenantRef, robotId and robotType
// cannot change (they name the routing host and the stack).
func (x *TFRServer) ValidateUpdate(prev Object) field.ErrorList {
	old, errs := previous(x, prev)
	if errs != nil {
		return errs
	}
	errs = x.Validate()
	p := field.NewPath("spec")
	errs = append(errs, immutable(p.Child("tenantRef"), x.Spec.TenantRef, old.Spec.TenantRef, true)...)
	errs = append(errs, immutable(p.Child("robotId"), x.Spec.RobotID, old.Spec.RobotID, true)...)
	errs = append(errs, immutable(p.Child("robotType"), x.Spec.RobotType, old.Spec.RobotType, true)...)
	return errs
}

// CheckTOML parses data as TOML. The error names the line and column of the first problem.
func CheckTOML(data string) error {
	if strings.TrimSpace(data) == "" {
		return nil
	}
	var v map[string]any
	err := toml.Unmarshal([]byte(data), &v)
	if err == nil {
		return nil
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return fmt.Errorf("invalid TOML at line %d, column %d: %s", line, col, de.Error())
	}
	return fmt.Errorf("invalid TOML: %w", err)
}

type presence bool

const (
	required presence = true
	optional presence = false
)

// str checks a string the way the schema does. An empty optional string is absent (the Go
// types omit it), so it is not checked; min/max of 0 mean no limit.
func str(p *field.Path, v string, req presence, minLen, maxLen int, re *regexp.Regexp) field.ErrorList {
	if v == "" {
		if req {
			return field.ErrorList{field.Required(p, "")}
		}
		return nil
	}
	var errs field.ErrorList
	if minLen > 0 && len(v) < minLen {
		errs = append(errs, field.Invalid(p, v, fmt.Sprintf("should be at least %d chars long", minLen)))
	}
	if maxLen > 0 && len(v) > maxLen {
		errs = append(errs, field.TooLong(p, "", maxLen))
	}
	if re != nil && !re.MatchString(v) {
		errs = append(errs, field.Invalid(p, v, fmt.Sprintf("should match '%s'", re.String())))
	}
	return errs
}

func image(p *field.Path, v string, req presence) field.ErrorList {
	return str(p, v, req, 1, MaxImageLength, nil)
}

func enum[T ~string](p *field.Path, v T, allowed ...T) field.ErrorList {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	vals := make([]string, len(allowed))
	for i, a := range allowed {
		vals[i] = string(a)
	}
	return field.ErrorList{field.NotSupported(p, string(v), vals)}
}

func intRange(p *field.Path, v *int32, minV, maxV int32) field.ErrorList {
	if v == nil {
		return nil
	}
	if *v < minV {
		return field.ErrorList{field.Invalid(p, *v, fmt.Sprintf("should be greater than or equal to %d", minV))}
	}
	if *v > maxV {
		return field.ErrorList{field.Invalid(p, *v, fmt.Sprintf("should be less than or equal to %d", maxV))}
	}
	return nil
}

func maxProps(p *field.Path, n, maxN int) field.ErrorList {
	if n > maxN {
		return field.ErrorList{field.TooMany(p, n, maxN)}
	}
	return nil
}

func validateName(name, generateName string) field.ErrorList {
	p := field.NewPath("metadata", "name")
	if name == "" {
		if generateName == "" {
			return field.ErrorList{field.Required(p, "name or generateName is required")}
		}
		return nil
	}
	if len(name) > MaxNameLength || !reDNSLabel.MatchString(name) {
		return field.ErrorList{field.Invalid(p, name, "metadata.name must be a DNS-1123 label (at most 63 lowercase alphanumerics or '-')")}
	}
	return nil
}

func validateComponentSource(p *field.Path, c *ComponentSource) field.ErrorList {
	errs := str(p.Child("version"), c.Version, optional, 1, 128, reVersion)
	errs = append(errs, str(p.Child("chartRepo"), c.ChartRepo, optional, 1, 2048, reChartRepo)...)
	errs = append(errs, str(p.Child("manifestURL"), c.ManifestURL, optional, 1, 2048, reManifestURL)...)
	errs = append(errs, str(p.Child("localPath"), c.LocalPath, optional, 1, 4096, nil)...)
	n := 0
	for _, s := range []string{c.ChartRepo, c.ManifestURL, c.LocalPath} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "at most one of chartRepo, manifestURL and localPath may be set"))
	}
	if c.Values != nil && len(bytes.TrimSpace(c.Values.Raw)) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(c.Values.Raw, &obj); err != nil {
			errs = append(errs, field.TypeInvalid(p.Child("values"), string(c.Values.Raw), "must be an object"))
		}
	}
	return errs
}

func validateWorkload(p *field.Path, w *WorkloadSpec) field.ErrorList {
	return intRange(p.Child("replicas"), w.Replicas, 0, 100)
}

func validateSecretKeyRef(p *field.Path, r *SecretKeyRef) field.ErrorList {
	errs := str(p.Child("name"), r.Name, required, 0, 253, reDNSSubdomain)
	errs = append(errs, str(p.Child("key"), r.Key, optional, 0, 253, reSecretKey)...)
	errs = append(errs, str(p.Child("namespace"), r.Namespace, required, 0, MaxNameLength, reDNSLabel)...)
	return errs
}

// storage checks the size (positive) and storageClassName children of p.
func storage(p *field.Path, size *resource.Quantity, class string) field.ErrorList {
	var errs field.ErrorList
	if size != nil && size.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("size"), size.String(), "size must be positive"))
	}
	return append(errs, str(p.Child("storageClassName"), class, optional, 0, 253, reDNSSubdomain)...)
}

// envMap checks the keys of an environment map. Like the CEL rule, a bad key is reported on the
// map itself; the value names the offending keys.
func envMap(p *field.Path, m map[string]string) field.ErrorList {
	if len(m) > MaxEnvEntries {
		return field.ErrorList{field.TooMany(p, len(m), MaxEnvEntries)}
	}
	var bad, nul []string
	for k, v := range m {
		if !reEnvVarName.MatchString(k) {
			bad = append(bad, k)
		}
		if strings.ContainsRune(v, 0) {
			nul = append(nul, k)
		}
	}
	var errs field.ErrorList
	if len(bad) > 0 {
		sort.Strings(bad)
		errs = append(errs, field.Invalid(p, strings.Join(bad, ","), "keys must be environment variable names matching "+PatternEnvVarName))
	}
	// A process's environment is NUL-terminated: such a value would be cut short (or refused
	// by the container runtime) long after the spec was accepted. Forbidden, not Invalid, so
	// that the message never repeats the value (secretData).
	sort.Strings(nul)
	for _, k := range nul {
		errs = append(errs, field.Forbidden(p.Key(k), "a value must not contain a NUL byte"))
	}
	return errs
}

// immutable reports a change of v from old. With always=false an old empty value may not be
// checked (the CEL transition rule only runs when the field exists in both objects).
func immutable(p *field.Path, v, old string, always bool) field.ErrorList {
	if v == old || (!always && (v == "" || old == "")) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("%s is immutable", p.String()))}
}
