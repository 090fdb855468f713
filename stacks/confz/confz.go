// Package confz builds a TFRobot server's Confz configuration (TOML): the sections the
// operator generates from the tenant's real connection info, with the user's spec.confzData
// merged on top. A key the user sets wins at any depth; everything the user leaves out keeps
// the generated value; user-only keys and sections are kept.
package confz

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/pelletier/go-toml/v2"
)

// Connections is the tenant's connection info as the tenant stack exports it. Passwords and
// keys are plain strings here because the whole document ends up in a Secret.
type Connections struct {
	Postgres Postgres
	Redis    Redis
	RabbitMQ RabbitMQ
	COS      COS
	// TracingEndpoint is the OTLP endpoint of the tenant's OTel Collector ("" = no tracing).
	TracingEndpoint string
}

// Postgres is the [postgresql] section.
type Postgres struct {
	Host     string
	Port     int
	User     string
	Password string
	DBName   string
	// Schema separates robots of a personal tenant sharing one database ("" = default).
	Schema string
}

// Redis is the [redis] section.
type Redis struct {
	Host string
	Port int
	// User is the robot's own ACL user of a personal tenant's Redis ("" = the default user).
	User     string
	Password string
	// KeyPrefix separates robots of a personal tenant sharing one Redis ("" = none).
	KeyPrefix string
}

// RabbitMQ builds the [celery] broker URL.
type RabbitMQ struct {
	Host     string
	Port     int
	User     string
	Password string
	VHost    string
}

// COS is the [cos] section (MinIO, S3 API).
type COS struct {
	Host      string
	Port      int
	AccessKey string
	SecretKey string
	Bucket    string
	// External marks an external endpoint (spec.objectStorage.provider External): the
	// section then also says whether to use TLS ("secure") and the bucket's "region", which
	// the tenant's MinIO (plain HTTP inside the mesh, no region) never needed.
	External bool
	Secure   bool
	Region   string
}

// BrokerURL is the amqp URL with user, password and vhost escaped, so a password with "@" or
// "/" cannot produce a URL that points somewhere else.
func (r RabbitMQ) BrokerURL() string {
	u := url.URL{
		Scheme: "amqp",
		User:   url.UserPassword(r.User, r.Password),
		Host:   net.JoinHostPort(r.Host, strconv.Itoa(r.Port)),
		Path:   "/" + r.VHost,
	}
	if r.VHost == "" {
		u.Path = "/"
	} else {
		u.RawPath = "/" + url.PathEscape(r.VHost)
	}
	return u.String()
}

// Generated returns the operator's sections as a TOML-shaped tree.
func Generated(c Connections) map[string]any {
	pg := map[string]any{
		"host":     c.Postgres.Host,
		"port":     int64(c.Postgres.Port),
		"user":     c.Postgres.User,
		"password": c.Postgres.Password,
		"dbname":   c.Postgres.DBName,
	}
	if c.Postgres.Schema != "" {
		pg["schema"] = c.Postgres.Schema
	}
	redis := map[string]any{
		"host":     c.Redis.Host,
		"port":     int64(c.Redis.Port),
		"password": c.Redis.Password,
	}
	if c.Redis.KeyPrefix != "" {
		redis["key_prefix"] = c.Redis.KeyPrefix
	}
	if c.Redis.User != "" {
		redis["username"] = c.Redis.User
	}
	cos := map[string]any{
		"host":       c.COS.Host,
		"port":       int64(c.COS.Port),
		"access_key": c.COS.AccessKey,
		"secret_key": c.COS.SecretKey,
		"bucket":     c.COS.Bucket,
	}
	if c.COS.External {
		cos["secure"] = c.COS.Secure
		cos["region"] = c.COS.Region
	}
	out := map[string]any{
		"postgresql": pg,
		"redis":      redis,
		"celery":     map[string]any{"broker_url": c.RabbitMQ.BrokerURL()},
		"cos":        cos,
	}
	if c.TracingEndpoint != "" {
		out["tracing"] = map[string]any{"endpoint": c.TracingEndpoint}
	}
	return out
}

// ParseError is invalid TOML in spec.confzData, with the position users need to fix it.
type ParseError struct {
	Line, Column int
	Msg          string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("confzData is not valid TOML: line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Parse reads the user's TOML. Errors are *ParseError with line and column.
func Parse(doc string) (map[string]any, error) {
	out := map[string]any{}
	if err := toml.Unmarshal([]byte(doc), &out); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, &ParseError{Line: line, Column: col, Msg: de.Error()}
		}
		return nil, &ParseError{Line: 1, Column: 1, Msg: err.Error()}
	}
	return out, nil
}

// Merge returns base with over laid on top: where both hold a table the merge recurses,
// otherwise over's value wins (a user may replace a whole generated table with a scalar, or
// the reverse). Neither input is modified.
func Merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, ov := range over {
		if bt, ok := out[k].(map[string]any); ok {
			if ot, ok := ov.(map[string]any); ok {
				out[k] = Merge(bt, ot)
				continue
			}
		}
		out[k] = ov
	}
	return out
}

// Render produces the final Confz TOML: generated sections, user overrides on top. go-toml
// sorts keys, so the same input always yields the same bytes (no spurious diffs, no restarts).
func Render(c Connections, userTOML string) (string, error) {
	user, err := Parse(userTOML)
	if err != nil {
		return "", err
	}
	return Encode(Merge(Generated(c), user))
}

// Encode writes a tree as TOML with go-toml (never by hand: quoting and escaping are its job).
func Encode(tree map[string]any) (string, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.SetIndentTables(false)
	if err := enc.Encode(tree); err != nil {
		return "", fmt.Errorf("encode confz: %w", err)
	}
	return b.String(), nil
}
