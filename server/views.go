package server

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/fleet"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// The JSON views of resources and operations and what builds them. Apart from the handlers
// and the registry so that what a response shows is in one file, to be read against
// openapi.json's schemas when a field changes.

// ResourceView is the JSON of one resource: the CR document the API was sent (secret values
// redacted) and a status read from its stack, whichever door made it.
type ResourceView struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   ResourceMeta    `json:"metadata"`
	Spec       json.RawMessage `json:"spec,omitempty"`
	Status     ResourceStatus  `json:"status"`
}

// ResourceMeta is a resource's metadata.
type ResourceMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Generation counts the changes accepted by this API (0: the API holds no spec).
	Generation        int64      `json:"generation,omitempty"`
	CreationTimestamp *time.Time `json:"creationTimestamp,omitempty"`
}

// ResourceStatus is read from the resource's stack and this server's operations.
type ResourceStatus struct {
	Stack       string `json:"stack"`
	SharedStack string `json:"sharedStack,omitempty"`
	// Exists: the stack is in the backend (false before the first up got far enough).
	Exists bool `json:"exists"`
	// Ready: the stack's most recent update succeeded (what children wait for).
	Ready     bool   `json:"ready"`
	ManagedBy string `json:"managedBy,omitempty"`
	// LastUpdate is the stack's most recent recorded operation, from any door.
	LastUpdate *engine.HistoryEntry `json:"lastUpdate,omitempty"`
	// Operation is this server's most recent operation on the resource.
	Operation *OperationSummary `json:"operation,omitempty"`
	// Outputs are the stack outputs, secret values RedactedValue (GET of one resource only).
	Outputs map[string]any `json:"outputs,omitempty"`
	// SpecRedacted: the spec had secret values, shown as RedactedValue.
	SpecRedacted bool `json:"specRedacted,omitempty"`
	// Revision is the program revision of the stack's last successful up, from any door
	// (stacks/revision.go); absent before one by a build that records it.
	Revision *v1alpha1.Revision `json:"revision,omitempty"`
}

// OperationSummary links an operation.
type OperationSummary struct {
	ID    string         `json:"id"`
	Kind  OperationKind  `json:"kind"`
	State OperationState `json:"state"`
	Href  string         `json:"href"`
}

// ResourceList is one page of a collection.
type ResourceList struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   ListMeta       `json:"metadata"`
	Items      []ResourceView `json:"items"`
}

// ListMeta carries the continue token of the next page ("" on the last one).
type ListMeta struct {
	Continue string `json:"continue,omitempty"`
}

// view builds a resource's JSON (without outputs).
func (s *Server) view(ctx context.Context, r ref, stack string, rec *Record, st *engine.StackStatus) (*ResourceView, error) {
	v := &ResourceView{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: string(r.k.kind),
		Metadata: ResourceMeta{Name: r.name, Namespace: r.namespace},
		Status:   ResourceStatus{Stack: stack},
	}
	if rec != nil {
		var doc struct {
			Metadata objectMeta      `json:"metadata"`
			Spec     json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal(rec.Document, &doc); err != nil {
			return nil, fmt.Errorf("stored record of %s is unreadable: %w", stack, err)
		}
		created := rec.Created
		v.Metadata.Labels, v.Metadata.Annotations = doc.Metadata.Labels, doc.Metadata.Annotations
		v.Metadata.Generation, v.Metadata.CreationTimestamp = rec.Generation, &created
		v.Spec, v.Status.SpecRedacted = doc.Spec, rec.Redacted
		if obj, err := r.k.fromRecord(rec); err == nil {
			if t, err := kinds.TargetOf(obj); err == nil {
				v.Status.SharedStack = t.Shared
			}
		}
	}
	if st != nil {
		v.Status.Exists, v.Status.Ready = true, st.Ready
		v.Status.ManagedBy, v.Status.LastUpdate = string(st.ManagedBy), st.Last
		if sh := st.Tags[engine.TagShared]; sh != "" {
			v.Status.SharedStack = sh
		}
		v.Status.Revision = stacks.RevisionFromTags(st.Tags)
	}
	if op := s.ops.latestFor(ctx, stack); op != nil {
		ov := op.view()
		v.Status.Operation = &OperationSummary{ID: ov.ID, Kind: ov.Kind, State: ov.State, Href: ov.Links.Self}
	}
	return v, nil
}

// ResourceRef names an operation's resource.
type ResourceRef struct {
	Kind      v1alpha1.Kind `json:"kind"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name"`
	Href      string        `json:"href"`
}

// OperationResult is what a finished operation did. On failure it holds what was done before
// the failure.
type OperationResult struct {
	// Changes is the structured diff of what was applied.
	Changes *diff.Report `json:"changes,omitempty"`
	// Outputs are the resource's stack outputs after an up; secret values are RedactedValue.
	Outputs map[string]any `json:"outputs,omitempty"`
	// Fleet is a fleet preview's report (fleet.go).
	Fleet *fleet.Report `json:"fleet,omitempty"`
}

// OperationLinks are the operation's URLs.
type OperationLinks struct {
	Self     string `json:"self"`
	Events   string `json:"events"`
	Cancel   string `json:"cancel"`
	Resource string `json:"resource"`
}

// OperationView is the JSON form of an operation.
type OperationView struct {
	ID              string           `json:"id"`
	Kind            OperationKind    `json:"kind"`
	State           OperationState   `json:"state"`
	Resource        ResourceRef      `json:"resource"`
	Stacks          []string         `json:"stacks"`
	CreatedAt       time.Time        `json:"createdAt"`
	StartedAt       time.Time        `json:"startedAt,omitzero"`
	EndedAt         time.Time        `json:"endedAt,omitzero"`
	CancelRequested bool             `json:"cancelRequested,omitempty"`
	Events          int64            `json:"events"`
	Result          *OperationResult `json:"result,omitempty"`
	Error           *Problem         `json:"error,omitempty"`
	// Plan is the saved plan the operation waits on (awaiting-approval) or applied.
	Plan  *OperationPlan `json:"plan,omitempty"`
	Links OperationLinks `json:"links"`
}

// view snapshots the operation.
func (o *Operation) view() OperationView {
	o.mu.Lock()
	defer o.mu.Unlock()
	self := operationPath(o.id)
	return OperationView{
		ID: o.id, Kind: o.kind, State: o.state, Resource: o.resource, Stacks: append([]string(nil), o.stacks...),
		CreatedAt: o.created, StartedAt: o.started, EndedAt: o.ended, CancelRequested: o.cancelRequested,
		Events: o.nextSeq - 1, Result: o.result, Error: o.problem, Plan: o.plan,
		Links: OperationLinks{Self: self, Events: self + "/events", Cancel: self + "/cancel", Resource: o.resource.Href},
	}
}

// redactOutputs turns stack outputs into response values, secrets replaced.
func redactOutputs(outs program.Outputs) map[string]any {
	m := make(map[string]any, len(outs))
	for k, o := range outs {
		if o.Secret {
			m[k] = RedactedValue
			continue
		}
		m[k] = o.Value
	}
	return m
}
