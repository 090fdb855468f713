package kinds

// The program of one stack, for a process that the stock Pulumi CLI runs (the project's
// Pulumi.yaml entry) rather than the engine: the same stacks programs the runner drives,
// picked by the object's kind and the running stack's name, with parent outputs read through
// stack references to the parent stacks in the same backend.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// ConfigObject is the stack config key that holds the CR document (YAML or JSON) a stock-CLI
// run of the project's entry program reads.
const ConfigObject = "tfrs:object"

// Program returns the program of the running stack for obj: a cluster's or server's own
// stack; for a tenant its own stack, or for a personal tenant also its job type's shared
// stack. The running stack (ctx.Stack()) must be one of obj's stacks, so a document
// configured on the wrong stack fails instead of overwriting it. Parents come from parents,
// or when nil from stack references (StackReferences). obj is validated first.
func Program(obj v1alpha1.Object, parents Parents) (pulumi.RunFunc, error) {
	t, obj, err := Prepare(obj)
	if err != nil {
		return nil, err
	}
	return func(ctx *pulumi.Context) error {
		p := parents
		if p == nil {
			p = StackReferences(ctx)
		}
		prog, err := programFor(ctx.Context(), t, obj, ctx.Stack(), p)
		if err != nil {
			return err
		}
		return prog(ctx)
	}, nil
}

// programFor picks the program of stack for the prepared object t/obj.
func programFor(ctx context.Context, t Target, obj v1alpha1.Object, stack string, p Parents) (pulumi.RunFunc, error) {
	own, shared := sameStack(stack, t.Stack), t.Shared != "" && sameStack(stack, t.Shared)
	if !own && !shared {
		want := t.Stack
		if t.Shared != "" {
			want += " or " + t.Shared
		}
		return nil, fmt.Errorf("stack %s does not belong to %s: its stack is %s; select that stack or fix the %s config", stack, t, want, ConfigObject)
	}
	progs, err := ProgramsOf(ctx, t, obj, p)
	if err != nil {
		return nil, err
	}
	if shared {
		return progs.Shared, nil
	}
	if t.Shared == "" {
		return progs.Own(nil), nil
	}
	// A personal tenant's own stack re-exports its job type's shared stack.
	out, err := p.Tenant(ctx, t.Shared)
	if err != nil {
		return nil, t.parentErr(err)
	}
	return progs.Own(&out), nil
}

// sameStack compares a running stack name, which the CLI may qualify as org/project/stack,
// with a bare tfrs stack name.
func sameStack(running, name string) bool {
	return running == name || strings.HasSuffix(running, "/"+name)
}

// StackReferences reads parents through stack references of the running program, from the
// same backend the program runs against. Unlike runner.EngineParents it cannot see a parent's
// history, so it does not check that the parent's last update succeeded; a parent that does
// not exist fails the reference.
func StackReferences(ctx *pulumi.Context) Parents { return stackRefParents{ctx: ctx} }

type stackRefParents struct{ ctx *pulumi.Context }

func (s stackRefParents) Cluster(_ context.Context, stack string) (stacks.TenantCluster, error) {
	out, err := s.read(stack, stacks.TenantClusterKeys())
	if err != nil {
		return stacks.TenantCluster{}, err
	}
	return stacks.TenantClusterFromStack(out)
}

func (s stackRefParents) Tenant(_ context.Context, stack string) (stacks.TenantOutputs, error) {
	out, err := s.read(stack, stacks.TenantOutputKeys())
	if err != nil {
		return stacks.TenantOutputs{}, err
	}
	return stacks.TenantOutputsFromStack(out)
}

// read fetches keys of stack's outputs, keeping which ones are secret so the typed readers can
// refuse a secret that arrives in the clear. GetOutputDetails waits for the reference.
func (s stackRefParents) read(stack string, keys map[string]bool) (program.Outputs, error) {
	ref, err := pulumi.NewStackReference(s.ctx, "parent-"+stack, &pulumi.StackReferenceArgs{Name: pulumi.String(stack)})
	if err != nil {
		return nil, &ParentError{Stack: stack, Reason: "cannot reference its stack: " + err.Error()}
	}
	out := program.Outputs{}
	for key := range keys {
		d, err := ref.GetOutputDetails(key)
		if err != nil {
			return nil, &ParentError{Stack: stack, Reason: fmt.Sprintf("reading output %q: %v", key, err)}
		}
		switch {
		case d == nil:
		case d.SecretValue != nil:
			out[key] = program.NewOutput(d.SecretValue, true)
		case d.Value != nil:
			out[key] = program.NewOutput(d.Value, false)
		}
	}
	if len(out) == 0 {
		return nil, &ParentError{Stack: stack, Reason: "its stack has no outputs; bring it up first"}
	}
	return out, nil
}

// ErrNoObject says the running stack has no ConfigObject config.
var ErrNoObject = errors.New("the stack has no " + ConfigObject + " config: set it to the CR document, e.g. pulumi config set " + ConfigObject + " -- \"$(cat tenant.yaml)\"")
