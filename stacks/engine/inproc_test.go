package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inprocEngine is an engine value with just what the in-process reads use: a file backend and
// the passphrase provider.
func inprocEngine(t *testing.T, passphrase string) (*Engine, string) {
	t.Helper()
	dir := t.TempDir()
	e := &Engine{opts: &resolved{Options: Options{BackendURL: "file://" + dir + "?metadata=skip"}}, red: newRedactor(nil)}
	e.opts.passphrase = &passphrase
	t.Cleanup(func() {
		if e.bkt != nil {
			_ = e.bkt.Close()
		}
	})
	return e, dir
}

// saltState makes a passphrase provider state the way the CLI does
// (NewPassphraseSecretsManager): v1:<salt>:<"pulumi" encrypted>.
func saltState(t *testing.T, phrase string, salt []byte) (string, config.Crypter) {
	t.Helper()
	c := config.NewSymmetricCrypterFromPassphrase(phrase, salt)
	check, err := c.EncryptValue(context.Background(), "pulumi")
	require.NoError(t, err)
	return "v1:" + base64.StdEncoding.EncodeToString(salt) + ":" + check, c
}

func writeFile(t *testing.T, path, body string, mod time.Time) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	require.NoError(t, os.Chtimes(path, mod, mod))
}

// TestReadDeploymentDecrypts: the checkpoint read in-process, secrets decrypted with the
// passphrase key, is what `stack export --show-secrets` gives (same values, same secretness),
// and anything the engine cannot read itself is errNotInProcess (the CLI then answers).
func TestReadDeploymentDecrypts(t *testing.T) {
	ctx := context.Background()
	const phrase = "correct horse"
	e, dir := inprocEngine(t, phrase)
	state, c := saltState(t, phrase, []byte("12345678"))
	enc := func(v any) map[string]any {
		b, _ := json.Marshal(v)
		ct, err := c.EncryptValue(ctx, string(b))
		require.NoError(t, err)
		return map[string]any{secretSig: secretValueSig, "ciphertext": ct}
	}
	dep := map[string]any{
		"secrets_providers": map[string]any{"type": "passphrase", "state": map[string]any{"salt": state}},
		"resources": []any{
			map[string]any{"type": "pulumi:pulumi:Stack", "urn": "urn:stack", "outputs": map[string]any{
				"tok": enc("s3cret"), "n": 12345678901234567, "nested": map[string]any{"inner": enc(map[string]any{"k": "v"})},
			}},
			map[string]any{"type": "tfrs:index:Credential", "urn": "urn:pulumi:s::tfrs::tfrs:index:Credential::db", "custom": false,
				"outputs": map[string]any{"value": enc("generated-pw")}},
		},
	}
	cp, err := json.Marshal(map[string]any{"version": 3, "checkpoint": map[string]any{"stack": "organization/tfrs/cluster.x", "latest": dep}})
	require.NoError(t, err)
	stacksDir := filepath.Join(dir, ".pulumi", "stacks", ProjectName)
	now := time.Now()
	writeFile(t, filepath.Join(stacksDir, "cluster.x.json"), string(cp), now)
	// Neither the backup nor a stack whose name extends this one is the checkpoint.
	writeFile(t, filepath.Join(stacksDir, "cluster.x.json.bak"), "garbage", now.Add(time.Hour))
	writeFile(t, filepath.Join(stacksDir, "cluster.x.jsonx.json"), "garbage", now.Add(time.Hour))

	raw, exists, err := e.readDeployment(ctx, "cluster.x")
	require.NoError(t, err)
	require.True(t, exists)
	assert.NotContains(t, string(raw), "s3cret", "as stored: encrypted")
	revealed, err := e.revealDeployment(ctx, raw)
	require.NoError(t, err)
	outs, err := outputsFromDeployment(revealed)
	require.NoError(t, err)
	assert.Equal(t, "s3cret", outs["tok"].Value)
	assert.True(t, outs["tok"].Secret)
	assert.Equal(t, float64(12345678901234567), outs["n"].Value)
	assert.False(t, outs["n"].Secret)
	assert.Equal(t, map[string]any{"inner": map[string]any{"k": "v"}}, outs["nested"].Value)
	assert.True(t, outs["nested"].Secret)
	assert.Contains(t, string(revealed), "12345678901234567", "numbers keep their literal")
	var doc stateDoc
	require.NoError(t, json.Unmarshal(revealed, &doc))
	v, ok := plainString(doc.Resources[1].Outputs["value"])
	assert.True(t, ok)
	assert.Equal(t, "generated-pw", v)

	// The key is derived once per salt.
	c1, err := e.crypter(state)
	require.NoError(t, err)
	c2, err := e.crypter(state)
	require.NoError(t, err)
	assert.Same(t, c1, c2)

	// Missing stack; stack never updated.
	_, exists, err = e.readDeployment(ctx, "cluster.none")
	require.NoError(t, err)
	assert.False(t, exists)
	writeFile(t, filepath.Join(stacksDir, "cluster.new.json"), `{"version":3,"checkpoint":{"stack":"organization/tfrs/cluster.new","latest":null}}`, now)
	raw, exists, err = e.readDeployment(ctx, "cluster.new")
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Nil(t, raw)

	// A wrong passphrase, another provider, an unknown format, a zstd checkpoint: the CLI's.
	wrong, _ := inprocEngine(t, "wrong")
	wrong.opts.BackendURL = e.opts.BackendURL
	_, err = wrong.revealDeployment(ctx, mustDeployment(t, e, "cluster.x"))
	assert.ErrorIs(t, err, errNotInProcess)
	other, _ := inprocEngine(t, phrase)
	other.opts.BackendURL, other.opts.passphrase = e.opts.BackendURL, nil // e.g. awskms://
	_, err = other.revealDeployment(ctx, mustDeployment(t, e, "cluster.x"))
	assert.ErrorIs(t, err, errNotInProcess)
	writeFile(t, filepath.Join(stacksDir, "cluster.v4.json"), `{"version":4,"checkpoint":{}}`, now)
	_, _, err = e.readDeployment(ctx, "cluster.v4")
	assert.ErrorIs(t, err, errNotInProcess)
	writeFile(t, filepath.Join(stacksDir, "cluster.x.json.zst"), "zstd", now.Add(time.Minute))
	_, _, err = e.readDeployment(ctx, "cluster.x")
	assert.ErrorIs(t, err, errNotInProcess, "the newest checkpoint is compressed with zstd")
}

func mustDeployment(t *testing.T, e *Engine, stack string) json.RawMessage {
	t.Helper()
	raw, _, err := e.readDeployment(context.Background(), stack)
	require.NoError(t, err)
	return raw
}

// TestSetStackTagsKeepsTheOwner: tags are merged into the file in one write, and a managed-by
// tag another door wrote since the engine read the tags is never overwritten.
func TestSetStackTagsKeepsTheOwner(t *testing.T) {
	ctx := context.Background()
	e, dir := inprocEngine(t, "p")
	stacksDir := filepath.Join(dir, ".pulumi", "stacks", ProjectName)
	writeFile(t, filepath.Join(stacksDir, "tenant.a.b.json"), `{"version":3,"checkpoint":{"latest":null}}`, time.Now())
	tags, err := e.stackTags(ctx, OpStatus, "tenant.a.b")
	require.NoError(t, err)
	assert.Empty(t, tags, "no tags file: no tags")

	got, err := e.setStackTags(ctx, "tenant.a.b", map[string]string{TagManagedBy: "api", TagParent: "cluster.c"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{TagManagedBy: "api", TagParent: "cluster.c"}, got)
	got, err = e.setStackTags(ctx, "tenant.a.b", map[string]string{TagManagedBy: "cli", TagObject: "TFRTenant/a/b"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{TagManagedBy: "api", TagParent: "cluster.c", TagObject: "TFRTenant/a/b"}, got)
	tags, err = e.stackTags(ctx, OpStatus, "tenant.a.b")
	require.NoError(t, err)
	assert.Equal(t, got, tags, "what was written is what is read")

	_, err = e.stackTags(ctx, OpStatus, "tenant.a.missing")
	assert.ErrorIs(t, err, ErrNotFound)
}

// TestHistoryHead: newest first, reading back past refreshes to the newest update, and not
// further.
func TestHistoryHead(t *testing.T) {
	ctx := context.Background()
	e, dir := inprocEngine(t, "p")
	const stack = "tenant.a.b"
	writeFile(t, filepath.Join(dir, ".pulumi", "stacks", ProjectName, stack+".json"), `{"version":3,"checkpoint":{"latest":null}}`, time.Now())
	hist := filepath.Join(dir, ".pulumi", "history", ProjectName, stack)
	entry := func(nanos int64, kind, result string) {
		body := fmt.Sprintf(`{"kind":%q,"startTime":%d,"endTime":%d,"result":%q,"message":"m","resourceChanges":{"same":3}}`,
			kind, nanos/1e9, nanos/1e9+5, result)
		writeFile(t, filepath.Join(hist, fmt.Sprintf("%s-%d.history.json", stack, nanos)), body, time.Now())
		writeFile(t, filepath.Join(hist, fmt.Sprintf("%s-%d.checkpoint.json", stack, nanos)), "{}", time.Now())
	}
	entry(1764600000000000001, "update", "failed")
	entry(1764600001000000000, "update", "succeeded")
	entry(1764600002000000000, "refresh", "succeeded")
	entry(1764600003000000000, "refresh", "failed")

	got, err := e.historyHead(ctx, OpStatus, stack, 20)
	require.NoError(t, err)
	require.Len(t, got, 3, "stops at the newest update")
	assert.Equal(t, []string{"refresh", "refresh", "update"}, []string{got[0].Kind, got[1].Kind, got[2].Kind})
	assert.Equal(t, "succeeded", got[2].Result)
	he := got[0].entry()
	assert.Equal(t, time.Unix(1764600003, 0).UTC(), he.Started)
	assert.Equal(t, time.Unix(1764600008, 0).UTC(), he.Ended)
	assert.Equal(t, map[string]int{"same": 3}, he.Changes)
	sum := got[0].summary()
	assert.Equal(t, "2025-12-01T14:40:03Z", sum.StartTime)

	got, err = e.historyHead(ctx, OpStatus, stack, 1)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "failed", got[0].Result)

	_, err = e.historyHead(ctx, OpStatus, "tenant.a.none", 1)
	assert.True(t, errors.Is(err, ErrNotFound), "%v", err)
}
