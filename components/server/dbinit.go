package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
)

// Default images of the init Jobs' helper containers. Each Job's args can name another (a
// mirror); the server image itself is always the TFRServer's.
const (
	DefaultPSQLImage = "docker.io/library/postgres:16-alpine"
	DefaultMCImage   = "quay.io/minio/mc:RELEASE.2025-04-16T18-13-26Z"
	DefaultCurlImage = "docker.io/curlimages/curl:8.11.1"
)

// Kinds of the init Jobs: the LabelComponent value and the middle of their names.
const (
	KindDBInit    = "db-init"
	KindMinIOInit = "minio-init"
	KindGrafanaSA = "grafana-sa"
)

// DBInitArgs configure the db-init component.
type DBInitArgs struct {
	Robot Robot
	// Image and Args run the server image's schema initialisation (migrations).
	Image string
	Args  []string
	// Confz is the robot's merged Confz (a secret): the server reads its database connection
	// from it, exactly as the workers do. A change to it re-runs the Job.
	Confz pulumi.StringInput
	// Env are the operator's variables of the server container (DBSchemaEnv for a robot of a
	// personal tenant). The robot's secretData and configData are deliberately not given:
	// they would make every edit of them re-run the migrations.
	Env map[string]string
	// Schema, for a robot of a personal tenant, creates its role and schema first.
	Schema     *SchemaArgs
	PullSecret string
}

// SchemaArgs create a robot's own PostgreSQL role and schema in the tenant's database.
type SchemaArgs struct {
	// Image runs psql (DefaultPSQLImage when empty).
	Image string
	// Host, Port and Database are the tenant's PostgreSQL.
	Host     string
	Port     int
	Database string
	// AdminUser and AdminPassword are the tenant's owner login. It creates the role, so it
	// needs CREATEROLE on the tenant's cluster.
	AdminUser     string
	AdminPassword pulumi.StringInput
	// Role is the robot's role and schema (Robot.Schema); Password the role's password.
	Role     string
	Password pulumi.StringInput
}

// DBInit is the robot's database initialisation Job (see job.go for when it runs).
type DBInit struct {
	pulumi.ResourceState
	children.Set

	// JobName is the current Job ("{robot}-db-init-<hash>").
	JobName pulumi.StringOutput `pulumi:"jobName"`
}

// NewDBInit creates the db-init component.
func NewDBInit(ctx *pulumi.Context, name string, args *DBInitArgs, opts ...pulumi.ResourceOption) (*DBInit, error) {
	if args == nil || args.Image == "" || args.Confz == nil {
		return nil, fmt.Errorf("db-init: the server image and the Confz are required")
	}
	if err := args.Robot.Validate(); err != nil {
		return nil, err
	}
	s := args.Schema
	if s != nil && (s.Host == "" || s.Port <= 0 || s.Database == "" || s.AdminUser == "" || s.AdminPassword == nil || s.Role == "" || s.Password == nil) {
		return nil, fmt.Errorf("db-init: the schema needs the tenant's host, port, database and login, and the robot's role and password")
	}
	c := &DBInit{}
	if err := ctx.RegisterComponentResource(DBInitType, name, c, opts...); err != nil {
		return nil, err
	}
	env := map[string]string{ConfzFileEnv: JobDir + "/" + ConfzKey}
	for k, v := range args.Env {
		env[k] = v
	}
	// The migrate container runs the robot's own image: it sees its Confz (the robot's own
	// database login) and nothing else of the Job's Secret. The owner's password and the
	// schema script stay with the schema container, whose image is TFRS's psql.
	pod := jobPod{
		Main:       jobContainer{Name: "migrate", Image: args.Image, Args: args.Args, Env: env, Files: []string{ConfzKey}},
		PullSecret: args.PullSecret,
	}
	files := map[string]pulumi.StringInput{ConfzKey: args.Confz}
	if s != nil {
		img := s.Image
		if img == "" {
			img = DefaultPSQLImage
		}
		pod.Init = []jobContainer{{
			Name: "schema", Image: img,
			Command: []string{"psql", "-v", "ON_ERROR_STOP=1", "-f", JobDir + "/schema.sql"},
			Env: map[string]string{
				"PGHOST": s.Host, "PGPORT": strconv.Itoa(s.Port), "PGDATABASE": s.Database,
				"PGUSER": s.AdminUser, "PGCONNECT_TIMEOUT": "10",
			},
			SecretEnv: map[string]string{"PGPASSWORD": "admin-password"},
			Files:     []string{"schema.sql"},
		}}
		files["admin-password"] = s.AdminPassword
		files["schema.sql"] = s.Password.ToStringOutput().ApplyT(func(pw string) string {
			return SchemaSQL(s.Role, pw, s.Database)
		}).(pulumi.StringOutput)
	}
	j, err := newJob(ctx, c, name, args.Robot, KindDBInit, pod, files)
	if err != nil {
		return nil, err
	}
	c.Keep(j.secret, j.job)
	c.JobName = j.name
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"jobName": c.JobName})
}

// SchemaSQL is the psql script that gives role its own schema of the same name in database:
// the role is created once and its password set on every run (so the Job converges), and it
// owns its schema and nothing else. Other robots' roles get no USAGE on it, so robots of one
// personal tenant cannot read each other's tables. Every name and the password are quoted
// (identifiers with "", literals with ”), so no value can end a statement.
func SchemaSQL(role, password, database string) string {
	r, lit := quoteIdent(role), quoteLiteral(role)
	return strings.Join([]string{
		"-- The robot's own role and schema (written by the TFRS operator).",
		// psql's \gexec runs the generated statement only when the role is missing.
		"SELECT format('CREATE ROLE %I LOGIN', " + lit + ") WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = " + lit + ")\\gexec",
		"ALTER ROLE " + r + " WITH LOGIN PASSWORD " + quoteLiteral(password) + ";",
		// PostgreSQL 16 gives the creator of a role ADMIN on it but not membership, which
		// CREATE SCHEMA … AUTHORIZATION needs.
		"GRANT " + r + " TO CURRENT_USER;",
		"CREATE SCHEMA IF NOT EXISTS " + r + " AUTHORIZATION " + r + ";",
		"ALTER ROLE " + r + " SET search_path = " + r + ";",
		"GRANT CONNECT ON DATABASE " + quoteIdent(database) + " TO " + r + ";",
		"",
	}, "\n")
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// quoteLiteral relies on standard_conforming_strings (on by default since PostgreSQL 9.1):
// backslashes are ordinary characters.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
