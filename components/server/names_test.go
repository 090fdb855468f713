package server

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/kit"
	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// Robot names are injective: pairs that used to collide are refused on one side, and every
// pair that validates gets names (robot, schema, bucket, key prefix) no other pair gets.
func TestRobotNameInjective(t *testing.T) {
	if err := (Robot{Namespace: "personal-chat", Type: "chat-bot", ID: "1"}).Validate(); err == nil {
		t.Error("robot type chat-bot accepted: chat-bot/1 and chat/bot-1 would share chat-bot-1")
	}
	types := []string{"chat", "chatbot", "c", "chat2", "bot"}
	ids := []string{"1", "bot-1", "bot", "1-bot", "chat-1", "a-b-c", "2chat"}
	seen := map[string]string{}
	for _, typ := range types {
		for _, id := range ids {
			r := Robot{Namespace: "personal-chat", Type: typ, ID: id}
			if err := r.Validate(); err != nil {
				t.Fatalf("%s/%s: %v", typ, id, err)
			}
			pair := typ + "/" + id
			for kind, name := range map[string]string{"name": r.Name(), "schema": r.Schema(), "prefix": r.RedisKeyPrefix(), "api": r.APIName()} {
				if other, dup := seen[kind+" "+name]; dup {
					t.Errorf("%s %q of %s is also %s's", kind, name, pair, other)
				}
				seen[kind+" "+name] = pair
			}
		}
	}
}

// The API Service names the server stack that owns the robot's names in its namespace, which
// the runner reads before another stack's run (stacks/kinds/robots.go).
func TestAPIServiceNamesItsOwner(t *testing.T) {
	for _, owner := range []string{"server.tfrs-system.bot", ""} {
		m := &pt.Mocks{}
		r := robot
		r.Owner = owner
		m.Run(t, func(ctx *pulumi.Context) error {
			_, err := NewAPIWorker(ctx, "api-worker", &WorkerArgs{Robot: r, Pod: pod(), Args: []string{"api"}, Replicas: 1, Checksum: pulumi.String("abc")})
			return err
		})
		ann, _ := pt.Plain(m.Find(t, "kubernetes:core/v1:Service", "").Inputs)["metadata"].(map[string]any)["annotations"].(map[string]any)
		if owner == "" {
			if ann != nil {
				t.Errorf("no owner: annotations %v", ann)
			}
			continue
		}
		pt.Eq(t, "owner annotation", ann, map[string]any{OwnerAnnotation: owner})
	}
}

// Every data name of a personal robot is valid where it is used and names one (owner, robot)
// only: the owner hash ends it, {robot} is cut to fit, and "" keeps the legacy names.
func TestRobotDataNames(t *testing.T) {
	types := []string{"chat", "c", "9x", strings.Repeat("t", 40), strings.Repeat("t", 18)}
	ids := []string{"1", "bob", "bob-robot", "bob-grafana-sa", "a-b-c", strings.Repeat("i", 40), strings.Repeat("i", 19) + "-" + strings.Repeat("j", 20)}
	owners := []string{"tenant.team-a.alice", "tenant.team-a.bob", "tenant.team-b.alice", "tenant.tfrs-system.acme"}
	seen, sas, n := map[string]string{}, map[string]string{}, 0
	for _, typ := range types {
		for _, id := range ids {
			legacy := Robot{Namespace: "personal-chat", Type: typ, ID: id}
			if legacy.Validate() != nil {
				continue
			}
			pt.Eq(t, "legacy data name", legacy.DataName(), legacy.Name())
			pt.Eq(t, "legacy schema", legacy.Schema(), "r_"+strings.ReplaceAll(legacy.Name(), "-", "_"))
			// Two ServiceAccounts per robot, neither another robot's.
			for _, sa := range []string{legacy.ServiceAccount(), legacy.Name() + "-" + KindGrafanaSA} {
				if other, dup := sas[sa]; dup {
					t.Errorf("ServiceAccount %s of %s is also %s's", sa, legacy.Name(), other)
				}
				sas[sa] = legacy.Name()
			}
			for _, owner := range owners {
				r := legacy
				r.DataOwner = owner
				d := r.DataName()
				who := owner + " " + typ + "/" + id
				if len(r.Schema()) > 63 || len(r.Bucket()) > 63 {
					t.Errorf("%s: data name %q (schema %q)", who, d, r.Schema())
				}
				if !kit.ReRedisACLLine.MatchString(kit.RedisACLLine(r.RedisUser(), r.RedisKeyPrefix(), "pw")) {
					t.Errorf("%s: the Redis pod would skip the ACL line of %q", who, r.RedisUser())
				}
				if other, dup := seen[d]; dup {
					t.Errorf("data name %q of %s is also %s's", d, who, other)
				}
				seen[d] = who
				n++
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d cases", n)
	}
}
