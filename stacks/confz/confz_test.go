package confz

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func conns() Connections {
	return Connections{
		Postgres:        Postgres{Host: "acme-pg-rw", Port: 5432, User: "app_user", Password: "pg-secret", DBName: "acme"},
		Redis:           Redis{Host: "redis.acme.svc.cluster.local", Port: 6379, Password: "redis-secret"},
		RabbitMQ:        RabbitMQ{Host: "rabbitmq.acme.svc.cluster.local", Port: 5672, User: "user", Password: "p@ss/word", VHost: "acme"},
		COS:             COS{Host: "minio.acme.svc.cluster.local", Port: 9000, AccessKey: "ak", SecretKey: "sk", Bucket: "acme"},
		TracingEndpoint: "http://otel-collector.acme.svc.cluster.local:4317",
	}
}

// personalConns are a robot of a personal tenant: its own role, schema, key prefix, vhost and
// bucket on the shared middleware.
func personalConns() Connections {
	c := conns()
	c.Postgres.User, c.Postgres.Schema = "r_chat_r_1", "r_chat_r_1"
	c.Redis.KeyPrefix = "chat-r-1:"
	c.RabbitMQ.User, c.RabbitMQ.VHost = "chat-r-1", "chat-r-1"
	c.COS.AccessKey, c.COS.Bucket = "chat-r-1", "chat-r-1"
	return c
}

func TestGeneratedPersonalSections(t *testing.T) {
	tree := Generated(personalConns())
	require.Equal(t, "r_chat_r_1", tree["postgresql"].(map[string]any)["schema"])
	require.Equal(t, "chat-r-1:", tree["redis"].(map[string]any)["key_prefix"])
	require.Equal(t, "amqp://chat-r-1:p%40ss%2Fword@rabbitmq.acme.svc.cluster.local:5672/chat-r-1", tree["celery"].(map[string]any)["broker_url"])
	// Enterprise robots have neither key.
	_, schema := Generated(conns())["postgresql"].(map[string]any)["schema"]
	_, prefix := Generated(conns())["redis"].(map[string]any)["key_prefix"]
	require.False(t, schema || prefix)
	// No tracing endpoint, no [tracing].
	c := conns()
	c.TracingEndpoint = ""
	require.NotContains(t, Generated(c), "tracing")
}

func TestGeneratedSections(t *testing.T) {
	out, err := Render(conns(), "")
	require.NoError(t, err)
	tree, err := Parse(out)
	require.NoError(t, err)
	pg := tree["postgresql"].(map[string]any)
	require.Equal(t, "acme-pg-rw", pg["host"])
	require.EqualValues(t, 5432, pg["port"])
	require.Equal(t, "app_user", pg["user"])
	require.Equal(t, "acme", pg["dbname"])
	require.Equal(t, "redis.acme.svc.cluster.local", tree["redis"].(map[string]any)["host"])
	require.Equal(t, "amqp://user:p%40ss%2Fword@rabbitmq.acme.svc.cluster.local:5672/acme", tree["celery"].(map[string]any)["broker_url"])
	require.EqualValues(t, 9000, tree["cos"].(map[string]any)["port"])
	require.Equal(t, "http://otel-collector.acme.svc.cluster.local:4317", tree["tracing"].(map[string]any)["endpoint"])
}

func TestUserOverridesWinAtAnyDepth(t *testing.T) {
	out, err := Render(conns(), `
[postgresql]
port = 6543

[redis]
db = 2

[llm]
default_model = "gpt-4o-mini"

[llm.limits]
rpm = 60
`)
	require.NoError(t, err)
	tree, err := Parse(out)
	require.NoError(t, err)
	pg := tree["postgresql"].(map[string]any)
	require.EqualValues(t, 6543, pg["port"], "user key wins")
	require.Equal(t, "acme-pg-rw", pg["host"], "keys the user left out keep the generated value")
	require.EqualValues(t, 2, tree["redis"].(map[string]any)["db"], "user-only key in a generated section is kept")
	require.Equal(t, "redis-secret", tree["redis"].(map[string]any)["password"])
	llm := tree["llm"].(map[string]any)
	require.Equal(t, "gpt-4o-mini", llm["default_model"], "user-only section is kept")
	require.EqualValues(t, 60, llm["limits"].(map[string]any)["rpm"])
}

func TestRenderIsDeterministic(t *testing.T) {
	a, err := Render(conns(), "[x]\nb = 1\na = 2\n")
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		b, err := Render(conns(), "[x]\nb = 1\na = 2\n")
		require.NoError(t, err)
		require.Equal(t, a, b)
	}
}

func TestInvalidTOMLNamesLineAndColumn(t *testing.T) {
	_, err := Render(conns(), "[redis]\ndb = 2\nport = = 3\n")
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 3, pe.Line)
	require.Positive(t, pe.Column)
	require.Contains(t, err.Error(), "line 3, column")
}

func TestMergeDoesNotModifyInputs(t *testing.T) {
	base := Generated(conns())
	over := map[string]any{"postgresql": map[string]any{"port": int64(1)}}
	_ = Merge(base, over)
	require.EqualValues(t, 5432, base["postgresql"].(map[string]any)["port"])
}

// leaves flattens a tree to dotted paths → values.
func leaves(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "\x00" + k
		}
		if t, ok := v.(map[string]any); ok && len(t) > 0 {
			leaves(p, t, out)
			continue
		}
		out[p] = v
	}
}

// FuzzMerge checks the merge contract on arbitrary user TOML, over the sections of an
// enterprise and of a personal robot: every leaf the user set is in the result unchanged; every generated leaf survives unless the user set that key or one of
// its ancestors to a non-table; the result is valid TOML.
func FuzzMerge(f *testing.F) {
	for i, s := range []string{"", "[postgresql]\nport = 1\n", "postgresql = 3\n", "[a.b.c]\nd = [1,2]\n",
		"[redis]\nhost = \"x\"\n[[jobs]]\nname = \"a\"\n", "cos = { port = 1, extra = true }\n",
		"[postgresql]\nschema = \"other\"\n[redis.key_prefix]\nx = 1\n"} {
		f.Add(s, i%2 == 1)
	}
	f.Fuzz(func(t *testing.T, doc string, personal bool) {
		user, err := Parse(doc)
		if err != nil {
			return
		}
		c := conns()
		if personal {
			c = personalConns()
		}
		gen := Generated(c)
		merged := Merge(gen, user)
		out, err := Encode(merged)
		if err != nil {
			// go-toml refuses some trees (e.g. mixed-type arrays); the user's own document
			// decoded to them, so encoding errors must then also occur for user alone.
			_, uerr := Encode(user)
			require.Error(t, uerr, "merge made an encodable user tree unencodable: %v", err)
			return
		}
		back, err := Parse(out)
		require.NoError(t, err, "rendered TOML must parse:\n%s", out)

		got := map[string]any{}
		leaves("", back, got)
		ul := map[string]any{}
		leaves("", user, ul)
		for p, v := range ul {
			if _, isTable := v.(map[string]any); isTable {
				continue // an empty user table may merge with a generated one
			}
			require.Contains(t, got, p)
			switch v.(type) {
			case string, int64, bool:
				require.Equal(t, v, got[p], "user value for %q must win", p)
			}
		}
		gl := map[string]any{}
		leaves("", gen, gl)
		for p := range gl {
			if overridden(user, strings.Split(p, "\x00")) {
				continue
			}
			require.Contains(t, got, p, "generated key %q lost", p)
		}
	})
}

// overridden reports whether the user set path or replaced an ancestor with a non-table.
func overridden(user map[string]any, path []string) bool {
	cur := user
	for i, k := range path {
		v, ok := cur[k]
		if !ok {
			return false
		}
		if i == len(path)-1 {
			return true
		}
		t, ok := v.(map[string]any)
		if !ok {
			return true
		}
		cur = t
	}
	return false
}
