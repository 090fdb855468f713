// Package runner turns a TFRS custom resource (TFRCluster, TFRTenant, TFRServer) into stack
// operations through the engine (stacks/engine). The operator, the HTTP API and the CLI all
// call it, so the three doors behave the same on the same state.
//
// The runner does not switch on kinds. What it needs to know about an object comes from the
// object itself (v1alpha1.Object: its stacks, its parent) and from the program table
// (stacks/kinds: which program runs on which stack, over which parent outputs), which the
// stock-CLI entry program shares without linking the engine. What is the runner's own is
// driving the engine: the door rule (CheckDoor), reading parents from the backend
// (EngineParents), a personal tenant's shared stack, and dependents.
//
// A Runner validates before anything changes (kinds.ErrInvalid names every bad field),
// refuses to mutate a stack another door manages (ErrManagedElsewhere), waits for parents by
// reading their stacks (kinds.ErrParentNotReady), and refuses to destroy a parent that still
// has dependents (ErrDependentsExist). Personal tenants run two stacks (see stacks/tenant.go):
// the job type's shared stack and the tenant's own member stack.
package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// Engine is what a Runner needs from *engine.Engine; tests substitute a fake.
type Engine interface {
	Up(ctx context.Context, req engine.Request) (*engine.Result, error)
	Preview(ctx context.Context, req engine.Request) (*engine.Result, error)
	Refresh(ctx context.Context, req engine.Request) (*engine.Result, error)
	Destroy(ctx context.Context, req engine.Request) (*engine.Result, error)
	Remove(ctx context.Context, stack string, force bool) error
	Outputs(ctx context.Context, stack string) (program.Outputs, error)
	Status(ctx context.Context, stack string) (*engine.StackStatus, error)
	Tags(ctx context.Context, stack string) (map[string]string, error)
	List(ctx context.Context, prefix string) ([]engine.StackSummary, error)
	TaggedStacks(ctx context.Context, prefix, key, value string) ([]string, error)
}

var _ Engine = (*engine.Engine)(nil)

// Options configure how programs reach Kubernetes.
type Options struct {
	// Kubeconfig is the kubeconfig *contents* the Kubernetes provider uses (passed as secret
	// stack config, never on a command line). Empty: the provider's default (in-cluster
	// service account, or $KUBECONFIG / ~/.kube/config).
	Kubeconfig string
	// KubeContext selects a context of the kubeconfig.
	KubeContext string
	// RenderDir, when set, makes the provider write YAML manifests into this directory instead
	// of applying them (the provider's renderYamlToDirectory mode). Use a throwaway backend.
	RenderDir string
	// Parents reads parent stacks; nil reads them from the engine (EngineParents).
	Parents kinds.Parents
	// SharedOwner, when set, says which personal tenant of a job type drives the job type's
	// shared stack (the operator passes stacks.SharedStackOwner over its TFRTenant list), nil
	// (never a typed nil) for none. When SharedOwner is nil, the shared stack is created with
	// the first tenant's spec and then reused.
	SharedOwner func(ctx context.Context, jobType string) (v1alpha1.Object, error)
	// Namespaces reads a tenant's target namespace before anything runs (namespace
	// ownership, see namespaces.go); nil reads it from the cluster of Kubeconfig/KubeContext
	// (or the provider's defaults). Not read in render mode (RenderDir).
	Namespaces NamespaceGetter
	// Revision gives this build's program revision (stacks/revision.go), recorded on every
	// stack an up applies; asked only then (naming a build may mean hashing its binary). Nil,
	// or nil from it, records none.
	Revision func() *v1alpha1.Revision
}

// Runner runs the stack operations of custom resources. Safe for concurrent use.
type Runner struct {
	eng  Engine
	opts Options

	kubeOnce sync.Once // the default NamespaceGetter, made on first use
	kube     *kubeNamespaces
	kubeErr  error

	baseOnce sync.Once // the kubeconfig appliers are derived from (applier.go), found on first use
	base     *clientcmdapi.Config
	baseErr  error

	owners ownerLocks // one personal owner's robots come up one at a time (ownerlock.go)
}

// New returns a Runner over eng.
func New(eng Engine, opts Options) *Runner {
	if opts.Parents == nil {
		opts.Parents = EngineParents{Engine: eng}
	}
	return &Runner{eng: eng, opts: opts}
}

// Engine returns the engine the runner drives.
func (r *Runner) Engine() Engine { return r.eng }

// Op carries what every operation takes besides the object.
type Op struct {
	// Door is who asks: recorded as the stack's managed-by tag on first up, and checked
	// against it before any mutation.
	Door engine.ManagedBy
	// Sink receives the engine's progress events; nil discards them.
	Sink engine.Sink
	// Message is recorded in the stack history.
	Message string
	// Rotate and Decisions pass through to the engine (see engine.Request).
	Rotate    []string
	Decisions map[string]engine.Decision
	// SavePlans makes a Preview save each stack's update plan (StackResult.Result.Plan; see
	// plans.go).
	SavePlans bool
	// Plans, by stack, makes an Up apply exactly these saved plans. A stack the up reaches
	// without a plan here is refused (engine.ErrPlanMismatch), as is a plan taken for another
	// spec, before anything runs.
	Plans map[string]*engine.Plan
}

// StackResult is one stack's part of an operation.
type StackResult struct {
	Stack  string         `json:"stack"`
	Result *engine.Result `json:"result,omitempty"`
}

// Outcome is the result of an operation on one object: one entry per stack it ran on, in
// order (a personal tenant's shared stack comes before its own).
type Outcome struct {
	Target kinds.Target  `json:"target"`
	Stacks []StackResult `json:"stacks"`
	// Support are a cluster's components outside their upstream support, or unknown to the
	// support matrix (stacks/support.go): warnings, since a refusal stops before any stack.
	Support []stacks.SupportFinding `json:"support,omitempty"`
	// Skipped says why no stack ran (a door that skips a suspended object: Skip).
	Skipped string `json:"skipped,omitempty"`
}

// Skip is the outcome of an operation a door did not run because err (a *SuspendedError)
// refused it: no stack, and the reason.
func Skip(t kinds.Target, err error) *Outcome {
	return &Outcome{Target: t, Skipped: err.Error()}
}

// Changes sums the step counts of every stack.
func (o *Outcome) Changes() engine.Changes {
	total := engine.Changes{}
	if o == nil {
		return total
	}
	for _, s := range o.Stacks {
		if s.Result == nil {
			continue
		}
		for k, v := range s.Result.Changes {
			total[k] += v
		}
	}
	return total
}

// Steps lists every stack's steps in order.
func (o *Outcome) Steps() []engine.Step {
	var steps []engine.Step
	if o == nil {
		return nil
	}
	for _, s := range o.Stacks {
		if s.Result != nil {
			steps = append(steps, s.Result.Steps...)
		}
	}
	return steps
}

// Own returns the result of the object's own stack (nil when it did not run): its last
// operation, when it ran several (a destroy that first removed a robot's data).
func (o *Outcome) Own() *engine.Result {
	if o == nil {
		return nil
	}
	for i := len(o.Stacks) - 1; i >= 0; i-- {
		if s := o.Stacks[i]; s.Stack == o.Target.Stack {
			return s.Result
		}
	}
	return nil
}

func (o *Outcome) add(stack string, res *engine.Result) {
	o.Stacks = append(o.Stacks, StackResult{Stack: stack, Result: res})
}

// Up creates or updates the object's stacks after its parent is ready.
func (r *Runner) Up(ctx context.Context, obj v1alpha1.Object, op Op) (*Outcome, error) {
	return r.apply(ctx, obj, op, engine.OpUp)
}

// Preview reports what Up would change, without changing anything.
func (r *Runner) Preview(ctx context.Context, obj v1alpha1.Object, op Op) (*Outcome, error) {
	return r.apply(ctx, obj, op, engine.OpPreview)
}

// Refresh reads the object's resources back from the cluster into its stack.
func (r *Runner) Refresh(ctx context.Context, obj v1alpha1.Object, op Op) (*Outcome, error) {
	if err := CheckSuspended(obj); err != nil {
		return nil, err
	}
	t, _, err := kinds.Prepare(obj)
	if err != nil {
		return nil, err
	}
	if err := r.checkStack(ctx, t, op.Door, false); err != nil {
		return nil, err
	}
	out := &Outcome{Target: t}
	req, err := r.request(t.Stack, nil, op, nil, "")
	if err != nil {
		return nil, err
	}
	req.StateTags = []string{TagInputs} // a refresh that changes the state voids the proof
	res, err := r.eng.Refresh(ctx, req)
	out.add(t.Stack, res)
	return out, err
}

func (r *Runner) apply(ctx context.Context, obj v1alpha1.Object, op Op, kind engine.OpKind) (*Outcome, error) {
	if err := CheckSuspended(obj); err != nil {
		return nil, err
	}
	t, obj, err := kinds.Prepare(obj)
	if err != nil {
		return nil, err
	}
	// The stack check (identity, and for Up the door) and the parent reads are independent
	// CLI reads: run them at once. No stack operation starts before the check passed, and its
	// refusal wins over any parent error, exactly as if it had run first.
	door := make(chan error, 1)
	by := op.Door
	if kind != engine.OpUp {
		by = "" // only Up mutates: a preview through any door is fine, on the object's own stack
	}
	var digest string
	if (kind == engine.OpPreview && op.SavePlans) || (kind == engine.OpUp && op.Plans != nil) {
		if digest, err = SpecDigest(obj); err != nil {
			return nil, err
		}
		if kind == engine.OpUp {
			if err := checkPlans(op.Plans, digest); err != nil {
				return nil, err
			}
		}
	}
	in := &inputs{}
	go func() { door <- r.checkStack(ctx, t, by, true) }()
	doorErr := sync.OnceValue(func() error { return <-door })
	out := &Outcome{Target: t}
	run := func(stack string, prog programFunc, tags map[string]string, ns string) error {
		if err := doorErr(); err != nil {
			return err
		}
		if stack == t.Stack {
			// The own stack records whose it is (CheckIdentity reads it back).
			tags = maps.Clone(tags)
			if tags == nil {
				tags = map[string]string{}
			}
			tags[engine.TagObject] = ObjectIdentity(t)
			if t.Immutable != "" {
				tags[engine.TagImmutable] = t.Immutable
			}
		}
		req, err := r.request(stack, prog, op, tags, ns)
		if err != nil {
			return err
		}
		if stack == t.Stack {
			req.Admit = admission(t, op.Door, true)
		}
		switch {
		case kind == engine.OpPreview && op.SavePlans:
			req.SavePlan, req.PlanMeta = true, map[string]string{PlanMetaSpec: digest}
		case kind == engine.OpUp && op.Plans != nil:
			if req.Plan = op.Plans[stack]; req.Plan == nil {
				return &PlanMismatchError{Stack: stack, Reason: "the up reached a stack the saved plans do not cover"}
			}
		}
		var res *engine.Result
		if kind == engine.OpUp {
			if r.opts.Revision != nil {
				req.AppliedTags = stacks.RevisionTags(r.opts.Revision()) // written by an up that succeeds
				if stack == t.Stack && t.Shared == "" && req.AppliedTags != nil {
					// The programs were made: every read is recorded (inputs.go).
					// Not readable now (the cluster's version): no proof, the up goes on.
					req.AppliedTags[TagInputs], _ = r.inputsDigest(ctx, obj, in)
				}
			}
			res, err = r.eng.Up(ctx, req)
		} else {
			res, err = r.eng.Preview(ctx, req)
		}
		out.add(stack, res)
		return err
	}
	if kind == engine.OpUp {
		hold := &ownerHold{locks: &r.owners}
		defer hold.done()
		ctx = withOwnerHold(ctx, hold)
	}
	err = r.applyObject(ctx, t, obj, kind, r.recording(in), run, out)
	if derr := doorErr(); derr != nil {
		return nil, derr
	}
	return out, err
}

// Destroy deletes the object's resources (the tenant's deletion policy decides what stateful
// data survives) and removes its stack. A parent with dependents is refused with
// ErrDependentsExist; nothing is touched then.
func (r *Runner) Destroy(ctx context.Context, obj v1alpha1.Object, op Op) (*Outcome, error) {
	if err := CheckSuspended(obj); err != nil {
		return nil, err
	}
	t, obj, err := kinds.Prepare(obj)
	if err != nil {
		return nil, err
	}
	if err := r.checkStack(ctx, t, op.Door, false); err != nil {
		return nil, err
	}
	deps, err := r.Dependents(ctx, t)
	if err != nil {
		return nil, err
	}
	if len(deps) > 0 {
		return nil, &DependentsError{Stack: t.Stack, Dependents: deps}
	}
	out := &Outcome{Target: t}
	if err := r.purgeRobotData(ctx, t, obj, op, out); err != nil {
		return out, err
	}
	if err := r.destroyStack(ctx, t.Stack, op, out); err != nil {
		return out, err
	}
	if t.Shared != "" {
		err = r.releaseShared(ctx, t, op, out)
	}
	return out, err
}

// destroyStack destroys and removes one stack; a stack that does not exist is already gone.
func (r *Runner) destroyStack(ctx context.Context, stack string, op Op, out *Outcome) error {
	req, err := r.request(stack, nil, op, nil, "")
	if err != nil {
		return err
	}
	res, err := r.eng.Destroy(ctx, req)
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	out.add(stack, res)
	if err != nil {
		return err
	}
	if err := r.eng.Remove(ctx, stack, false); err != nil && !errors.Is(err, engine.ErrNotFound) {
		return fmt.Errorf("remove stack %s: %w", stack, err)
	}
	return nil
}

// request builds the engine request for one stack, applying into namespace ns ("" for
// cluster-wide, and for operations that run no program).
func (r *Runner) request(stack string, prog programFunc, op Op, tags map[string]string, ns string) (engine.Request, error) {
	cfg, err := r.config(ns)
	if err != nil {
		return engine.Request{}, err
	}
	return engine.Request{
		Stack: stack, Program: prog, ManagedBy: op.Door, Tags: tags, Config: cfg,
		Sink: op.Sink, Message: op.Message, Rotate: op.Rotate, Decisions: op.Decisions,
	}, nil
}

// Config keys of the default Kubernetes provider.
const (
	ConfigKubeconfig  = program.ConfigKubeconfig
	ConfigKubeContext = program.ConfigKubeContext
	ConfigRenderDir   = program.ConfigRenderDir
)
