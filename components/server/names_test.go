package server

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

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
