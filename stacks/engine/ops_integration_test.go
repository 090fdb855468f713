//go:build integration

package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOperations walks one stack through every operation on the file backend and the local
// control plane.
func TestOperations(t *testing.T) {
	kc := kubeconfig(t)
	e := newEngine(t, Options{})
	const stack, ns = "tenant.ops.demo", "ops-demo"
	rec := &recorder{}
	req := func(data string) Request {
		return Request{Stack: stack, Program: configMapsProgram(kc, ns, 3, data), ManagedBy: ManagedByOperator, Sink: rec.sink}
	}

	// Preview of a stack that does not exist yet: it plans creates and creates no stack.
	pv, err := e.Preview(tctx(t, 3*time.Minute), req("v1"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, pv.Changes[StepCreate], 4, "namespace + 3 ConfigMaps")
	_, err = e.Tags(tctx(t, time.Minute), stack)
	require.ErrorIs(t, err, ErrNotFound, "a preview neither creates nor claims the stack")

	up, err := e.Up(tctx(t, 3*time.Minute), req("v1"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, up.Changes[StepCreate], 4)
	assert.Equal(t, 3, countSteps(up.Steps, "kubernetes:core/v1:ConfigMap", StepCreate))
	assert.Equal(t, ns, up.Outputs.String("namespace"))
	assert.Positive(t, up.Duration)
	kinds := map[EventKind]int{}
	for _, ev := range rec.all() {
		kinds[ev.Kind]++
	}
	assert.Positive(t, kinds[EventStepStart])
	assert.Positive(t, kinds[EventStepDone])
	assert.Positive(t, kinds[EventSummary])

	st, err := e.Status(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	assert.Equal(t, ManagedByOperator, st.ManagedBy)
	assert.True(t, st.Ready)
	require.NotNil(t, st.Last)
	assert.Equal(t, "update", st.Last.Kind)

	// A changed annotation previews as in-place updates with the changed property paths…
	pv, err = e.Preview(tctx(t, 3*time.Minute), Request{Stack: stack, Program: configMapsProgramV(kc, ns, 3, "v1", "v2")})
	require.NoError(t, err)
	assert.Equal(t, 3, pv.Changes[StepUpdate], "%v", pv.Changes)
	for _, s := range pv.Steps {
		if s.Type == "kubernetes:core/v1:ConfigMap" {
			assert.Equal(t, StepUpdate, s.Op)
			assert.Contains(t, strings.Join(s.Diffs, ","), "metadata.annotations", s.URN)
		}
	}
	// …and changed data as replacements (auto-named ConfigMaps are immutable), with the keys
	// that force them.
	pv, err = e.Preview(tctx(t, 3*time.Minute), req("v2"))
	require.NoError(t, err)
	assert.Equal(t, 3, pv.Changes[StepReplace], "%v", pv.Changes)
	for _, s := range pv.Steps {
		if s.Type == "kubernetes:core/v1:ConfigMap" {
			assert.Equal(t, StepReplace, s.Op)
			assert.Contains(t, strings.Join(s.ReplaceKeys, ","), "data", s.URN)
		}
	}

	// The same program again changes nothing.
	noop, err := e.Up(tctx(t, 3*time.Minute), req("v1"))
	require.NoError(t, err)
	assert.Zero(t, noop.Changes.Changed(), "%v", noop.Changes)

	_, err = e.Refresh(tctx(t, 3*time.Minute), Request{Stack: stack, Sink: rec.sink})
	require.NoError(t, err)

	outs, err := e.Outputs(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	assert.Equal(t, ns, outs.String("namespace"))

	list, err := e.List(tctx(t, time.Minute), "tenant.ops.")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, stack, list[0].Name)
	assert.Positive(t, list[0].ResourceCount)

	err = e.Remove(tctx(t, time.Minute), stack, false)
	assert.ErrorIs(t, err, ErrStackNotEmpty)

	ds, err := e.Destroy(tctx(t, 3*time.Minute), Request{Stack: stack, Sink: rec.sink})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ds.Changes[StepDelete], 4)
	client, err := controlPlane(t).Client()
	require.NoError(t, err)
	cms, err := client.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: testLabel + "=" + ns})
	require.NoError(t, err)
	assert.Empty(t, cms.Items)

	st, err = e.Status(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	assert.False(t, st.Ready, "a destroyed stack is not ready")

	require.NoError(t, e.Remove(tctx(t, time.Minute), stack, false))
	_, err = e.Status(tctx(t, time.Minute), stack)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = e.Outputs(tctx(t, time.Minute), stack)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = e.Destroy(tctx(t, time.Minute), Request{Stack: stack})
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = e.Refresh(tctx(t, time.Minute), Request{Stack: "tenant.ops.never"})
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = e.Up(tctx(t, time.Minute), Request{Stack: "bad name", Program: emptyProgram})
	assert.ErrorIs(t, err, ErrInvalidName)

	// Plugins come from the tools build: nothing was installed into PULUMI_HOME.
	entries, _ := os.ReadDir(filepath.Join(e.opts.pulumiHome, "plugins"))
	for _, en := range entries {
		assert.NotContains(t, en.Name(), "kubernetes", "no provider plugin was installed or downloaded")
	}
}

func countSteps(steps []Step, typ string, op StepOp) int {
	n := 0
	for _, s := range steps {
		if s.Type == typ && s.Op == op {
			n++
		}
	}
	return n
}

// TestCredentialsStableAndNeverPlaintext: two ups give the same generated value, rotation
// changes it, and neither value (nor its base64) is anywhere in the state dir or the events.
func TestCredentialsStableAndNeverPlaintext(t *testing.T) {
	stateDir := t.TempDir()
	e := newEngine(t, Options{StateDir: stateDir})
	const stack = "tenant.creds.demo"
	rec := &recorder{}
	up := func(rotate ...string) string {
		t.Helper()
		res, err := e.Up(tctx(t, 2*time.Minute), Request{Stack: stack, Program: outputsProgram("p"), ManagedBy: ManagedByAPI, Sink: rec.sink, Rotate: rotate})
		require.NoError(t, err)
		pw := res.Outputs["adminPassword"]
		require.True(t, pw.Secret)
		assert.Nil(t, pw.Value, "secret values are hidden by default")
		j, _ := json.Marshal(res)
		v, _ := pw.Reveal().(string)
		require.Len(t, v, 32)
		assert.NotContains(t, string(j), v)
		return v
	}
	first := up()
	second := up()
	assert.Equal(t, first, second, "generated once, kept across runs")
	rotated := up("admin")
	assert.NotEqual(t, first, rotated, "rotation regenerates")
	assert.Equal(t, rotated, up(), "and the rotated value is kept")

	outs, err := e.Outputs(tctx(t, time.Minute), stack)
	require.NoError(t, err)
	assert.Equal(t, rotated, outs["adminPassword"].Reveal())

	secrets := []string{first, rotated, "static-secret-token-value", testPassphrase}
	assertNoPlaintext(t, stateDir, rec.text(), secrets...)
}

// assertNoPlaintext greps every file under dir, and the given log text, for the values and
// their base64 forms.
func assertNoPlaintext(t *testing.T, dir, logText string, values ...string) {
	t.Helper()
	var needles []string
	for _, v := range values {
		needles = append(needles, v, base64.StdEncoding.EncodeToString([]byte(v)))
	}
	files := 0
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		files++
		for _, n := range needles {
			assert.NotContains(t, string(b), n, "plaintext secret in %s", p)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Positive(t, files, "the state dir holds the backend")
	for _, n := range needles {
		assert.NotContains(t, logText, n, "plaintext secret in events")
	}
}

// TestConfig: plain and secret stack config reach the program; the secret never lands in
// plaintext on disk (it is written through the CLI's stdin, encrypted by the stack).
func TestConfig(t *testing.T) {
	stateDir := t.TempDir()
	e := newEngine(t, Options{StateDir: stateDir})
	const secret = "config-secret-value-42"
	prog := func(ctx *pulumi.Context) error {
		c := config.New(ctx, "")
		ctx.Export("greeting", pulumi.String(c.Require("greeting")))
		ctx.Export("token", c.RequireSecret("token"))
		ctx.Export("region", pulumi.String(config.Require(ctx, "aws:region")))
		return nil
	}
	rec := &recorder{}
	req := Request{Stack: "cluster.config", Program: prog, Sink: rec.sink, Config: map[string]ConfigValue{
		"greeting":   {Value: "hello"},
		"token":      {Value: secret, Secret: true},
		"aws:region": {Value: "us-east-1"},
	}}
	res, err := e.Up(tctx(t, 2*time.Minute), req)
	require.NoError(t, err)
	assert.Equal(t, "hello", res.Outputs.String("greeting"))
	assert.Equal(t, "us-east-1", res.Outputs.String("region"))
	assert.True(t, res.Outputs["token"].Secret)
	assert.Equal(t, secret, res.Outputs["token"].Reveal())

	// A second engine (fresh workspace, like another process) reads the same stack.
	e2 := newEngine(t, Options{StateDir: stateDir})
	req.Config["greeting"] = ConfigValue{Value: "again"}
	res, err = e2.Up(tctx(t, 2*time.Minute), req)
	require.NoError(t, err)
	assert.Equal(t, "again", res.Outputs.String("greeting"))
	assert.Equal(t, secret, res.Outputs["token"].Reveal())
	assertNoPlaintext(t, stateDir, rec.text(), secret)
}
