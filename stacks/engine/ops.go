package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// Up creates or updates the stack's resources (creating the stack on first use). Before it
// runs, a stale backend lock is broken and an interrupted earlier run is recovered.
func (e *Engine) Up(ctx context.Context, req Request) (*Result, error) {
	var up auto.UpResult
	res, err := e.run(ctx, OpUp, req, func(ctx context.Context, sw *stackWorkspace, col *collector, rec *Recovery) error {
		opts := []optup.Option{optup.EventStreams(col.stream()), optup.ShowSecrets(false),
			optup.Color("never"), optup.SuppressProgress(), optup.SuppressOutputs(), optup.Message(message(req, OpUp))}
		if req.Plan != nil {
			file, err := writePlanFile(sw.ws.WorkDir(), req.Plan)
			if err != nil {
				return opErr(OpUp, req.Stack, ErrFailed, "write the saved plan: %v", err)
			}
			defer os.Remove(file)
			opts = append(opts, optup.Plan(file))
		}
		err := e.withLock(ctx, OpUp, sw, req.Stack, col, rec, func() error {
			var err error
			up, err = sw.up.Up(ctx, opts...)
			return err
		})
		if err == nil && len(req.AppliedTags) > 0 {
			// The update stands whatever happens here: a tag that cannot be written is a
			// warning, not a failed operation.
			if terr := e.setTags(ctx, sw, req.Stack, req.AppliedTags); terr != nil {
				col.warn("the stack's applied tags (its revision) were not recorded: " + terr.Error())
			}
		}
		return err
	})
	if res != nil && err == nil {
		res.Outputs = convertOutputs(up.Outputs)
	}
	return res, err
}

// Preview reports what Up would change. It never writes the backend: no recovery, no lock,
// no tags, and a stack that does not exist yet is not created: the preview runs against an
// empty throwaway state of its own (see scratch), so every resource shows as a create. On a
// stack with pending operations it warns that the next Up will recover them.
//
// With SavePlan it also returns Pulumi's plan of those changes (Result.Plan) for an Up to
// apply exactly; see plans.go for what that changes.
func (e *Engine) Preview(ctx context.Context, req Request) (*Result, error) {
	var plan *Plan
	if req.SavePlan {
		req.generated = &credentialLog{}
	}
	res, err := e.run(ctx, OpPreview, req, func(ctx context.Context, sw *stackWorkspace, col *collector, _ *Recovery) error {
		opts := []optpreview.Option{optpreview.EventStreams(col.stream()), optpreview.Color("never"),
			optpreview.SuppressProgress(), optpreview.SuppressOutputs()}
		file := ""
		save := req.SavePlan && !sw.scratch
		if req.SavePlan && sw.scratch {
			col.deliver(Event{Kind: EventDiag, Severity: "warning",
				Message: fmt.Sprintf("no plan saved for %s: the stack does not exist yet and a read-only engine cannot create its record", req.Stack)})
		}
		if save {
			file = planFilePath(sw.ws.WorkDir())
			defer os.Remove(file)
			opts = append(opts, optpreview.Plan(file))
		}
		_, err := sw.st.Preview(ctx, opts...)
		if err != nil {
			return classify(ctx, OpPreview, req.Stack, err, col.red, col.errors())
		}
		if save {
			if plan, err = e.newPlan(req.Stack, file, req.generated.snapshot(), req.PlanMeta); err != nil {
				return opErr(OpPreview, req.Stack, ErrFailed, "save plan: %v", err)
			}
		}
		return nil
	})
	if res != nil && err == nil {
		res.Plan = plan
	}
	return res, err
}

// Refresh reads every resource back from the cluster into the state.
func (e *Engine) Refresh(ctx context.Context, req Request) (*Result, error) {
	return e.run(ctx, OpRefresh, req, func(ctx context.Context, sw *stackWorkspace, col *collector, rec *Recovery) error {
		var res auto.RefreshResult
		err := e.withLock(ctx, OpRefresh, sw, req.Stack, col, rec, func() error {
			var err error
			res, err = sw.st.Refresh(ctx, optrefresh.EventStreams(col.stream()), optrefresh.ShowSecrets(false),
				optrefresh.Color("never"), optrefresh.SuppressProgress(), optrefresh.SuppressOutputs(), optrefresh.Message(message(req, OpRefresh)))
			return err
		})
		if len(req.StateTags) > 0 && (err != nil || refreshChanged(res)) {
			void := map[string]string{}
			for _, k := range req.StateTags {
				void[k] = ""
			}
			if terr := e.setTags(ctx, sw, req.Stack, void); terr != nil {
				col.warn("the stack's state tags were not emptied after the refresh changed its state: " + terr.Error())
			}
		}
		return err
	})
}

// refreshChanged: the refresh changed the state (any step but "same"), or says nothing of it.
func refreshChanged(res auto.RefreshResult) bool {
	if res.Summary.ResourceChanges == nil {
		return true
	}
	for op, n := range *res.Summary.ResourceChanges {
		if op != string(StepSame) && n > 0 {
			return true
		}
	}
	return false
}

// Destroy deletes every resource of the stack (the stack itself stays; see Remove). Pending
// creates are recovered first, so an object an interrupted run created is destroyed too
// instead of being orphaned.
func (e *Engine) Destroy(ctx context.Context, req Request) (*Result, error) {
	return e.run(ctx, OpDestroy, req, func(ctx context.Context, sw *stackWorkspace, col *collector, rec *Recovery) error {
		return e.withLock(ctx, OpDestroy, sw, req.Stack, col, rec, func() error {
			_, err := sw.st.Destroy(ctx, optdestroy.EventStreams(col.stream()), optdestroy.ShowSecrets(false),
				optdestroy.Color("never"), optdestroy.SuppressProgress(), optdestroy.SuppressOutputs(), optdestroy.Message(message(req, OpDestroy)))
			return err
		})
	})
}

func message(req Request, op OpKind) string {
	if req.Message != "" {
		return req.Message
	}
	by := string(req.ManagedBy)
	if by == "" {
		by = "engine"
	}
	return fmt.Sprintf("tfrs %s (%s)", op, by)
}

// run is the frame every program-running operation shares: validate, take the stack and a
// global slot, open the stack, read the checkpoint, recover, bind credentials, run, collect.
// Everything after the slot, body included, runs under the operation's context (bounded by
// its deadline, see acquire), which body receives.
func (e *Engine) run(ctx context.Context, op OpKind, req Request, body func(context.Context, *stackWorkspace, *collector, *Recovery) error) (*Result, error) {
	start := time.Now()
	if err := stackname.Validate(req.Stack); err != nil {
		return nil, &OpError{Op: op, Stack: req.Stack, Kind: ErrInvalidName, Detail: err.Error()}
	}
	prog := req.Program
	if prog == nil {
		if op == OpUp || op == OpPreview {
			return nil, opErr(op, req.Stack, ErrFailed, "a program is required")
		}
		prog = noProgram
	}
	if e.opts.ReadOnly && op != OpPreview {
		return nil, opErr(op, req.Stack, ErrReadOnly, "%s is refused by a read-only engine (--read-only)", op)
	}
	ctx, s, release, err := e.acquire(ctx, op, req.Stack, op == OpPreview)
	if err != nil {
		return nil, err
	}
	defer release()
	var cleanups []func()
	defer func() {
		for _, f := range cleanups {
			f()
		}
	}()

	red := e.red
	for _, v := range req.Config {
		if v.Secret {
			red.add(v.Value)
		}
	}
	col := newCollector(op, req.Stack, req.Sink, red)
	defer col.drain(5 * time.Second)

	// Only Up creates a missing stack, and only Up tags it: a CI preview must not make a stack
	// look CLI-managed before the operator's first up, nor exist at all. A preview of a stack
	// that does not exist runs on a scratch workspace and backend (never cached in the slot).
	// A preview that saves a plan runs on the real stack and claims it like an Up (plans.go).
	planning := op == OpPreview && req.SavePlan
	if req.Plan != nil {
		if op != OpUp || req.Plan.Stack != req.Stack {
			return nil, opErr(op, req.Stack, ErrFailed, "a saved plan of %s can only be applied by an up of that stack", req.Plan.Stack)
		}
	}
	create := op == OpUp || (planning && !e.opts.ReadOnly)
	by, tags, admit := req.ManagedBy, req.Tags, req.Admit
	if !create {
		by, tags, admit = "", nil, nil
	}
	scratched := false
	open := func() (*stackWorkspace, error) {
		sw, err := e.open(ctx, op, s, req.Stack, create, by, tags, admit)
		if op != OpPreview || !isNotFound(err) {
			return sw, err
		}
		// A read-only plan preview of a missing stack cannot create its record: it previews
		// on a scratch state like any preview, and saves no plan (the body sees sw.scratch).
		sw, done, err := e.scratch(ctx, op, req.Stack)
		if err == nil {
			scratched = true
			cleanups = append(cleanups, done)
		}
		return sw, err
	}
	sw, err := open()
	if err != nil {
		return nil, err
	}
	info, err := e.preflight(ctx, op, sw, req.Stack)
	if err != nil && isNotFound(err) {
		// Removed by another engine since we cached it: open afresh once.
		e.forget(s)
		if sw, err = open(); err == nil {
			info, err = e.preflight(ctx, op, sw, req.Stack)
		}
	}
	if err != nil {
		return nil, err
	}
	if scratched {
		col.deliver(Event{Kind: EventDiag, Severity: "info",
			Message: fmt.Sprintf("stack %s does not exist yet: previewed as a new stack on a throwaway state; nothing was written to the backend", req.Stack)})
	}
	rec := &Recovery{}
	if op == OpPreview {
		if len(info.pending) > 0 {
			col.deliver(Event{Kind: EventDiag, Severity: "warning",
				Message: fmt.Sprintf("stack has %d pending operation(s) from an interrupted run; the next up recovers them", len(info.pending))})
		}
	} else if err := e.recover(ctx, op, sw, req, info, col, rec); err != nil {
		return nil, err
	}
	creds, rotate := info.credentials, req.Rotate
	if req.Plan != nil {
		planned, err := e.openCredentials(req.Plan)
		if err != nil {
			return nil, opErr(op, req.Stack, ErrPlanMismatch, "%v", err)
		}
		creds, rotate = maps.Clone(creds), nil
		maps.Copy(creds, planned)
	}
	var record func(name, value string)
	if req.generated != nil {
		record = req.generated.record
	}
	if err := e.prepare(ctx, op, sw, req, program.WithCredentialsRecorded(prog, creds, rotate, func(v string) { red.add(v) }, record)); err != nil {
		return nil, err
	}
	col.deliver(Event{Kind: EventStart, Message: fmt.Sprintf("%s %s", op, req.Stack), Resources: info.resources})
	err = body(ctx, sw, col, rec)
	if op != OpPreview {
		e.pruneHistory(ctx, req.Stack)
	}
	col.drain(5 * time.Second)
	if err != nil && op == OpUp && ctx.Err() != nil {
		e.settleAborted(ctx, op, sw, req, col, rec)
	}
	res := &Result{Stack: req.Stack, Operation: op}
	col.finish(res)
	res.Duration = time.Since(start)
	if !rec.empty() {
		res.Recovery = rec
	}
	if err != nil {
		return res, classify(ctx, op, req.Stack, err, red, col.errors())
	}
	return res, nil
}

func convertOutputs(m auto.OutputMap) program.Outputs {
	out := program.Outputs{}
	for k, v := range m {
		out[k] = program.NewOutput(v.Value, v.Secret)
	}
	return out
}

// Remove deletes a stack record and its history from the backend. A stack that still has
// resources is refused with ErrStackNotEmpty unless force is set (force leaves those
// resources running, unmanaged: use it only after they were removed by other means).
func (e *Engine) Remove(ctx context.Context, stack string, force bool) error {
	if err := stackname.Validate(stack); err != nil {
		return &OpError{Op: OpRemove, Stack: stack, Kind: ErrInvalidName, Detail: err.Error()}
	}
	if e.opts.ReadOnly {
		return opErr(OpRemove, stack, ErrReadOnly, "remove is refused by a read-only engine (--read-only)")
	}
	ctx, s, release, err := e.acquire(ctx, OpRemove, stack, false)
	if err != nil {
		return err
	}
	defer release()
	sw, err := e.open(ctx, OpRemove, s, stack, false, "", nil, nil)
	if err != nil {
		return err
	}
	col := newCollector(OpRemove, stack, nil, e.red)
	defer col.drain(time.Second)
	err = e.withLock(ctx, OpRemove, sw, stack, col, &Recovery{}, func() error {
		args := []string{"stack", "rm", "--yes", "--stack", stack}
		if force {
			args = append(args, "--force")
		}
		_, stderr, code, err := e.cli.Run(ctx, sw.ws.WorkDir(), nil, nil, nil, envList(sw.ws.GetEnvVars()), args...)
		if err != nil {
			return cliError(err, stderr, code)
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.forget(s)
	_ = os.Remove(filepath.Join(e.workRoot, stack, "Pulumi."+stack+".yaml"))
	return nil
}

// cliError shapes a direct CLI failure like an Automation API error, so classify and the lock
// handling treat both alike.
func cliError(err error, stderr string, code int) error {
	return fmt.Errorf("%w\ncode: %d\nstdout: \nstderr: %s", err, code, stderr)
}

// reader returns a workspace for read-only commands. They name the stack explicitly, so they
// need neither the stack slot nor a selected stack, and never wait for a running operation.
func (e *Engine) reader(ctx context.Context) (auto.Workspace, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.readWS != nil {
		return e.readWS, nil
	}
	dir := filepath.Join(e.workRoot, "_read")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ws, err := auto.NewLocalWorkspace(ctx, auto.WorkDir(dir), auto.Pulumi(e.cli), auto.Project(e.project))
	if err != nil {
		return nil, err
	}
	e.readWS = ws
	return ws, nil
}

// readOp bounds read-only CLI work by the global and per-share limits too (each is a CLI
// process).
func (e *Engine) readOp(ctx context.Context, op OpKind, stack string, fn func(auto.Workspace) error) error {
	if stack != "" {
		if err := stackname.Validate(stack); err != nil {
			return &OpError{Op: op, Stack: stack, Kind: ErrInvalidName, Detail: err.Error()}
		}
	}
	e.repairBackend(stack)
	ctx, release, err := e.admit(ctx, op, stack)
	if err != nil {
		return err
	}
	defer release()
	ws, err := e.reader(ctx)
	if err != nil {
		return opErr(op, stack, ErrFailed, "workspace: %v", err)
	}
	if err := fn(ws); err != nil {
		return classify(ctx, op, stack, err, e.red, nil)
	}
	return nil
}

// Outputs returns the stack's outputs; secrets are hidden unless revealed (Output.Reveal).
// Read in-process from the checkpoint; else one CLI process (see stackOutputs).
func (e *Engine) Outputs(ctx context.Context, stack string) (program.Outputs, error) {
	var out program.Outputs
	keep := func(m auto.OutputMap) {
		out = convertOutputs(m)
		for _, k := range out.Keys() {
			if out[k].Secret {
				if s, ok := out[k].Reveal().(string); ok {
					e.red.add(s)
				}
			}
		}
	}
	if done, err := e.inProcess(ctx, OpOutputs, stack, func() error {
		raw, exists, err := e.readDeployment(ctx, stack)
		if err != nil {
			return err
		}
		if !exists {
			return opErr(OpOutputs, stack, ErrNotFound, "no stack named %q in %s", stack, redactURL(e.opts.BackendURL))
		}
		if raw != nil {
			if raw, err = e.revealDeployment(ctx, raw); err != nil {
				return err
			}
		}
		m, err := outputsFromDeployment(raw)
		if err != nil {
			return err
		}
		keep(m)
		return nil
	}); done {
		return out, err
	}
	err := e.readOp(ctx, OpOutputs, stack, func(ws auto.Workspace) error {
		m, err := e.stackOutputs(ctx, ws, stack)
		if err != nil {
			return err
		}
		keep(m)
		return nil
	})
	return out, err
}

// StackStatus is what callers need to know about a stack without running it.
type StackStatus struct {
	Stack     string            `json:"stack"`
	ManagedBy ManagedBy         `json:"managedBy,omitempty"`
	Tags      map[string]string `json:"tags,omitempty"`
	// Last is the most recent recorded operation (update, refresh or destroy).
	Last *HistoryEntry `json:"last,omitempty"`
	// Ready: the most recent update or destroy was an update, and it succeeded. Refreshes do
	// not count. A parent (a tenant for its servers) is ready when its stack is.
	Ready bool `json:"ready"`
}

// HistoryEntry is one recorded operation.
type HistoryEntry struct {
	Kind    string         `json:"kind"`   // update, refresh, destroy
	Result  string         `json:"result"` // succeeded, failed, in-progress
	Started time.Time      `json:"started"`
	Ended   time.Time      `json:"ended,omitzero"`
	Changes map[string]int `json:"changes,omitempty"`
	Message string         `json:"message,omitempty"`
}

// Status reads the stack's tags and recent history: in-process from the backend (the tags
// file and the newest history entries, no CLI process), else with two CLI processes.
func (e *Engine) Status(ctx context.Context, stack string) (*StackStatus, error) {
	st := &StackStatus{Stack: stack}
	if done, err := e.inProcess(ctx, OpStatus, stack, func() error {
		tags, err := e.stackTags(ctx, OpStatus, stack)
		if err != nil {
			return err
		}
		head, err := e.historyHead(ctx, OpStatus, stack, max(20, e.historyLimit()+1))
		if err != nil {
			return err
		}
		hist := make([]HistoryEntry, len(head))
		for i, h := range head {
			hist[i] = h.entry()
		}
		st.fill(tags, hist)
		return nil
	}); done {
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	err := e.readOp(ctx, OpStatus, stack, func(ws auto.Workspace) error {
		// Two independent reads: run them side by side (the wall time of one CLI process, not
		// two). Neither is cancelled when the other fails, so each error is the CLI's own.
		var (
			hist    []HistoryEntry
			histErr error
			wg      sync.WaitGroup
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The pruned history keeps the newest update however many refreshes followed it
			// (history.go); read far enough back to meet it: the limit's entries and one more
			// (with the default limit, 20 refreshes would otherwise hide the update).
			hist, histErr = e.history(ctx, ws, stack, max(20, e.historyLimit()+1))
		}()
		tags, err := ws.ListTags(ctx, stack)
		wg.Wait()
		// The tag error first: it is the one that reports a missing stack as ErrNotFound.
		if err != nil {
			return err
		}
		if histErr != nil {
			return histErr
		}
		st.fill(tags, hist)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// fill sets the status from the stack's tags and its history, newest first.
func (st *StackStatus) fill(tags map[string]string, hist []HistoryEntry) {
	st.Tags = tags
	st.ManagedBy = ManagedBy(tags[TagManagedBy])
	if len(hist) > 0 {
		st.Last = &hist[0]
	}
	for _, h := range hist {
		if h.Kind == "update" || h.Kind == "destroy" {
			st.Ready = h.Kind == "update" && h.Result == "succeeded"
			break
		}
	}
}

// inProcess runs a read the engine answers from the backend itself (inproc.go). done is false
// when it cannot (errNotInProcess): the caller then asks the CLI.
func (e *Engine) inProcess(ctx context.Context, op OpKind, stack string, read func() error) (done bool, err error) {
	if err := stackname.Validate(stack); err != nil {
		return true, &OpError{Op: op, Stack: stack, Kind: ErrInvalidName, Detail: err.Error()}
	}
	select {
	case <-e.closed:
		return true, opErr(op, stack, ErrClosed, "")
	default:
	}
	e.repairBackend(stack)
	err = read()
	if errors.Is(err, errNotInProcess) {
		return false, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return true, &OpError{Op: op, Stack: stack, Kind: ErrCanceled, ctxErr: ctx.Err()}
		}
		var oe *OpError
		if errors.As(err, &oe) {
			return true, oe
		}
		return true, opErr(op, stack, ErrFailed, "read the backend: %s", e.red.redact(err.Error()))
	}
	return true, nil
}

// Tags returns the stack's tags (in-process; else one CLI process). A door reads them right
// before it runs the stack (the admission rules), so Tags also starts deriving the stack's
// passphrase key in the background (warmKey): the operation's state read then finds it ready,
// and the derivation overlaps the reads of the parents' outputs instead of following them.
func (e *Engine) Tags(ctx context.Context, stack string) (map[string]string, error) {
	var tags map[string]string
	if done, err := e.inProcess(ctx, OpStatus, stack, func() error {
		var err error
		if tags, err = e.stackTags(ctx, OpStatus, stack); err == nil {
			go e.warmKey(stack)
		}
		return err
	}); done {
		return tags, err
	}
	err := e.readOp(ctx, OpStatus, stack, func(ws auto.Workspace) error {
		var err error
		tags, err = ws.ListTags(ctx, stack)
		return err
	})
	return tags, err
}

// history runs `stack history` without --show-secrets (auto's History shows them by default).
func (e *Engine) history(ctx context.Context, ws auto.Workspace, stack string, n int) ([]HistoryEntry, error) {
	stdout, stderr, code, err := e.cli.Run(ctx, ws.WorkDir(), nil, nil, nil, nil,
		"stack", "history", "--json", "--page-size", strconv.Itoa(n), "--page", "1", "--stack", stack)
	if err != nil {
		return nil, cliError(err, stderr, code)
	}
	var raw []auto.UpdateSummary
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		return nil, fmt.Errorf("parse history: %w", err)
	}
	out := make([]HistoryEntry, 0, len(raw))
	for _, h := range raw {
		he := HistoryEntry{Kind: h.Kind, Result: h.Result, Message: h.Message}
		he.Started, _ = time.Parse(time.RFC3339, h.StartTime)
		if h.EndTime != nil {
			he.Ended, _ = time.Parse(time.RFC3339, *h.EndTime)
		}
		if h.ResourceChanges != nil {
			he.Changes = *h.ResourceChanges
		}
		out = append(out, he)
	}
	return out, nil
}

// StackSummary is one entry of List.
type StackSummary struct {
	Name             string    `json:"name"`
	LastUpdate       time.Time `json:"lastUpdate,omitzero"`
	UpdateInProgress bool      `json:"updateInProgress"`
	ResourceCount    int       `json:"resourceCount"`
}

// List returns every tfrs stack in the backend, optionally only names with prefix
// (e.g. "tenant.ns1.").
func (e *Engine) List(ctx context.Context, prefix string) ([]StackSummary, error) {
	var out []StackSummary
	err := e.readOp(ctx, OpList, "", func(ws auto.Workspace) error {
		list, err := ws.ListStacks(ctx)
		if err != nil {
			return err
		}
		for _, s := range list {
			if !strings.HasPrefix(s.Name, prefix) {
				continue
			}
			ss := StackSummary{Name: s.Name, UpdateInProgress: s.UpdateInProgress}
			if s.ResourceCount != nil {
				ss.ResourceCount = *s.ResourceCount
			}
			ss.LastUpdate, _ = time.Parse(time.RFC3339, s.LastUpdate)
			out = append(out, ss)
		}
		return nil
	})
	return out, err
}
