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

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/stackname"
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

// FileSpecStore keeps one JSON file per stack in a directory (by default under the engine's
// state dir). Writes are atomic (temp file + rename) and files are private to the user, like
// the rest of the state dir. With a shared s3:// backend every API replica keeps its own
// records: run one replica, or point them at one shared directory.
type FileSpecStore struct {
	dir string
	mu  sync.Mutex
}

// NewFileSpecStore creates dir when missing.
func NewFileSpecStore(dir string) (*FileSpecStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spec store: %w", err)
	}
	return &FileSpecStore{dir: dir}, nil
}

// path maps a stack name to its file. Stack names never hold a path separator (the engine's
// naming rules), which ValidateStackName checks again so no name can leave the directory.
func (s *FileSpecStore) path(stack string) (string, error) {
	if err := stackname.Validate(stack); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, stack+".json"), nil
}

// Get reads a record.
func (s *FileSpecStore) Get(_ context.Context, stack string) (*Record, error) {
	p, err := s.path(stack)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &NotFoundError{What: "record of stack " + stack}
	}
	if err != nil {
		return nil, fmt.Errorf("spec store: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("spec store: %s: %w", p, err)
	}
	return &rec, nil
}

// Put writes a record atomically.
func (s *FileSpecStore) Put(_ context.Context, rec *Record) error {
	p, err := s.path(rec.Stack)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tmp, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("spec store: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("spec store: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("spec store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("spec store: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("spec store: %w", err)
	}
	return nil
}

// Delete removes a record.
func (s *FileSpecStore) Delete(_ context.Context, stack string) error {
	p, err := s.path(stack)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("spec store: %w", err)
	}
	return nil
}

// List reads the records under a stack-name prefix.
func (s *FileSpecStore) List(ctx context.Context, prefix string) ([]Record, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("spec store: %w", err)
	}
	var out []Record
	for _, e := range entries {
		stack, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || !strings.HasPrefix(stack, prefix) || strings.HasPrefix(stack, ".") {
			continue
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

// MemorySpecStore keeps records in memory: for tests, and for a server whose records may be
// lost on restart.
type MemorySpecStore struct {
	mu   sync.Mutex
	recs map[string]Record
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
