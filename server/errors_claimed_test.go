package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// A stack that belongs to another object is a 409 naming metadata.name, never a 500.
func TestStackClaimedIsAConflict(t *testing.T) {
	err := fmt.Errorf("up: %w", &runner.StackClaimedError{Stack: "tenant.x-0123456789", Object: "TFRTenant/a/b", Owner: "TFRTenant/a/c", Name: "b"})
	p, internal := problemOf(err)
	if internal || p.Status != http.StatusConflict || len(p.Errors) != 1 || p.Errors[0].Field != "metadata.name" {
		t.Fatalf("problem %+v internal %v", p, internal)
	}
}
