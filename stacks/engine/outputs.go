package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Stack outputs in one CLI process. auto's StackOutputs runs `stack output --json` twice (once
// with --show-secrets) and marks an output secret when its blinded rendering contains
// "[secret]". Both renderings are derived from the root stack resource's outputs in the
// checkpoint, which `stack export --show-secrets` already prints with every secret as
// {sig: SecretSig, plaintext: <JSON>}. stackOutputs rebuilds both renderings from that one
// export, the way the CLI does (v3.276.0, cmd/pulumi/stack/stack_output.go: MassageSecrets then
// SerializeProperties), so the values and their secretness are exactly auto's.

// stackOutputs reads a stack's outputs from its checkpoint, in-process (inproc.go) or else with
// one `stack export --show-secrets`.
func (e *Engine) stackOutputs(ctx context.Context, ws auto.Workspace, stack string) (auto.OutputMap, error) {
	dep, _, err := e.exportRevealed(ctx, OpOutputs, ws, stack)
	if err != nil {
		return nil, err
	}
	return outputsFromDeployment(dep)
}

// secretSentinel is what `stack output` prints for a secret without --show-secrets (and what
// auto looks for to call an output secret).
const secretSentinel = "[secret]"

// outputsFromDeployment returns the root stack resource's outputs of a deployment exported with
// --show-secrets.
func outputsFromDeployment(raw json.RawMessage) (auto.OutputMap, error) {
	out := auto.OutputMap{}
	if len(raw) == 0 {
		return out, nil // never updated: no checkpoint, no outputs
	}
	var doc struct {
		Resources []struct {
			Type    string         `json:"type"`
			Parent  string         `json:"parent"`
			Outputs map[string]any `json:"outputs"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	for _, r := range doc.Resources {
		if r.Type != string(resource.RootStackType) || r.Parent != "" {
			continue
		}
		for k, v := range r.Outputs {
			plain, err := revealValue(v)
			if err != nil {
				return nil, fmt.Errorf("output %q: %w", k, err)
			}
			blind, err := json.Marshal(blindValue(v))
			if err != nil {
				return nil, fmt.Errorf("output %q: %w", k, err)
			}
			out[k] = auto.OutputValue{Value: plain, Secret: strings.Contains(string(blind), secretSentinel)}
		}
		break
	}
	return out, nil
}

// sigOf is the Pulumi signature of a serialized special value ("" for plain values).
func sigOf(v any) (map[string]any, string) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, ""
	}
	s, _ := m[resource.SigKey].(string)
	return m, s
}

// revealValue is `stack output --show-secrets`' rendering of a serialized value: secrets
// replaced by their (decoded, recursively revealed) plaintext.
func revealValue(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		switch _, s := sigOf(t); s {
		case resource.SecretSig:
			pt, ok := t["plaintext"].(string)
			if !ok {
				return nil, fmt.Errorf("secret is not decrypted")
			}
			var inner any
			if err := json.Unmarshal([]byte(pt), &inner); err != nil {
				return nil, fmt.Errorf("decode secret: %w", err)
			}
			return revealValue(inner)
		case resource.ByteStringSig:
			return byteStringDisplay(t)
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			r, err := revealValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := revealValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// blindValue is `stack output`'s rendering without --show-secrets: every secret is "[secret]".
func blindValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		switch _, s := sigOf(t); s {
		case resource.SecretSig:
			return secretSentinel
		case resource.ByteStringSig:
			if d, err := byteStringDisplay(t); err == nil {
				return d
			}
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = blindValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = blindValue(e)
		}
		return out
	}
	return v
}

// byteStringDisplay renders a string that is not valid UTF-8 as the CLI displays it:
// b"<base64>" (the checkpoint stores the same bytes as {sig: ByteStringSig, value: <base64>}).
func byteStringDisplay(m map[string]any) (string, error) {
	s, _ := m["value"].(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("decode byte string: %w", err)
	}
	return `b"` + base64.StdEncoding.EncodeToString(b) + `"`, nil
}

// upWorkspace is the stack's workspace as auto's Stack.Up sees it. After the update Up reads
// the outputs and the newest history entry through its workspace; this one answers both from
// the backend in-process (inproc.go), so an update is one CLI process, the update itself.
// Only Up uses it: Stack.Cancel needs the *LocalWorkspace itself.
type upWorkspace struct {
	*auto.LocalWorkspace
	e *Engine
}

func (w upWorkspace) StackOutputs(ctx context.Context, stack string) (auto.OutputMap, error) {
	return w.e.stackOutputs(ctx, w.LocalWorkspace, stack)
}

// SelectStack is a no-op: the stack is selected (or created) through the real workspace, and
// every command names it with --stack, so making the Up stack must not cost a process.
func (w upWorkspace) SelectStack(context.Context, string) error { return nil }

// PulumiCommand is the engine's CLI, except that `stack history --json` (which Stack.Up runs
// for its Summary after the update) is read from the backend.
func (w upWorkspace) PulumiCommand() auto.PulumiCommand { return historyReader{w.e.cli, w.e} }

// selectedWorkspace is a workspace on a stack known to exist (inproc.go's stackExists): every
// command names the stack with --stack, so selecting it needs no `stack select` process.
type selectedWorkspace struct{ *auto.LocalWorkspace }

func (selectedWorkspace) SelectStack(context.Context, string) error { return nil }

// historyReader answers `stack history --json --page-size N` in-process and runs everything
// else (and any history it cannot read itself) with the CLI.
type historyReader struct {
	*pulumiCLI
	e *Engine
}

func (h historyReader) Run(ctx context.Context, workdir string, stdin io.Reader,
	additionalOutput, additionalErrorOutput []io.Writer, additionalEnv []string, args ...string,
) (string, string, int, error) {
	if out, ok := h.history(ctx, args); ok {
		return out, "", 0, nil
	}
	return h.pulumiCLI.Run(ctx, workdir, stdin, additionalOutput, additionalErrorOutput, additionalEnv, args...)
}

func (h historyReader) history(ctx context.Context, args []string) (string, bool) {
	if len(args) < 3 || args[0] != "stack" || args[1] != "history" || !slices.Contains(args, "--json") {
		return "", false
	}
	var stack string
	size := 0
	for i := 2; i+1 < len(args); i++ {
		switch args[i] {
		case "--stack":
			stack = args[i+1]
		case "--page-size":
			size, _ = strconv.Atoi(args[i+1])
		case "--page":
			if args[i+1] != "1" {
				return "", false
			}
		}
	}
	if stack == "" || size != 1 {
		return "", false
	}
	hist, err := h.e.historyHead(ctx, OpUp, stack, 1)
	if err != nil {
		return "", false
	}
	out := make([]auto.UpdateSummary, 0, len(hist))
	for _, x := range hist {
		out = append(out, x.summary())
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", false
	}
	return string(b), true
}
