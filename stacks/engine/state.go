package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
)

// ManagedResource is one custom resource in a stack's state.
type ManagedResource struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Resources lists the custom resources a stack's state manages (its type and provider ID: a
// Kubernetes object's "namespace/name", or "name" for a cluster-scoped one). A stack that does
// not exist manages nothing. One CLI process.
func (e *Engine) Resources(ctx context.Context, stack string) ([]ManagedResource, error) {
	var out []ManagedResource
	collect := func(dep json.RawMessage) error {
		if len(dep) == 0 {
			return nil
		}
		var doc stateDoc
		if err := json.Unmarshal(dep, &doc); err != nil {
			return err
		}
		for _, r := range doc.Resources {
			if r.Custom && !r.Delete {
				out = append(out, ManagedResource{Type: r.Type, ID: r.ID})
			}
		}
		return nil
	}
	// In-process first: type and ID need no decryption.
	done, err := e.inProcess(ctx, OpOutputs, stack, func() error {
		dep, _, err := e.readDeployment(ctx, stack)
		if err != nil {
			return err
		}
		return collect(dep)
	})
	if !done {
		err = e.readOp(ctx, OpOutputs, stack, func(ws auto.Workspace) error {
			dep, err := ws.ExportStack(ctx, stack)
			if err != nil {
				return err
			}
			return collect(dep.Deployment)
		})
	}
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return out, err
}
