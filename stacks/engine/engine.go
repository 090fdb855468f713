package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ProjectName is the one Pulumi project every tfrs stack belongs to.
const ProjectName = "tfrs"

// TagManagedBy is the stack tag recording which door created a stack.
const TagManagedBy = "tfrs.io/managed-by"

// TagParent names the stack a stack depends on (a tenant's cluster stack, a server's tenant
// stack); TagShared, on a personal tenant's stack, its job type's shared stack. Callers set
// them through Request.Tags so that a parent can find its dependents from the backend alone,
// whichever door created them.
const (
	TagParent = "tfrs.io/parent"
	TagShared = "tfrs.io/shared"
	// TagObject is the full identity ("<Kind>/<namespace>/<name>") of the object whose own
	// stack this is; the runner refuses any other object's operation on it (a shortened stack
	// name is a hash, so two objects' names could be made to map to one stack).
	TagObject = "tfrs.io/object"
	// TagImmutable records, on an object's own stack, the fields of the object that may never
	// change (stacks/kinds.Immutable), so every door refuses a change of them alike.
	TagImmutable = "tfrs.io/immutable"
)

// ManagedBy names the door that created a stack. The HTTP API refuses to mutate stacks the
// operator manages (their source of truth is a CR).
type ManagedBy string

const (
	ManagedByOperator ManagedBy = "operator"
	ManagedByAPI      ManagedBy = "api"
	ManagedByCLI      ManagedBy = "cli"
)

// ConfigValue is one stack config value. Keys without a namespace get "tfrs:".
type ConfigValue struct {
	Value  string
	Secret bool
}

// Decision resolves an interrupted create of a data-bearing object.
type Decision string

const (
	// DecisionAdopt takes the object into the stack if it exists (a refresh follows, so a
	// missing object simply drops out and is created by the next up).
	DecisionAdopt Decision = "adopt"
	// DecisionForget drops the interrupted create from the stack and leaves whatever exists in
	// the cluster untouched and unmanaged.
	DecisionForget Decision = "forget"
)

// Request is one operation on one stack.
type Request struct {
	// Stack is the stack name (see package stackname).
	Stack string
	// Program is the inline Pulumi program. Required for Up and Preview; Refresh and Destroy
	// run without it when nil (neither runs the program).
	Program pulumi.RunFunc
	// ManagedBy is recorded as the stack's tfrs.io/managed-by tag when the stack is created
	// (or has no tag yet). It is never overwritten.
	ManagedBy ManagedBy
	// Tags are further stack tags (e.g. TagParent) written by Up alongside ManagedBy, once per
	// engine and stack; a tag whose value differs is updated.
	Tags map[string]string
	// AppliedTags are written by an Up once it has succeeded (a failed or canceled one writes
	// none): what applied the stack last, such as the program revision (stacks/revision.go).
	AppliedTags map[string]string
	// StateTags name tags that describe the stack's state as its last up left it: a Refresh
	// that changes the state, or fails (it may have changed part of it), empties them.
	StateTags []string
	// Config is stack config (e.g. provider settings), written before the operation.
	Config map[string]ConfigValue
	// Env is added to the CLI's and the providers' environment for this operation.
	Env map[string]string
	// Sink receives progress events; nil discards them.
	Sink Sink
	// Rotate names generated credentials (see Credential) to regenerate in this run.
	Rotate []string
	// Decisions resolve interrupted creates of data-bearing objects, by URN.
	Decisions map[string]Decision
	// Message is recorded in the stack history.
	Message string
	// Admit, when set, is called by Up with the stack's tags once its owner is settled (see
	// ensureTags: the managed-by claim), before any other tag is written and before anything
	// runs. An error refuses the operation with that very error; the stack is left as it was.
	// The runner passes the door, identity and immutable-field rules here, so they are
	// checked against the owner that won a race, not the one read before it.
	Admit func(tags map[string]string) error
	// SavePlan, on a Preview, also saves Pulumi's update plan of the previewed changes and
	// returns it in Result.Plan (see plans.go). The preview then runs on the real stack,
	// creating its empty record (owner and tags, as an Up would) when it does not exist yet.
	SavePlan bool
	// PlanMeta is stored with a saved plan (and part of its id).
	PlanMeta map[string]string
	// Plan, on an Up, applies exactly this saved plan: a step it does not contain fails the
	// Up with ErrPlanMismatch before it runs. The credentials the plan was taken with are
	// used (Rotate is ignored: a rotation was planned, and its values travel in the plan).
	Plan *Plan

	// generated records the credentials a plan preview creates (set by Preview).
	generated *credentialLog
}

// credentialLog collects name → value of the credentials one run generated.
type credentialLog struct {
	mu     sync.Mutex
	values map[string]string
}

func (l *credentialLog) record(name, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.values == nil {
		l.values = map[string]string{}
	}
	l.values[name] = value
}

func (l *credentialLog) snapshot() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.values)
}

// Engine runs stack operations. It is safe for concurrent use; create one per process.
type Engine struct {
	opts     *resolved
	cli      *pulumiCLI
	project  workspace.Project
	workRoot string
	red      *redactor

	mu      sync.Mutex
	slots   map[string]*slot
	readWS  auto.Workspace
	fair    *fairQueue // the global and per-share slots (fairshare.go)
	closed  chan struct{}
	running sync.WaitGroup
	once    sync.Once

	bucketState          // the backend opened in-process (bucket.go)
	crypt       crypters // passphrase keys, one per salt (inproc.go)
}

// New validates options, finds the tools and checks the CLI. It fails with ErrToolsMissing
// (naming `make tools`) when the Pulumi CLI or the Kubernetes provider is missing, and with
// ErrNoPassphrase when secrets would be unprotected.
func New(ctx context.Context, o Options) (*Engine, error) {
	r, err := resolveOptions(o)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		opts:   r,
		red:    newRedactor(nil),
		slots:  map[string]*slot{},
		fair:   newFairQueue(r.MaxConcurrent, r.MaxPerNamespace),
		closed: make(chan struct{}),
	}
	if r.passphrase != nil {
		e.red.add(*r.passphrase)
	}
	base := r.baseEnv()
	if e.cli, err = newPulumiCLI(ctx, r.pulumiBin, r.CancelGrace, func() map[string]string { return base }, r.StateDir); err != nil {
		return nil, err
	}
	e.cli.onLockingStart, e.cli.fence = e.recordOwner, r.Fence
	workBase := filepath.Join(r.StateDir, "work")
	if err := os.MkdirAll(workBase, 0o700); err != nil {
		return nil, fmt.Errorf("create work dir: %w", err)
	}
	if e.workRoot, err = os.MkdirTemp(workBase, "engine-"); err != nil {
		return nil, fmt.Errorf("create work dir: %w", err)
	}
	e.project = workspace.Project{
		Name:    tokens.PackageName(ProjectName),
		Runtime: workspace.NewProjectRuntimeInfo("go", nil),
		Main:    e.workRoot,
		// The provider is a project plugin with a path, so the CLI loads our build and never
		// looks for (or downloads) one of its own. No version: it matches whatever version the
		// SDK asks for, which is the one the tools build stamps anyway.
		Plugins: &workspace.Plugins{Providers: []workspace.PluginOptions{{
			Name: "kubernetes",
			Path: filepath.Dir(r.providerBin),
		}}},
	}
	return e, nil
}

// Close waits for running operations and removes scratch workspaces. State is untouched.
func (e *Engine) Close() error {
	e.once.Do(func() { close(e.closed) })
	e.running.Wait()
	if e.bkt != nil {
		_ = e.bkt.Close()
	}
	return os.RemoveAll(e.workRoot)
}

// BackendURL is the resolved state backend.
func (e *Engine) BackendURL() string { return e.opts.BackendURL }

// Stats reports CLI usage (processes and wall time) since New.
func (e *Engine) Stats() Stats {
	return Stats{CLICalls: e.cli.calls.Load(), CLITime: timeDuration(e.cli.nanos.Load())}
}

// stackWorkspace is a stack's cached Automation API workspace: selecting a stack costs a CLI
// process, so it is done once per engine and stack.
type stackWorkspace struct {
	ws      auto.Workspace
	st      auto.Stack
	up      auto.Stack // st through upWorkspace, for Up only
	envKeys []string
	config  string // fingerprint of the last config written
	// tags: the stack's tags as last read or written (nil until read; empty for a stack
	// created here).
	tags map[string]string
	// fresh: this engine created the stack and no operation has read it since (see preflight).
	fresh bool
	// created: this engine's `stack init` made the stack, so the managed-by claim is its own
	// (see ensureTags).
	created bool
	// scratch: a throwaway workspace on a backend of its own (scratch.go): the engine's
	// in-process reads of the real backend do not apply to it.
	scratch bool
	// salt is the passphrase provider's salt state of the stack as last read from its state
	// or stack file; secret config is encrypted with it in-process (writeConfig).
	salt string
}

// open returns the stack's workspace, selecting or (when create) creating the stack.
func (e *Engine) open(ctx context.Context, op OpKind, s *slot, name string, create bool, by ManagedBy, tags map[string]string, admit func(map[string]string) error) (*stackWorkspace, error) {
	if s.ws == nil {
		sw, err := e.openWorkspace(ctx, op, name, create)
		if err != nil {
			return nil, err
		}
		s.ws = sw
	}
	if err := e.ensureTags(ctx, op, s.ws, name, by, tags, admit); err != nil {
		// The cached workspace outlives this call: a later operation must read the state.
		s.ws.fresh = false
		return nil, err
	}
	return s.ws, nil
}

func (e *Engine) openWorkspace(ctx context.Context, op OpKind, name string, create bool) (*stackWorkspace, error) {
	dir := filepath.Join(e.workRoot, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ws, err := auto.NewLocalWorkspace(ctx,
		auto.WorkDir(dir),
		auto.Pulumi(e.cli),
		auto.Project(e.project),
		auto.SecretsProvider(e.opts.SecretsProvider),
	)
	if err != nil {
		return nil, classify(ctx, op, name, err, e.red, nil)
	}
	created := false
	// Whether the stack exists is one listing of the backend (inproc.go), not a `stack select`
	// process; every command names the stack with --stack, so nothing needs it selected.
	var st auto.Stack
	lws, local := ws.(*auto.LocalWorkspace)
	exists, err := e.stackExists(ctx, name)
	switch {
	case err == nil && local && exists:
		st, err = auto.SelectStack(ctx, name, selectedWorkspace{lws})
	case err == nil && !exists && !create:
		return nil, opErr(op, name, ErrNotFound, "no stack named %q in %s", name, redactURL(e.opts.BackendURL))
	case err == nil && !exists:
		st, created, err = e.initStack(ctx, name, ws)
	default:
		st, err = auto.SelectStack(ctx, name, ws)
		if err != nil && auto.IsSelectStack404Error(err) {
			if !create {
				return nil, opErr(op, name, ErrNotFound, "no stack named %q in %s", name, redactURL(e.opts.BackendURL))
			}
			st, created, err = e.initStack(ctx, name, ws)
		}
	}
	if err != nil {
		return nil, classify(ctx, op, name, err, e.red, nil)
	}
	// Up runs on the same workspace seen through upWorkspace, which reads the outputs after the
	// update with one process instead of two. Selecting it runs nothing.
	up := st
	if local {
		if up, err = auto.SelectStack(ctx, name, upWorkspace{LocalWorkspace: lws, e: e}); err != nil {
			return nil, classify(ctx, op, name, err, e.red, nil)
		}
	}
	sw := &stackWorkspace{ws: ws, st: st, up: up, created: created}
	if created {
		// A stack we just created has no tags, and no state for preflight to read; its salt
		// is in the stack file `stack init` wrote.
		sw.tags = map[string]string{}
		sw.fresh = true
		if ps, err := ws.StackSettings(ctx, name); err == nil {
			sw.salt = ps.EncryptionSalt
		}
	}
	return sw, nil
}

// initStack creates a missing stack. Pulumi's `stack init` checks that the stack does not
// exist while holding the stack's backend lock, so of two engines (in any processes, on any
// hosts sharing the backend) creating the same stack at once exactly one succeeds: created
// reports whether it was this one. The other sees "already exists", or the lock of the
// creator's `stack init`; either way it selects the stack the other made.
//
// The engine creates the stack itself where it can (stackinit.go), with the same lock, so no
// process runs; a held lock or a backend it cannot write sends it to `stack init`.
func (e *Engine) initStack(ctx context.Context, name string, ws auto.Workspace) (auto.Stack, bool, error) {
	if lws, local := ws.(*auto.LocalWorkspace); local {
		created, err := e.createStack(ctx, name, ws)
		if err == nil {
			st, err := auto.SelectStack(ctx, name, selectedWorkspace{lws})
			return st, created, err
		}
		if !errors.Is(err, errNotInProcess) && !isLockConflict(err) {
			return auto.Stack{}, false, err
		}
	}
	st, err := auto.NewStack(ctx, name, ws)
	if err == nil {
		return st, true, nil
	}
	for range 20 {
		if !auto.IsCreateStack409Error(err) && !isLockConflict(err) && !isTornLockRead(err) {
			return st, false, err
		}
		if st, err = auto.SelectStack(ctx, name, ws); err == nil || !auto.IsSelectStack404Error(err) {
			return st, false, err
		}
		// Locked by a `stack init` that has not saved the stack yet: look again shortly.
		select {
		case <-ctx.Done():
			return st, false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		st, err = auto.NewStack(ctx, name, ws)
		if err == nil {
			return st, true, nil
		}
	}
	return st, false, err
}

// ensureTags settles who owns the stack, then writes the caller's further tags.
//
// The owner is the door whose engine created the stack (initStack decides that atomically):
// only the creator writes the managed-by tag, right after `stack init`. An engine that found
// the stack made by someone else and untagged waits up to Options.ClaimWait for the
// creator's tag instead of writing its own, so two doors creating the same stack at the same
// moment end with one owner, and the loser's admit refuses it (ManagedElsewhere) before it
// ran or tagged anything. Only a stack still untagged after the wait (made by a stock CLI,
// by an older tfrs, or by a creator that died in between) is claimed by whoever comes next.
// An existing managed-by tag is never changed. Tags are read and written in the backend's
// tags file in-process (inproc.go; a CLI process each only for backends the engine cannot
// open), and only when missing or different.
func (e *Engine) ensureTags(ctx context.Context, op OpKind, sw *stackWorkspace, name string, by ManagedBy, tags map[string]string, admit func(map[string]string) error) error {
	if by == "" && len(tags) == 0 && admit == nil {
		return nil
	}
	if sw.tags == nil {
		current, err := e.listTags(ctx, sw, name)
		if err != nil {
			return classify(ctx, op, name, err, e.red, nil)
		}
		sw.tags = current
	}
	if by != "" && sw.tags[TagManagedBy] == "" {
		if !sw.created {
			if err := e.awaitOwner(ctx, op, sw, name); err != nil {
				return err
			}
		}
		if sw.tags[TagManagedBy] == "" {
			if err := e.setTags(ctx, sw, name, map[string]string{TagManagedBy: string(by)}); err != nil {
				return classify(ctx, op, name, err, e.red, nil)
			}
		}
	}
	if admit != nil {
		if err := admit(maps.Clone(sw.tags)); err != nil {
			return err
		}
	}
	set := map[string]string{}
	for k, v := range tags {
		if k != TagManagedBy && sw.tags[k] != v {
			set[k] = v
		}
	}
	if len(set) > 0 {
		if err := e.setTags(ctx, sw, name, set); err != nil {
			return classify(ctx, op, name, err, e.red, nil)
		}
	}
	return nil
}

// listTags reads the stack's tags, in-process when the backend allows.
func (e *Engine) listTags(ctx context.Context, sw *stackWorkspace, name string) (map[string]string, error) {
	if !sw.scratch {
		tags, err := e.stackTags(ctx, OpStatus, name)
		if !errors.Is(err, errNotInProcess) {
			return tags, err
		}
	}
	return sw.st.ListTags(ctx)
}

// setTags writes tags (in-process: one write of the tags file; else a CLI process per tag)
// and records them in sw.tags.
func (e *Engine) setTags(ctx context.Context, sw *stackWorkspace, name string, set map[string]string) error {
	if !sw.scratch {
		all, err := e.setStackTags(ctx, name, set)
		if err == nil {
			// The file as written: a tag another door set meanwhile shows too.
			sw.tags = all
			return nil
		}
		if !errors.Is(err, errNotInProcess) {
			return err
		}
	}
	for _, k := range sortedKeys(set) {
		if err := sw.st.SetTag(ctx, k, set[k]); err != nil {
			return err
		}
		sw.tags[k] = set[k]
	}
	return nil
}

// awaitOwner re-reads the tags of a stack another engine created until its managed-by tag
// shows, for at most Options.ClaimWait.
func (e *Engine) awaitOwner(ctx context.Context, op OpKind, sw *stackWorkspace, name string) error {
	deadline := time.Now().Add(e.opts.ClaimWait)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctxError(ctx, op, name, "waiting for the stack's owner")
		case <-time.After(200 * time.Millisecond):
		}
		current, err := e.listTags(ctx, sw, name)
		if err != nil {
			return classify(ctx, op, name, err, e.red, nil)
		}
		sw.tags = current
		if current[TagManagedBy] != "" {
			return nil
		}
	}
	return nil
}

// forget drops a cached workspace (after removal, or when the stack vanished underneath).
func (e *Engine) forget(s *slot) { s.ws = nil }

// prepare sets the program, env and config for one operation.
func (e *Engine) prepare(ctx context.Context, op OpKind, sw *stackWorkspace, req Request, prog pulumi.RunFunc) error {
	sw.ws.SetProgram(prog)
	for _, k := range sw.envKeys {
		sw.ws.UnsetEnvVar(k)
	}
	sw.envKeys = sw.envKeys[:0]
	for k, v := range req.Env {
		sw.ws.SetEnvVar(k, v)
		sw.envKeys = append(sw.envKeys, k)
	}
	return e.writeConfig(ctx, op, sw, req)
}

// writeConfig writes the config into the workspace's stack file, which the CLI reads for the
// operation: plain values as they are, secret values encrypted in-process with the stack's
// passphrase key (the salt its state or `stack init` recorded, which the file then names), the
// way `pulumi config set --secret` stores them, so no process runs and the file never holds a
// secret in plain text. For other secrets providers, or a stack whose salt is not known yet,
// each secret goes through `pulumi config set --secret` with the value on stdin, so it never
// appears in a process list.
func (e *Engine) writeConfig(ctx context.Context, op OpKind, sw *stackWorkspace, req Request) error {
	if len(req.Config) == 0 && sw.config == "" {
		return nil
	}
	fp := configFingerprint(req.Config)
	if fp == sw.config {
		return nil
	}
	name := req.Stack
	settings, err := sw.ws.StackSettings(ctx, name)
	if err != nil {
		settings = &workspace.ProjectStack{}
	}
	settings.Config = config.Map{}
	salt := settings.EncryptionSalt
	if salt == "" {
		salt = sw.salt
	}
	type secretValue struct{ key, value string }
	var secrets []secretValue
	for _, k := range sortedKeys(req.Config) {
		v := req.Config[k]
		key, err := configKey(k)
		if err != nil {
			return opErr(op, name, ErrFailed, "config key %q: %v", k, err)
		}
		if !v.Secret {
			settings.Config[key] = config.NewValue(v.Value)
			continue
		}
		e.red.add(v.Value)
		if c, err := e.crypter(salt); err == nil {
			ct, err := c.EncryptValue(ctx, v.Value)
			if err != nil {
				return opErr(op, name, ErrFailed, "encrypt secret config %s: %v", key, err)
			}
			settings.Config[key] = config.NewSecureValue(ct)
			settings.EncryptionSalt = salt
			continue
		}
		secrets = append(secrets, secretValue{key.String(), v.Value})
	}
	if err := sw.ws.SaveStackSettings(ctx, name, settings); err != nil {
		return opErr(op, name, ErrFailed, "write stack config: %v", err)
	}
	for _, sv := range secrets {
		_, stderr, _, err := e.cli.Run(ctx, sw.ws.WorkDir(), strings.NewReader(sv.value), nil, nil, envList(sw.ws.GetEnvVars()),
			"config", "set", "--secret", "--stack", name, sv.key)
		if err != nil {
			return opErr(op, name, ErrFailed, "set secret config %s: %s", sv.key, e.red.redact(strings.TrimSpace(stderr)))
		}
	}
	sw.config = fp
	return nil
}

func configKey(k string) (config.Key, error) {
	if !strings.Contains(k, ":") {
		k = ProjectName + ":" + k
	}
	return config.ParseKey(k)
}

func configFingerprint(m map[string]ConfigValue) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%t:%q;", k, m[k].Secret, m[k].Value)
	}
	return hashString(b.String())
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// noProgram stands in for Refresh and Destroy without a program: the inline-program path
// still needs a language host to talk to, but neither operation runs it.
func noProgram(*pulumi.Context) error { return nil }

// isNotFound reports ErrNotFound anywhere in err.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
