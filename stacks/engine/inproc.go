package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// State read in-process. Every Pulumi CLI process costs 0.3–0.5 s (process start plus the
// passphrase key derivation), and most of what the engine asked the CLI for around an
// operation is a plain read of an object in the backend: whether the stack exists (`stack
// select`), its checkpoint (`stack export --show-secrets` for the stable credentials, the
// pending operations and the outputs), its tags (`stack tag ls`/`set`), its history head
// (`stack history`). The engine reads (and, for tags, writes) those objects itself through the
// blob library the CLI's DIY backend uses (bucket.go), with the CLI's layout:
//
//	.pulumi/stacks/<project>/<stack>.json[.gz|.zst]     checkpoint {"version":3,"checkpoint":{"latest":…}}
//	.pulumi/stacks/<project>/<stack>.pulumi-tags        {"version":1,"tags":{…}}
//	.pulumi/history/<project>/<stack>/<stack>-<nanos>.history.json
//
// Secrets in a checkpoint are decrypted in Go with the passphrase provider's own crypter
// (config.NewSymmetricCrypterFromPassphrase, salt from the deployment's secrets_providers
// state), the key derived once per engine and salt and kept in memory only. Whatever the engine
// cannot read itself (another backend scheme, another secrets provider, a zstd checkpoint, an
// unknown format version, a wrong passphrase) falls back to the CLI command it replaces, so the
// answer, or the CLI's own error, is the same either way.

// errNotInProcess: the engine cannot answer this read itself; ask the CLI.
var errNotInProcess = errors.New("not readable in-process")

// stackObject is the key of one of a stack's objects beside its checkpoint.
func stackObject(stack, suffix string) string {
	return path.Join(".pulumi", "stacks", ProjectName, stack+suffix)
}

// checkpointSuffixes are the names the DIY backend gives a checkpoint (plain, gzip, zstd).
var checkpointSuffixes = []string{".json", ".json.gz", ".json.zst"}

// stackExists reports whether the stack has a checkpoint (the DIY backend's definition of a
// stack). err is errNotInProcess when the backend cannot be read here.
func (e *Engine) stackExists(ctx context.Context, stack string) (bool, error) {
	key, err := e.checkpointKey(ctx, stack)
	return key != "", err
}

// checkpointKey finds the stack's checkpoint like the CLI's diy backend (stackPath): of the
// plain and compressed names, the most recently written; "" when there is none. Three lookups
// of exact keys, not a listing: a file backend lists a prefix by walking its whole directory,
// which holds every stack, so a listing would make each operation cost more with more stacks.
func (e *Engine) checkpointKey(ctx context.Context, stack string) (string, error) {
	b, err := e.bucket(ctx)
	if err != nil {
		return "", errNotInProcess
	}
	var best string
	var bestMod time.Time
	for _, suffix := range checkpointSuffixes {
		key := stackObject(stack, suffix)
		a, err := b.Attributes(ctx, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue
		}
		if err != nil {
			return "", err
		}
		if best == "" || !a.ModTime.Before(bestMod) {
			best, bestMod = key, a.ModTime
		}
	}
	return best, nil
}

// readDeployment returns the stack's latest deployment as stored (secrets still encrypted):
// exists=false for a missing stack, a nil deployment for a stack never updated.
func (e *Engine) readDeployment(ctx context.Context, stack string) (dep json.RawMessage, exists bool, err error) {
	key, err := e.checkpointKey(ctx, stack)
	if err != nil || key == "" {
		return nil, false, err
	}
	if strings.HasSuffix(key, ".zst") {
		return nil, true, errNotInProcess
	}
	b, _ := e.bucket(ctx)
	body, err := b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, false, nil // removed since the listing
	}
	if err != nil {
		return nil, false, err
	}
	if strings.HasSuffix(key, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, true, err
		}
		if body, err = io.ReadAll(zr); err != nil {
			return nil, true, err
		}
	}
	var cp struct {
		Version    int `json:"version"`
		Checkpoint struct {
			Latest json.RawMessage `json:"latest"`
		} `json:"checkpoint"`
	}
	if err := json.Unmarshal(body, &cp); err != nil {
		return nil, true, fmt.Errorf("read checkpoint: %w", err)
	}
	if cp.Version != 3 {
		return nil, true, errNotInProcess // a format this engine does not know: the CLI does
	}
	if len(cp.Checkpoint.Latest) == 0 || string(cp.Checkpoint.Latest) == "null" {
		return nil, true, nil
	}
	return cp.Checkpoint.Latest, true, nil
}

// secretsProviderOf is the deployment's secrets provider: its type and, for the passphrase
// provider, its salt state ("v1:<salt>:<check>").
func secretsProviderOf(dep json.RawMessage) (typ, salt string) {
	var d struct {
		SecretsProviders struct {
			Type  string `json:"type"`
			State struct {
				Salt string `json:"salt"`
			} `json:"state"`
		} `json:"secrets_providers"`
	}
	if json.Unmarshal(dep, &d) != nil {
		return "", ""
	}
	return d.SecretsProviders.Type, d.SecretsProviders.State.Salt
}

// crypters caches one passphrase crypter per salt: the key derivation (1,000,000 rounds of
// PBKDF2) is what a CLI process spends most of its start on, so it runs once per engine and
// stack. The keys live in this process's memory only.
type crypters struct {
	mu    sync.Mutex
	m     map[string]*crypterEntry
	order []string // the salts in the order their derivations started (reusableSalt)
}

type crypterEntry struct {
	once sync.Once
	c    config.Crypter
	err  error
}

// crypter returns the passphrase crypter for a salt state, checked the way the CLI checks it
// (the state's last part must decrypt to "pulumi"). errNotInProcess when the engine does not
// run the passphrase provider.
func (e *Engine) crypter(salt string) (config.Crypter, error) {
	if e.opts.passphrase == nil || salt == "" {
		return nil, errNotInProcess
	}
	ent := e.crypt.entry(salt)
	ent.once.Do(func() { ent.c, ent.err = passphraseCrypter(*e.opts.passphrase, salt) })
	return ent.c, ent.err
}

// entry is the cache entry of a salt, added (in order) when new.
func (cs *crypters) entry(salt string) *crypterEntry {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[string]*crypterEntry{}
	}
	ent := cs.m[salt]
	if ent == nil {
		ent = &crypterEntry{}
		cs.m[salt] = ent
		cs.order = append(cs.order, salt)
	}
	return ent
}

// reusableSalt is the salt state of a key this engine derived with its passphrase (the first
// that checked out, waiting for a derivation under way), or "" when it has none. A new stack
// gets it (createStack), so its key costs nothing more: the second PBKDF2 of an up from nothing
// (0.3–1.1 s here) is gone. Sharing a salt between stacks of one passphrase loses nothing:
// whoever holds the passphrase opens all of them either way, and every value keeps its own
// random nonce.
func (e *Engine) reusableSalt() string {
	if e.opts.passphrase == nil {
		return ""
	}
	e.crypt.mu.Lock()
	salts := slices.Clone(e.crypt.order)
	e.crypt.mu.Unlock()
	for _, s := range salts {
		if _, err := e.crypter(s); err == nil {
			return s
		}
	}
	return ""
}

// warmKey derives the stack's passphrase key ahead of its use (see Tags). Best effort: any
// failure just leaves the derivation to the read that needs it.
func (e *Engine) warmKey(stack string) {
	if e.opts.passphrase == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, _, err := e.readDeployment(ctx, stack)
	if err != nil || raw == nil {
		return
	}
	if typ, salt := secretsProviderOf(raw); typ == "passphrase" && salt != "" {
		_, _ = e.crypter(salt)
	}
}

// passphraseCrypter is the Pulumi passphrase provider's symmetricCrypterFromPhraseAndState
// (pkg/secrets/passphrase, v3.276.0). A wrong passphrase is errNotInProcess, so the CLI reports
// it in its own words.
func passphraseCrypter(phrase, state string) (config.Crypter, error) {
	parts := strings.SplitN(state, ":", 3)
	if len(parts) != 3 || parts[0] != "v1" {
		return nil, errNotInProcess
	}
	salt, err := base64.StdEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errNotInProcess
	}
	c := config.NewSymmetricCrypterFromPassphrase(phrase, salt)
	if check, err := c.DecryptValue(context.Background(), parts[2]); err != nil || check != "pulumi" {
		return nil, errNotInProcess
	}
	return c, nil
}

// revealDeployment returns the deployment as `stack export --show-secrets` prints it: every
// {sig: secret, ciphertext} becomes {sig: secret, plaintext}. The key is derived only when
// the deployment holds a secret. Numbers keep their literal text.
func (e *Engine) revealDeployment(ctx context.Context, dep json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(dep))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var c config.Crypter
	var walk func(v any) (any, error)
	walk = func(v any) (any, error) {
		switch t := v.(type) {
		case map[string]any:
			if sig, _ := t[secretSig].(string); sig == secretValueSig {
				ct, ok := t["ciphertext"].(string)
				if !ok {
					return t, nil
				}
				if c == nil {
					_, salt := secretsProviderOf(dep)
					var err error
					if c, err = e.crypter(salt); err != nil {
						return nil, err
					}
				}
				pt, err := c.DecryptValue(ctx, ct)
				if err != nil {
					return nil, errNotInProcess // the CLI says what is wrong with it
				}
				return map[string]any{secretSig: sig, "plaintext": pt}, nil
			}
			for k, x := range t {
				r, err := walk(x)
				if err != nil {
					return nil, err
				}
				t[k] = r
			}
		case []any:
			for i, x := range t {
				r, err := walk(x)
				if err != nil {
					return nil, err
				}
				t[i] = r
			}
		}
		return v, nil
	}
	doc, err := walk(doc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// secretValueSig is the signature value that marks a secret (resource.SecretSig).
const secretValueSig = "1b47061264138c4ac30d75fd1eb44270"

// exportRevealed is `stack export --show-secrets`, read in-process when it can be: the
// deployment with secrets decrypted (nil for a stack never updated) and its passphrase salt.
// A missing stack is ErrNotFound.
func (e *Engine) exportRevealed(ctx context.Context, op OpKind, ws auto.Workspace, stack string) (dep json.RawMessage, salt string, err error) {
	raw, exists, err := e.readDeployment(ctx, stack)
	if err == nil && !exists {
		return nil, "", opErr(op, stack, ErrNotFound, "no stack named %q in %s", stack, redactURL(e.opts.BackendURL))
	}
	if err == nil && raw != nil {
		_, salt = secretsProviderOf(raw)
		raw, err = e.revealDeployment(ctx, raw)
	}
	if err == nil {
		return raw, salt, nil
	}
	out, err := ws.ExportStack(ctx, stack)
	if err != nil {
		return nil, "", err
	}
	if len(out.Deployment) > 0 {
		_, salt = secretsProviderOf(out.Deployment)
	}
	return out.Deployment, salt, nil
}

// stackTags reads a stack's tags in-process (ErrNotFound for a missing stack).
func (e *Engine) stackTags(ctx context.Context, op OpKind, stack string) (map[string]string, error) {
	exists, err := e.stackExists(ctx, stack)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, opErr(op, stack, ErrNotFound, "no stack named %q in %s", stack, redactURL(e.opts.BackendURL))
	}
	b, _ := e.bucket(ctx)
	tags, err := readTags(ctx, b, stackObject(stack, tagsSuffix))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return map[string]string{}, nil // no tags file: no tags, as the CLI says
	}
	if err != nil {
		return nil, err
	}
	if tags == nil {
		tags = map[string]string{}
	}
	return tags, nil
}

// setStackTags writes tags into the stack's tags file the way `stack tag set` does (read the
// file, merge, write it whole; the CLI takes no lock for it either), all in one write, and
// returns the tags as written. A managed-by tag already in the file is kept.
func (e *Engine) setStackTags(ctx context.Context, stack string, set map[string]string) (map[string]string, error) {
	b, err := e.bucket(ctx)
	if err != nil {
		return nil, errNotInProcess
	}
	key := stackObject(stack, tagsSuffix)
	tags, err := readTags(ctx, b, key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return nil, err
	}
	if tags == nil {
		tags = map[string]string{}
	}
	for k, v := range set {
		if k == TagManagedBy && tags[k] != "" {
			continue // never changed: another door claimed the stack since it was read
		}
		tags[k] = v
	}
	body, err := json.MarshalIndent(struct {
		Version int               `json:"version"`
		Tags    map[string]string `json:"tags"`
	}{1, tags}, "", "    ")
	if err != nil {
		return nil, err
	}
	if err := b.WriteAll(ctx, key, body, nil); err != nil {
		return nil, err
	}
	return tags, nil
}

// historyInfo is a DIY history entry (backend.UpdateInfo as the CLI writes it).
type historyInfo struct {
	Kind            string            `json:"kind"`
	StartTime       int64             `json:"startTime"`
	Message         string            `json:"message"`
	Environment     map[string]string `json:"environment"`
	Result          string            `json:"result"`
	EndTime         int64             `json:"endTime"`
	Version         int               `json:"version"`
	ResourceChanges map[string]int    `json:"resourceChanges"`
}

// historyHead reads the stack's newest history entries in-process, newest first, until one is
// an update or a destroy (or n were read): what Status needs (the last operation and the
// readiness). ErrNotFound for a missing stack.
func (e *Engine) historyHead(ctx context.Context, op OpKind, stack string, n int) ([]historyInfo, error) {
	exists, err := e.stackExists(ctx, stack)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, opErr(op, stack, ErrNotFound, "no stack named %q in %s", stack, redactURL(e.opts.BackendURL))
	}
	b, _ := e.bucket(ctx)
	dir := path.Join(".pulumi", "history", ProjectName, stack) + "/"
	entries := map[int64]string{}
	it := b.List(&blob.ListOptions{Prefix: dir})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(obj.Key, dir)
		if obj.IsDir || !strings.HasSuffix(name, ".history.json") {
			if strings.Contains(name, ".history.json.") && !strings.HasSuffix(name, ".attrs") {
				return nil, errNotInProcess // compressed history: the CLI reads it
			}
			continue
		}
		if ts, ok := entryTime(name, stack+"-"); ok {
			entries[ts] = obj.Key
		}
	}
	times := slices.Sorted(maps.Keys(entries))
	slices.Reverse(times)
	var out []historyInfo
	for _, ts := range times {
		if len(out) == n {
			break
		}
		body, err := b.ReadAll(ctx, entries[ts])
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue // pruned since the listing
		}
		if err != nil {
			return nil, err
		}
		var h historyInfo
		if err := json.Unmarshal(body, &h); err != nil {
			return nil, fmt.Errorf("read history: %w", err)
		}
		out = append(out, h)
		if h.Kind == "update" || h.Kind == "destroy" {
			break
		}
	}
	return out, nil
}

func (h historyInfo) entry() HistoryEntry {
	he := HistoryEntry{Kind: h.Kind, Result: h.Result, Message: h.Message, Changes: h.ResourceChanges,
		Started: time.Unix(h.StartTime, 0).UTC()}
	if h.EndTime != 0 {
		he.Ended = time.Unix(h.EndTime, 0).UTC()
	}
	return he
}

// summary is the entry as `stack history --json` prints it.
func (h historyInfo) summary() auto.UpdateSummary {
	s := auto.UpdateSummary{Kind: h.Kind, Result: h.Result, Message: h.Message, Environment: h.Environment,
		Version: h.Version, StartTime: time.Unix(h.StartTime, 0).UTC().Format(time.RFC3339)}
	if h.EndTime != 0 {
		end := time.Unix(h.EndTime, 0).UTC().Format(time.RFC3339)
		s.EndTime = &end
	}
	if h.ResourceChanges != nil {
		rc := h.ResourceChanges
		s.ResourceChanges = &rc
	}
	return s
}
