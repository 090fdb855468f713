package program

import (
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type credMocks struct{}

func (m *credMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	return args.Name + "-id", args.Inputs, nil
}

func (m *credMocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

// runCredential runs a program under mocks with the given binding and returns the value the
// program saw and whether it was secret.
func runCredential(t *testing.T, prev map[string]string, rotate []string) (string, bool) {
	t.Helper()
	var got string
	var secret bool
	var wg sync.WaitGroup
	wg.Add(1)
	var revealed []string
	prog := WithCredentials(func(ctx *pulumi.Context) error {
		v, err := Credential(ctx, "db-password", WithLength(24))
		if err != nil {
			return err
		}
		again, err := Credential(ctx, "db-password")
		if err != nil {
			return err
		}
		pulumi.All(v, again).ApplyT(func(xs []any) error {
			defer wg.Done()
			got = xs[0].(string)
			assert.Equal(t, got, xs[1], "same name, same run, same value")
			return nil
		})
		secret = pulumi.IsSecret(v)
		return nil
	}, prev, rotate, func(v string) { revealed = append(revealed, v) })
	err := pulumi.RunErr(prog, pulumi.WithMocks("tfrs", "s", &credMocks{}))
	require.NoError(t, err)
	wg.Wait()
	if got != "" {
		assert.Equal(t, []string{got}, revealed, "the value is told to the caller once, for redaction")
	}
	return got, secret
}

func TestCredentialGeneratedOnceAndKept(t *testing.T) {
	first, secret := runCredential(t, nil, nil)
	assert.True(t, secret)
	assert.Len(t, first, 24)
	assert.Regexp(t, `^[A-Za-z0-9]+$`, first)

	kept, _ := runCredential(t, map[string]string{"db-password": first}, nil)
	assert.Equal(t, first, kept, "a known value is reused")

	rotated, _ := runCredential(t, map[string]string{"db-password": first}, []string{"db-password"})
	assert.NotEqual(t, first, rotated, "rotation regenerates")
	assert.Len(t, rotated, 24)
}

func TestCredentialNameAndSpecValidation(t *testing.T) {
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := Credential(ctx, "bad name")
		assert.Error(t, err)
		_, err = Credential(ctx, "short", WithLength(4))
		assert.Error(t, err)
		return nil
	}, pulumi.WithMocks("tfrs", "s", &credMocks{}))
	require.NoError(t, err)
}

func TestRandomStringUsesAlphabet(t *testing.T) {
	s, err := randomString(1000, "ab")
	require.NoError(t, err)
	a := 0
	for _, c := range s {
		require.Contains(t, "ab", string(c))
		if c == 'a' {
			a++
		}
	}
	assert.InDelta(t, 500, a, 120, "roughly uniform")
}
