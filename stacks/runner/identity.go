package runner

import (
	"errors"
	"fmt"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// ErrStackClaimed: the object's stack belongs to another object. Stack names are shortened
// with a hash when too long (stackname), so two objects could be made to map to one stack;
// the stack's engine.TagObject records the full identity of the object that owns it, and the
// Runner refuses any operation of another object on it.
var ErrStackClaimed = errors.New("stack belongs to another object")

// StackClaimedError refuses an operation on a stack whose TagObject names another object.
type StackClaimedError struct {
	Stack string
	// Object is the refused object's identity, Owner the one the stack records.
	Object, Owner string
	// Name is the refused object's metadata.name.
	Name string
}

func (e *StackClaimedError) Error() string {
	return fmt.Sprintf("metadata.name %q: its stack %s belongs to %s, not to %s; rename the object", e.Name, e.Stack, e.Owner, e.Object)
}

// Is makes errors.Is(err, ErrStackClaimed) true, and errors.Is(err, ErrManagedElsewhere):
// every door already treats that as "not this object's stack: leave it as it is" (409, a
// stalled condition, a destroy that leaves the stack in place).
func (e *StackClaimedError) Is(target error) bool {
	return target == ErrStackClaimed || target == ErrManagedElsewhere
}

// ObjectIdentity is the full identity TagObject records: "<Kind>/<namespace>/<name>" (the
// namespace empty for a cluster-scoped kind). Unlike a shortened stack name it cannot collide.
func ObjectIdentity(t kinds.Target) string {
	return string(t.Kind) + "/" + t.Namespace + "/" + t.Name
}

// CheckIdentity refuses (with a *StackClaimedError) an operation of t on a stack whose tags
// record another object. A stack without the tag (created before it existed, or not yet) is
// free: the next up records t.
func CheckIdentity(t kinds.Target, tags map[string]string) error {
	owner := tags[engine.TagObject]
	if owner == "" || owner == ObjectIdentity(t) {
		return nil
	}
	return &StackClaimedError{Stack: t.Stack, Object: ObjectIdentity(t), Owner: owner, Name: t.Name}
}
