package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/demo"
	"github.com/tfrs-io/tfrs-operator/internal/devenv"
)

func init() {
	register("dev", "run everything on this machine: a local control plane with the CRDs, the operator and the HTTP API over file:// state (--demo tells the whole story)", runDev)
}

func runDev(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	dir := fs.String("dir", defaultDevDir(), "directory for the control plane, the state, the passphrase, the API token and logs")
	listen := fs.String("listen", "127.0.0.1:8480", "address of the HTTP API")
	smoke := fs.Bool("smoke", false, "only start the control plane and run the smoke flow (Namespace + Deployment up, no-op up, destroy), then stop")
	runDemo := fs.Bool("demo", false, "drive the demo story (kubectl, HTTP and CLI with the examples), then stop")
	stay := fs.Bool("stay", false, "with --demo: keep running afterwards until Ctrl-C")
	root := fs.String("root", ".", "with --demo: the repository checkout holding examples/ and stacks/testdata/")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *smoke {
		return runSmokeOnly(ctx, *dir)
	}
	if *runDemo {
		if _, err := os.Stat(filepath.Join(*root, "examples", "dev", "cluster.yaml")); err != nil {
			return fmt.Errorf("%w: --demo needs the repository checkout (--root): %v", errUsage, err)
		}
	}
	start := time.Now()
	fmt.Fprintln(os.Stderr, "starting the local control plane, the operator and the HTTP API …")
	env, err := devenv.Start(ctx, devenv.Options{Dir: *dir, Listen: *listen})
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
	fmt.Printf("state:      %s (passphrase in %s)\n", env.Engine.BackendURL(), env.PassphraseFile)
	fmt.Printf("logs:       %s\n", filepath.Join(env.Dir, "tfrs.log"))
	fmt.Printf("shell:      source %s\n", env.EnvFile)
	if *runDemo {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(*root)
		if err != nil {
			return err
		}
		story := &demo.Story{Env: env, Root: abs, TFRS: self, Out: os.Stdout}
		if err := story.Run(ctx); err != nil {
			return err
		}
		fmt.Printf("\ndemo finished in %s\n", time.Since(start).Round(time.Second))
		if !*stay {
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
