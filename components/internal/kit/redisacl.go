package kit

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// Redis ACL users of personal robots (Redis >= 6). The robots of a personal job type share one
// Redis; each gets its own ACL user, restricted to its key prefix, instead of the default
// user's password. The server stack of a robot writes the robot's user as one key,
// RedisACLKey, of the tenant's Secret RedisACLSecret (a SecretPatch: a server-side-apply field
// only that stack owns, removed when the stack is destroyed); the tenant's Redis pod builds
// its ACL file from the keys of that Secret (mounted) and the default user, and loads it
// again whenever the Secret changes. The line holds a SHA-256 of the password, never the
// password itself.

// RedisACLSecret is the tenant Secret that holds the robots' ACL lines.
const RedisACLSecret = "redis-acl"

// RedisACLKey is the robot user's key in RedisACLSecret.
func RedisACLKey(user string) string { return user + ".acl" }

// RedisACLLine is the ACL file line of a robot user: on, the password's SHA-256, the keys and
// Pub/Sub channels under prefix only, every command but the admin and dangerous ones (no
// CONFIG, ACL, DEBUG, FLUSHALL, KEYS, MONITOR, SHUTDOWN …).
func RedisACLLine(user, prefix, password string) string {
	sum := sha256.Sum256([]byte(password))
	return "user " + user + " on #" + hex.EncodeToString(sum[:]) + " ~" + prefix + "* &" + prefix + "* +@all -@admin -@dangerous"
}

// RedisACLLinePattern matches exactly the lines RedisACLLine writes for a robot (user
// "<robotType>-<robotId>", prefix "<user>:"); the Redis pod loads no other line, so a key of
// the Secret cannot grant more than one robot's own prefix (as an ERE for grep -E).
const RedisACLLinePattern = `^user [a-z0-9]+-[a-z0-9-]+ on #[0-9a-f]{64} ~[a-z0-9]+-[a-z0-9-]+:\* &[a-z0-9]+-[a-z0-9-]+:\* \+@all -@admin -@dangerous$`

// ReRedisACLLine is RedisACLLinePattern compiled.
var ReRedisACLLine = regexp.MustCompile(RedisACLLinePattern)
