package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
)

// apiPrefix is where the API keeps its own objects in the state backend, beside Pulumi's
// `.pulumi/` tree and the engine's `tfrs/lockowners/`: one backend, so every replica that
// shares the stacks shares the specs and operations too.
const apiPrefix = "tfrs/api/"

// specPrefix holds one record per stack: tfrs/api/specs/<stack>.json. Flat keys, so a List by
// stack-name prefix is one listing of exactly the matching keys.
const specPrefix = apiPrefix + "specs/"

// BackendSpecStore keeps records in the state backend (a file:// directory or an S3 bucket,
// opened by the engine: engine.(*Engine).Bucket). Each write replaces one object whole (an
// atomic rename on files, a single PUT on S3), so a reader on any replica sees the old record
// or the new one, never a torn one. Two replicas that PUT the same resource at once race as two
// kubectl applies without resourceVersion would: the last write wins, and the engine's stack
// ownership and backend lock still order what runs.
type BackendSpecStore struct{ b *blob.Bucket }

// NewBackendSpecStore keeps records in b (which the caller keeps open).
func NewBackendSpecStore(b *blob.Bucket) *BackendSpecStore { return &BackendSpecStore{b: b} }

// key maps a stack name to its object. Stack names never hold a separator or a dot-dot path
// (stackname.Validate), so no name reaches outside the prefix.
func specKey(stack string) (string, error) {
	if err := stackname.Validate(stack); err != nil {
		return "", err
	}
	return specPrefix + stack + ".json", nil
}

// Get reads a record.
func (s *BackendSpecStore) Get(ctx context.Context, stack string) (*Record, error) {
	key, err := specKey(stack)
	if err != nil {
		return nil, err
	}
	b, err := s.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, &NotFoundError{What: "record of stack " + stack}
	}
	if err != nil {
		return nil, fmt.Errorf("spec store: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("spec store: %s: %w", key, err)
	}
	return &rec, nil
}

// Put writes a record whole.
func (s *BackendSpecStore) Put(ctx context.Context, rec *Record) error {
	key, err := specKey(rec.Stack)
	if err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := s.b.WriteAll(ctx, key, b, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("spec store: %w", err)
	}
	return nil
}

// Delete removes a record; a missing one is fine.
func (s *BackendSpecStore) Delete(ctx context.Context, stack string) error {
	key, err := specKey(stack)
	if err != nil {
		return err
	}
	if err := s.b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("spec store: %w", err)
	}
	return nil
}

// List reads the records whose stack name starts with prefix: one listing of the matching
// keys, then one read each.
func (s *BackendSpecStore) List(ctx context.Context, prefix string) ([]Record, error) {
	if strings.ContainsAny(prefix, "/\\") {
		return nil, fmt.Errorf("spec store: list prefix %q holds a path separator", prefix)
	}
	var out []Record
	it := s.b.List(&blob.ListOptions{Prefix: specPrefix + prefix})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("spec store: %w", err)
		}
		stack, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, specPrefix), ".json")
		if !ok || obj.IsDir || stackname.Validate(stack) != nil {
			continue // a writer's temporary file, or something that is not ours
		}
		rec, err := s.Get(ctx, stack)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Stack < out[j].Stack })
	return out, nil
}
