package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	cserver "github.com/tfrs-io/tfrs-operator/components/server"
)

// The runner reads a robot's claim from its API Service and from its ServiceAccount: each
// one's existence and the stack its owner annotation names.
func TestRobotObjectsOwners(t *testing.T) {
	ann := map[string]string{cserver.OwnerAnnotation: "server.team.s1"}
	cs := fake.NewClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "chat-r-1-api", Namespace: "p", Annotations: ann}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "chat-r-1-robot", Namespace: "p", Annotations: ann}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "chat-r-2-robot", Namespace: "p"}},
	)
	r := New(newFake(), Options{Namespaces: &kubeNamespaces{c: cs}})
	p := ownershipParents{r: r}
	ctx := context.Background()
	for _, tc := range []struct {
		read   func(context.Context, string, string) (bool, string, error)
		name   string
		exists bool
		owner  string
	}{
		{p.RobotService, "chat-r-1-api", true, "server.team.s1"},
		{p.RobotAccount, "chat-r-1-robot", true, "server.team.s1"},
		{p.RobotAccount, "chat-r-2-robot", true, ""},
		{p.RobotService, "chat-r-2-api", false, ""},
		{p.RobotAccount, "chat-r-3-robot", false, ""},
	} {
		exists, owner, err := tc.read(ctx, "p", tc.name)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.exists, exists, tc.name)
		assert.Equal(t, tc.owner, owner, tc.name)
	}
}
