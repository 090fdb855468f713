// Command bench is `make bench`: how fast and how far one tfrs goes, measured side by side
// with the floor (what kubectl alone does) in the same run, on the local control plane.
//
//  1. provisioning: `tfrs up` of an enterprise tenant from nothing vs `kubectl apply
//     --server-side` of the manifests `tfrs render` writes for the same spec, plus the same
//     readiness waits;
//  2. unchanged preview: `tfrs preview` vs `kubectl diff --server-side` of those manifests;
//  3. idle cost: engine operations, CLI processes and CPU per resync of N unchanged CRs
//     (`tfrs operator`);
//  4. scale: 1, 10, 50, 100 tenants through the HTTP API (`tfrs serve`, default
//     concurrency): wall time, per-tenant p50/p95, peak RSS of the serve process tree;
//  5. memory per in-flight operation;
//  8. fleet preview of N tenants: proven unchanged from their recorded inputs, and --full.
//
// Every tfrs figure is of the real binary as users run it (a separate process, the real
// Pulumi CLI and provider). The table goes to stdout and, with the machine's description, to
// -out. Nothing here asserts a time: the numbers are the product.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
)

type config struct {
	tfrs     string
	out      string
	dir      string
	rounds   int
	idle     int
	scale    []int
	profile  string
	resync   time.Duration
	only     map[string]bool
	keep     bool
	parallel int

	flatStacks  []int
	flatHistory int
	refreshes   int
	fleet       int
}

type bench struct {
	cfg        config
	dir        string
	kubeconfig string
	stateDir   string
	passphrase string
	logs       string
	report     *report
}

const (
	clusterName = "bench"
	crNamespace = "tfrs-system"
)

func main() {
	var c config
	var scale, only, flatStacks string
	flag.StringVar(&c.tfrs, "tfrs", "bin/tfrs", "the tfrs binary to measure")
	flag.StringVar(&c.out, "out", "bench-results.md", "results file (the table plus the machine's description)")
	flag.StringVar(&c.dir, "dir", "", "work directory (default: a new temp dir, removed unless -keep)")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds of the provisioning and preview comparisons (the median is reported)")
	flag.IntVar(&c.idle, "idle", 50, "unchanged CRs in the idle-cost measurement")
	flag.StringVar(&scale, "scale", "1,10,50,100", "tenant counts of the scale measurement")
	flag.StringVar(&c.profile, "scale-profile", "lean", "tenants of the scale and idle measurements: lean (no observability, caches or front end) or full")
	flag.DurationVar(&c.resync, "resync", 20*time.Second, "the operator's --resync-period in the idle measurement")
	flag.StringVar(&only, "only", "provision,idle,scale,memory,flat,fleet", "measurements to run (provision includes the preview comparison)")
	flag.StringVar(&flatStacks, "flat-stacks", "10,1000", "stacks in the backends of the flat-cost measurement")
	flag.IntVar(&c.flatHistory, "flat-history", 20, "history entries (and backups) of every seeded stack in the flat-cost measurement")
	flag.IntVar(&c.refreshes, "refreshes", 100, "drift checks (refreshes) before the state size is measured (0: skip)")
	flag.IntVar(&c.fleet, "fleet", 100, "tenants of the fleet-preview measurement")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory (logs, rendered manifests, state)")
	flag.IntVar(&c.parallel, "parallel", 0, "pass --parallel to tfrs serve and tfrs operator (0: their default)")
	flag.Parse()
	for _, s := range strings.Split(scale, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fatalf("-scale: %q is not a positive count", s)
		}
		c.scale = append(c.scale, n)
	}
	for _, s := range strings.Split(flatStacks, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 {
			fatalf("-flat-stacks: %q is not a count of at least 2", s)
		}
		c.flatStacks = append(c.flatStacks, n)
	}
	c.only = map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		c.only[strings.TrimSpace(s)] = true
	}
	if c.profile != "lean" && c.profile != "full" {
		fatalf("-scale-profile: want lean or full, got %q", c.profile)
	}
	var err error
	if c.tfrs, err = filepath.Abs(c.tfrs); err != nil {
		fatalf("%v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, c config) error {
	b := &bench{cfg: c, report: newReport(c)}
	b.dir = c.dir
	if b.dir == "" {
		d, err := os.MkdirTemp("", "tfrs-bench-")
		if err != nil {
			return err
		}
		b.dir = d
		if !c.keep {
			defer os.RemoveAll(d)
		}
	}
	b.stateDir = filepath.Join(b.dir, "state")
	b.logs = filepath.Join(b.dir, "logs")
	b.passphrase = filepath.Join(b.dir, "passphrase")
	for _, d := range []string{b.stateDir, b.logs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(b.passphrase, []byte(randomHex(16)+"\n"), 0o600); err != nil {
		return err
	}

	// The flat-cost measurement runs the engine on programs without cloud resources; the others
	// need the control plane and the cluster stack.
	if c.only["provision"] || c.only["idle"] || c.only["scale"] || c.only["memory"] || c.only["fleet"] {
		stop, err := b.startCluster(ctx)
		if err != nil {
			return err
		}
		defer stop()
	}

	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"provision", b.provision},
		{"idle", b.idleCost},
		{"scale", b.scale},
		{"memory", b.memory},
		{"flat", b.flatCost},
		{"fleet", b.fleetPreview},
	}
	for _, s := range steps {
		if !c.only[s.name] {
			continue
		}
		if err := s.fn(ctx); err != nil {
			b.report.note("%s: FAILED: %v", s.name, err)
			b.report.write(os.Stdout, c.out)
			return fmt.Errorf("%s: %w (logs in %s)", s.name, err, b.logs)
		}
	}
	return b.report.write(os.Stdout, c.out)
}

// startCluster starts the local control plane and brings the cluster stack up; stop stops
// the control plane.
func (b *bench) startCluster(ctx context.Context) (stop func(), err error) {
	logf("starting the local control plane in %s", b.dir)
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: filepath.Join(b.dir, "controlplane")})
	if err != nil {
		return nil, err
	}
	b.kubeconfig = cp.KubeconfigPath
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	if err := testenv.InstallCRDs(ctx, cp.RESTConfig); err != nil {
		return nil, err
	}
	if _, err := b.kubectl(ctx, "create", "namespace", crNamespace); err != nil {
		return nil, err
	}

	cluster := testenv.StandInCluster(clusterName)
	clusterFile, err := b.writeObjects("cluster.yaml", cluster)
	if err != nil {
		return nil, err
	}
	logf("cluster %s: tfrs up", clusterName)
	d, err := b.tfrs(ctx, "cluster-up", "up", "-f", clusterFile)
	if err != nil {
		return nil, err
	}
	b.report.note("cluster stack (stand-in operators, charts) up: %s", secs(d))

	return func() { _ = cp.Stop() }, nil
}

// tfrs runs one tfrs command with the bench's cluster and state, logging its output to
// logs/<name>.log, and returns its wall time.
func (b *bench) tfrs(ctx context.Context, name string, args ...string) (time.Duration, error) {
	cmd, log, err := b.tfrsCmd(ctx, name, args...)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	start := time.Now()
	err = cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("tfrs %s: %w (see %s)", strings.Join(args[:min(2, len(args))], " "), err, log.Name())
	}
	return d, nil
}

func (b *bench) tfrsCmd(ctx context.Context, name string, args ...string) (*exec.Cmd, *os.File, error) {
	log, err := os.Create(filepath.Join(b.logs, name+".log"))
	if err != nil {
		return nil, nil, err
	}
	if args[0] != "render" {
		args = append(args, "--kubeconfig", b.kubeconfig, "--state-dir", b.stateDir, "--passphrase-file", b.passphrase)
	}
	cmd := exec.CommandContext(ctx, b.cfg.tfrs, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "PULUMI_SKIP_UPDATE_CHECK=true")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	return cmd, log, nil
}

// writeObjects writes objects as one multi-document YAML file under the work dir.
func (b *bench) writeObjects(name string, objs ...any) (string, error) {
	var docs []string
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return "", err
		}
		docs = append(docs, string(y))
	}
	path := filepath.Join(b.dir, name)
	return path, os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func secs2(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

var _ io.Writer = (*os.File)(nil)
