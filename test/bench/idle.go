package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"syscall"
	"time"
)

// The operator's metrics the idle measurement reads.
const (
	mSkips     = "tfrs_operator_resync_skips_total"
	mOps       = "tfrs_operator_operations_total"
	mInFlight  = "tfrs_operator_operations_in_flight"
	mCLI       = "tfrs_engine_cli_processes_total"
	mCLISecond = "tfrs_engine_cli_seconds_total"
)

// idleCost brings N unchanged tenant CRs to Ready with `tfrs operator`, then counts what the
// operator does over at least two resync periods: engine operations, Pulumi CLI processes and
// CPU time (the operator's own plus every child it reaped), per resync of all N.
func (b *bench) idleCost(ctx context.Context) error {
	n := b.cfg.idle
	metricsPort, probePort := freePort(), freePort()
	args := []string{"operator", "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probePort),
		"--resync-period", b.cfg.resync.String()}
	if b.cfg.parallel > 0 {
		args = append(args, "--parallel", fmt.Sprint(b.cfg.parallel))
	}
	op, err := b.startDaemon(ctx, "operator", fmt.Sprintf("http://127.0.0.1:%d/healthz", probePort), args...)
	if err != nil {
		return err
	}
	defer op.stop()

	var objs []any
	for i := range n {
		tt := b.tenant(fmt.Sprintf("idle%03d", i), b.cfg.profile == "lean")
		tt.Labels = map[string]string{"bench": "idle"}
		objs = append(objs, tt)
	}
	file, err := b.writeObjects("idle.yaml", objs...)
	if err != nil {
		return err
	}
	logf("idle: %d %s tenant CRs by kubectl apply, waiting for Ready", n, b.cfg.profile)
	start := time.Now()
	if _, err := b.kubectl(ctx, "apply", "-f", file); err != nil {
		return err
	}
	if _, err := b.kubectl(ctx, "wait", "--for=condition=Ready", "tfrtenant", "-l", "bench=idle", "-n", crNamespace, "--timeout=90m"); err != nil {
		return err
	}
	b.report.note("idle: %d %s tenant CRs Ready through the operator in %s", n, b.cfg.profile, secs(time.Since(start)))

	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	read := func() (map[string]float64, time.Duration, error) {
		m, err := scrape(ctx, metrics, mSkips, mOps, mInFlight, mCLI, mCLISecond)
		if err != nil {
			return nil, 0, err
		}
		st, err := readStat(op.cmd.Process.Pid)
		return m, st.cpu, err
	}
	// Let the last status updates settle: nothing may be in flight when the window opens.
	for {
		m, _, err := read()
		if err != nil {
			return err
		}
		if m[mInFlight] == 0 {
			break
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	m0, cpu0, err := read()
	if err != nil {
		return err
	}
	t0 := time.Now()
	logf("idle: watching %d resyncs of each CR (resync period %s)", 2, b.cfg.resync)
	deadline := time.Now().Add(4*b.cfg.resync + 2*time.Minute)
	var m1 map[string]float64
	var cpu1 time.Duration
	for {
		if err := sleep(ctx, 2*time.Second); err != nil {
			return err
		}
		if m1, cpu1, err = read(); err != nil {
			return err
		}
		if m1[mSkips]-m0[mSkips] >= float64(2*n) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %.0f resync skips in %s, want %d", m1[mSkips]-m0[mSkips], time.Since(t0).Round(time.Second), 2*n)
		}
	}
	rounds := (m1[mSkips] - m0[mSkips]) / float64(n)
	ops := (m1[mOps] - m0[mOps]) / rounds
	cli := (m1[mCLI] - m0[mCLI]) / rounds
	cpu := time.Duration(float64(cpu1-cpu0) / rounds)
	b.report.idle(n, rounds, time.Since(t0), ops, cli, cpu)
	return nil
}

// daemon is a long-running tfrs process (operator or serve).
type daemon struct {
	cmd  *exec.Cmd
	done chan error
}

func (b *bench) startDaemon(ctx context.Context, name, health string, args ...string) (*daemon, error) {
	cmd, log, err := b.tfrsCmd(ctx, name, args...)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	d := &daemon{cmd: cmd, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait(); log.Close() }()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d, nil
			}
		}
		select {
		case err := <-d.done:
			return nil, fmt.Errorf("tfrs %s exited: %v (see %s)", name, err, log.Name())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("tfrs %s: %s not healthy after a minute (see %s)", name, health, log.Name())
		}
	}
}

func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(2 * time.Minute):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
