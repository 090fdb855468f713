package server

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// TestDeadlineProblem: an operation the engine ended at its deadline is a 504 that names the
// kind and the deadline, not a request timeout and not a cancellation (409).
func TestDeadlineProblem(t *testing.T) {
	err := errors.Join(&engine.OpError{Op: engine.OpUp, Stack: "tenant.ns.x", Kind: engine.ErrDeadline,
		Detail: "up ran longer than its deadline of 30m0s and was canceled (set with --deadline up=<duration>)"})
	p, internal := problemOf(err)
	require.False(t, internal)
	require.Equal(t, http.StatusGatewayTimeout, p.Status)
	require.Equal(t, problemTypeBase+"deadline-exceeded", p.Type)
	require.Contains(t, p.Detail, "deadline of 30m0s")

	p, _ = problemOf(&engine.OpError{Op: engine.OpUp, Stack: "tenant.ns.x", Kind: engine.ErrCanceled})
	require.Equal(t, http.StatusConflict, p.Status, "a cancellation stays a 409")
	p, _ = problemOf(context.DeadlineExceeded)
	require.Equal(t, problemTypeBase+"timeout", p.Type, "a request's own timeout stays what it was")
}
