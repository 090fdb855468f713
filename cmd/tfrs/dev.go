package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tfrs-io/tfrs-operator/cmd/tfrs/demo"
	"github.com/tfrs-io/tfrs-operator/cmd/tfrs/devenv"
	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
)

// devFlags are `tfrs dev`'s flags.
type devFlags struct {
	dir, listen, root    string
	smoke, runDemo, stay bool
	log                  logFlags
}

func newDevCmd() *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "dev [--demo [--stay]] [--smoke] [flags]",
		Short: "Run everything on this machine: a local control plane with the CRDs, the operator and the HTTP API",
		Long: `Dev starts a local control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok) with the CRDs, and runs the operator and the HTTP API against it in this
process over file:// state under --dir, until Ctrl-C. It prints the kubeconfig, the API URL and
where its token is; source <dir>/env.sh points kubectl, tfrs and curl at it. The operator's and
the API's logs go to <dir>/tfrs.log in --log-format.

--demo tells the whole story with the repository's examples (kubectl, HTTP and the CLI), then
stops; --smoke runs only the smallest check (a control plane and one tiny program).`,
		Example: `  tfrs dev
  tfrs dev --demo --root .
  tfrs dev --smoke`,
		GroupID: groupServers,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), cmd, &f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.dir, "dir", defaultDevDir(), "directory for the control plane, the state, the passphrase, the API token and logs")
	_ = cmd.MarkFlagDirname("dir")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8480", "address of the HTTP API")
	fs.BoolVar(&f.smoke, "smoke", false, "only start the control plane and run the smoke flow (Namespace + Deployment up, no-op up, destroy), then stop")
	fs.BoolVar(&f.runDemo, "demo", false, "drive the demo story (kubectl, HTTP and CLI with the examples), then stop")
	fs.BoolVar(&f.stay, "stay", false, "with --demo: keep running afterwards until Ctrl-C")
	fs.StringVar(&f.root, "root", ".", "with --demo: the repository checkout holding examples/ and stacks/testdata/")
	_ = cmd.MarkFlagDirname("root")
	f.log.bind(fs)
	return cmd
}

func runDev(ctx context.Context, cmd *cobra.Command, f *devFlags) error {
	if _, err := f.log.handler(cmd.Flags(), io.Discard); err != nil {
		return err
	}
	if f.smoke {
		return runSmokeOnly(ctx, f.dir)
	}
	if f.stay && !f.runDemo {
		return fmt.Errorf("%w: --stay goes with --demo", errUsage)
	}
	if f.runDemo {
		if _, err := os.Stat(filepath.Join(f.root, "examples", "dev", "cluster.yaml")); err != nil {
			return fmt.Errorf("%w: --demo needs the repository checkout (--root): %v", errUsage, err)
		}
	}
	start := time.Now()
	fmt.Fprintln(os.Stderr, "starting the local control plane, the operator and the HTTP API …")
	env, err := devenv.Start(ctx, devenv.Options{Dir: f.dir, Listen: f.listen, Revision: programRevision, LogHandler: func(w io.Writer) slog.Handler {
		h, _ := f.log.handler(cmd.Flags(), w) // checked above
		return h
	}})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "stopping …")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop:", err)
		}
	}()
	fmt.Printf("ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	fmt.Printf("kubeconfig: %s\n", env.KubeconfigPath)
	fmt.Printf("API:        %s (token in %s)\n", env.APIURL, filepath.Join(env.Dir, "api-token"))
	fmt.Printf("team token: %s (Kubernetes RBAC: tenants and servers in namespace %s)\n", env.TeamTokenCommand(), env.TeamNamespace)
	fmt.Printf("state:      %s (passphrase in %s)\n", env.Engine.BackendURL(), env.PassphraseFile)
	fmt.Printf("logs:       %s\n", filepath.Join(env.Dir, "tfrs.log"))
	fmt.Printf("shell:      source %s\n", env.EnvFile)
	if f.runDemo {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(f.root)
		if err != nil {
			return err
		}
		story := &demo.Story{Env: env, Root: abs, TFRS: self, Out: os.Stdout}
		if err := story.Run(ctx); err != nil {
			return err
		}
		fmt.Printf("\ndemo finished in %s\n", time.Since(start).Round(time.Second))
		if !f.stay {
			return nil
		}
	}
	fmt.Fprintln(os.Stderr, "running; Ctrl-C stops everything")
	<-ctx.Done()
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}

// runSmokeOnly is `tfrs dev --smoke`: the control plane and one tiny program, nothing else.
func runSmokeOnly(ctx context.Context, dir string) error {
	if err := os.RemoveAll(filepath.Join(dir, "controlplane")); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "starting the local control plane …")
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: filepath.Join(dir, "controlplane")})
	if err != nil {
		return err
	}
	defer cp.Stop()
	fmt.Printf("kubeconfig: %s\n", cp.KubeconfigPath)
	return runSmoke(ctx, cp, filepath.Join(dir, "smoke-state"))
}

// defaultDevDir is where `tfrs dev` keeps everything: under the user's state directory, so a
// second run finds the same Pulumi state.
func defaultDevDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "tfrs", "dev")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "tfrs-dev")
	}
	return filepath.Join(home, ".tfrs", "dev")
}
