package stacks

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The skeleton the three programs share. A level's program is a body,
// func(*pulumi.Context, <Level>Input) (pulumi.Map, error), that starts with prepare and ends
// returning every output key; runProgram turns the body into the stack's pulumi.RunFunc.
// Keeping the wrapper and the prelude here, once, means the readiness transforms, the spec
// checks and the export rule cannot drift apart between levels.

// runProgram is the RunFunc of a level: the program-wide transforms before anything is
// registered, then the body, then its outputs exported.
func runProgram[In any](in In, body func(*pulumi.Context, In) (pulumi.Map, error)) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		if err := awaitTransforms(ctx); err != nil {
			return err
		}
		outputs, err := body(ctx, in)
		if err != nil {
			return err
		}
		for k, v := range outputs {
			ctx.Export(k, v)
		}
		return nil
	}
}

// levelObject is what the skeleton needs of a level's custom resource (TFRCluster, TFRTenant,
// TFRServer).
type levelObject[T any] interface {
	*T
	DeepCopy() *T
	Default()
	Validate() field.ErrorList
	GetName() string
}

// prepare is every body's prelude: a defaulted and validated copy of the level's object (the
// caller's stays untouched, and a bad spec fails before anything is registered), and g, when
// set, emptied for the components about to be recorded. level is the stack level
// ("cluster"), kind the object's kind ("TFRCluster"), as the errors name them.
func prepare[T any, P levelObject[T]](level, kind string, obj P, g *Graph) (P, error) {
	if obj == nil {
		return nil, fmt.Errorf("%s program: nil %s", level, kind)
	}
	c := P(obj.DeepCopy())
	c.Default()
	if errs := c.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid %s %q: %w", kind, c.GetName(), errs.ToAggregate())
	}
	if g != nil {
		*g = Graph{}
	}
	return c, nil
}
