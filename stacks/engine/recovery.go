package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// Crash recovery. When a run dies (SIGKILL, OOM, node loss) mid-update, two things are left:
//
//  1. the backend lock, owned by a dead process — handled in withLock (locks.go decides
//     staleness);
//  2. pending operations in the checkpoint: Pulumi writes "creating X" before it asks the
//     provider to create X, and clears it after. Pending updates and deletes are cleared by a
//     refresh. Pending creates are not (Pulumi carries them forward forever): the object may or
//     may not exist, and forgetting one that does exist orphans it (and with auto-naming the
//     next up makes a duplicate).
//
// The engine resolves pending creates itself before any mutation:
//   - a plain Kubernetes object is adopted: moved into the state's resources with the ID the
//     provider would have given it (namespace/name), then the refresh reads it — an object that
//     exists is kept (and updated by the up that follows), one that does not drops out and is
//     created fresh;
//   - a data-bearing object (CNPG cluster, MinIO tenant, PVC) is never adopted or forgotten by
//     the engine: the operation stops with ErrPendingNeedsDecision, and the caller re-runs with
//     Request.Decisions;
//   - anything else (a provider, a non-Kubernetes resource) has no external object to lose and
//     is dropped.
//
// Pulumi's own `refresh --import-pending-creates` is not used: reading the v3.276.0 source, it
// turns the pending create into a pending "importing" operation that nothing consumes and the
// refresh's new checkpoint drops, so the object would be forgotten rather than adopted. Note
// also that `pulumi stack import` clears all pending operations; the edit below relies on that
// only for the non-create ones, which the refresh that follows resolves anyway.

// PendingOp is an operation an interrupted run left unfinished.
type PendingOp struct {
	URN         string `json:"urn"`
	Type        string `json:"type"`
	Op          string `json:"op"` // creating, updating, deleting, reading, importing
	ID          string `json:"id,omitempty"`
	DataBearing bool   `json:"dataBearing,omitempty"`
}

// stateDoc is the part of a v3 deployment the engine reads.
type stateDoc struct {
	Manifest struct {
		Time  string `json:"time"`
		Magic string `json:"magic"`
	} `json:"manifest"`
	Resources []resourceDoc `json:"resources"`
	Pending   []struct {
		Resource resourceDoc `json:"resource"`
		Type     string      `json:"type"`
	} `json:"pending_operations"`
}

type resourceDoc struct {
	URN      string         `json:"urn"`
	Type     string         `json:"type"`
	Custom   bool           `json:"custom"`
	ID       string         `json:"id"`
	Provider string         `json:"provider"`
	Delete   bool           `json:"delete"`
	Inputs   map[string]any `json:"inputs"`
	Outputs  map[string]any `json:"outputs"`
}

// stateInfo is what preflight learns from the checkpoint.
type stateInfo struct {
	pending     []PendingOp
	credentials map[string]string
	resources   int
}

// The Pulumi secret signature in serialized property values.
const secretSig = "4dabf18193072939515e22adb298388d"

// preflight reads the stack's state (with secrets: generated credentials are read back from
// it) and reports pending operations: in-process from the backend when it can (no CLI process),
// else through `stack export --show-secrets`. The plaintext stays in memory and is dropped here.
func (e *Engine) preflight(ctx context.Context, op OpKind, sw *stackWorkspace, name string) (*stateInfo, error) {
	e.repairBackend(name)
	if sw.fresh {
		// The stack was created by this very operation (`stack init` succeeded just now): its
		// state is empty, so no pending operations and no credentials; skip the export. The
		// flag is spent here, so every later operation reads the state again.
		sw.fresh = false
		return &stateInfo{credentials: map[string]string{}}, nil
	}
	var (
		dep  json.RawMessage
		salt string
		err  error
	)
	if sw.scratch {
		var out apitype.UntypedDeployment
		if out, err = sw.ws.ExportStack(ctx, name); err == nil {
			dep = out.Deployment
		}
	} else {
		// The checkpoint read in-process, secrets decrypted in memory (inproc.go).
		dep, salt, err = e.exportRevealed(ctx, op, sw.ws, name)
	}
	if err != nil {
		return nil, classify(ctx, op, name, err, e.red, nil)
	}
	if salt != "" {
		sw.salt = salt
	}
	info := &stateInfo{credentials: map[string]string{}}
	if len(dep) == 0 {
		return info, nil
	}
	var doc stateDoc
	if err := json.Unmarshal(dep, &doc); err != nil {
		return nil, opErr(op, name, ErrFailed, "read state: %v", err)
	}
	info.resources = len(doc.Resources)
	for _, r := range doc.Resources {
		if r.Type != program.CredentialType {
			continue
		}
		if v, ok := plainString(r.Outputs["value"]); ok {
			info.credentials[urnName(r.URN)] = v
			e.red.add(v)
		}
	}
	providers := providerNamespaces(doc.Resources)
	for _, p := range doc.Pending {
		info.pending = append(info.pending, e.describePending(p.Resource, p.Type, providers))
	}
	return info, nil
}

// plainString decodes a string output, unwrapping a decrypted secret.
func plainString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case map[string]any:
		if t[secretSig] == nil {
			return "", false
		}
		pt, ok := t["plaintext"].(string)
		if !ok {
			return "", false // still ciphertext
		}
		var s string
		if err := json.Unmarshal([]byte(pt), &s); err != nil {
			return "", false
		}
		return s, true
	}
	return "", false
}

func urnName(urn string) string {
	if i := strings.LastIndex(urn, "::"); i >= 0 {
		return urn[i+2:]
	}
	return urn
}

// providerNamespaces maps provider references ("urn::id") to the provider's default namespace.
func providerNamespaces(res []resourceDoc) map[string]string {
	out := map[string]string{}
	for _, r := range res {
		if !strings.HasPrefix(r.Type, "pulumi:providers:kubernetes") {
			continue
		}
		if ns, ok := r.Inputs["namespace"].(string); ok && ns != "" {
			out[r.URN+"::"+r.ID] = ns
		}
	}
	return out
}

func (e *Engine) describePending(r resourceDoc, typ string, providers map[string]string) PendingOp {
	p := PendingOp{URN: r.URN, Type: r.Type, Op: typ}
	for _, prefix := range e.opts.DataBearing {
		if strings.HasPrefix(r.Type, prefix) {
			p.DataBearing = true
		}
	}
	if typ == "creating" && isKubernetesObject(r) {
		p.ID = kubernetesID(r, providers)
	}
	return p
}

// isKubernetesObject: a custom resource of the Kubernetes provider that maps to one API
// object (components like helm.sh/v4:Chart or yaml/v2:ConfigGroup are not custom).
func isKubernetesObject(r resourceDoc) bool {
	return r.Custom && strings.HasPrefix(r.Type, "kubernetes:") && r.Type != "kubernetes:helm.sh/v3:Release"
}

// clusterScoped are built-in kinds without a namespace; by Kubernetes convention, kinds named
// Cluster<Something> (ClusterRole, ClusterIssuer, …) are cluster-scoped too.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "CustomResourceDefinition": true,
	"StorageClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"PriorityClass": true, "IngressClass": true, "RuntimeClass": true, "APIService": true,
	"CertificateSigningRequest": true, "FlowSchema": true, "PriorityLevelConfiguration": true,
	"GatewayClass": true,
}

// kubernetesID is the ID pulumi-kubernetes gives an object: "namespace/name", or "name" for a
// cluster-scoped kind. "" when the name cannot be known (the object is then dropped, not
// adopted, which can only leave an orphan behind for objects that hide their own name).
func kubernetesID(r resourceDoc, providers map[string]string) string {
	md, _ := r.Inputs["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if name == "" {
		return ""
	}
	kind := r.Type[strings.LastIndex(r.Type, ":")+1:]
	if clusterScoped[kind] || (strings.HasPrefix(kind, "Cluster") && len(kind) > len("Cluster")) {
		return name
	}
	ns, _ := md["namespace"].(string)
	if ns == "" {
		ns = providers[r.Provider]
	}
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + name
}

// recover resolves pending operations (see the top of this file). It runs with the stack slot
// held; the backend lock is taken by the CLI commands it runs.
func (e *Engine) recover(ctx context.Context, op OpKind, sw *stackWorkspace, req Request, info *stateInfo, col *collector, rec *Recovery) error {
	if len(info.pending) == 0 {
		return nil
	}
	var undecided []PendingOp
	for _, p := range info.pending {
		if p.Op == "creating" && p.DataBearing && req.Decisions[p.URN] == "" {
			undecided = append(undecided, p)
		}
	}
	if len(undecided) > 0 {
		urns := make([]string, len(undecided))
		for i, p := range undecided {
			urns[i] = p.URN
		}
		return &OpError{Op: op, Stack: req.Stack, Kind: ErrPendingNeedsDecision, Pending: undecided,
			Detail: fmt.Sprintf("an interrupted run may or may not have created %s; the engine will not guess for data-bearing objects: re-run with a decision (adopt: take the existing object into the stack; forget: leave it unmanaged)", strings.Join(urns, ", "))}
	}
	col.emit(EventRecovery, fmt.Sprintf("resolving %d pending operation(s) left by an interrupted run", len(info.pending)))
	hasCreates := slices.ContainsFunc(info.pending, func(p PendingOp) bool { return p.Op == "creating" })
	if hasCreates {
		if err := e.resolveCreates(ctx, op, sw, req, col, rec, nil); err != nil {
			return err
		}
	}
	// The refresh clears every other pending operation and reads adopted objects back.
	err := e.withLock(ctx, op, sw, req.Stack, col, rec, func() error {
		_, err := sw.st.Refresh(ctx, optrefresh.ShowSecrets(false), optrefresh.Color("never"),
			optrefresh.Message("tfrs: recover interrupted run"))
		return err
	})
	if err != nil {
		return err
	}
	rec.Refreshed = true
	col.emit(EventRecovery, "state refreshed after recovery")
	e.opts.Logger.Info("recovered interrupted run", "stack", req.Stack, "adopted", rec.Adopted, "forgotten", rec.Forgotten)
	return nil
}

// resolveCreates edits the state: adopted creates become resources, the rest are dropped.
// It works on a ciphertext export, so no secret is ever written in plaintext, and re-checks
// the checkpoint just before importing so it never overwrites a state another process saved
// in between. aborted are creates a cancel cut off (settleAborted): they are resolved as
// pending creates to adopt.
func (e *Engine) resolveCreates(ctx context.Context, op OpKind, sw *stackWorkspace, req Request, col *collector, rec *Recovery, aborted []map[string]any) error {
	for attempt := 0; attempt < 3; attempt++ {
		raw, err := e.exportCiphertext(ctx, op, sw, req.Stack)
		if err != nil {
			return err
		}
		dep, decisions := raw.Deployment, req.Decisions
		if len(aborted) > 0 {
			if dep, decisions, err = withAborted(dep, aborted, decisions); err != nil {
				return opErr(op, req.Stack, ErrFailed, "edit state: %v", err)
			}
		}
		edited, adopted, forgotten, err := e.editPending(dep, decisions)
		if err != nil {
			return opErr(op, req.Stack, ErrFailed, "edit state: %v", err)
		}
		if edited == nil {
			return nil // someone else resolved them meanwhile
		}
		again, err := e.exportCiphertext(ctx, op, sw, req.Stack)
		if err != nil {
			return err
		}
		if manifestOf(again.Deployment) != manifestOf(raw.Deployment) {
			continue // the state moved under us: start over from the new one
		}
		err = e.withLock(ctx, op, sw, req.Stack, col, rec, func() error {
			return sw.ws.ImportStack(ctx, req.Stack, apitype.UntypedDeployment{Version: raw.Version, Deployment: edited})
		})
		if err != nil {
			return err
		}
		rec.Adopted = append(rec.Adopted, adopted...)
		rec.Forgotten = append(rec.Forgotten, forgotten...)
		for _, u := range adopted {
			col.emit(EventRecovery, "adopted interrupted create "+u)
		}
		for _, u := range forgotten {
			col.emit(EventRecovery, "dropped interrupted create "+u)
		}
		return nil
	}
	return opErr(op, req.Stack, ErrConflict, "the state kept changing while recovering; another process is working on the stack")
}

// Creates a cancel cut off. Canceling an up interrupts the Kubernetes provider's requests in
// flight; a create the API server carried out but whose response was lost is reported failed,
// so Pulumi keeps no pending operation for it, and the object would stay in the cluster outside
// the stack (with auto-naming the next up makes a second one). settleAborted runs right after
// a canceled up, with the stack slot still held: it adopts each such create the way recovery
// adopts a pending create, then a refresh of just those reads them back; an object the server
// did make stays in the stack, one it never made drops out. Data-bearing kinds are adopted
// too: unlike a pending create found later, this request was this engine's own, seconds ago,
// and refused creates (AlreadyExists) are not among them (collector.abortedCreates). The
// caller's context is done, so it runs on its own deadline (CancelGrace); when it cannot
// finish, it says which objects to check.
func (e *Engine) settleAborted(ctx context.Context, op OpKind, sw *stackWorkspace, req Request, col *collector, rec *Recovery) {
	aborted := col.abortedCreates()
	if len(aborted) == 0 {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.CancelGrace)
	defer cancel()
	before := len(rec.Adopted)
	err := e.resolveCreates(sctx, op, sw, req, col, rec, aborted)
	if adopted := rec.Adopted[before:]; err == nil && len(adopted) > 0 {
		err = e.withLock(sctx, op, sw, req.Stack, col, rec, func() error {
			_, err := sw.st.Refresh(sctx, optrefresh.Target(adopted), optrefresh.ShowSecrets(false),
				optrefresh.Color("never"), optrefresh.Message("tfrs: read back creates the cancel cut off"))
			return err
		})
		if err == nil {
			col.emit(EventRecovery, fmt.Sprintf("read back %d create(s) the cancel cut off", len(adopted)))
		}
	}
	if err != nil {
		urns := make([]string, len(aborted))
		for i, r := range aborted {
			urns[i] = r["urn"].(string)
		}
		msg := fmt.Sprintf("the cancel cut off the create of %s and the engine could not read them back (%s): each may exist in the cluster outside the stack",
			strings.Join(urns, ", "), e.red.redact(err.Error()))
		col.deliver(Event{Kind: EventDiag, Severity: "warning", Message: msg})
		e.opts.Logger.Warn("creates cut off by a cancel not settled", "stack", req.Stack, "error", msg)
	}
}

// errPendingLeft: the state already has pending operations, which only the next operation's
// recovery may resolve (it asks for decisions this one cannot take).
var errPendingLeft = errors.New("the state has pending operations of its own; the next up recovers them first")

// withAborted adds the aborted creates to the deployment as pending creates, and a decision to
// adopt each.
func withAborted(raw json.RawMessage, aborted []map[string]any, decisions map[string]Decision) (json.RawMessage, map[string]Decision, error) {
	var dep map[string]json.RawMessage
	if err := json.Unmarshal(raw, &dep); err != nil {
		return nil, nil, err
	}
	if p, ok := dep["pending_operations"]; ok && string(p) != "null" && string(p) != "[]" {
		return nil, nil, errPendingLeft
	}
	pending := make([]map[string]any, len(aborted))
	out := maps.Clone(decisions)
	if out == nil {
		out = map[string]Decision{}
	}
	for i, r := range aborted {
		pending[i] = map[string]any{"type": "creating", "resource": r}
		out[r["urn"].(string)] = DecisionAdopt
	}
	var err error
	if dep["pending_operations"], err = json.Marshal(pending); err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(dep)
	return b, out, err
}

// exportCiphertext exports without --show-secrets (auto's ExportStack always decrypts).
func (e *Engine) exportCiphertext(ctx context.Context, op OpKind, sw *stackWorkspace, name string) (*apitype.UntypedDeployment, error) {
	stdout, stderr, _, err := e.cli.Run(ctx, sw.ws.WorkDir(), nil, nil, nil, envList(sw.ws.GetEnvVars()),
		"stack", "export", "--stack", name)
	if err != nil {
		return nil, opErr(op, name, ErrFailed, "export state: %s", e.red.redact(strings.TrimSpace(stderr)))
	}
	var dep apitype.UntypedDeployment
	if err := json.Unmarshal([]byte(stdout), &dep); err != nil {
		return nil, opErr(op, name, ErrFailed, "export state: %v", err)
	}
	return &dep, nil
}

func manifestOf(raw json.RawMessage) string {
	var m struct {
		Manifest json.RawMessage `json:"manifest"`
		Pending  json.RawMessage `json:"pending_operations"`
	}
	_ = json.Unmarshal(raw, &m)
	return string(m.Manifest) + string(m.Pending)
}

// editPending rewrites a deployment: pending creates to adopt become resources (appended, which
// keeps the state's dependency order valid: nothing that exists can depend on an object whose
// create never finished), other pending creates are dropped. Pending updates and deletes stay
// for the refresh. Unknown fields are preserved by editing the JSON generically.
func (e *Engine) editPending(raw json.RawMessage, decisions map[string]Decision) (json.RawMessage, []string, []string, error) {
	var dep map[string]json.RawMessage
	if err := json.Unmarshal(raw, &dep); err != nil {
		return nil, nil, nil, err
	}
	var resources []json.RawMessage
	if r, ok := dep["resources"]; ok && string(r) != "null" {
		if err := json.Unmarshal(r, &resources); err != nil {
			return nil, nil, nil, err
		}
	}
	var pending []map[string]json.RawMessage
	if p, ok := dep["pending_operations"]; ok && string(p) != "null" {
		if err := json.Unmarshal(p, &pending); err != nil {
			return nil, nil, nil, err
		}
	}
	var typed []resourceDoc
	for _, r := range resources {
		var d resourceDoc
		_ = json.Unmarshal(r, &d)
		typed = append(typed, d)
	}
	providers := providerNamespaces(typed)

	var keep []map[string]json.RawMessage
	var adopted, forgotten []string
	for _, p := range pending {
		var typ string
		_ = json.Unmarshal(p["type"], &typ)
		if typ != "creating" {
			keep = append(keep, p)
			continue
		}
		var doc resourceDoc
		if err := json.Unmarshal(p["resource"], &doc); err != nil {
			return nil, nil, nil, err
		}
		desc := e.describePending(doc, typ, providers)
		decision := decisions[doc.URN]
		if decision == "" && !desc.DataBearing && desc.ID != "" {
			decision = DecisionAdopt
		}
		if decision == DecisionAdopt && desc.ID == "" {
			decision = DecisionForget
		}
		if decision != DecisionAdopt {
			forgotten = append(forgotten, doc.URN)
			continue
		}
		if i := slices.IndexFunc(typed, func(r resourceDoc) bool { return r.URN == doc.URN }); i >= 0 {
			if typed[i].ID == desc.ID {
				// The state already holds this very object: the create was a retry of it.
				forgotten = append(forgotten, doc.URN)
				continue
			}
			// An interrupted create-before-delete replacement: the old object is still in the
			// state. Mark it for deletion, exactly as Pulumi does once the replacement exists.
			var old map[string]any
			if err := json.Unmarshal(resources[i], &old); err != nil {
				return nil, nil, nil, err
			}
			old["delete"] = true
			b, err := json.Marshal(old)
			if err != nil {
				return nil, nil, nil, err
			}
			resources[i] = b
		}
		var res map[string]any
		if err := json.Unmarshal(p["resource"], &res); err != nil {
			return nil, nil, nil, err
		}
		res["id"] = desc.ID
		res["custom"] = true
		if out, ok := res["outputs"].(map[string]any); !ok || len(out) == 0 {
			// The provider reads the object back by ID and kind; until the refresh fills in the
			// live object, the checked inputs are the best description of it.
			res["outputs"] = res["inputs"]
		}
		res["created"] = time.Now().UTC().Format(time.RFC3339Nano)
		b, err := json.Marshal(res)
		if err != nil {
			return nil, nil, nil, err
		}
		resources = append(resources, b)
		adopted = append(adopted, doc.URN)
	}
	if len(adopted) == 0 && len(forgotten) == 0 {
		return nil, nil, nil, nil
	}
	var err error
	if dep["resources"], err = json.Marshal(resources); err != nil {
		return nil, nil, nil, err
	}
	if len(keep) == 0 {
		delete(dep, "pending_operations")
	} else if dep["pending_operations"], err = json.Marshal(keep); err != nil {
		return nil, nil, nil, err
	}
	out, err := json.Marshal(dep)
	return out, adopted, forgotten, err
}

// withLock runs a CLI command that takes the backend lock. If the lock is held and every holder
// is provably gone (judgeLock), exactly those locks are deleted and the command runs again; a
// second breaker of the same dead lock finds it gone and meets the first breaker's live lock
// instead. Otherwise the result is ErrConflict naming the holder and why it is not gone.
func (e *Engine) withLock(ctx context.Context, op OpKind, sw *stackWorkspace, name string, col *collector, rec *Recovery, run func() error) error {
	for round := 0; ; round++ {
		err := run()
		if err == nil {
			return nil
		}
		if !isLockConflict(err) || ctx.Err() != nil || round == maxBreakRounds {
			return classify(ctx, op, name, err, e.red, col.errors())
		}
		oe := classify(ctx, op, name, err, e.red, nil)
		if len(oe.Owners) == 0 {
			return oe
		}
		if err := e.breakStale(ctx, name, oe, col, rec); err != nil {
			return err
		}
	}
}

// maxBreakRounds bounds break-and-retry: each round breaks only locks proven stale, so a
// third conflict means live processes keep taking the stack.
const maxBreakRounds = 2

// breakStale judges every holder of the lock conflict oe and, when all are gone, deletes their
// locks and owner records. It returns oe (with the reason) when any holder is not provably gone.
func (e *Engine) breakStale(ctx context.Context, name string, oe *OpError, col *collector, rec *Recovery) error {
	l := liveness{me: selfIdentity(), proc: lookupProc, pods: e.opts.Pods}
	recKeys := map[int][]string{}
	var reasons []string
	for i, o := range oe.Owners {
		if held, err := e.lockHeld(ctx, name, o); err == nil && !held {
			// Released since the CLI listed it (its owner exited by itself): nothing to break.
			continue
		}
		recs, keys, err := e.ownerRecords(ctx, o)
		if err != nil {
			oe.Detail = fmt.Sprintf("locked by %s; its owner records could not be read: %s", o, e.red.redact(err.Error()))
			return oe
		}
		stale, why := judgeLock(ctx, o, recs, l)
		if !stale {
			oe.Detail = fmt.Sprintf("locked by %s: %s", o, why)
			return oe
		}
		recKeys[i] = keys
		reasons = append(reasons, fmt.Sprintf("%s (%s)", o, why))
	}
	for i, o := range oe.Owners {
		if _, judged := recKeys[i]; !judged {
			continue
		}
		deleted, err := e.breakLock(ctx, name, o)
		if err != nil {
			return opErr(oe.Op, name, ErrConflict, "locked by %s, which is gone, but its lock could not be removed: %s", o, e.red.redact(err.Error()))
		}
		e.removeRecords(ctx, recKeys[i])
		if deleted {
			rec.BrokenLocks = append(rec.BrokenLocks, o)
		}
	}
	if len(reasons) > 0 {
		msg := "removed stale backend lock: " + strings.Join(reasons, "; ")
		col.emit(EventRecovery, msg)
		e.opts.Logger.Warn(msg, "stack", name)
	}
	return nil
}

// repairBackend removes broken blob sidecars a killed run may have left among what an
// operation on stack reads (see filebackend.go); "" is a listing of every stack.
func (e *Engine) repairBackend(stack string) {
	if e.opts.ReadOnly {
		return
	}
	if removed := repairFileSidecars(e.opts.BackendURL, stack); len(removed) > 0 {
		e.opts.Logger.Warn("removed broken state metadata left by an interrupted run", "files", removed)
	}
}
