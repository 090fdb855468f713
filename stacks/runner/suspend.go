package runner

import (
	"errors"
	"fmt"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// ErrSuspended: the object's spec.suspend is true, so no operation may start on its stacks.
var ErrSuspended = errors.New("suspended")

// SuspendedError refuses an operation on a suspended object.
type SuspendedError struct {
	Object kinds.Target // names the object only: its stacks are not looked at
}

func (e *SuspendedError) Error() string {
	return fmt.Sprintf("%s is suspended (spec.suspend: true): no operation runs on it until spec.suspend is cleared", e.Object)
}

// Is makes errors.Is(err, ErrSuspended) true.
func (e *SuspendedError) Is(target error) bool { return target == ErrSuspended }

// CheckSuspended is the suspend rule every operation of the Runner applies before anything
// else, whichever door asks: a suspended object's stacks are neither changed, refreshed,
// previewed nor destroyed. The doors look first to say so in their own terms (the operator's
// Suspended condition, the CLI's skipped report, the API's stored spec); this is the one place
// that enforces it.
func CheckSuspended(obj v1alpha1.Object) error {
	if !obj.Suspended() {
		return nil
	}
	return &SuspendedError{Object: kinds.Target{Kind: obj.KindName(), Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}
