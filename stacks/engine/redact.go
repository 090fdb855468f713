package engine

import (
	"encoding/base64"
	"sort"
	"strings"
	"sync"

	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// redacted is the one placeholder for a secret, in messages and in printed outputs.
const redacted = program.Redacted

// redactor scrubs known secret values (the passphrase, secret config, generated credentials)
// from every message the engine hands out. Pulumi already masks secrets it knows about; this
// catches the ones that leak through provider error texts or program panics. Base64 forms are
// scrubbed too because Kubernetes Secret data is base64.
type redactor struct {
	mu     sync.RWMutex
	values map[string]struct{}
	sorted []string // longest first, so a secret containing another is replaced whole
}

func newRedactor(parent *redactor) *redactor {
	r := &redactor{values: map[string]struct{}{}}
	if parent != nil {
		parent.mu.RLock()
		for v := range parent.values {
			r.values[v] = struct{}{}
		}
		parent.mu.RUnlock()
		r.resort()
	}
	return r
}

// add registers secret values. Very short values are ignored: replacing "a" everywhere would
// destroy messages without protecting anything.
func (r *redactor) add(vals ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range vals {
		if len(v) < 4 {
			continue
		}
		r.values[v] = struct{}{}
		r.values[base64.StdEncoding.EncodeToString([]byte(v))] = struct{}{}
	}
	r.resortLocked()
}

func (r *redactor) resort() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resortLocked()
}

func (r *redactor) resortLocked() {
	r.sorted = r.sorted[:0]
	for v := range r.values {
		r.sorted = append(r.sorted, v)
	}
	sort.Slice(r.sorted, func(i, j int) bool { return len(r.sorted[i]) > len(r.sorted[j]) })
}

func (r *redactor) redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.sorted {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	return s
}
