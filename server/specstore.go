package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Record is what the API keeps of an object sent to it: the document (apiVersion, kind,
// metadata, defaulted spec) with secret values replaced by RedactedValue. A stack holds what
// was deployed, not the spec it came from, and an object whose first up failed has no stack
// at all, yet a later PUT must be checked against the spec it replaces (ValidateUpdate) and a
// DELETE must know the spec to find every stack of the object; the record is that memory.
type Record struct {
	Kind      v1alpha1.Kind `json:"kind"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name"`
	Stack     string        `json:"stack"`
	// Parent is the parent object's name (a server's tenant, a tenant's cluster).
	Parent   string          `json:"parent,omitempty"`
	Document json.RawMessage `json:"document"`
	// Redacted: the document had secret values (a server's secretData, a registry password),
	// now replaced; it cannot be re-applied as is.
	Redacted bool `json:"redacted,omitempty"`
	// Generation counts accepted changes (1 on create).
	Generation int64     `json:"generation"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
}

// SpecStore keeps Records by stack name. Implementations are safe for concurrent use.
type SpecStore interface {
	// Get returns the record of a stack, or an error matching ErrNotFound.
	Get(ctx context.Context, stack string) (*Record, error)
	Put(ctx context.Context, rec *Record) error
	// Delete removes a record; a missing one is not an error.
	Delete(ctx context.Context, stack string) error
	// List returns the records whose stack name starts with prefix, sorted by stack name.
	List(ctx context.Context, prefix string) ([]Record, error)
}

// ImportLegacySpecs moves the records of an older `tfrs serve` (one JSON file per stack in
// a local directory, <state-dir>/api/specs) into to, once: a record already in to is newer and
// kept, and the directory is renamed to <dir>.imported afterwards so it is never read again. A
// missing directory imports nothing.
func ImportLegacySpecs(ctx context.Context, dir string, to SpecStore) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("legacy specs: %w", err)
	}
	n := 0
	for _, e := range entries {
		stack, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || stackname.Validate(stack) != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return n, fmt.Errorf("legacy specs: %w", err)
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil || rec.Stack != stack {
			return n, fmt.Errorf("legacy specs: %s: not a record of stack %s", e.Name(), stack)
		}
		if _, err := to.Get(ctx, stack); err == nil {
			continue
		} else if !errors.Is(err, ErrNotFound) {
			return n, err
		}
		if err := to.Put(ctx, &rec); err != nil {
			return n, err
		}
		n++
	}
	if err := os.Rename(dir, dir+".imported"); err != nil {
		return n, fmt.Errorf("legacy specs: %w", err)
	}
	return n, nil
}

// MemorySpecStore keeps records in memory: for tests, and for a server whose records may be
// lost on restart.
type MemorySpecStore struct {
	mu      sync.Mutex
	recs    map[string]Record
	pending memoryPlans // the pending plans' bucket (planstore.go)
}

// NewMemorySpecStore returns an empty store.
func NewMemorySpecStore() *MemorySpecStore { return &MemorySpecStore{recs: map[string]Record{}} }

// Get returns a copy of a record.
func (m *MemorySpecStore) Get(_ context.Context, stack string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[stack]
	if !ok {
		return nil, &NotFoundError{What: "record of stack " + stack}
	}
	return &rec, nil
}

// Put stores a copy of a record.
func (m *MemorySpecStore) Put(_ context.Context, rec *Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[rec.Stack] = *rec
	return nil
}

// Delete drops a record.
func (m *MemorySpecStore) Delete(_ context.Context, stack string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, stack)
	return nil
}

// List returns the records under a prefix.
func (m *MemorySpecStore) List(_ context.Context, prefix string) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for k, v := range m.recs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Stack < out[j].Stack })
	return out, nil
}
