package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// ErrManagedElsewhere: the stack is managed by another door.
var ErrManagedElsewhere = errors.New("stack managed by another door")

// ManagedElsewhereError refuses a mutation through the wrong door.
type ManagedElsewhereError struct {
	Stack     string
	ManagedBy engine.ManagedBy
}

func (e *ManagedElsewhereError) Error() string {
	if e.ManagedBy == engine.ManagedByOperator {
		return fmt.Sprintf("stack %s is managed by the operator: edit the custom resource instead", e.Stack)
	}
	return fmt.Sprintf("stack %s is managed by %s, not by the operator: manage it through %s or delete it there first", e.Stack, e.ManagedBy, e.ManagedBy)
}

// Is makes errors.Is(err, ErrManagedElsewhere) true.
func (e *ManagedElsewhereError) Is(target error) bool { return target == ErrManagedElsewhere }

// CheckDoor is the door rule: it refuses (with a *ManagedElsewhereError) a mutation by door of
// a stack that owner manages. A stack the operator manages has a CR as its source of truth,
// and only the operator changes it; the operator in turn never takes over a stack made over
// HTTP or by the CLI (a CR of the same name would otherwise silently overwrite it). The HTTP
// API and the CLI may both change each other's stacks. An untagged stack (owner "") and a
// request that names no door are free. The Runner checks it before every mutation; the HTTP
// API checks it again before accepting an operation, to answer 409 at once.
func CheckDoor(stack string, owner, door engine.ManagedBy) error {
	if door == "" || owner == "" || owner == door {
		return nil
	}
	if owner == engine.ManagedByOperator || door == engine.ManagedByOperator {
		return &ManagedElsewhereError{Stack: stack, ManagedBy: owner}
	}
	return nil
}

// checkStack reads the stack's tags once and applies the stack's rules (admission) to t; a
// stack that does not exist yet is free.
func (r *Runner) checkStack(ctx context.Context, t kinds.Target, door engine.ManagedBy, fields bool) error {
	tags, err := r.eng.Tags(ctx, t.Stack) // the tags file only; Status would read the history too
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return admission(t, door, fields)(tags)
}

// admission is every rule a stack's tags impose on an operation of t through door:
// CheckIdentity (always: no object runs on another object's stack, not even a preview), the
// immutable fields when fields is set (an up or a preview of a changed object), and
// CheckDoor when door is set. The runner applies it before anything runs (checkStack) and the
// engine again once the stack's owner is settled (engine.Request.Admit), which is what makes
// a race of two doors creating one stack end with exactly one owner.
func admission(t kinds.Target, door engine.ManagedBy, fields bool) func(map[string]string) error {
	return func(tags map[string]string) error {
		if err := CheckIdentity(t, tags); err != nil {
			return err
		}
		if err := CheckDoor(t.Stack, engine.ManagedBy(tags[engine.TagManagedBy]), door); err != nil {
			return err
		}
		if fields {
			return kinds.CheckImmutable(t.Immutable, tags[engine.TagImmutable])
		}
		return nil
	}
}

// Admit checks, without running anything, that an up of obj through op.Door would be
// admitted by its stack: the spec is valid, the stack is not another object's nor another
// door's, and no immutable field changed. A door that applies several objects (the CLI)
// checks them all first, so a refusal of the last one changes none of the others.
func (r *Runner) Admit(ctx context.Context, obj v1alpha1.Object, op Op) error {
	t, _, err := kinds.Prepare(obj)
	if err != nil {
		return err
	}
	return r.checkStack(ctx, t, op.Door, true)
}
