package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tfrs-io/tfrs-operator/stacks/fleet"
)

// fleetPreview measures `tfrs fleet preview` over b.cfg.fleet tenants brought up through the
// HTTP API: once with every stack proven unchanged from its recorded inputs (no Pulumi run),
// once with --full (a real preview of each), both at the default --parallel.
func (b *bench) fleetPreview(ctx context.Context) error {
	n := b.cfg.fleet
	a, err := b.startAPI(ctx)
	if err != nil {
		return err
	}
	logf("fleet: %d %s tenants through the HTTP API", n, b.cfg.profile)
	bt, err := b.provisionBatch(ctx, a, "f", n, b.cfg.profile == "lean")
	a.stop()
	if err != nil {
		return err
	}
	if bt.failed > 0 {
		return fmt.Errorf("%d of %d tenants failed; first: %s", bt.failed, n, bt.firstFailure)
	}
	var objs []any
	for i := range n {
		objs = append(objs, b.tenant(fmt.Sprintf("f-%03d", i), b.cfg.profile == "lean"))
	}
	file, err := b.writeObjects("fleet.yaml", objs...)
	if err != nil {
		return err
	}
	for _, full := range []bool{false, true} {
		name, args := "fleet-proven", []string{"fleet", "preview", "-f", file, "-o", "json"}
		if full {
			name, args = "fleet-full", append(args, "--full")
		}
		logf("fleet: %s", name)
		d, err := b.tfrs(ctx, name, args...)
		if err != nil {
			return err
		}
		rep, err := readFleetReport(filepath.Join(b.logs, name+".log"))
		if err != nil {
			return err
		}
		b.report.fleet(name, n, d, rep)
	}
	return nil
}

// readFleetReport reads the JSON report from a log that also holds the progress lines.
func readFleetReport(path string) (*fleet.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for i := range data {
		if data[i] != '{' || (i > 0 && data[i-1] != '\n') {
			continue
		}
		var rep fleet.Report
		if json.Unmarshal(data[i:], &rep) == nil {
			return &rep, nil
		}
	}
	return nil, fmt.Errorf("%s: no fleet report", path)
}

func (r *report) fleet(name string, n int, wall time.Duration, rep *fleet.Report) {
	r.fleets = append(r.fleets, fmt.Sprintf("| %s | %d | %s | %s | %d | %d | %d |",
		name, n, secs(wall), secs2(wall/time.Duration(max(n, 1))), rep.Proven, rep.Counts[fleet.StatusUnchanged], rep.Changed()+rep.Counts[fleet.StatusError]))
}
