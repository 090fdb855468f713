package progress

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// replay renders the recorded events with the clock at each event's own time, so the
// throttles behave as they did live and the output is the same on every run.
func replay(t *testing.T, o RenderOptions) string {
	t.Helper()
	var b strings.Builder
	evs := recorded(t)
	now := evs[0].Time
	o.Now = func() time.Time { return now }
	r := NewRenderer(&b, o)
	for _, e := range evs {
		now = e.Time
		r.Event(e)
	}
	r.Note("operation succeeded")
	r.Close()
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to write %s", path)
	require.Equal(t, string(want), got)
}

func TestRenderPlainGolden(t *testing.T) {
	out := replay(t, RenderOptions{})
	golden(t, "cluster-up.plain.golden", out)
	require.NotContains(t, out, "\x1b", "plain output has no escape sequence")
	require.Contains(t, out, "[cluster.e2e]   ok     Istio istio")
	require.Contains(t, out, "[cluster.e2e] done: create=42 (45/45 resources)")
	require.Less(t, strings.Count(out, "\n"), 80, "one line per changing step, not per event (%d events)", len(recorded(t)))
}

func TestRenderTerminalGolden(t *testing.T) {
	out := replay(t, RenderOptions{Terminal: true, Color: true, Width: 100})
	golden(t, "cluster-up.terminal.golden", out)
	// The final screen: the block drawn last, every component complete.
	last := out[strings.LastIndex(out, "\x1b[13F")+len("\x1b[13F"):] // moved back up over the bar and 12 components
	require.Contains(t, last, "up cluster.e2e  [████████████████████████]  45/45  done: create=42")
	require.Equal(t, 13, strings.Count(last, "\n"), "the bar and 12 component lines:\n%s", last)
	require.Equal(t, 12, strings.Count(last, "✓"))
	for _, l := range strings.Split(strings.TrimSuffix(last, "\n"), "\n") {
		require.LessOrEqual(t, len([]rune(stripANSI(l))), 100, "truncated to the width: %q", l)
	}
}

// Colour off on a terminal: the live block still works (cursor movement) but paints nothing.
func TestRenderFailureAndWarningLines(t *testing.T) {
	var b strings.Builder
	r := NewRenderer(&b, RenderOptions{})
	const stack = "tenant.ns.acme"
	u := "urn:pulumi:" + stack + "::tfrs::tfrs:tenant:Redis$kubernetes:apps/v1:Deployment::redis"
	for _, e := range []engine.Event{
		{Stack: stack, Operation: engine.OpUp, Kind: engine.EventStart, Resources: 3},
		{Stack: stack, Kind: engine.EventStepStart, URN: u, Type: "kubernetes:apps/v1:Deployment", Op: engine.StepReplace, Message: "replace kubernetes:apps/v1:Deployment redis"},
		{Stack: stack, Kind: engine.EventDiag, Severity: "warning", Message: "warning: slow rollout"},
		{Stack: stack, Kind: engine.EventDiag, Severity: "info", Message: "info lines stay out"},
		{Stack: stack, Kind: engine.EventDiag, Severity: "error", Message: "Deployment failed", Ephemeral: true},
		{Stack: stack, Kind: engine.EventStepFailed, URN: u, Type: "kubernetes:apps/v1:Deployment", Op: engine.StepReplace},
		{Stack: stack, Kind: engine.EventSummary, Message: "replace=1"},
	} {
		r.Event(e)
	}
	r.Close()
	require.Equal(t, `[tenant.ns.acme] up started: 3 resources in the stack
[tenant.ns.acme] replace kubernetes:apps/v1:Deployment redis
[tenant.ns.acme] warning: slow rollout
[tenant.ns.acme] failed: kubernetes:apps/v1:Deployment `+u+`
[tenant.ns.acme]   failed Redis 1/1
[tenant.ns.acme] done: replace=1 (1/3 resources)
`, b.String())
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && !(s[i] >= 'A' && s[i] <= 'Z' || s[i] >= 'a' && s[i] <= 'z') {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
