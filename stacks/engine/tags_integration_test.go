//go:build integration

package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
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

// AppliedTags are written by an Up that succeeded, and by no other: a failed Up leaves the
// last successful one's tags (what the stack's revision reports).
func TestAppliedTagsOnlyAfterSuccess(t *testing.T) {
	e := newEngine(t, Options{})
	const stack = "tenant.applied.a"
	_, err := e.Up(tctx(t, time.Minute), Request{Stack: stack, Program: emptyProgram, ManagedBy: ManagedByCLI,
		AppliedTags: map[string]string{"tfrs.io/revision": "aaaaaaaaaaaa"}})
	require.NoError(t, err)
	st, err := e.Status(context.Background(), stack)
	require.NoError(t, err)
	assert.Equal(t, "aaaaaaaaaaaa", st.Tags["tfrs.io/revision"])

	_, err = e.Up(tctx(t, time.Minute), Request{Stack: stack, ManagedBy: ManagedByCLI,
		Program:     func(*pulumi.Context) error { return errors.New("the program fails") },
		AppliedTags: map[string]string{"tfrs.io/revision": "bbbbbbbbbbbb"}})
	require.Error(t, err)
	st, err = e.Status(context.Background(), stack)
	require.NoError(t, err)
	assert.Equal(t, "aaaaaaaaaaaa", st.Tags["tfrs.io/revision"], "a failed up records nothing")

	_, err = e.Preview(tctx(t, time.Minute), Request{Stack: stack, Program: emptyProgram, ManagedBy: ManagedByCLI,
		AppliedTags: map[string]string{"tfrs.io/revision": "cccccccccccc"}})
	require.NoError(t, err)
	st, err = e.Status(context.Background(), stack)
	require.NoError(t, err)
	assert.Equal(t, "aaaaaaaaaaaa", st.Tags["tfrs.io/revision"], "a preview records nothing")
}
