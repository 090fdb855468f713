package engine

import (
	"context"
	"os"
	"path/filepath"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
)

// scratch opens a throwaway workspace for a preview of a stack that does not exist: the
// stack is created in a file backend of its own under the engine's work dir, never in the
// real one, so previewing a new object writes nothing a reader of the backend could see (and
// needs no write permission on it). Parents are not read through this backend: the runner
// hands their outputs to the program itself. done removes the workspace and its backend.
func (e *Engine) scratch(ctx context.Context, op OpKind, name string) (sw *stackWorkspace, done func(), err error) {
	dir, err := os.MkdirTemp(e.workRoot, "preview-")
	if err != nil {
		return nil, nil, opErr(op, name, ErrFailed, "scratch workspace: %v", err)
	}
	done = func() { _ = os.RemoveAll(dir) }
	defer func() {
		if err != nil {
			done()
		}
	}()
	backend, work := filepath.Join(dir, "backend"), filepath.Join(dir, "work")
	for _, d := range []string{backend, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, nil, opErr(op, name, ErrFailed, "scratch workspace: %v", err)
		}
	}
	ws, err := auto.NewLocalWorkspace(ctx,
		auto.WorkDir(work),
		auto.Pulumi(e.cli),
		auto.Project(e.project),
		auto.SecretsProvider(e.opts.SecretsProvider),
		// Workspace env vars come after the engine's in every CLI call (pulumiCLI.environ).
		auto.EnvVars(map[string]string{"PULUMI_BACKEND_URL": normalizeFileURL("file://" + backend)}),
	)
	if err != nil {
		return nil, nil, classify(ctx, op, name, err, e.red, nil)
	}
	st, err := auto.NewStack(ctx, name, ws)
	if err != nil {
		return nil, nil, classify(ctx, op, name, err, e.red, nil)
	}
	return &stackWorkspace{ws: ws, st: st, up: st, tags: map[string]string{}, fresh: true, created: true, scratch: true}, done, nil
}
