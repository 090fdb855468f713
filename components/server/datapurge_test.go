package server

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// personalRobot is a personal robot: its data names carry its owner's hash.
var personalRobot = Robot{Namespace: "personal-chat", ID: "r-1", Type: "chat", DataOwner: "tenant.alice.alice",
	HashKey: pulumi.String(testHashKey)}

func dataPurge(grafana, cache bool) func(ctx *pulumi.Context) (pulumi.StringOutput, error) {
	return func(ctx *pulumi.Context) (pulumi.StringOutput, error) {
		args := &DataPurgeArgs{
			Robot:      personalRobot,
			Postgres:   PurgeLogin{Host: "pg-rw", Port: 5432, Database: "personal", User: "app_user", Password: secretIn("pg-admin")},
			MinIO:      PurgeLogin{Host: "minio", Port: 80, UserSecret: secretIn("root"), Password: secretIn("minio-root")},
			Redis:      PurgeLogin{Host: "redis", Port: 6379, Password: secretIn("redis-default")},
			PullSecret: "pull",
		}
		if grafana {
			args.Grafana = &PurgeLogin{Host: "http://grafana", User: "admin", Password: secretIn("grafana-admin")}
		}
		if cache {
			args.Cache = &SharedCache{Claim: "shared-cache", Dir: "/data/shared-cache", SubPath: "robots/" + personalRobot.DataName()}
		}
		c, err := NewDataPurge(ctx, "data-purge", args)
		if err != nil {
			return pulumi.StringOutput{}, err
		}
		return c.JobName, nil
	}
}

// The purge Job runs only TFRS's images, one container per store, each seeing only its own
// login and script; the cache container sees no login at all and only the shared cache's
// robots directory; the pod runs as the robot's ServiceAccount without a token, under the
// robot's deny-inbound policy.
func TestDataPurgeJob(t *testing.T) {
	m, name := runJob(t, dataPurge(true, true))
	if !strings.HasPrefix(name, "chat-r-1-data-purge-") {
		t.Errorf("job name %q", name)
	}
	job := pt.Plain(m.Find(t, "kubernetes:batch/v1:Job", "").Inputs)
	ps := pt.At(t, job, "spec", "template", "spec").(map[string]any)
	pt.Eq(t, "service account", ps["serviceAccountName"], personalRobot.ServiceAccount())
	pt.Eq(t, "no token", ps["automountServiceAccountToken"], false)
	pt.Eq(t, "pod labels say it serves nothing", pt.At(t, job, "spec", "template", "metadata", "labels", LabelInbound), InboundNone)

	files := pt.At(t, pt.Plain(m.Find(t, "kubernetes:core/v1:Secret", "").Inputs), "stringData").(map[string]any)
	pt.Eq(t, "mc host", files["mc-host"], "http://root:minio-root@minio:80")
	pt.Eq(t, "sql", files["purge.sql"], PurgeSQL(personalRobot.Schema()))
	volumes := map[string][]string{}
	for _, v := range ps["volumes"].([]any) {
		v := v.(map[string]any)
		if sec, ok := v["secret"].(map[string]any); ok {
			var keys []string
			for _, it := range asList(sec["items"]) {
				keys = append(keys, it.(map[string]any)["key"].(string))
			}
			if keys == nil {
				t.Errorf("volume %v mounts the whole Job Secret", v["name"])
			}
			volumes[v["name"].(string)] = keys
			continue
		}
		pt.Eq(t, "the only other volume is the cache", v["persistentVolumeClaim"], map[string]any{"claimName": "shared-cache"})
	}
	type view struct {
		image         string
		sees, mounted []string
	}
	got := map[string]view{}
	var order []string
	for _, c := range append(asList(ps["initContainers"]), ps["containers"].([]any)...) {
		c := c.(map[string]any)
		v := view{image: c["image"].(string)}
		for _, e := range asList(c["env"]) {
			if ref, ok := e.(map[string]any)["valueFrom"]; ok {
				v.sees = append(v.sees, pt.At(t, ref.(map[string]any), "secretKeyRef", "key").(string))
			}
		}
		for _, vm := range asList(c["volumeMounts"]) {
			vm := vm.(map[string]any)
			v.sees = append(v.sees, volumes[vm["name"].(string)]...)
			v.mounted = append(v.mounted, vm["mountPath"].(string)+":"+asString(vm["subPath"]))
		}
		slices.Sort(v.sees)
		order = append(order, c["name"].(string))
		got[c["name"].(string)] = v
	}
	pt.Eq(t, "order", order, []string{"postgres", "minio", "redis", "grafana", "cache"})
	want := map[string]view{
		"postgres": {DefaultPSQLImage, []string{"postgres-password", "purge.sql"}, []string{JobDir + ":"}},
		"minio":    {DefaultMCImage, []string{"mc-host", "minio.sh"}, []string{JobDir + ":"}},
		"redis":    {DefaultRedisCLIImage, []string{"purge.lua", "redis-password", "redis.sh"}, []string{JobDir + ":"}},
		"grafana":  {DefaultCurlImage, []string{"grafana-password", "grafana.sh"}, []string{JobDir + ":"}},
		"cache":    {DefaultPSQLImage, nil, []string{purgeCacheRoot + ":robots"}},
	}
	pt.Eq(t, "containers", got, want)
	cache := pt.At(t, ps, "containers", 0).(map[string]any)
	pt.Eq(t, "the cache container removes the robot's own directory", envOf(cache)["ROBOT_DIR"], personalRobot.DataName())
	redis := pt.At(t, ps, "initContainers", 2).(map[string]any)
	pt.Eq(t, "redis pattern", envOf(redis)["PATTERN"], personalRobot.RedisKeyPrefix()+"*")
	pt.Eq(t, "redis user", envOf(redis)["ROBOT_USER"], personalRobot.RedisUser())
	minio := pt.At(t, ps, "initContainers", 1).(map[string]any)
	pt.Eq(t, "minio names", []string{envOf(minio)["ROBOT_USER"], envOf(minio)["BUCKET"]}, []string{personalRobot.MinIOUser(), personalRobot.Bucket()})

	// Without Grafana and a shared cache the Redis container is the main one.
	m, _ = runJob(t, dataPurge(false, false))
	ps = pt.At(t, pt.Plain(m.Find(t, "kubernetes:batch/v1:Job", "").Inputs), "spec", "template", "spec").(map[string]any)
	pt.Eq(t, "main", pt.At(t, ps, "containers", 0, "name"), "redis")
	pt.Eq(t, "init", len(asList(ps["initContainers"])), 2)
}

func TestDataPurgeRefusesIncompleteArgs(t *testing.T) {
	for name, edit := range map[string]func(a *DataPurgeArgs){
		"no postgres":       func(a *DataPurgeArgs) { a.Postgres = PurgeLogin{} },
		"no minio login":    func(a *DataPurgeArgs) { a.MinIO.UserSecret = nil },
		"no redis password": func(a *DataPurgeArgs) { a.Redis.Password = nil },
		"no data owner":     func(a *DataPurgeArgs) { a.Robot.DataOwner, a.Robot.HashKey = "", nil },
		"cache outside the robots directory": func(a *DataPurgeArgs) {
			a.Cache = &SharedCache{Claim: "c", SubPath: "robots/../x/y"}
		},
		"cache at the root": func(a *DataPurgeArgs) { a.Cache = &SharedCache{Claim: "c", SubPath: "other"} },
	} {
		t.Run(name, func(t *testing.T) {
			m := &pt.Mocks{}
			err := m.RunErr(func(ctx *pulumi.Context) error {
				a := &DataPurgeArgs{Robot: personalRobot,
					Postgres: PurgeLogin{Host: "h", Port: 1, Database: "d", User: "u", Password: secretIn("p")},
					MinIO:    PurgeLogin{Host: "h", Port: 1, UserSecret: secretIn("u"), Password: secretIn("p")},
					Redis:    PurgeLogin{Host: "h", Port: 1, Password: secretIn("p")}}
				edit(a)
				_, err := NewDataPurge(ctx, "data-purge", a)
				return err
			})
			if err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestPurgeSQL(t *testing.T) {
	sql := PurgeSQL("r_chat_r_1_abc")
	lines := strings.Split(strings.TrimSuffix(sql, "\n"), "\n")
	exists := ` WHERE EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'r_chat_r_1_abc')\gexec`
	pt.Eq(t, "statements, login revoked first and the role last", lines[1:], []string{
		`SELECT format('ALTER ROLE %I NOLOGIN', 'r_chat_r_1_abc')` + exists,
		`SELECT format('GRANT %I TO CURRENT_USER', 'r_chat_r_1_abc')` + exists,
		`SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE usename = 'r_chat_r_1_abc';`,
		`SELECT format('DROP OWNED BY %I CASCADE', 'r_chat_r_1_abc')` + exists,
		`DROP ROLE IF EXISTS "r_chat_r_1_abc";`,
	})
	// Generated hostile names: each stays inside its quotes, so the script has exactly the
	// statements above, whatever the name.
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune(`ab'";\-_ ` + "\n" + `$%`)
	for range 2000 {
		n := make([]rune, 1+rng.IntN(12))
		for i := range n {
			n[i] = alphabet[rng.IntN(len(alphabet))]
		}
		name := string(n)
		got := PurgeSQL(name)
		lit := "'" + strings.ReplaceAll(name, "'", "''") + "'"
		ident := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		if strings.Count(got, lit) != 7 || !strings.Contains(got, "DROP ROLE IF EXISTS "+ident+";\n") {
			t.Fatalf("name %q is not quoted in\n%s", name, got)
		}
		// Outside the quoted names, only the fixed text remains.
		fixed := strings.ReplaceAll(strings.ReplaceAll(got, lit, "'N'"), ident, `"N"`)
		if fixed != PurgeSQL("N") {
			t.Fatalf("name %q changes the script:\n%s", name, got)
		}
	}
}

// redisMatch is Redis's glob (stringmatchlen) for the subset that matters: * ? [...] and \
// escapes, in the server's own semantics.
func redisMatch(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if redisMatch(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			end := strings.IndexByte(p[1:], ']')
			if end < 0 || !strings.ContainsRune(p[1:1+end], rune(s[0])) {
				return false
			}
			p, s = p[1+end:], s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
	}
	return len(s) == 0
}

// The purge's key pattern matches exactly the keys under the robot's prefix, whatever
// characters the prefix has: generated prefixes and keys, over Redis's glob characters.
func TestRedisGlobEscapeMatchesOnlyThePrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte(`ab:*?[]\-`)
	str := func(max int) string {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20000 {
		prefix := str(6) + ":"
		key := str(8)
		if rng.IntN(2) == 0 {
			key = prefix + key
		}
		pattern := RedisGlobEscape(prefix) + "*"
		if got, want := redisMatch(pattern, key), strings.HasPrefix(key, prefix); got != want {
			t.Fatalf("pattern %q on key %q: match %v, want %v", pattern, key, got, want)
		}
	}
	pt.Eq(t, "a data name needs no escape", RedisGlobEscape(personalRobot.RedisKeyPrefix()), personalRobot.RedisKeyPrefix())
}

// The purge scripts converge: run with fake mc, redis-cli and curl on PATH, a store that has
// already lost the robot's data ("does not exist") is a success, an unknown failure fails
// the Job, and Redis's batches are summed until the cursor is back at 0.
func TestPurgeScriptsConverge(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("sh is needed to run the purge scripts: %v", err)
	}
	run := func(t *testing.T, script, fake, name string, env ...string) (string, error) {
		t.Helper()
		dir := t.TempDir()
		bin := filepath.Join(dir, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+fake), 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "script.sh")
		if err := os.WriteFile(p, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sh, p)
		cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin", "LOG=" + filepath.Join(dir, "log")}, env...)
		out, err := cmd.CombinedOutput()
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return string(out) + string(log), err
	}
	minioEnv := []string{"ROBOT_USER=u", "POLICY=u-bucket", "BUCKET=b"}
	t.Run("minio removes user, policy and bucket in that order", func(t *testing.T) {
		out, err := run(t, purgeMinIOScript, `echo "$*" >> "$LOG"`, "mc", minioEnv...)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if !strings.Contains(out, "admin user remove tenant u\nadmin policy remove tenant u-bucket\nrb --force tenant/b\n") {
			t.Errorf("steps: %s", out)
		}
	})
	t.Run("minio: already gone is a success", func(t *testing.T) {
		out, err := run(t, purgeMinIOScript, `echo "mc: <ERROR> The specified user does not exist. NoSuchBucket" >&2; exit 1`, "mc", minioEnv...)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	})
	t.Run("minio: another failure fails", func(t *testing.T) {
		if out, err := run(t, purgeMinIOScript, `echo "connection refused" >&2; exit 1`, "mc", minioEnv...); err == nil {
			t.Fatalf("succeeded: %s", out)
		}
	})
	redisEnv := []string{"REDIS_HOST=redis", "REDIS_PORT=6379", "ROBOT_USER=u", "PATTERN=u:*"}
	// The fake answers the first EVAL with cursor 17 and 5 keys, the next with 0 and 2.
	fakeRedis := `echo "$*" >> "$LOG"
case "$*" in
*"EVAL"*" 0 0 "*) printf '17\n5\n' ;;
*"EVAL"*" 0 17 "*) printf '0\n2\n' ;;
*"ACL DELUSER"*) echo 1 ;;
esac`
	t.Run("redis deletes the user, then every batch", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		script := strings.ReplaceAll(purgeRedisScript, "/tfrs-job/purge.lua", filepath.Join(dir, "purge.lua"))
		if err := os.WriteFile(filepath.Join(dir, "purge.lua"), []byte(purgeRedisBatch), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := run(t, script, fakeRedis, "redis-cli", redisEnv...)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if !strings.Contains(out, "and 7 keys under its prefix removed") {
			t.Errorf("total: %s", out)
		}
		if i, j := strings.Index(out, "ACL DELUSER u"), strings.Index(out, "EVAL"); i < 0 || j < 0 || i > j {
			t.Errorf("the user must go before the keys: %s", out)
		}
		if !strings.Contains(out, " 0 17 u:*") {
			t.Errorf("the second batch starts at the returned cursor: %s", out)
		}
		bad := strings.ReplaceAll(fakeRedis, `printf '17\n5\n'`, `echo "ERR unknown command"`)
		if out, err := run(t, script, bad, "redis-cli", redisEnv...); err == nil {
			t.Errorf("an error answer passed: %s", out)
		}
	})
	t.Run("grafana deletes every account of the exact name", func(t *testing.T) {
		fake := `echo "$*" >> "$LOG"
case "$*" in
*search*) echo '{"totalCount":2,"serviceAccounts":[{"id":7,"name":"u","login":"sa-u"},{"id":8,"name":"u-2","login":"sa-u-2"}]}' ;;
esac`
		out, err := run(t, purgeGrafanaScript, fake, "curl", "GRAFANA_URL=http://g", "GRAFANA_USER=admin", "GRAFANA_PASSWORD=p", "SA_NAME=u")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if !strings.Contains(out, "-X DELETE http://g/api/serviceaccounts/7") || strings.Contains(out, "serviceaccounts/8") {
			t.Errorf("deletes: %s", out)
		}
	})
}

func envOf(c map[string]any) map[string]string {
	out := map[string]string{}
	for _, e := range asList(c["env"]) {
		e := e.(map[string]any)
		if v, ok := e["value"].(string); ok {
			out[e["name"].(string)] = v
		}
	}
	return out
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}
