package v1alpha1

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Object storage: the tenant's MinIO (the seeds' choice, the default) or an S3-compatible
// endpoint the platform runs. The MinIO community server is archived and its operator has
// had no release since 7.1.1 (April 2025), so a platform that must keep its object storage
// patched points its tenants at a store it maintains (Ceph RGW, a cloud's S3, another
// S3-compatible server) with provider External.

// MaxEndpointLength bounds spec.objectStorage.external.endpoint.
const MaxEndpointLength = 512

// reBucket is an S3 bucket name: lower-case letters, digits, dots and hyphens, starting and
// ending with a letter or digit.
var reBucket = regexp.MustCompile(PatternBucket)

// External is the tenant's external object storage, nil when its provider is MinIO.
func (m *TenantMiddleware) External() *ExternalObjectStorage {
	if m.ObjectStorage.Provider != ObjectStorageExternal {
		return nil
	}
	return m.ObjectStorage.External
}

// objectStorageErrors are the rules of spec.objectStorage (at p) of a defaulted spec, and
// the one between it and spec.credentials.minio.
func objectStorageErrors(p *field.Path, s *TenantMiddleware) field.ErrorList {
	o := &s.ObjectStorage
	errs := enum(p.Child("provider"), o.Provider, ObjectStorageMinIO, ObjectStorageExternal)
	switch {
	case o.Provider == ObjectStorageExternal && o.External == nil:
		return append(errs, field.Required(p.Child("external"), "provider External needs spec.objectStorage.external"))
	case o.Provider != ObjectStorageExternal && o.External != nil:
		return append(errs, field.Forbidden(p.Child("external"), "external is only valid with provider External"))
	case o.External == nil:
		return errs
	}
	if s.Credentials.MinIO != nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "credentials", "minio"),
			"credentials.minio is MinIO's root login: with an external object storage its credentials come from objectStorage.external.credentialsSecret"))
	}
	e, ep := o.External, p.Child("external")
	errs = append(errs, endpointErrors(ep.Child("endpoint"), e.Endpoint)...)
	errs = append(errs, str(ep.Child("region"), e.Region, optional, 1, 63, reDNSLabel)...)
	errs = append(errs, str(ep.Child("bucket"), e.Bucket, optional, 3, 63, reBucket)...)
	errs = append(errs, enum(ep.Child("bucketPolicy"), e.BucketPolicy, BucketCreate, BucketExisting)...)
	return append(errs, str(ep.Child("credentialsSecret"), e.CredentialsSecret, required, 0, 253, reDNSSubdomain)...)
}

// endpointErrors: an http(s) URL with a host and nothing after it but "/". User info would
// put a credential in the spec; a path, query or fragment would be dropped or misread by an
// S3 client, so they are refused rather than ignored.
func endpointErrors(p *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "the S3 endpoint, https://host[:port]")}
	}
	if len(v) > MaxEndpointLength {
		return field.ErrorList{field.TooLong(p, "", MaxEndpointLength)}
	}
	const rule = "endpoint must be http(s)://host[:port] with no path, query, fragment or user info"
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" ||
		(u.EscapedPath() != "" && u.EscapedPath() != "/") || strings.ContainsAny(v, "@?#") || u.Opaque != "" {
		return field.ErrorList{field.Invalid(p, v, rule)}
	}
	return nil
}

// Parts splits the endpoint of a validated e into its base URL (without a trailing slash),
// host and port (the scheme's default when the URL names none).
func (e *ExternalObjectStorage) Parts() (base, host string, port int, err error) {
	u, err := url.Parse(e.Endpoint)
	if err != nil {
		return "", "", 0, err
	}
	port = 443
	if u.Scheme == "http" {
		port = 80
	}
	if ps := u.Port(); ps != "" {
		if port, err = strconv.Atoi(ps); err != nil || port < 1 || port > 65535 {
			return "", "", 0, fmt.Errorf("endpoint %q: port %q", e.Endpoint, ps)
		}
	}
	return strings.TrimSuffix(e.Endpoint, "/"), u.Hostname(), port, nil
}
