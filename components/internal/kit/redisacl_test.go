package kit

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// redisCommand is one command of the pinned Redis command table
// (testdata/redis-7.4.0-commands.json: redis/redis at tag 7.4.0, src/commands/*.json, the
// Redis of DefaultRedisImage redis/redis-stack-server:7.4.0-v3), a subcommand named
// "container|sub".
type redisCommand struct {
	Name       string   `json:"name"`
	Group      string   `json:"group"`
	Flags      []string `json:"flags"`
	Categories []string `json:"categories"`
	KeySpecs   int      `json:"keySpecs"`
	Container  bool     `json:"container"`
}

func loadRedisCommands(t *testing.T) map[string]redisCommand {
	t.Helper()
	b, err := os.ReadFile("testdata/redis-7.4.0-commands.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Commands []redisCommand `json:"commands"`
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	out := map[string]redisCommand{}
	for _, c := range table.Commands {
		out[c.Name] = c
	}
	return out
}

// categories are the command's ACL categories as Redis computes them: its own, plus the ones
// its flags imply (setImplicitACLCategories in src/server.c at 7.4.0).
func (c redisCommand) categories() map[string]bool {
	out := map[string]bool{}
	for _, k := range c.Categories {
		out[strings.ToLower(k)] = true
	}
	has := func(f string) bool { return slices.Contains(c.Flags, f) }
	if has("WRITE") {
		out["write"] = true
	}
	if has("READONLY") && !out["scripting"] {
		out["read"] = true
	}
	if has("ADMIN") {
		out["admin"], out["dangerous"] = true, true
	}
	if has("PUBSUB") {
		out["pubsub"] = true
	}
	if has("FAST") {
		out["fast"] = true
	}
	if has("BLOCKING") {
		out["blocking"] = true
	}
	if !out["fast"] {
		out["slow"] = true
	}
	return out
}

// granted applies ACL command rules as Redis does, left to right, to the executable commands
// (commands without subcommands, and subcommands): +@cat/-@cat every command of the
// category, +cmd/-cmd a command (a container: all its subcommands) or one cmd|sub.
func granted(t *testing.T, table map[string]redisCommand, rules string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	leaves := func(name string) []string {
		var l []string
		for n, c := range table {
			if !c.Container && (n == name || strings.HasPrefix(n, name+"|")) {
				l = append(l, n)
			}
		}
		return l
	}
	for _, rule := range strings.Fields(rules) {
		on := rule[0] == '+'
		if !on && rule[0] != '-' {
			t.Fatalf("rule %q is neither + nor -", rule)
		}
		var names []string
		if cat, ok := strings.CutPrefix(rule[1:], "@"); ok {
			for n, c := range table {
				if !c.Container && (cat == "all" || c.categories()[cat]) {
					names = append(names, n)
				}
			}
			if cat != "all" && len(names) == 0 {
				t.Fatalf("rule %q: no command of the pinned table has category %s", rule, cat)
			}
		} else {
			if _, ok := table[rule[1:]]; !ok {
				t.Fatalf("rule %q: no such command in the pinned table", rule)
			}
			names = leaves(rule[1:])
		}
		for _, n := range names {
			if on {
				out[n] = true
			} else {
				delete(out, n)
			}
		}
	}
	return out
}

// channelCommands are the commands whose channels Redis checks against the user's &patterns
// (the keyless Pub/Sub commands of the table in src/db.c, getChannelsFromCommand, at 7.4.0).
var channelCommands = []string{"subscribe", "ssubscribe", "unsubscribe", "sunsubscribe", "psubscribe", "punsubscribe", "publish", "spublish"}

// A robot user reaches only its own keys and channels: every command the line grants names
// its keys (so ~prefix* confines it), or its channels (&prefix*), or concerns only the
// robot's own connection or transaction. What reaches past the prefix is derived from the
// pinned command table, not listed: keyless commands of the keyspace, server, scripting and
// Pub/Sub groups, commands flagged to touch arbitrary keys, and every admin or dangerous one.
func TestRedisRobotCommandsStayInTheirPrefix(t *testing.T) {
	table := loadRedisCommands(t)
	got := granted(t, table, RedisRobotCommands)
	reaching := 0
	for name, c := range table {
		if c.Container || strings.HasSuffix(name, "|help") { // help replies with fixed text
			continue
		}
		cats := c.categories()
		why := ""
		switch {
		case cats["admin"] || cats["dangerous"]:
			why = "admin or dangerous"
		case slices.Contains(c.Flags, "TOUCHES_ARBITRARY_KEYS"):
			why = "touches arbitrary keys"
		case c.Group == "scripting" || cats["scripting"]:
			why = "scripts and functions are shared by every user"
		case c.Group == "server" || c.Group == "cluster" || c.Group == "sentinel":
			why = "server-wide"
		case name == "client|tracking" || name == "client|caching" || name == "client|getredir":
			why = "BCAST tracking prefixes are not checked against key patterns"
		case c.KeySpecs == 0 && !slices.Contains(channelCommands, name) && c.Group != "connection" && c.Group != "transactions":
			why = "takes no key or channel, so no pattern confines it"
		}
		if why == "" {
			continue
		}
		reaching++
		if got[name] {
			t.Errorf("%s is granted, but reaches past the robot's prefix: %s", name, why)
		}
	}
	// The examples the red team used, by name, for the reader: all among the derived ones.
	for _, name := range []string{"scan", "keys", "randomkey", "dbsize", "flushdb", "flushall", "swapdb",
		"pubsub|channels", "pubsub|numsub", "pubsub|numpat", "pubsub|shardchannels", "pubsub|shardnumsub",
		"function|load", "function|list", "function|flush", "fcall", "fcall_ro", "eval", "evalsha", "eval_ro", "evalsha_ro",
		"script|load", "script|flush", "script|kill", "migrate", "restore", "sort", "info", "config|get", "monitor",
		"client|list", "client|kill", "client|tracking", "client|pause", "memory|stats", "latency|latest", "acl|list", "acl|whoami", "wait"} {
		if _, ok := table[name]; !ok {
			t.Errorf("%s is not in the pinned table", name)
		}
		if got[name] {
			t.Errorf("%s is granted", name)
		}
	}
	// What a robot needs is still there.
	for _, name := range []string{"get", "set", "mget", "incr", "hset", "hgetall", "lpush", "brpop", "sadd", "zadd", "xadd", "xreadgroup",
		"setbit", "pfadd", "geoadd", "del", "unlink", "exists", "expire", "ttl", "type", "rename", "object|encoding",
		"multi", "exec", "watch", "discard", "publish", "subscribe", "psubscribe", "ping", "hello", "auth", "select",
		"client|setname", "client|setinfo"} {
		if !got[name] {
			t.Errorf("%s is not granted: robots need it", name)
		}
	}
	t.Logf("pinned table: %d commands; granted %d; %d reach past a prefix, none granted", len(table), len(got), reaching)
}

// The Redis pod loads a line only if it matches RedisACLLinePattern: the lines RedisACLLine
// writes do, and so does nothing that widens them.
func TestRedisACLLinePattern(t *testing.T) {
	line := RedisACLLine("chat-r-1", "chat-r-1:", "pw")
	if !ReRedisACLLine.MatchString(line) {
		t.Fatalf("pattern does not match the line it is for:\n%s\n%s", line, RedisACLLinePattern)
	}
	for _, bad := range []string{
		strings.Replace(line, "-@all", "+@all", 1),
		strings.Replace(line, "~chat-r-1:*", "~*", 1),
		strings.Replace(line, "&chat-r-1:*", "&*", 1),
		strings.Replace(line, " -@scripting", "", 1),
		strings.Replace(line, "+client|setname", "+client|tracking", 1),
		strings.Replace(line, "+client|setname", "+clientXsetname", 1),
		line + " +@all",
		line + " +scan",
		"user chat-r-1 on nopass ~chat-r-1:* &chat-r-1:* " + RedisRobotCommands,
	} {
		if ReRedisACLLine.MatchString(bad) {
			t.Errorf("pattern matches a widened line: %s", bad)
		}
	}
}
