package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// Saved plans through the runner: a Preview with Op.SavePlans saves one plan per stack it
// runs (StackResult.Result.Plan), each recording the digest of the object's spec it was taken
// for (PlanMetaSpec); an Up with Op.Plans applies exactly those plans. Before the first stack
// runs, every plan is checked against the spec it is asked to apply: a plan taken for another
// spec, or a stack the up reaches without a plan, fails the Up with engine.ErrPlanMismatch and
// nothing changes. What the spec digest cannot see (a parent's outputs, the cluster) Pulumi
// checks step by step as the up runs (see stacks/engine/plans.go).

// PlanMetaSpec is the plan metadata key holding the spec digest.
const PlanMetaSpec = "spec"

// SpecDigest is a digest of the object's spec (as the runner prepares it, defaults applied).
func SpecDigest(obj v1alpha1.Object) (string, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var doc struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", err
	}
	sum := sha256.Sum256(doc.Spec)
	return hex.EncodeToString(sum[:8]), nil
}

// PlanMismatchError says why a saved plan was refused before anything ran.
type PlanMismatchError struct {
	Stack  string
	Reason string
}

func (e *PlanMismatchError) Error() string {
	return fmt.Sprintf("saved plan of %s refused: %s", e.Stack, e.Reason)
}

func (e *PlanMismatchError) Is(target error) bool { return target == engine.ErrPlanMismatch }

// checkPlans refuses plans that were not taken for this spec, before any stack runs.
func checkPlans(plans map[string]*engine.Plan, digest string) error {
	for stack, p := range plans {
		if p == nil || p.Stack != stack {
			return &PlanMismatchError{Stack: stack, Reason: "the plan is of another stack"}
		}
		if got := p.Meta[PlanMetaSpec]; got != digest {
			return &PlanMismatchError{Stack: stack, Reason: "the spec changed since the plan was saved; preview again for a new plan"}
		}
	}
	return nil
}

// CheckPlans is the check an Up with Op.Plans runs first, for callers that apply several
// objects and want every one checked before the first runs (the CLI's `up --plan`).
func CheckPlans(obj v1alpha1.Object, plans map[string]*engine.Plan) error {
	_, prepared, err := kinds.Prepare(obj)
	if err != nil {
		return err
	}
	digest, err := SpecDigest(prepared)
	if err != nil {
		return err
	}
	return checkPlans(plans, digest)
}
