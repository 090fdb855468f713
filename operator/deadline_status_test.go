package operator

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestDeadlineIsAFailure: an operation the engine ended at its deadline is a failure retried
// with backoff, not a cancellation (which decide() re-runs at once: a never-ending up would
// then take its slot for another full deadline, again and again).
func TestDeadlineIsAFailure(t *testing.T) {
	err := &engine.OpError{Op: engine.OpUp, Stack: "tenant.ns.x", Kind: engine.ErrDeadline, Detail: "up ran longer than its deadline of 30m0s"}
	require.False(t, canceled(err))
	f := classify(err)
	require.Equal(t, v1alpha1.ReasonUpdateFailed, f.reason)
	require.True(t, f.backoff)
	require.True(t, canceled(&engine.OpError{Op: engine.OpUp, Kind: engine.ErrCanceled}), "a cancellation stays one")
}
