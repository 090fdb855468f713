package kit

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
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

// RedisRobotCommands are the command rules of a robot user: an allowlist. It starts from no
// command at all (-@all) and grants the data-type categories, whose every command names its
// keys (so the ~prefix* pattern confines it), the transaction commands, and by name the
// keyed keyspace commands, the commands that only concern the robot's own connection and the
// Pub/Sub commands that name their channels (confined by &prefix*). Then the admin, dangerous
// and scripting categories are taken away again, whatever a category above holds.
//
// Not granted, because they reach past the prefix (see redisacl_test.go, which derives them
// from the pinned Redis command table): keyless keyspace commands (SCAN, KEYS, RANDOMKEY,
// DBSIZE, FLUSHDB, SWAPDB …), channel listing (PUBSUB …), scripts and functions (EVAL,
// SCRIPT, FUNCTION, FCALL: a function library is global and a script cache is shared),
// CLIENT TRACKING (its BCAST prefixes are not checked against the key patterns, so
// invalidations would name other robots' keys), server introspection (INFO, CLIENT LIST,
// MEMORY STATS …) and module commands (search indexes span prefixes).
const RedisRobotCommands = "-@all" +
	" +@string +@hash +@list +@set +@sortedset +@stream +@bitmap +@hyperloglog +@geo +@transaction" +
	" +del +unlink +exists +type +touch +rename +renamenx +copy" +
	" +expire +pexpire +expireat +pexpireat +expiretime +pexpiretime +ttl +pttl +persist" +
	" +object|encoding +object|freq +object|idletime +object|refcount" +
	" +ping +echo +hello +auth +quit +reset +select" +
	" +client|setname +client|getname +client|setinfo +client|id +client|info" +
	" +publish +subscribe +unsubscribe +psubscribe +punsubscribe +spublish +ssubscribe +sunsubscribe" +
	" -@admin -@dangerous -@scripting"

// RedisACLLine is the ACL file line of a robot user: on, the password's SHA-256, the keys and
// Pub/Sub channels under prefix only, and RedisRobotCommands.
func RedisACLLine(user, prefix, password string) string {
	sum := sha256.Sum256([]byte(password))
	return "user " + user + " on #" + hex.EncodeToString(sum[:]) + " ~" + prefix + "* &" + prefix + "* " + RedisRobotCommands
}

// RedisACLLinePattern matches exactly the lines RedisACLLine writes for a robot (user
// "<robotType>-<robotId>", prefix "<user>:"); the Redis pod loads no other line, so a key of
// the Secret cannot grant more than one robot's own prefix and RedisRobotCommands (as an ERE
// for grep -E, which reads it like Go's regexp).
var RedisACLLinePattern = `^user [a-z0-9]+-[a-z0-9-]+ on #[0-9a-f]{64} ~[a-z0-9]+-[a-z0-9-]+:[*] &[a-z0-9]+-[a-z0-9-]+:[*] ` + ereLiteral(RedisRobotCommands) + `$`

// ReRedisACLLine is RedisACLLinePattern compiled.
var ReRedisACLLine = regexp.MustCompile(RedisACLLinePattern)

// ereLiteral quotes s for a POSIX ERE and Go's regexp alike: each metacharacter goes in a
// bracket expression ("[|]", "[+]"), which both read as that character (a backslash before
// "|" is not portable across grep implementations). "^" and "]" never occur in the rules.
func ereLiteral(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`.+*?()|{}$`, r) {
			b.WriteString("[" + string(r) + "]")
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
