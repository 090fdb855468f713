package tenant

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// A personal job type's Redis loads its robots' users: an init container builds the ACL file
// from the redis-acl Secret before redis-server starts, a sync container rebuilds and loads
// it, redis-server reads it (--aclfile) instead of --requirepass. An enterprise Redis is left
// as it was.
func TestRedisRobotUsers(t *testing.T) {
	m := &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewRedis(ctx, "redis", &RedisArgs{Namespace: ns, Image: "redis/redis-stack-server:7", Size: "1Gi", Login: generated(""), RobotUsers: true})
		return err
	})
	m.AssertChildren(t, RedisType, "kubernetes:core/v1:Secret::redis-credentials", "kubernetes:core/v1:PersistentVolumeClaim::redis-data",
		"kubernetes:core/v1:Secret::redis-acl", "kubernetes:core/v1:ConfigMap::redis-acl-script",
		"kubernetes:apps/v1:Deployment::redis-deployment", "kubernetes:core/v1:Service::redis-service")
	acl := m.Find(t, "kubernetes:core/v1:Secret", "redis-acl")
	pt.Eq(t, "acl secret name", pt.At(t, pt.Plain(acl.Inputs), "metadata", "name"), kit.RedisACLSecret)
	if _, ok := acl.Inputs["stringData"]; ok {
		t.Error("the tenant writes robot users itself")
	}
	ps := pt.At(t, pt.Plain(m.Find(t, "kubernetes:apps/v1:Deployment", "").Inputs), "spec", "template", "spec").(map[string]any)
	env := func(c any) map[string]string {
		out := map[string]string{}
		for _, e := range c.(map[string]any)["env"].([]any) {
			e := e.(map[string]any)
			v, _ := e["value"].(string)
			out[e["name"].(string)] = v
		}
		return out
	}
	server := pt.At(t, ps, "containers", 0)
	pt.Eq(t, "redis args", env(server)["REDIS_ARGS"], "--aclfile /acl/users.acl --appendonly yes")
	for _, mode := range []string{"init", "sync"} {
		list := "initContainers"
		idx := 0
		if mode == "sync" {
			list, idx = "containers", 1
		}
		c := pt.At(t, ps, list, idx).(map[string]any)
		pt.Eq(t, mode+" name", c["name"], "acl-"+mode)
		pt.Eq(t, mode+" command", c["command"], []any{"/bin/sh", "/tfrs/redis-acl.sh", mode})
		pt.Eq(t, mode+" image", c["image"], "redis/redis-stack-server:7")
		pt.Eq(t, mode+" line pattern", env(c)["ACL_LINE"], kit.RedisACLLinePattern)
	}

	m = &pt.Mocks{}
	m.Run(t, func(ctx *pulumi.Context) error {
		_, err := NewRedis(ctx, "redis", &RedisArgs{Namespace: ns, Image: "redis", Size: "1Gi", Login: generated("")})
		return err
	})
	ps = pt.At(t, pt.Plain(m.Find(t, "kubernetes:apps/v1:Deployment", "").Inputs), "spec", "template", "spec").(map[string]any)
	pt.Eq(t, "enterprise redis args", env(pt.At(t, ps, "containers", 0))["REDIS_ARGS"], "--requirepass $(REDIS_PASSWORD) --appendonly yes")
	if ps["initContainers"] != nil || len(ps["containers"].([]any)) != 1 {
		t.Error("an enterprise Redis got the robot-user containers")
	}
}

// The script the Redis pod runs renders the ACL file: the default user with the tenant
// password's hash, each robot line TFRS writes, and nothing else (a key of the Secret holding
// anything but a robot line is skipped); no password in the clear.
func TestRedisACLRendering(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.Mkdir(users, 0o755); err != nil {
		t.Fatal(err)
	}
	alice := kit.RedisACLLine("chat-r-1", "chat-r-1:", "alice-pw")
	bob := kit.RedisACLLine("chat-bot-1", "chat-bot-1:", "bob-pw")
	for name, content := range map[string]string{
		"chat-r-1.acl":   alice + "\n",
		"chat-bot-1.acl": bob + "\n",
		"evil.acl":       "user evil on nopass ~* &* +@all\n",
		"default.acl":    "user default on nopass ~* &* +@all\n",
		"widen.acl":      strings.Replace(alice, "~chat-r-1:*", "~*", 1) + "\n",
		"extra.acl":      alice + " +@admin\n",
		"not-acl.txt":    alice + "\n",
	} {
		if err := os.WriteFile(filepath.Join(users, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "redis-acl.sh")
	if err := os.WriteFile(script, []byte(redisACLScript), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "users.acl")
	cmd := exec.Command("/bin/sh", script, "init")
	cmd.Env = append(os.Environ(), "ACL_FILE="+out, "USERS_DIR="+users, "ACL_LINE="+kit.RedisACLLinePattern, "REDIS_PASSWORD=tenant-pw")
	stderr, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-acl.sh init: %v\n%s", err, stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("tenant-pw"))
	want := "user default on #" + hex.EncodeToString(sum[:]) + " ~* &* +@all\n" + bob + "\n" + alice + "\n"
	pt.Eq(t, "acl file", string(got), want)
	for _, pw := range []string{"tenant-pw", "alice-pw", "bob-pw"} {
		if strings.Contains(string(got)+string(stderr), pw) {
			t.Errorf("password %q in the clear", pw)
		}
	}
	for _, skipped := range []string{"evil.acl", "default.acl", "widen.acl", "extra.acl"} {
		if !strings.Contains(string(stderr), "skipped "+skipped) {
			t.Errorf("%s not reported as skipped: %s", skipped, stderr)
		}
	}
	// Go's view of the line agrees with the script's.
	if !kit.ReRedisACLLine.MatchString(alice) || kit.ReRedisACLLine.MatchString("user evil on nopass ~* &* +@all") {
		t.Error("kit.ReRedisACLLine disagrees with the lines")
	}
}
