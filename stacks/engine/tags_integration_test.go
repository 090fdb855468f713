//go:build integration

package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tag files TaggedStacks reads are the ones the real CLI writes.
func TestTaggedStacksSeesCLITags(t *testing.T) {
	e := newEngine(t, Options{})
	for stack, parent := range map[string]string{"tenant.tag.a": "cluster.one", "tenant.tag.b": "cluster.two"} {
		_, err := e.Up(tctx(t, time.Minute), Request{Stack: stack, Program: emptyProgram, ManagedBy: ManagedByAPI, Tags: map[string]string{TagParent: parent}})
		require.NoError(t, err)
	}
	got, err := e.TaggedStacks(context.Background(), "tenant.", TagParent, "cluster.one")
	require.NoError(t, err)
	assert.Equal(t, []string{"tenant.tag.a"}, got)
	got, err = e.TaggedStacks(context.Background(), "tenant.", TagManagedBy, string(ManagedByAPI))
	require.NoError(t, err)
	assert.Equal(t, []string{"tenant.tag.a", "tenant.tag.b"}, got)
}
