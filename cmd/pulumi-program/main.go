// Command pulumi-program is the entry of the project's Pulumi.yaml, for teams that run the
// stock Pulumi CLI against the same backend as tfrs:
//
//	pulumi config set tfrs:object -s tenant.tfrs-system.acme -- "$(cat examples/tenant-enterprise.yaml)"
//	pulumi preview --diff -s tenant.tfrs-system.acme
//
// It reads the CR document from the stack config key tfrs:object and runs the same stack
// program as `tfrs preview`, picked by the document's kind and the selected stack, with
// parent outputs read through stack references. It needs the Go language host
// (pulumi-language-go); where that is missing, `tfrs preview -f FILE` is the way.
//
// It runs previews only. Generated credentials (database passwords, MinIO keys) are kept in
// the stack's state and handed to the program by the tfrs engine; the stock CLI cannot hand
// them over, so an update from here would generate new ones and rotate every password.
// Resources that carry those credentials may therefore show as changed in a stock-CLI
// preview; `tfrs preview` shows the exact diff, and `tfrs up` applies it.
package main

import (
	"errors"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"github.com/tfrs-io/tfrs-operator/internal/manifest"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

func main() { pulumi.Run(run) }

// errApply refuses a non-preview run (see the package comment).
var errApply = errors.New("this entry only previews: generated credentials live in the tfrs engine's state handling, and an update from the stock CLI would rotate them; apply with `tfrs up -f FILE`")

// run is the program: decode the one CR of tfrs:object, then dispatch.
func run(ctx *pulumi.Context) error {
	doc := config.Get(ctx, kinds.ConfigObject)
	if strings.TrimSpace(doc) == "" {
		return kinds.ErrNoObject
	}
	objs, err := manifest.Decode(strings.NewReader(doc))
	if err != nil {
		return err
	}
	if len(objs) != 1 {
		return errors.New(kinds.ConfigObject + " must hold exactly one TFRS document (one stack, one object)")
	}
	if !ctx.DryRun() {
		return errApply
	}
	prog, err := kinds.Program(objs[0], nil)
	if err != nil {
		return err
	}
	return prog(ctx)
}
