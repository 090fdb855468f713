// Package stackname names the Pulumi stacks of the three levels: cluster.<name>,
// tenant.<namespace>.<name>, server.<namespace>.<name>, shortened with a stable hash past the
// backend's limit. It is standard library only, so the API types, the programs and the engine
// share one rule without the programs linking the Automation API driver.
package stackname

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// MaxLength is the DIY backend's limit on stack names; longer names are shortened
// with a stable hash suffix so the same object always maps to the same stack.
const MaxLength = 100

// ErrInvalid: a name breaks the naming rules.
var ErrInvalid = errors.New("invalid stack name")

// Stack-name prefixes, one per level.
const (
	LevelCluster = "cluster"
	LevelTenant  = "tenant"
	LevelServer  = "server"
)

var (
	// A namespace is a DNS-1123 label.
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// Object names are DNS-1123 subdomains: labels joined by dots. Because a namespace never
	// contains a dot, `tenant.<ns>.<name>` stays unambiguous even when the name has dots.
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// What the Pulumi DIY backend accepts.
	pulumiStackName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
)

var levelShape = map[string]string{
	LevelCluster: "cluster.<name>",
	LevelTenant:  "tenant.<namespace>.<name>",
	LevelServer:  "server.<namespace>.<name>",
}

// Cluster names the stack of a TFRCluster.
func Cluster(name string) (string, error) {
	if err := checkSubdomain("cluster name", name); err != nil {
		return "", err
	}
	return shorten(LevelCluster + "." + name), nil
}

// Tenant names the stack of a TFRTenant.
func Tenant(namespace, name string) (string, error) {
	return namespaced(LevelTenant, namespace, name)
}

// Server names the stack of a TFRServer.
func Server(namespace, name string) (string, error) {
	return namespaced(LevelServer, namespace, name)
}

// Of names the stack of an object of level from its namespace and name (a cluster has no
// namespace): Cluster, Tenant or Server by level, for code that holds a level rather than an
// object (the HTTP API naming a stack from its URL).
func Of(level, namespace, name string) (string, error) {
	if level == LevelCluster {
		return Cluster(name)
	}
	return namespaced(level, namespace, name)
}

// Prefix is the name prefix of the stacks of level in namespace, or in every namespace when
// namespace is "" (for listing a collection, or a parent's dependents).
func Prefix(level, namespace string) string {
	if namespace == "" {
		return level + "."
	}
	return level + "." + namespace + "."
}

// PersonalNamespacePrefix prefixes the job type to name a personal tenant's shared namespace;
// the job type's shared stack is named after that namespace.
const PersonalNamespacePrefix = "personal-"

// personalShared is the last part of a personal job type's shared stack name: a leading '_'
// is not a DNS-1123 character, so no TFRTenant's own stack can take that name.
const personalShared = "_shared"

// PersonalShared names the stack that owns the namespace and middleware shared by the personal
// tenants of jobType: tenant.personal-<jobType>._shared.
func PersonalShared(jobType string) (string, error) {
	if jobType == "" {
		return "", fmt.Errorf("%w: empty job type", ErrInvalid)
	}
	name := LevelTenant + "." + PersonalNamespacePrefix + jobType + "." + personalShared
	if err := Validate(name); err != nil {
		return "", err
	}
	return name, nil
}

func namespaced(level, namespace, name string) (string, error) {
	if len(namespace) > 63 || !dnsLabel.MatchString(namespace) {
		return "", fmt.Errorf("%w: namespace %q is not a DNS-1123 label", ErrInvalid, namespace)
	}
	if err := checkSubdomain(level+" name", name); err != nil {
		return "", err
	}
	return shorten(level + "." + namespace + "." + name), nil
}

func checkSubdomain(what, s string) error {
	if len(s) > 253 || !dnsSubdomain.MatchString(s) {
		return fmt.Errorf("%w: %s %q is not a DNS-1123 subdomain", ErrInvalid, what, s)
	}
	return nil
}

// shorten keeps names within the backend limit. The suffix hashes the full name, so two long
// names sharing a prefix never collide, and the same input always gives the same stack.
func shorten(full string) string {
	if len(full) <= MaxLength {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	head := strings.TrimRight(full[:MaxLength-len(suffix)], ".-")
	return head + suffix
}

// Validate accepts the names the three helpers produce (and any other name the
// backend accepts, so stacks made by hand can still be read); it rejects everything else
// before a CLI process is started.
func Validate(name string) error {
	if !pulumiStackName.MatchString(name) {
		return fmt.Errorf("%w: %q (want [A-Za-z0-9_.-], at most %d characters)", ErrInvalid, name, MaxLength)
	}
	level, _, _ := strings.Cut(name, ".")
	parts := map[string]int{LevelCluster: 2, LevelTenant: 3, LevelServer: 3}[level]
	if parts == 0 {
		return nil
	}
	fields := strings.SplitN(name, ".", parts)
	if len(fields) < parts {
		return fmt.Errorf("%w: %q lacks parts (want %s)", ErrInvalid, name, levelShape[level])
	}
	for _, f := range fields {
		if f == "" {
			return fmt.Errorf("%w: %q has an empty part", ErrInvalid, name)
		}
	}
	return nil
}
