package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// Flat cost: an operation on one stack must cost the same whatever else the backend holds.
// Two file backends, one holding 10 stacks and one 1,000, each with a full history (the
// default limit's worth of entries and backups); the same operations on one small stack of
// each, alternating between the two so drift on the machine hits both alike. The engine runs
// in-process (the real engine, the real Pulumi CLI), so its own time outside the CLI processes
// is measured apart from the CLI's. And the state a stack keeps after 100 drift checks
// (refreshes), with the default history limit and with none.
//
// Seeding 1,000 stacks through the CLI would take an hour here, so one stack is made by the
// engine and its files (checkpoint, history entries, backups) are copied under other names,
// which is exactly what the CLI would have written for stacks of the same shape; the copies are
// checked by reading them back (List counts them, Status reads one).

const (
	flatProject = "tenant.flat."
	flatSeed    = flatProject + "seed"
	flatProbe   = flatProject + "probe"
	flatDrift   = flatProject + "drift"
)

// flatProgram has no cloud resources (no cluster needed): the stack resource and an output.
func flatProgram(ctx *pulumi.Context) error {
	ctx.Export("greeting", pulumi.String("hello"))
	return nil
}

type flatBackend struct {
	n   int
	e   *engine.Engine
	dir string // the backend directory (holds .pulumi)
	ops map[string]*flatSamples
}

type flatSamples struct{ wall, cli []time.Duration }

func (b *bench) flatCost(ctx context.Context) error {
	var backends []*flatBackend
	for _, n := range b.cfg.flatStacks {
		fb, err := b.seedBackend(ctx, n)
		if err != nil {
			return fmt.Errorf("seed %d stacks: %w", n, err)
		}
		defer fb.e.Close()
		backends = append(backends, fb)
	}
	probe := engine.Request{Stack: flatProbe, Program: flatProgram}
	ops := []struct {
		name string
		run  func(*engine.Engine) error
	}{
		{"up (no change)", func(e *engine.Engine) error { _, err := e.Up(ctx, probe); return err }},
		{"preview", func(e *engine.Engine) error { _, err := e.Preview(ctx, probe); return err }},
		{"refresh", func(e *engine.Engine) error { _, err := e.Refresh(ctx, engine.Request{Stack: flatProbe}); return err }},
		{"status", func(e *engine.Engine) error { _, err := e.Status(ctx, flatProbe); return err }},
		{"outputs", func(e *engine.Engine) error { _, err := e.Outputs(ctx, flatProbe); return err }},
		// One CLI process (`stack tag ls`) and little else: what the Pulumi CLI itself costs
		// per process with each backend.
		{"tags", func(e *engine.Engine) error { _, err := e.Tags(ctx, flatProbe); return err }},
	}
	rounds := max(b.cfg.rounds, 3)
	logf("flat: %d rounds of %d operations on each backend", rounds, len(ops))
	for r := range rounds {
		for _, op := range ops {
			// Alternate which backend goes first, so neither always follows the other.
			for i := range backends {
				fb := backends[(i+r)%len(backends)]
				before := fb.e.Stats()
				start := time.Now()
				if err := op.run(fb.e); err != nil {
					return fmt.Errorf("%s with %d stacks: %w", op.name, fb.n, err)
				}
				wall := time.Since(start)
				s := fb.ops[op.name]
				if s == nil {
					s = &flatSamples{}
					fb.ops[op.name] = s
				}
				s.wall = append(s.wall, wall)
				s.cli = append(s.cli, fb.e.Stats().CLITime-before.CLITime)
			}
		}
	}
	for _, op := range ops {
		b.report.flat(op.name, backends)
	}
	// Listing reads every stack's checkpoint by design (it is the one read about all of them):
	// shown for scale, not part of the flat-cost claim.
	for _, fb := range backends {
		start := time.Now()
		list, err := fb.e.List(ctx, flatProject)
		if err != nil {
			return err
		}
		if len(list) != fb.n {
			return fmt.Errorf("the backend seeded with %d stacks lists %d", fb.n, len(list))
		}
		b.report.note("flat: list of all %d stacks (reads every checkpoint, grows by design): %s", fb.n, secs(time.Since(start)))
	}
	if b.cfg.refreshes > 0 {
		return b.driftState(ctx, backends[0])
	}
	return nil
}

// seedBackend makes a backend holding n stacks: the probe, the seed and n-2 copies of the seed.
func (b *bench) seedBackend(ctx context.Context, n int) (*flatBackend, error) {
	if n < 2 {
		return nil, fmt.Errorf("-flat-stacks: %d: at least 2 (the probe and the seed)", n)
	}
	state := filepath.Join(b.dir, fmt.Sprintf("flat-%d", n))
	e, err := engine.New(ctx, engine.Options{StateDir: state, PassphraseFile: b.passphrase})
	if err != nil {
		return nil, err
	}
	fb := &flatBackend{n: n, e: e, dir: filepath.Join(state, "backend"), ops: map[string]*flatSamples{}}
	for _, s := range []string{flatProbe, flatSeed} {
		if _, err := e.Up(ctx, engine.Request{Stack: s, Program: flatProgram}); err != nil {
			e.Close()
			return nil, err
		}
	}
	start := time.Now()
	files, err := seedCopies(fb.dir, flatSeed, n-2, b.cfg.flatHistory)
	if err != nil {
		e.Close()
		return nil, err
	}
	copied := flatProject + "s0000"
	st, err := e.Status(ctx, copied)
	if err != nil || st.Last == nil {
		e.Close()
		return nil, fmt.Errorf("a seeded stack does not read back (%v): the copies are not what the CLI reads", err)
	}
	b.report.note("flat: %d stacks seeded (%d history entries each, %d files) in %s", n, b.cfg.flatHistory, files, secs(time.Since(start)))
	return fb, nil
}

var entryStamp = regexp.MustCompile(`[0-9]{19}`)

// seedCopies writes count copies of stack's checkpoint under other names, each with history
// entries (and backups) of the stack's first one repeated history times, with distinct
// timestamps going back a second at a time. It returns the number of files written.
func seedCopies(dir, stack string, count, history int) (int, error) {
	root := filepath.Join(dir, ".pulumi")
	type tmpl struct {
		rel  string // relative to root, with the stack's name
		body string
	}
	var stackFiles []tmpl
	entries := map[string][]tmpl{} // "history" or "backups" → the first entry's files
	add := func(p string) error {
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		kind := strings.SplitN(rel, string(filepath.Separator), 2)[0]
		t := tmpl{rel: rel, body: string(body)}
		if kind == "stacks" {
			stackFiles = append(stackFiles, t)
			return nil
		}
		first := entries[kind]
		if len(first) > 0 && entryStamp.FindString(filepath.Base(first[0].rel)) != entryStamp.FindString(filepath.Base(rel)) {
			return nil // a later entry: one entry is the template
		}
		entries[kind] = append(first, t)
		return nil
	}
	// The checkpoint and the tags file (<stack>.pulumi-tags).
	matches, _ := filepath.Glob(filepath.Join(root, "stacks", engine.ProjectName, stack+".json*"))
	tags, _ := filepath.Glob(filepath.Join(root, "stacks", engine.ProjectName, stack+".pulumi-tags"))
	for _, m := range append(matches, tags...) {
		if err := add(m); err != nil {
			return 0, err
		}
	}
	for _, kind := range []string{"history", "backups"} {
		d := filepath.Join(root, kind, engine.ProjectName, stack)
		err := filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			return add(p)
		})
		if err != nil && !os.IsNotExist(err) {
			return 0, err
		}
	}
	if len(stackFiles) == 0 || len(entries["history"]) == 0 {
		return 0, fmt.Errorf("stack %s has no checkpoint or history to copy under %s", stack, root)
	}
	written := 0
	write := func(rel, body string) error {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		written++
		return os.WriteFile(p, []byte(body), 0o600)
	}
	for i := range count {
		name := fmt.Sprintf("%ss%04d", flatProject, i)
		rename := func(s string) string { return strings.ReplaceAll(s, stack, name) }
		for _, t := range stackFiles {
			if err := write(rename(t.rel), rename(t.body)); err != nil {
				return written, err
			}
		}
		for _, ts := range entries {
			for j := range history {
				for _, t := range ts {
					stamp := entryStamp.FindString(filepath.Base(t.rel))
					ns, _ := strconv.ParseInt(stamp, 10, 64)
					rel := filepath.Join(filepath.Dir(t.rel), strings.Replace(filepath.Base(t.rel), stamp, strconv.FormatInt(ns-int64(j)*int64(time.Second), 10), 1))
					if err := write(rename(rel), rename(t.body)); err != nil {
						return written, err
					}
				}
			}
		}
	}
	return written, nil
}

// driftState runs 100 drift checks (refreshes) on one stack with the default history limit
// and on another with none, and reports what each keeps.
func (b *bench) driftState(ctx context.Context, fb *flatBackend) error {
	unlimited, err := engine.New(ctx, engine.Options{StateDir: filepath.Join(b.dir, fmt.Sprintf("flat-%d", fb.n)),
		PassphraseFile: b.passphrase, HistoryLimit: -1})
	if err != nil {
		return err
	}
	defer unlimited.Close()
	const keepAll = flatProject + "drift-unlimited"
	logf("flat: %d refreshes of a stack with the default history limit and of one without", b.cfg.refreshes)
	for _, s := range []struct {
		e     *engine.Engine
		stack string
		label string
	}{{fb.e, flatDrift, fmt.Sprintf("default --history-limit (%d)", engine.DefaultHistoryLimit)}, {unlimited, keepAll, "no limit (--history-limit -1, what the DIY backend does alone)"}} {
		if _, err := s.e.Up(ctx, engine.Request{Stack: s.stack, Program: flatProgram}); err != nil {
			return err
		}
		start := time.Now()
		for i := range b.cfg.refreshes {
			if _, err := s.e.Refresh(ctx, engine.Request{Stack: s.stack}); err != nil {
				return fmt.Errorf("refresh %d of %s: %w", i, s.stack, err)
			}
		}
		files, bytes, checkpoint := stackState(fb.dir, s.stack)
		b.report.drift(b.cfg.refreshes, s.label, files, bytes, checkpoint, time.Since(start)/time.Duration(b.cfg.refreshes))
	}
	return nil
}

// stackState is what a stack holds in a file backend: files and bytes of its checkpoint,
// history and backups, and the size of its checkpoint alone.
func stackState(dir, stack string) (files int, bytes, checkpoint int64) {
	root := filepath.Join(dir, ".pulumi")
	if fi, err := os.Stat(filepath.Join(root, "stacks", engine.ProjectName, stack+".json")); err == nil {
		files, bytes, checkpoint = 1, fi.Size(), fi.Size()
	}
	for _, kind := range []string{"history", "backups"} {
		_ = filepath.WalkDir(filepath.Join(root, kind, engine.ProjectName, stack), func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if fi, err := d.Info(); err == nil {
				files++
				bytes += fi.Size()
			}
			return nil
		})
	}
	return files, bytes, checkpoint
}
