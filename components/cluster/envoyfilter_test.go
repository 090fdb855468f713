package cluster

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/routing"
	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// testTargets are reserved namespaces for the routing filter in component tests.
var testTargets = routing.Targets{ReservedPrefixes: []string{"kube-"}, ReservedNames: []string{"default", "istio-system"}}

// The routing filter fails closed: without reserved namespaces it would route to every
// namespace, so the component refuses to render it.
func TestEnvoyFilterLuaRoutingNeedsTargets(t *testing.T) {
	m := &pt.Mocks{}
	err := m.RunErr(func(ctx *pulumi.Context) error {
		_, err := NewEnvoyFilterLuaRouting(ctx, "envoyfilter-lua-routing", &EnvoyFilterArgs{Domain: "tfr.example.com"})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "no reserved namespaces") {
		t.Fatalf("err = %v, want a refusal naming the missing reserved namespaces", err)
	}
}
