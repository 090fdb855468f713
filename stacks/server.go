package stacks

// Placeholder with the contract of the server program, so the packages that call it
// compile while the program is written (helper owning issue #6 replaces this file).

import (
	"errors"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// ServerInput is what the server program takes.
type ServerInput struct {
	Server *v1alpha1.TFRServer
	Tenant TenantOutputs
	Graph  *Graph
}

// Server is the server stack's program.
func Server(in ServerInput) pulumi.RunFunc {
	return func(*pulumi.Context) error { return errors.New("server program: not written yet") }
}
