package server

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/internal/children"
)

// A personal robot's data lives in its job type's shared middleware, under names derived
// from its owner (Robot.DataName). When the job type's deletionPolicy is Delete, the runner
// removes that data before it destroys the robot's stack: it first takes the robot's
// workers and Jobs away (an up without them), then runs this Job, then destroys the stack
// (stacks/runner/purge.go). The Job runs only TFRS's images, never the robot's, as the
// robot's ServiceAccount without a token, under the robot's deny-inbound policy.
//
// Every container revokes the robot's login before it removes the data, so nothing of the
// robot (a pod still terminating) writes after the removal, and every step accepts "already
// gone", so a purge that failed half-way converges when it runs again.

//go:embed scripts/data-purge-minio.sh
var purgeMinIOScript string

//go:embed scripts/data-purge-redis.sh
var purgeRedisScript string

//go:embed scripts/data-purge-grafana.sh
var purgeGrafanaScript string

// purgeRedisBatch removes one SCAN batch of keys matching ARGV[2] from cursor ARGV[1] and
// returns the next cursor and how many keys went (data-purge-redis.sh loops over it).
const purgeRedisBatch = `local r = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', 1000)
for _, k in ipairs(r[2]) do redis.call('UNLINK', k) end
return {r[1], #r[2]}
`

// KindDataPurge is the data purge Job's LabelComponent value and the middle of its name.
const KindDataPurge = "data-purge"

// DataPurgeType is the data purge component's type token.
const DataPurgeType = "tfrs:server:DataPurge"

// DefaultRedisCLIImage runs redis-cli: the tenant's default Redis image, which a platform
// already mirrors.
const DefaultRedisCLIImage = "docker.io/" + v1alpha1.DefaultRedisImage

// purgeCacheRoot is where the purge Job mounts the shared cache's "robots" directory.
const purgeCacheRoot = "/cache"

// DataPurgeArgs configure the data purge of one personal robot. The robot's data names come
// from Robot (with its DataOwner); the logins are the tenant's.
type DataPurgeArgs struct {
	Robot Robot
	// Postgres is the tenant's PostgreSQL and owner login (the one that made the role).
	Postgres PurgeLogin
	// MinIO is the tenant's MinIO S3 endpoint and root login.
	MinIO PurgeLogin
	// Redis is the tenant's Redis and its default user's password (User is unused).
	Redis PurgeLogin
	// Grafana, when set, removes the robot's Grafana service account (Host is the URL).
	Grafana *PurgeLogin
	// Cache, when set, removes the robot's directory of the shared cache: SubPath is the
	// robot's own (PersonalCacheSubPath), under Claim.
	Cache *SharedCache
	// PSQLImage, MCImage, RedisImage and CurlImage default to TFRS's pinned images.
	PSQLImage, MCImage, RedisImage, CurlImage string
	PullSecret                                string
}

// PurgeLogin is one middleware's address and admin login.
type PurgeLogin struct {
	Host     string
	Port     int
	Database string
	User     string
	Password pulumi.StringInput
	// UserSecret, when set, is the login's user as a secret (MinIO's root user).
	UserSecret pulumi.StringInput
}

// DataPurge is the Job that removes a personal robot's data from its job type's middleware.
type DataPurge struct {
	pulumi.ResourceState
	children.Set

	JobName pulumi.StringOutput `pulumi:"jobName"`
}

// NewDataPurge creates the data purge component.
func NewDataPurge(ctx *pulumi.Context, name string, args *DataPurgeArgs, opts ...pulumi.ResourceOption) (*DataPurge, error) {
	if args == nil {
		return nil, fmt.Errorf("data-purge: no arguments")
	}
	if err := args.Robot.Validate(); err != nil {
		return nil, err
	}
	if args.Robot.DataName() == "" {
		return nil, fmt.Errorf("data-purge: robot %s has no data name", args.Robot.Name())
	}
	pg, mn, rd := args.Postgres, args.MinIO, args.Redis
	if pg.Host == "" || pg.Port <= 0 || pg.Database == "" || pg.User == "" || pg.Password == nil ||
		mn.Host == "" || mn.Port <= 0 || mn.UserSecret == nil || mn.Password == nil ||
		rd.Host == "" || rd.Port <= 0 || rd.Password == nil {
		return nil, fmt.Errorf("data-purge: the tenant's PostgreSQL, MinIO and Redis addresses and logins are required")
	}
	if g := args.Grafana; g != nil && (g.Host == "" || g.User == "" || g.Password == nil) {
		return nil, fmt.Errorf("data-purge: Grafana needs its URL and admin login")
	}
	if c := args.Cache; c != nil && (c.Claim == "" || !strings.HasPrefix(c.SubPath, "robots/") || strings.Contains(c.SubPath[len("robots/"):], "/")) {
		return nil, fmt.Errorf("data-purge: the shared cache needs its claim and the robot's own directory robots/<data name>")
	}
	c := &DataPurge{}
	if err := ctx.RegisterComponentResource(DataPurgeType, name, c, opts...); err != nil {
		return nil, err
	}
	pod, files := purgePod(args)
	j, err := newJob(ctx, c, name, args.Robot, KindDataPurge, pod, files)
	if err != nil {
		return nil, err
	}
	c.Keep(j.secret, j.job)
	c.JobName = j.name
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"jobName": c.JobName})
}

// purgePod is the Job's pod: one container per store, in the order PostgreSQL, MinIO,
// Redis, Grafana, cache (the last is the main container), and the Job Secret's files. Each
// container sees only its own files.
func purgePod(a *DataPurgeArgs) (jobPod, map[string]pulumi.StringInput) {
	r := a.Robot
	img := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	files := map[string]pulumi.StringInput{
		"purge.sql":         pulumi.String(PurgeSQL(r.Schema())),
		"postgres-password": a.Postgres.Password,
		"minio.sh":          pulumi.String(purgeMinIOScript),
		"mc-host": pulumi.All(a.MinIO.UserSecret, a.MinIO.Password).ApplyT(func(v []any) string {
			return MCHost(a.MinIO.Host+":"+strconv.Itoa(a.MinIO.Port), v[0].(string), v[1].(string))
		}).(pulumi.StringOutput),
		"redis.sh":       pulumi.String(purgeRedisScript),
		"purge.lua":      pulumi.String(purgeRedisBatch),
		"redis-password": a.Redis.Password,
	}
	steps := []jobContainer{
		{
			Name: "postgres", Image: img(a.PSQLImage, DefaultPSQLImage),
			Command: []string{"psql", "-v", "ON_ERROR_STOP=1", "-f", JobDir + "/purge.sql"},
			Env: map[string]string{
				"PGHOST": a.Postgres.Host, "PGPORT": strconv.Itoa(a.Postgres.Port), "PGDATABASE": a.Postgres.Database,
				"PGUSER": a.Postgres.User, "PGCONNECT_TIMEOUT": "10",
			},
			SecretEnv: map[string]string{"PGPASSWORD": "postgres-password"},
			Files:     []string{"purge.sql"},
		},
		{
			Name: "minio", Image: img(a.MCImage, DefaultMCImage), Command: []string{"/bin/sh", JobDir + "/minio.sh"},
			Env: map[string]string{
				"ROBOT_USER": r.MinIOUser(), "POLICY": r.MinIOUser() + "-bucket", "BUCKET": r.Bucket(), "MC_CONFIG_DIR": "/tmp/mc",
			},
			SecretEnv: map[string]string{"MC_HOST_tenant": "mc-host"},
			Files:     []string{"minio.sh"},
		},
		{
			Name: "redis", Image: img(a.RedisImage, DefaultRedisCLIImage), Command: []string{"/bin/sh", JobDir + "/redis.sh"},
			Env: map[string]string{
				"REDIS_HOST": a.Redis.Host, "REDIS_PORT": strconv.Itoa(a.Redis.Port),
				"ROBOT_USER": r.RedisUser(), "PATTERN": RedisGlobEscape(r.RedisKeyPrefix()) + "*",
			},
			SecretEnv: map[string]string{"REDISCLI_AUTH": "redis-password"},
			Files:     []string{"redis.sh", "purge.lua"},
		},
	}
	if g := a.Grafana; g != nil {
		files["grafana.sh"], files["grafana-password"] = pulumi.String(purgeGrafanaScript), g.Password
		steps = append(steps, jobContainer{
			Name: "grafana", Image: img(a.CurlImage, DefaultCurlImage), Command: []string{"/bin/sh", JobDir + "/grafana.sh"},
			Env:       map[string]string{"GRAFANA_URL": g.Host, "GRAFANA_USER": g.User, "SA_NAME": r.DataName()},
			SecretEnv: map[string]string{"GRAFANA_PASSWORD": "grafana-password"},
			Files:     []string{"grafana.sh"},
		})
	}
	pod := jobPod{PullSecret: a.PullSecret}
	if sc := a.Cache; sc != nil {
		// The cache's "robots" directory is mounted, and only the robot's own directory in
		// it removed: the command is TFRS's, and the name is the robot's data name.
		dir := strings.TrimPrefix(sc.SubPath, "robots/")
		pod.Cache = &jobCache{Claim: sc.Claim, SubPath: "robots", MountPath: purgeCacheRoot}
		steps = append(steps, jobContainer{
			Name: "cache", Image: img(a.PSQLImage, DefaultPSQLImage), Cache: true,
			Command:  []string{"/bin/sh", "-c", `rm -rf -- "$CACHE_ROOT/$ROBOT_DIR" && echo "data-purge: cache directory $ROBOT_DIR removed"`},
			Env:      map[string]string{"CACHE_ROOT": purgeCacheRoot, "ROBOT_DIR": dir},
			NoSecret: true,
		})
	}
	pod.Init, pod.Main = steps[:len(steps)-1], steps[len(steps)-1]
	return pod, files
}

// PurgeSQL is the psql script that removes role, the role and schema SchemaSQL made, with
// everything in the schema. The role loses its login and its sessions first, so it writes
// nothing more; then everything it owns in the database goes (its schema, with every table
// in it) and its grants; then the role. Every statement is guarded or IF EXISTS, so the
// script converges when it runs again. Names are quoted as SchemaSQL quotes them.
func PurgeSQL(role string) string {
	r, lit := quoteIdent(role), quoteLiteral(role)
	exists := " WHERE EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = " + lit + ")\\gexec"
	return strings.Join([]string{
		"-- Removes a deleted robot's role and schema (written by the TFRS operator).",
		"SELECT format('ALTER ROLE %I NOLOGIN', " + lit + ")" + exists,
		// Membership lets the owner end the role's sessions and drop what the role owns.
		"SELECT format('GRANT %I TO CURRENT_USER', " + lit + ")" + exists,
		"SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE usename = " + lit + ";",
		"SELECT format('DROP OWNED BY %I CASCADE', " + lit + ")" + exists,
		"DROP ROLE IF EXISTS " + r + ";",
		"",
	}, "\n")
}

// RedisGlobEscape escapes the characters a Redis MATCH pattern gives a meaning (* ? [ ] \),
// so a prefix matches only itself.
func RedisGlobEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// jobCache is a Job pod's view of the shared cache (only the data purge has one).
type jobCache struct {
	Claim     string `json:"claim"`
	SubPath   string `json:"subPath"`
	MountPath string `json:"mountPath"`
}

func (c *jobCache) volume() corev1.VolumeArgs {
	return corev1.VolumeArgs{
		Name:                  pulumi.String("shared-cache"),
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSourceArgs{ClaimName: pulumi.String(c.Claim)},
	}
}

func (c *jobCache) mount() corev1.VolumeMountArgs {
	return corev1.VolumeMountArgs{Name: pulumi.String("shared-cache"), MountPath: pulumi.String(c.MountPath), SubPath: pulumi.String(c.SubPath)}
}
