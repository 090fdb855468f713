package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
)

func init() {
	register("dev", "start a local control plane (etcd, kube-apiserver, controllers, kwok) and keep it running until Ctrl-C", runDev)
}

func runDev(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	dir := fs.String("dir", defaultDevDir(), "directory for the control plane's data, certificates, logs and kubeconfig")
	smoke := fs.Bool("smoke", false, "run the smoke flow (Namespace + Deployment up, no-op up, destroy) through the engine, then stop")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(*dir, "controlplane")); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "starting the local control plane …")
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: filepath.Join(*dir, "controlplane")})
	if err != nil {
		return err
	}
	defer cp.Stop()
	fmt.Printf("kubeconfig: %s\n", cp.KubeconfigPath)
	fmt.Printf("try:        kubectl --kubeconfig %s get nodes\n", cp.KubeconfigPath)
	if *smoke {
		return runSmoke(ctx, cp, filepath.Join(*dir, "state"))
	}
	fmt.Fprintln(os.Stderr, "running; Ctrl-C stops everything")
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping …")
	return nil
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
