package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sort"
	"sync"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/confine"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// The inputs of a stack: everything its program is a function of. A program's resources depend
// on the spec, on the program itself (the build's revision: code and pinned sources) and on
// what it reads before it runs: its parent's outputs (secrets included), the namespace's
// ownership, the API server's addresses, and the cluster's Kubernetes version. A successful up
// records a digest of all of them on its own stack (TagInputs). While they are unchanged and
// nothing ran on the stack since, a preview would find nothing to do: a fleet preview reports
// such a stack unchanged without running Pulumi (Runner.Unchanged).

// TagInputs is the stack tag holding the inputs digest of the last successful up ("" or
// absent: no proof; a refresh that changed or may have changed the state empties it).
const TagInputs = "tfrs.io/inputs"

// inputs records what one operation's programs read, as "what=digest" lines.
type inputs struct {
	mu    sync.Mutex
	reads map[string]string
}

func (in *inputs) add(what, digest string) {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.reads == nil {
		in.reads = map[string]string{}
	}
	in.reads[what] = digest
}

func (in *inputs) has(what string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	_, ok := in.reads[what]
	return ok
}

// addJSON records a value that holds no secret (or only SecretString, whose JSON hides it:
// then only the non-secret part counts, which is why parents go through addOutputs).
func (in *inputs) addJSON(what string, v any) {
	if in == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = fmt.Appendf(nil, "unencodable %T", v) // never matches a recorded digest by accident
	}
	sum := sha256.Sum256(b)
	in.add(what, hex.EncodeToString(sum[:]))
}

// digest folds the spec digest, the revision and the reads into the inputs digest.
func (in *inputs) digest(spec, revision string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	h := sha256.New()
	fmt.Fprintf(h, "spec %s\nrevision %s\n", spec, revision)
	keys := make([]string, 0, len(in.reads))
	for k := range in.reads {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, in.reads[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// HashOutputs writes a stack's outputs to h, secret values in plain text: a digest of them
// changes when a password rotates, and never shows it.
func HashOutputs(h hash.Hash, stack string, outs program.Outputs) {
	fmt.Fprintf(h, "stack %q\n", stack)
	for _, k := range outs.Keys() {
		b, _ := json.Marshal(outs[k].Reveal())
		fmt.Fprintf(h, "%q=%s\n", k, b)
	}
}

// inputsSpecDigest is SpecDigest with every localPath's value left out: where a door keeps a
// local source is not an input (the CLI snapshots it under its state directory, the operator
// reads it in place), its files are (addSources). "" when a path cannot be set: no proof then.
func inputsSpecDigest(obj v1alpha1.Object) (string, error) {
	blank := obj.DeepCopyObject().(v1alpha1.Object)
	for _, src := range blank.Sources() {
		if src.Kind == v1alpha1.SourceLocalPath {
			if err := kinds.SetSourceField(blank, src.Path, "(local)"); err != nil {
				return "", nil
			}
		}
	}
	return SpecDigest(blank)
}

// localReader reads local sources (relative paths from the working directory, as the
// programs resolve them).
var localReader = func() *confine.Confiner {
	c, err := confine.New(confine.Trusted, "", "")
	if err != nil {
		panic("runner: no working directory: " + err.Error())
	}
	return c
}()

// addSources records what the spec's sources hold beyond their names: the files of a local
// path. A pinned chart (repository and version) is named by its fields; a manifest URL is not
// (what it serves may change), so an object with one has no proof (false).
func (in *inputs) addSources(obj v1alpha1.Object) (bool, error) {
	for _, src := range obj.Sources() {
		switch src.Kind {
		case v1alpha1.SourceManifestURL:
			return false, nil
		case v1alpha1.SourceLocalPath:
			// Read as the CLI reads a local source to snapshot it (confine's trusted rules and
			// bounds); the digest is the one that names its snapshot.
			snap, err := localReader.Read(src.Value)
			if err != nil {
				return false, nil // unreadable here: the preview says why
			}
			in.add("local "+src.Path.String(), snap.Digest())
		}
	}
	return true, nil
}

// recordingEngine records the outputs of every stack the programs' parents are read from.
type recordingEngine struct {
	Engine
	in *inputs
}

func (e recordingEngine) Status(ctx context.Context, stack string) (*engine.StackStatus, error) {
	if m := memoOf(ctx); m != nil {
		r := m.read(stack)
		r.status.Do(func() { r.st, r.stErr = e.Engine.Status(ctx, stack) })
		return r.st, r.stErr
	}
	return e.Engine.Status(ctx, stack)
}

func (e recordingEngine) Outputs(ctx context.Context, stack string) (program.Outputs, error) {
	var (
		out program.Outputs
		err error
	)
	if m := memoOf(ctx); m != nil {
		r := m.read(stack)
		r.outputs.Do(func() { r.out, r.outErr = e.Engine.Outputs(ctx, stack) })
		out, err = r.out, r.outErr
	} else {
		out, err = e.Engine.Outputs(ctx, stack)
	}
	if err == nil {
		h := sha256.New()
		HashOutputs(h, stack, out)
		e.in.add("outputs "+stack, hex.EncodeToString(h.Sum(nil)))
	}
	return out, err
}

// recording returns the runner's parents with every read recorded in in: the parent stacks'
// outputs, and the cluster reads of ownershipParents. Parents given in Options (rendering)
// are returned as they are: nothing is recorded then.
func (r *Runner) recording(in *inputs) kinds.Parents {
	if _, ok := r.opts.Parents.(EngineParents); !ok || r.opts.RenderDir != "" {
		return r.parents()
	}
	return ownershipParents{Parents: EngineParents{Engine: recordingEngine{Engine: r.eng, in: in}}, r: r, in: in}
}

// inputsDigest is the digest of obj's inputs once its programs were made with parents
// recording into in; "" when they cannot all be known (a manifest URL's content). The cluster's Kubernetes version counts for every kind (the provider's
// behaviour follows it), so it is read here when the programs did not.
func (r *Runner) inputsDigest(ctx context.Context, obj v1alpha1.Object, in *inputs) (string, error) {
	spec, err := inputsSpecDigest(obj)
	if err != nil || spec == "" {
		return "", err
	}
	if !in.has("kube-version") { // a cluster's programs read it already
		if _, err := (ownershipParents{r: r, in: in}).KubeVersion(ctx); err != nil {
			return "", err
		}
	}
	if ok, err := in.addSources(obj); !ok || err != nil {
		return "", err // no proof
	}
	rev := ""
	if r.opts.Revision != nil {
		if v := r.opts.Revision(); v != nil {
			rev = v.ID
		}
	}
	return in.digest(spec, rev), nil
}

// Unchanged reports whether a preview of obj would find nothing to change, proven without
// running Pulumi: its own stack's last operation is the successful up that recorded its inputs
// (or a later refresh that left them, see engine.Request.StateTags), and those inputs are
// what obj's programs would read now. Everything a preview checks first is checked as it is
// (the spec, the stack's identity, the parents, the namespace and robot ownership), and a
// refusal is returned as the preview would return it. False (nil error) means "not proven":
// the caller previews for real. A personal tenant is never proven (its shared stack's inputs
// are another object's), nor a stack of a build that records no revision.
func (r *Runner) Unchanged(ctx context.Context, obj v1alpha1.Object) (bool, error) {
	if err := CheckSuspended(obj); err != nil {
		return false, err
	}
	t, obj, err := kinds.Prepare(obj)
	if err != nil {
		return false, err
	}
	if t.Shared != "" || r.opts.Revision == nil || r.opts.RenderDir != "" {
		return false, nil
	}
	st, err := r.eng.Status(ctx, t.Stack)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	if err := admission(t, "", true)(st.Tags); err != nil {
		return false, err
	}
	last := st.Tags[TagInputs]
	if last == "" || !st.Ready || !untouchedSince(st.Last) {
		return false, nil
	}
	in := &inputs{}
	progs, err := kinds.ProgramsOf(ctx, t, obj, r.recording(in))
	if err != nil {
		return false, err
	}
	if progs.Wait != nil {
		return false, progs.Wait
	}
	now, err := r.inputsDigest(ctx, obj, in)
	return err == nil && now != "" && now == last, err
}

// untouchedSince: the stack's last operation left its state as its last successful up did: it
// is that up, or a refresh that changed nothing (a refresh by tfrs that changed something also
// empties TagInputs; one by the stock Pulumi CLI shows here).
func untouchedSince(last *engine.HistoryEntry) bool {
	if last == nil || last.Result != "succeeded" {
		return false
	}
	switch last.Kind {
	case "update":
		return true
	case "refresh":
		for op, n := range last.Changes {
			if op != string(engine.StepSame) && n > 0 {
				return false
			}
		}
		return true
	}
	return false
}

// A read memo makes the parent reads of many Unchanged calls one per parent stack: a fleet
// preview of a cluster's hundred tenants reads the cluster's outputs once (decrypting a
// stack's secrets is most of a proof's time), not a hundred times. It lives as long as the
// context, so the answers are of one moment, as a report is.
type readMemo struct {
	mu    sync.Mutex
	reads map[string]*memoRead
}

type memoRead struct {
	status, outputs sync.Once
	st              *engine.StackStatus
	out             program.Outputs
	stErr, outErr   error
}

type memoKey struct{}

// WithReadMemo returns ctx with a read memo for the Unchanged calls made under it.
func WithReadMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, memoKey{}, &readMemo{reads: map[string]*memoRead{}})
}

func memoOf(ctx context.Context) *readMemo {
	m, _ := ctx.Value(memoKey{}).(*readMemo)
	return m
}

func (m *readMemo) read(stack string) *memoRead {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.reads[stack]
	if r == nil {
		r = &memoRead{}
		m.reads[stack] = r
	}
	return r
}
