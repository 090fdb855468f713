package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
)

// provision compares, round by round, `tfrs up` of an enterprise tenant from nothing with the
// floor for the same spec under another name (so both exist side by side), then an unchanged
// `tfrs preview` of the first with `kubectl diff` of the second. The order alternates each
// round so neither side always runs on a warmer API server.
func (b *bench) provision(ctx context.Context) error {
	var ups, floors, previews, diffs, noops []time.Duration
	objects := 0
	for r := 1; r <= b.cfg.rounds; r++ {
		up := b.tenant(fmt.Sprintf("up%d", r), false)
		floor := b.tenant(fmt.Sprintf("floor%d", r), false)
		upFile, err := b.writeObjects(up.Name+".yaml", up)
		if err != nil {
			return err
		}
		floorFile, err := b.writeObjects(floor.Name+".yaml", floor)
		if err != nil {
			return err
		}
		renderDir := filepath.Join(b.dir, "render", floor.Name)
		if _, err := b.tfrs(ctx, "render-"+floor.Name, "render", "-f", floorFile, "-o", renderDir); err != nil {
			return err
		}
		ms, err := readManifests(renderDir)
		if err != nil {
			return err
		}
		objects = len(ms)

		runUp := func() error {
			logf("round %d: tfrs up %s", r, up.Name)
			d, err := b.tfrs(ctx, "up-"+up.Name, "up", "-f", upFile)
			ups = append(ups, d)
			return err
		}
		runFloor := func() error {
			logf("round %d: kubectl apply --server-side + waits, %d manifests of %s", r, len(ms), floor.Name)
			start := time.Now()
			err := b.floorApply(ctx, ms)
			floors = append(floors, time.Since(start))
			return err
		}
		order := []func() error{runUp, runFloor}
		if r%2 == 0 {
			slices.Reverse(order)
		}
		for _, f := range order {
			if err := f(); err != nil {
				return err
			}
		}

		logf("round %d: tfrs preview %s (unchanged) and kubectl diff --server-side", r, up.Name)
		d, err := b.tfrs(ctx, "preview-"+up.Name, "preview", "-f", upFile, "--detailed-exitcode")
		if err != nil {
			return fmt.Errorf("preview of an unchanged tenant must report no changes: %w", err)
		}
		previews = append(previews, d)
		start := time.Now()
		clean, err := b.floorDiff(ctx, ms)
		if err != nil {
			return err
		}
		diffs = append(diffs, time.Since(start))
		if !clean {
			b.report.note("round %d: kubectl diff reported differences on the freshly applied manifests", r)
		}

		logf("round %d: tfrs up %s again (no changes)", r, up.Name)
		d, err = b.tfrs(ctx, "noop-up-"+up.Name, "up", "-f", upFile)
		if err != nil {
			return err
		}
		noops = append(noops, d)
	}
	// The same unchanged previews through the long-lived HTTP API: no process start, and the
	// stacks' keys and the parent's outputs stay warm after the first request (the operator's
	// previews run on the same engine path). Each tenant's first request warms up and is not
	// counted.
	httpPreviews, err := b.httpPreviews(ctx)
	if err != nil {
		return err
	}
	b.report.ratio("1", fmt.Sprintf("enterprise tenant from nothing (%d objects), median of %d", objects, b.cfg.rounds),
		"tfrs up", median(ups), "kubectl apply --server-side + waits", median(floors), 1.5)
	b.report.ratio("2", fmt.Sprintf("unchanged tenant preview, median of %d", b.cfg.rounds),
		"tfrs preview", median(previews), "kubectl diff --server-side", median(diffs), 2.0)
	b.report.ratio("2b", fmt.Sprintf("no-op up of the same tenant against its unchanged preview, median of %d", b.cfg.rounds),
		"tfrs up", median(noops), "tfrs preview", median(previews), 2.0)
	b.report.ratio("2c", fmt.Sprintf("unchanged tenant preview through the HTTP API (tfrs serve, warm), median of %d", len(httpPreviews)),
		"POST …/preview", median(httpPreviews), "kubectl diff --server-side", median(diffs), 1.5)
	b.report.note("2c: HTTP previews %v", fmtDurations(httpPreviews))
	b.report.note("1: tfrs up per round %v; floor %v", fmtDurations(ups), fmtDurations(floors))
	b.report.note("2: tfrs preview per round %v; kubectl diff %v", fmtDurations(previews), fmtDurations(diffs))
	b.report.note("2b: tfrs up (no changes) per round %v", fmtDurations(noops))
	return nil
}

// httpPreviews times POST …/preview of each round's (unchanged) tenant through tfrs serve on
// the same state, after one warm-up request per tenant; each must report no changes.
func (b *bench) httpPreviews(ctx context.Context) ([]time.Duration, error) {
	a, err := b.startAPI(ctx)
	if err != nil {
		return nil, err
	}
	defer a.stop()
	preview := func(r int) (time.Duration, error) {
		tt := b.tenant(fmt.Sprintf("up%d", r), false)
		var res struct {
			Summary map[string]int `json:"summary"`
		}
		start := time.Now()
		body := map[string]any{"apiVersion": tt.APIVersion, "kind": tt.Kind, "metadata": map[string]any{"name": tt.Name}, "spec": tt.Spec}
		_, err := a.do(ctx, "POST", fmt.Sprintf("/v1/namespaces/%s/tenants/%s/preview", tt.Namespace, tt.Name), body, &res)
		d := time.Since(start)
		if err != nil {
			return d, err
		}
		for op, n := range res.Summary {
			if n > 0 && (op == "create" || op == "update" || op == "replace" || op == "delete") {
				return d, fmt.Errorf("HTTP preview of unchanged %s reports %d %s", tt.Name, n, op)
			}
		}
		return d, nil
	}
	// Steady state: each stack once first (its workspace, its key derived from its salt).
	for r := 1; r <= b.cfg.rounds; r++ {
		if _, err := preview(r); err != nil {
			return nil, err
		}
	}
	var ds []time.Duration
	for r := 1; r <= b.cfg.rounds; r++ {
		logf("round %d: POST …/preview up%d through tfrs serve", r, r)
		d, err := preview(r)
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// tenant is a defaulted enterprise tenant of the bench cluster whose charts are the offline
// stand-ins; lean switches its optional components off (testenv.Lean).
func (b *bench) tenant(name string, lean bool) *v1alpha1.TFRTenant {
	tt := testenv.StandInTenant(crNamespace, name, clusterName)
	if lean {
		testenv.Lean(tt)
	}
	return tt
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// percentile is the nearest-rank percentile (p in 0..100).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func fmtDurations(ds []time.Duration) string {
	out := ""
	for i, d := range ds {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%.1f", d.Seconds())
	}
	return "[" + out + "] s"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return fmt.Sprintf("%x", b)
}
