package stackname

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStackNames(t *testing.T) {
	n, err := Cluster("prod")
	require.NoError(t, err)
	assert.Equal(t, "cluster.prod", n)

	n, err = Tenant("team-a", "acme")
	require.NoError(t, err)
	assert.Equal(t, "tenant.team-a.acme", n)

	n, err = Server("team-a", "robot.v2")
	require.NoError(t, err)
	assert.Equal(t, "server.team-a.robot.v2", n)

	for _, bad := range [][2]string{{"Team", "x"}, {"a.b", "x"}, {"ns", "UPPER"}, {"ns", ""}, {"", "x"}, {"ns", "-x"}} {
		_, err := Tenant(bad[0], bad[1])
		assert.True(t, errors.Is(err, ErrInvalid), "%v", bad)
	}
	_, err = Cluster("has_underscore")
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestStackNameShortening(t *testing.T) {
	ns := strings.Repeat("n", 63)
	long := strings.Repeat("a", 200)
	a, err := Server(ns, long)
	require.NoError(t, err)
	b, err := Server(ns, long)
	require.NoError(t, err)
	assert.Equal(t, a, b, "shortening is stable")
	assert.LessOrEqual(t, len(a), MaxLength)
	assert.True(t, strings.HasPrefix(a, "server."+ns+"."))
	c, err := Server(ns, long+"b")
	require.NoError(t, err)
	assert.NotEqual(t, a, c, "different long names do not collide")
	assert.NoError(t, Validate(a))
}

func TestValidateStackName(t *testing.T) {
	for _, ok := range []string{"cluster.x", "tenant.ns.x", "server.ns.x.y", "dev"} {
		assert.NoError(t, Validate(ok), ok)
	}
	for _, bad := range []string{"", "tenant.ns", "tenant..x", "cluster.", "a b", "x/y", strings.Repeat("x", 101)} {
		assert.ErrorIs(t, Validate(bad), ErrInvalid, bad)
	}
}

func TestPersonalShared(t *testing.T) {
	n, err := PersonalShared("chat")
	require.NoError(t, err)
	assert.Equal(t, "tenant.personal-chat._shared", n)
	assert.NoError(t, Validate(n))
	_, err = PersonalShared("")
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = PersonalShared("a b")
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestOfAndPrefix(t *testing.T) {
	for _, tc := range []struct{ level, ns, name, want string }{
		{LevelCluster, "", "prod", "cluster.prod"},
		{LevelCluster, "ignored", "prod", "cluster.prod"},
		{LevelTenant, "team-a", "acme", "tenant.team-a.acme"},
		{LevelServer, "team-a", "bot", "server.team-a.bot"},
	} {
		n, err := Of(tc.level, tc.ns, tc.name)
		require.NoError(t, err)
		assert.Equal(t, tc.want, n)
		if tc.level != LevelCluster {
			assert.True(t, strings.HasPrefix(n, Prefix(tc.level, tc.ns)), n)
		}
	}
	_, err := Of(LevelTenant, "", "acme")
	assert.ErrorIs(t, err, ErrInvalid, "a namespaced level needs a namespace")
	assert.Equal(t, "cluster.", Prefix(LevelCluster, ""))
	assert.Equal(t, "tenant.", Prefix(LevelTenant, ""))
	assert.Equal(t, "server.ns.", Prefix(LevelServer, "ns"))
}
