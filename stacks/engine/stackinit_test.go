//go:build integration

package engine

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCreateStackInProcess: the stack the engine creates itself is the stack `pulumi stack
// init` creates (the same checkpoint, apart from its time and salt; the CLI lists it, exports
// it and updates it), a lock another process holds makes it create nothing, and a stack that
// exists is not created again.
func TestCreateStackInProcess(t *testing.T) {
	e := newEngine(t, Options{})
	ctx := tctx(t, 3*time.Minute)
	cli, err := e.reader(ctx)
	require.NoError(t, err)
	// The CLI's `stack init`, which also writes the backend's meta.yaml on its first use.
	_, err = auto.NewStack(ctx, "cluster.bycli", cli)
	require.NoError(t, err)
	b, err := e.bucket(ctx)
	require.NoError(t, err)
	byCLI, err := b.ReadAll(ctx, stackObject("cluster.bycli", ".json"))
	require.NoError(t, err)

	ws, err := auto.NewLocalWorkspace(ctx, auto.WorkDir(t.TempDir()), auto.Pulumi(e.cli), auto.Project(e.project))
	require.NoError(t, err)

	// Held by someone else: refused as the CLI refuses it, nothing written.
	foreign := stackLockDir("cluster.inproc") + "0123456789abcdef.json"
	require.NoError(t, b.WriteAll(ctx, foreign, []byte(`{"pid":1,"username":"x","hostname":"elsewhere","timestamp":"2026-01-01T00:00:00Z"}`), nil))
	_, err = e.createStack(ctx, "cluster.inproc", ws)
	require.Error(t, err)
	assert.True(t, isLockConflict(err), "%v", err)
	exists, err := e.stackExists(ctx, "cluster.inproc")
	require.NoError(t, err)
	assert.False(t, exists, "a locked stack is not created")
	require.NoError(t, b.Delete(ctx, foreign))

	created, err := e.createStack(ctx, "cluster.inproc", ws)
	require.NoError(t, err)
	require.True(t, created)
	inProc, err := b.ReadAll(ctx, stackObject("cluster.inproc", ".json"))
	require.NoError(t, err)
	assert.Equal(t, shape(t, byCLI, "cluster.bycli"), shape(t, inProc, "cluster.inproc"), "the checkpoint `stack init` writes")
	require.NoError(t, otherLocks(ctx, b, stackLockDir("cluster.inproc"), ""), "the lock is released")
	settings, err := ws.StackSettings(ctx, "cluster.inproc")
	require.NoError(t, err)
	_, salt := secretsProviderOf(deploymentOf(t, inProc))
	assert.Equal(t, salt, settings.EncryptionSalt, "the stack file names the checkpoint's salt")
	c, err := e.crypter(salt)
	require.NoError(t, err, "the salt checks out with the passphrase, as the CLI checks it")
	require.NotNil(t, c)

	again, err := e.createStack(ctx, "cluster.inproc", ws)
	require.NoError(t, err)
	assert.False(t, again, "an existing stack is not created again")

	// The CLI sees the stack and updates it.
	list, err := cli.ListStacks(ctx)
	require.NoError(t, err)
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	assert.Contains(t, names, "cluster.inproc")
	_, err = e.Up(tctx(t, 2*time.Minute), Request{Stack: "cluster.inproc", Program: outputsProgram("x")})
	require.NoError(t, err)
	out, err := e.Outputs(tctx(t, time.Minute), "cluster.inproc")
	require.NoError(t, err)
	assert.Equal(t, "x", out.String("plain"))
	assert.FileExists(t, filepath.Join(ws.WorkDir(), "Pulumi.cluster.inproc.yaml"))
}

// shape is a checkpoint with its varying parts (time, salt, stack name) blanked.
func shape(t *testing.T, body []byte, stack string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	cp := m["checkpoint"].(map[string]any)
	assert.Equal(t, "organization/tfrs/"+stack, cp["stack"])
	cp["stack"] = ""
	latest := cp["latest"].(map[string]any)
	manifest := latest["manifest"].(map[string]any)
	_, err := time.Parse(time.RFC3339Nano, manifest["time"].(string))
	require.NoError(t, err)
	manifest["time"] = ""
	sp := latest["secrets_providers"].(map[string]any)["state"].(map[string]any)
	assert.Regexp(t, `^v1:[A-Za-z0-9+/=]+:v1:`, sp["salt"])
	sp["salt"] = ""
	return m
}

func deploymentOf(t *testing.T, body []byte) json.RawMessage {
	var cp struct {
		Checkpoint struct {
			Latest json.RawMessage `json:"latest"`
		} `json:"checkpoint"`
	}
	require.NoError(t, json.Unmarshal(body, &cp))
	return cp.Checkpoint.Latest
}
