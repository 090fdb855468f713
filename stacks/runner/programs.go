package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

type programFunc = pulumi.RunFunc

// runFunc runs one stack of an apply (up or preview) with its tags, applying into namespace
// ns ("" for cluster-wide) as that namespace's applier.
type runFunc func(stack string, prog programFunc, tags map[string]string, ns string) error

// applyObject runs the object's programs (from the program table, kinds.ProgramsOf) once its
// parent is ready. An object with a shared stack (a personal tenant) first makes sure that
// stack is up, then runs its own stack over the shared outputs.
func (r *Runner) applyObject(ctx context.Context, t kinds.Target, obj v1alpha1.Object, kind engine.OpKind, parents kinds.Parents, run runFunc, out *Outcome) error {
	progs, err := kinds.ProgramsOf(ctx, t, obj, parents)
	if err != nil {
		return err
	}
	out.Support = progs.Support
	if progs.Wait != nil {
		return progs.Wait
	}
	var tags map[string]string
	if t.Parent != "" {
		tags = map[string]string{engine.TagParent: t.Parent}
	}
	if t.Shared == "" {
		return run(t.Stack, progs.Own(nil), tags, progs.Namespace)
	}
	shared, err := r.sharedOutputs(ctx, t, obj, progs, kind, run)
	if err != nil || shared == nil {
		return err
	}
	tags[engine.TagShared] = t.Shared
	return run(t.Stack, progs.Own(shared), tags, progs.Namespace)
}

// sharedOutputs brings a personal job type's shared stack up when this tenant drives it and
// returns its outputs. Who drives it: Options.SharedOwner when set (the operator: the oldest
// live tenant of the job type); otherwise whoever finds it missing or failed. A preview runs
// a preview of the shared stack instead; if the shared stack does not exist yet there are no
// outputs to preview the member stack with, and nil is returned.
func (r *Runner) sharedOutputs(ctx context.Context, t kinds.Target, obj v1alpha1.Object, progs *kinds.Programs, kind engine.OpKind, run runFunc) (*stacks.TenantOutputs, error) {
	st, err := r.eng.Status(ctx, t.Shared)
	exists := err == nil
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		return nil, err
	}
	drive := false
	if r.opts.SharedOwner != nil {
		owner, err := r.opts.SharedOwner(ctx, progs.JobType)
		if err != nil {
			return nil, fmt.Errorf("shared stack owner of job type %q: %w", progs.JobType, err)
		}
		if owner != nil && owner.KindName() == obj.KindName() && (owner.GetNamespace() != obj.GetNamespace() || owner.GetName() != obj.GetName()) {
			if !exists || !st.Ready {
				return nil, &kinds.ParentError{Kind: owner.KindName(), Name: owner.GetNamespace() + "/" + owner.GetName(), Stack: t.Shared,
					Reason: "the job type's shared middleware is brought up by its owner tenant"}
			}
		} else {
			drive = true
		}
	} else if !exists || !st.Ready {
		drive = true
	}
	if drive {
		if err := run(t.Shared, progs.Shared, map[string]string{engine.TagParent: t.Parent}, progs.Namespace); err != nil {
			return nil, err
		}
	}
	// A preview of a shared stack never brought up (missing, or only created by an earlier
	// preview) has no outputs to preview the member with.
	if kind == engine.OpPreview && (!exists || !st.Ready) {
		return nil, nil
	}
	out, err := r.eng.Outputs(ctx, t.Shared)
	if err != nil {
		return nil, err
	}
	shared, err := stacks.TenantOutputsFromStack(out)
	if err != nil {
		return nil, err
	}
	return &shared, nil
}

// releaseShared destroys a personal job type's shared stack once no member stack refers to it.
func (r *Runner) releaseShared(ctx context.Context, t kinds.Target, op Op, out *Outcome) error {
	members, err := r.stacksTagged(ctx, stackname.LevelTenant+".", engine.TagShared, t.Shared)
	if err != nil || len(members) > 0 {
		return err
	}
	return r.destroyStack(ctx, t.Shared, op, out)
}

// DependentsError refuses to destroy a stack that others still depend on.
type DependentsError struct {
	Stack      string
	Dependents []string
}

func (e *DependentsError) Error() string {
	return fmt.Sprintf("stack %s still has %d dependent stack(s): %s; delete them first", e.Stack, len(e.Dependents), strings.Join(e.Dependents, ", "))
}

// ErrDependentsExist: the stack still has dependents.
var ErrDependentsExist = errors.New("dependents exist")

// Is makes errors.Is(err, ErrDependentsExist) true.
func (e *DependentsError) Is(target error) bool { return target == ErrDependentsExist }

// Dependents lists the stacks that name t's stack as their parent (a cluster's tenants and
// shared stacks, a tenant's servers), read from the backend so every door's stacks count.
func (r *Runner) Dependents(ctx context.Context, t kinds.Target) ([]string, error) {
	if t.Children == "" {
		return nil, nil // no stack can name it as its parent
	}
	return r.stacksTagged(ctx, t.Children, engine.TagParent, t.Stack)
}

// stacksTagged lists the stacks under prefix whose tag key equals value (read from the tag
// files, no CLI process per stack).
func (r *Runner) stacksTagged(ctx context.Context, prefix, key, value string) ([]string, error) {
	return r.eng.TaggedStacks(ctx, prefix, key, value)
}

// EngineParents reads parents from their stacks in the engine's backend: a parent is ready
// when its last update succeeded, whichever door ran it.
type EngineParents struct{ Engine Engine }

// Cluster reads a cluster stack.
func (p EngineParents) Cluster(ctx context.Context, stack string) (stacks.TenantCluster, error) {
	out, err := p.ready(ctx, stack)
	if err != nil {
		return stacks.TenantCluster{}, err
	}
	return stacks.TenantClusterFromStack(out)
}

// Tenant reads a tenant stack.
func (p EngineParents) Tenant(ctx context.Context, stack string) (stacks.TenantOutputs, error) {
	out, err := p.ready(ctx, stack)
	if err != nil {
		return stacks.TenantOutputs{}, err
	}
	return stacks.TenantOutputsFromStack(out)
}

func (p EngineParents) ready(ctx context.Context, stack string) (program.Outputs, error) {
	// The outputs are read alongside the status (each a backend read, or a CLI process on a
	// backend the engine cannot read itself): a parent is ready far more often than not, and
	// a read of a parent that is not is simply discarded.
	type read struct {
		out program.Outputs
		err error
	}
	outputs := make(chan read, 1)
	go func() {
		out, err := p.Engine.Outputs(ctx, stack)
		outputs <- read{out, err}
	}()
	defer func() { <-outputs }() // never leave the read running past the caller
	st, err := p.Engine.Status(ctx, stack)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, &kinds.ParentError{Stack: stack, Reason: "its stack does not exist yet"}
	}
	if err != nil {
		return nil, err
	}
	if !st.Ready {
		reason := "it has not been brought up yet"
		if st.Last != nil {
			reason = fmt.Sprintf("its last %s %s", st.Last.Kind, st.Last.Result)
		}
		return nil, &kinds.ParentError{Stack: stack, Reason: reason}
	}
	rd := <-outputs
	outputs <- rd // for the deferred drain
	return rd.out, rd.err
}
