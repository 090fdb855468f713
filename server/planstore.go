package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/stackname"
)

// PendingPlan is a resource's saved plan waiting to be applied (POST …/{name}/apply): the
// plans the engine keeps beside each stack (engine.StorePlan) and what the API needs to apply
// them later, on any replica. A resource has at most one; a newer save replaces it.
//
// The engine plans hold Pulumi's plan (secrets as ciphertext of the stack's provider); this
// record holds the document the plan was taken for with secret values redacted, as the spec
// store does. A plan of a document with secret values is therefore applied by sending the
// document again (its spec digest must be the plan's).
type PendingPlan struct {
	// ID is the plan id clients see: the resource's own stack's plan id.
	ID    string `json:"id"`
	Stack string `json:"stack"`
	// Plans are the engine plan ids by stack, the own stack's (ID) included; a personal
	// tenant's shared stack has its own plan, applied with it.
	Plans map[string]string `json:"plans"`
	// Reason the plan waits: Manual, DataLoss (spec.approval) or Requested (preview?save=true).
	Reason string `json:"reason"`
	// Document the plan was taken for (secrets redacted) and whether it had any.
	Document json.RawMessage `json:"document"`
	Redacted bool            `json:"redacted,omitempty"`
	// Generation of the stored spec when the plan was taken (0: none). A PUT since makes the
	// plan stale: its apply is refused.
	Generation int64 `json:"generation"`
	// Changes counts the planned changes by op; DataLoss lists "<op> <type> <name>" of the
	// changes that destroy data. Names and types only, never values.
	Changes  map[engine.StepOp]int `json:"changes,omitempty"`
	DataLoss []string              `json:"dataLoss,omitempty"`
	// Operation is the operation that saved the plan (a gated PUT), "" for a preview.
	Operation string    `json:"operation,omitempty"`
	Created   time.Time `json:"created"`
}

// PlanStore keeps the pending plan of each resource by its own stack. A SpecStore that also
// implements it (both of this package's do) keeps the pending plans beside the specs, so every
// replica that shares the specs shares the plans; any other SpecStore gets an in-memory one.
type PlanStore interface {
	// GetPlan returns the stack's pending plan, or an error matching ErrNotFound.
	GetPlan(ctx context.Context, stack string) (*PendingPlan, error)
	PutPlan(ctx context.Context, p *PendingPlan) error
	// DeletePlan removes the stack's pending plan; a missing one is not an error.
	DeletePlan(ctx context.Context, stack string) error
}

var (
	_ PlanStore = (*MemorySpecStore)(nil)
	_ PlanStore = (*BackendSpecStore)(nil)
)

// memoryPlans is the in-memory PlanStore.
type memoryPlans struct {
	mu    sync.Mutex
	plans map[string]PendingPlan
}

func (m *memoryPlans) GetPlan(_ context.Context, stack string) (*PendingPlan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.plans[stack]
	if !ok {
		return nil, &NotFoundError{What: "pending plan of stack " + stack}
	}
	return &p, nil
}

func (m *memoryPlans) PutPlan(_ context.Context, p *PendingPlan) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.plans == nil {
		m.plans = map[string]PendingPlan{}
	}
	m.plans[p.Stack] = *p
	return nil
}

func (m *memoryPlans) DeletePlan(_ context.Context, stack string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.plans, stack)
	return nil
}

// GetPlan, PutPlan and DeletePlan make the memory store a PlanStore too.
func (m *MemorySpecStore) GetPlan(ctx context.Context, stack string) (*PendingPlan, error) {
	return m.pending.GetPlan(ctx, stack)
}

func (m *MemorySpecStore) PutPlan(ctx context.Context, p *PendingPlan) error {
	return m.pending.PutPlan(ctx, p)
}

func (m *MemorySpecStore) DeletePlan(ctx context.Context, stack string) error {
	return m.pending.DeletePlan(ctx, stack)
}

// pendingPrefix holds one pending plan per stack: tfrs/api/pending-plans/<stack>.json.
const pendingPrefix = apiPrefix + "pending-plans/"

func pendingKey(stack string) (string, error) {
	if err := stackname.Validate(stack); err != nil {
		return "", err
	}
	return pendingPrefix + stack + ".json", nil
}

// GetPlan reads a stack's pending plan from the backend.
func (s *BackendSpecStore) GetPlan(ctx context.Context, stack string) (*PendingPlan, error) {
	key, err := pendingKey(stack)
	if err != nil {
		return nil, err
	}
	b, err := s.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, &NotFoundError{What: "pending plan of stack " + stack}
	}
	if err != nil {
		return nil, fmt.Errorf("plan store: %w", err)
	}
	var p PendingPlan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("plan store: %s: %w", key, err)
	}
	return &p, nil
}

// PutPlan writes a stack's pending plan whole.
func (s *BackendSpecStore) PutPlan(ctx context.Context, p *PendingPlan) error {
	key, err := pendingKey(p.Stack)
	if err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := s.b.WriteAll(ctx, key, b, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("plan store: %w", err)
	}
	return nil
}

// DeletePlan removes a stack's pending plan.
func (s *BackendSpecStore) DeletePlan(ctx context.Context, stack string) error {
	key, err := pendingKey(stack)
	if err != nil {
		return err
	}
	if err := s.b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("plan store: %w", err)
	}
	return nil
}
