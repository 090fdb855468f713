package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TaggedStacks reads the DIY backend's tag files: only stacks under the prefix, only an exact
// tag value; another project's stacks, checkpoints and unknown files do not count, and an
// unreadable tags file is an error, never a silent "no dependents".
func TestTaggedStacksReadsTagFiles(t *testing.T) {
	dir := t.TempDir()
	stacks := filepath.Join(dir, ".pulumi", "stacks", ProjectName)
	require.NoError(t, os.MkdirAll(stacks, 0o700))
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(stacks, name), []byte(body), 0o600))
	}
	tags := func(parent string) string {
		return `{"version":1,"tags":{"tfrs.io/managed-by":"api","tfrs.io/parent":"` + parent + `"}}`
	}
	write("tenant.a.one.pulumi-tags", tags("cluster.main"))
	write("tenant.a.one.json", `{}`)
	write("tenant.b.two.pulumi-tags", tags("cluster.main"))
	write("tenant.b.three.pulumi-tags", tags("cluster.mainx"))
	write("server.a.one.pulumi-tags", tags("cluster.main"))
	write("tenant.c.none.json", `{}`) // no tags file: no tags
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".pulumi", "stacks", "other"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".pulumi", "stacks", "other", "tenant.a.x.pulumi-tags"), []byte(tags("cluster.main")), 0o600))

	e := &Engine{opts: &resolved{Options: Options{BackendURL: "file://" + dir + "?metadata=skip", ReadOnly: true}}, red: newRedactor(nil)}
	got, err := e.TaggedStacks(context.Background(), "tenant.", TagParent, "cluster.main")
	require.NoError(t, err)
	assert.Equal(t, []string{"tenant.a.one", "tenant.b.two"}, got)
	got, err = e.TaggedStacks(context.Background(), "tenant.b.", TagParent, "cluster.main")
	require.NoError(t, err)
	assert.Equal(t, []string{"tenant.b.two"}, got)

	write("tenant.d.bad.pulumi-tags", `{"version":2,"tags":{}}`)
	_, err = e.TaggedStacks(context.Background(), "tenant.", TagParent, "cluster.main")
	require.ErrorIs(t, err, ErrFailed)
}
