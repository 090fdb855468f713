package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

func clearPassphraseEnv(t *testing.T) {
	for _, k := range []string{"TFRS_PASSPHRASE", "TFRS_PASSPHRASE_FILE", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE"} {
		t.Setenv(k, "")
	}
}

func TestPassphraseResolution(t *testing.T) {
	clearPassphraseEnv(t)
	p, err := resolvePassphrase(Options{})
	require.NoError(t, err)
	assert.Equal(t, "", p)

	t.Setenv("PULUMI_CONFIG_PASSPHRASE", "from-pulumi")
	p, _ = resolvePassphrase(Options{})
	assert.Equal(t, "from-pulumi", p)

	t.Setenv("TFRS_PASSPHRASE", "from-tfrs")
	p, _ = resolvePassphrase(Options{})
	assert.Equal(t, "from-tfrs", p, "TFRS_PASSPHRASE wins")

	f := filepath.Join(t.TempDir(), "pp")
	require.NoError(t, os.WriteFile(f, []byte("from-file\n"), 0o600))
	p, _ = resolvePassphrase(Options{PassphraseFile: f})
	assert.Equal(t, "from-file", p, "trailing newline dropped")
	p, _ = resolvePassphrase(Options{Passphrase: "explicit", PassphraseFile: f})
	assert.Equal(t, "explicit", p)
}

func TestEmptyPassphraseRefused(t *testing.T) {
	clearPassphraseEnv(t)
	_, err := New(context.Background(), Options{StateDir: t.TempDir()})
	assert.ErrorIs(t, err, ErrNoPassphrase)
}

func TestMissingToolsNameTheFix(t *testing.T) {
	_, err := New(context.Background(), Options{StateDir: t.TempDir(), Passphrase: "p", PulumiPath: "/nonexistent/pulumi"})
	require.ErrorIs(t, err, ErrToolsMissing)
	assert.Contains(t, err.Error(), "make tools")

	_, err = findTool("", "tfrs-no-such-tool")
	require.ErrorIs(t, err, ErrToolsMissing)
	assert.True(t, errors.Is(err, tools.ErrMissing))
	assert.Contains(t, err.Error(), "make tools")
}

func TestDefaultStateDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	d, err := DefaultStateDir()
	require.NoError(t, err)
	assert.Equal(t, "/x/state/tfrs", d)
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	d, _ = DefaultStateDir()
	assert.Equal(t, "/home/u/.tfrs/state", d)
}

func TestBackendURLChecks(t *testing.T) {
	assert.NoError(t, checkBackendURL("s3://b?endpoint=127.0.0.1:9000&s3ForcePathStyle=true"))
	assert.NoError(t, checkBackendURL("file://"+t.TempDir()))
	assert.Error(t, checkBackendURL("file://relative"))
	assert.Error(t, checkBackendURL("http://x"))
}

func TestCLIEnvironment(t *testing.T) {
	t.Setenv("PULUMI_ACCESS_TOKEN", "pul-leaked")
	t.Setenv("PULUMI_BACKEND_URL", "https://api.pulumi.com")
	r := &resolved{Options: Options{BackendURL: "file:///s", Env: map[string]string{"AWS_ACCESS_KEY_ID": "k"}},
		pulumiBin: "/t/pulumi", providerBin: "/p/pulumi-resource-kubernetes", pulumiHome: "/s/home"}
	pp := "pass"
	r.passphrase = &pp
	c := &pulumiCLI{env: r.baseEnv}
	env := map[string]string{}
	for _, kv := range c.environ([]string{"X=1"}) {
		k, v, _ := strings.Cut(kv, "=")
		_, dup := env[k]
		assert.False(t, dup, "duplicate %s", k)
		env[k] = v
	}
	assert.Equal(t, "file:///s", env["PULUMI_BACKEND_URL"])
	assert.NotContains(t, env, "PULUMI_ACCESS_TOKEN")
	assert.Equal(t, "true", env["PULUMI_SKIP_UPDATE_CHECK"])
	assert.Equal(t, "true", env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"])
	assert.Equal(t, "pass", env["PULUMI_CONFIG_PASSPHRASE"])
	assert.Equal(t, "k", env["AWS_ACCESS_KEY_ID"])
	assert.Equal(t, "1", env["X"])
	assert.True(t, strings.HasPrefix(env["PATH"], "/p:/t"), env["PATH"])
}

func TestErrorsAreSafe(t *testing.T) {
	err := &OpError{Op: OpUp, Stack: "cluster.x", Kind: ErrConflict, Detail: "locked"}
	assert.ErrorIs(t, err, ErrConflict)
	assert.NotErrorIs(t, err, ErrNotFound)
	msg := "failed to run update: exit status 255\ncode: 255\nstdout: password=hunter2\nstderr: error: resource failed\n  details\n"
	assert.Equal(t, "error: resource failed\n  details", stderrOf(msg))
	oe := classify(context.Background(), OpUp, "cluster.x", errors.New(msg), newRedactor(nil), nil)
	assert.ErrorIs(t, oe, ErrFailed)
	assert.NotContains(t, oe.Error(), "hunter2", "stdout never reaches the message")
	assert.Contains(t, oe.Error(), "resource failed")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	oe = classify(ctx, OpUp, "cluster.x", errors.New("signal: interrupt"), nil, nil)
	assert.ErrorIs(t, oe, ErrCanceled)
	assert.ErrorIs(t, oe, context.Canceled)
}

func TestRedactURL(t *testing.T) {
	assert.Equal(t, "s3://b?endpoint=h%3A1&secret_access_key=%2A%2A%2A%2A", redactURL("s3://b?endpoint=h:1&secret_access_key=abc"))
}

// TestTornLockReadIsAConflict: a `stack init` that read a peer's lock mid-write is retried
// like a held lock (initStack), and nothing else is mistaken for it.
func TestTornLockReadIsAConflict(t *testing.T) {
	cli := func(stderr string) error {
		return fmt.Errorf("failed to create stack: exit status 255\ncode: 255\nstdout: \nstderr: %s\n", stderr)
	}
	for _, stderr := range []string{
		"error: could not create stack: unexpected end of JSON input",
		"error: could not create stack: open /tmp/x/.pulumi/locks/organization/tfrs/tenant.a.b/5f1e.json.18c2a0f3b7.tmp: no such file or directory",
		`error: could not create stack: blob (key ".pulumi/locks/organization/tfrs/tenant.races3.t1/11fbc2fc-f393-4a6a-9f02-dbe921c07737.json") (code=NotFound): operation error S3: GetObject, https response error StatusCode: 404, api error NoSuchKey: The specified key does not exist.`,
	} {
		assert.True(t, isTornLockRead(cli(stderr)), stderr)
	}
	for _, stderr := range []string{
		"error: could not create stack: invalid stack name",
		"error: unexpected end of JSON input", // a checkpoint that does not parse is not a lock
		"error: could not create stack: open /tmp/x/.pulumi/stacks/tfrs/a.json: permission denied",
		`error: could not create stack: blob (key ".pulumi/stacks/tfrs/a.json") (code=NotFound): operation error S3: GetObject`, // not a lock
	} {
		assert.False(t, isTornLockRead(cli(stderr)), stderr)
	}
}
