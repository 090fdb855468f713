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
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// spec.exportOutputs: which components and fields the exported Secret carries, how a data key
// is made from them, and the rules on the user's part (name, labels, key template). The
// program (stacks) fills the values; the key set is defined here so that Validate can refuse a
// template that would make two keys collide before anything runs.

// Placeholders of ExportOutputsSpec.KeyTemplate.
const (
	KeyComponent      = "{component}"
	KeyComponentUpper = "{COMPONENT}"
	KeyField          = "{field}"
	KeyFieldUpper     = "{FIELD}"
	// DefaultKeyTemplate gives keys such as "postgresql_password".
	DefaultKeyTemplate = KeyComponent + "_" + KeyField
)

// PatternKeyTemplate is the shape of a key template: literal Secret-key characters and
// placeholders, nothing else (so every key it makes matches PatternSecretKey).
const PatternKeyTemplate = `^([-._a-zA-Z0-9]|\{component\}|\{COMPONENT\}|\{field\}|\{FIELD\})+$`

// MaxKeyTemplateLength bounds keyTemplate (the longest key it makes stays far below 253).
const MaxKeyTemplateLength = 128

// MaxExportLabels bounds exportOutputs.labels.
const MaxExportLabels = 64

var reKeyTemplate = regexp.MustCompile(PatternKeyTemplate)

// Components of the exported Secret.
const (
	ExportPostgreSQL  = "postgresql"
	ExportTimescaleDB = "timescaledb"
	ExportRedis       = "redis"
	ExportMinIO       = "minio"
	ExportRabbitMQ    = "rabbitmq"
)

// Fields of the exported Secret.
const (
	ExportHost     = "host"
	ExportPort     = "port"
	ExportUser     = "user"
	ExportPassword = "password"
	ExportDatabase = "database"
	ExportBucket   = "bucket"
	ExportVHost    = "vhost"
	ExportURL      = "url"
)

// ExportedField is one component's fields in the exported Secret.
type ExportedField struct {
	Component string
	Fields    []string
}

// ExportedFields are the fields each component exports when it is installed, in key order.
// TimescaleDB shares PostgreSQL's login; Redis has only a password (its default user);
// MinIO's user and password are its root access and secret keys, its url the S3 endpoint.
func ExportedFields() []ExportedField {
	return []ExportedField{
		{ExportPostgreSQL, []string{ExportHost, ExportPort, ExportUser, ExportPassword, ExportDatabase, ExportURL}},
		{ExportTimescaleDB, []string{ExportHost, ExportPort, ExportUser, ExportPassword, ExportDatabase, ExportURL}},
		{ExportRedis, []string{ExportHost, ExportPort, ExportPassword, ExportURL}},
		{ExportMinIO, []string{ExportHost, ExportPort, ExportUser, ExportPassword, ExportBucket, ExportURL}},
		{ExportRabbitMQ, []string{ExportHost, ExportPort, ExportUser, ExportPassword, ExportVHost, ExportURL}},
	}
}

// ExportKey is the data key of a component's field under template (a defaulted, valid one).
func ExportKey(template, component, fieldName string) string {
	return strings.NewReplacer(
		KeyComponent, component, KeyComponentUpper, strings.ToUpper(component),
		KeyField, fieldName, KeyFieldUpper, strings.ToUpper(fieldName),
	).Replace(template)
}

// Default sets the key template.
func (e *ExportOutputsSpec) Default() { setDefault(&e.KeyTemplate, DefaultKeyTemplate) }

// reservedLabelDomains are the label prefixes Kubernetes and TFRS keep for themselves: a user
// label there could impersonate a platform object to selectors and policies.
var reservedLabelDomains = []string{"tfrs.io", "kubernetes.io", "k8s.io"}

// reservedLabelKey reports whether key's prefix is a reserved domain or one of its subdomains.
func reservedLabelKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range reservedLabelDomains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// validateExportOutputs checks spec.exportOutputs of a defaulted tenant. Like the CEL rules,
// label problems are reported on the labels map with the offending keys (never the values);
// template collisions are Go-only (the schema's placeholder rule already prevents the ones a
// user can write, this keeps it true for every future component and field).
func validateExportOutputs(p *field.Path, t *TFRTenant) field.ErrorList {
	e := t.Spec.ExportOutputs
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	if t.Spec.Type == TenantPersonal {
		// The job type's middleware is shared: its logins reach every robot's data, so no
		// single tenant may hand them out.
		errs = append(errs, field.Forbidden(p, "exportOutputs is only valid for enterprise tenants: a personal tenant's middleware is shared by its job type"))
	}
	errs = append(errs, str(p.Child("secretName"), e.SecretName, required, 1, 253, reDNSSubdomain)...)

	lp := p.Child("labels")
	if len(e.Labels) > MaxExportLabels {
		errs = append(errs, field.TooMany(lp, len(e.Labels), MaxExportLabels))
	}
	var badKey, reserved, badValue []string
	for k, v := range e.Labels {
		switch {
		case len(validation.IsQualifiedName(k)) > 0:
			badKey = append(badKey, k)
		case reservedLabelKey(k):
			reserved = append(reserved, k)
		}
		if len(validation.IsValidLabelValue(string(v))) > 0 {
			badValue = append(badValue, k)
		}
	}
	for _, bad := range []struct {
		keys []string
		rule string
	}{
		{badKey, "label keys must be qualified names ([prefix/]name, name at most 63 characters of [-A-Za-z0-9_.] starting and ending alphanumeric)"},
		{reserved, "label keys under the tfrs.io, kubernetes.io and k8s.io prefixes are reserved"},
		{badValue, "label values must be at most 63 characters of [-A-Za-z0-9_.], starting and ending alphanumeric (keys named)"},
	} {
		if len(bad.keys) > 0 {
			sort.Strings(bad.keys)
			errs = append(errs, field.Invalid(lp, strings.Join(bad.keys, ","), bad.rule))
		}
	}

	kp := p.Child("keyTemplate")
	tmpl := e.KeyTemplate
	if es := str(kp, tmpl, optional, 1, MaxKeyTemplateLength, reKeyTemplate); len(es) > 0 {
		return append(errs, es...)
	}
	if !(strings.Contains(tmpl, KeyComponent) || strings.Contains(tmpl, KeyComponentUpper)) ||
		!(strings.Contains(tmpl, KeyField) || strings.Contains(tmpl, KeyFieldUpper)) {
		return append(errs, field.Invalid(kp, tmpl, "keyTemplate must contain a component placeholder ({component} or {COMPONENT}) and a field placeholder ({field} or {FIELD}), else keys collide"))
	}
	seen := map[string]string{}
	for _, c := range ExportedFields() {
		for _, f := range c.Fields {
			key, what := ExportKey(tmpl, c.Component, f), c.Component+"."+f
			if prev, ok := seen[key]; ok {
				errs = append(errs, field.Invalid(kp, tmpl, fmt.Sprintf("keyTemplate makes the same key %q for %s and %s", key, prev, what)))
				continue
			}
			seen[key] = what
			if len(key) > 253 || !reSecretKey.MatchString(key) {
				errs = append(errs, field.Invalid(kp, tmpl, fmt.Sprintf("keyTemplate makes %q for %s, not a Secret key (%s, at most 253)", key, what, PatternSecretKey)))
			}
		}
	}
	return errs
}
