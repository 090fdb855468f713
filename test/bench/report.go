package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tfrs-io/tfrs-operator/internal/testenv"
)

// report collects the results as Markdown tables: readable on a terminal, pasteable into a
// PR or the README.
type report struct {
	cfg     config
	started time.Time
	ratios  []string
	idles   []string
	scales  []string
	mems    []string
	flats   []string
	drifts  []string
	fleets  []string
	notes   []string
}

func newReport(c config) *report { return &report{cfg: c, started: time.Now()} }

func (r *report) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

func (r *report) ratio(id, what, tfrsName string, tfrs time.Duration, floorName string, floor time.Duration, target float64) {
	ratio := tfrs.Seconds() / floor.Seconds()
	verdict := "meets"
	if ratio > target {
		verdict = "MISSES"
	}
	r.ratios = append(r.ratios, fmt.Sprintf("| %s | %s | %s: %s | %s: %s | **%.2f** | ≤ %.1f (%s) |",
		id, what, tfrsName, secs(tfrs), floorName, secs(floor), ratio, target, verdict))
}

func (r *report) idle(n int, rounds float64, window time.Duration, ops, cli float64, cpu time.Duration) {
	verdict := "meets"
	if ops > 0 {
		verdict = "MISSES"
	}
	r.idles = append(r.idles, fmt.Sprintf("| 3 | resync of %d unchanged CRs (%.1f resyncs each in %s) | %.2f | %.2f | %d ms | 0 operations (%s) |",
		n, rounds, window.Round(time.Second), ops, cli, cpu.Milliseconds(), verdict))
}

func (r *report) scale(bt *batch) {
	per := bt.wall / time.Duration(bt.n)
	r.scales = append(r.scales, fmt.Sprintf("| %d | %s | %s | %s / %s | %s / %s | %s | %s | %d |",
		bt.n, secs(bt.wall), secs(per), secs(percentile(bt.latency, 50)), secs(percentile(bt.latency, 95)),
		secs(percentile(bt.run, 50)), secs(percentile(bt.run, 95)), mib(bt.idleRSS), mib(bt.peakRSS), bt.failed))
}

func (r *report) memory(bt *batch) {
	added := bt.peakRSS - bt.idleRSS
	r.mems = append(r.mems, fmt.Sprintf("| %d | %s | %s | %s | **%s** | %s |",
		bt.n, mib(bt.idleRSS), mib(bt.peakRSS), mib(added), mib(added/int64(bt.n)), secs(bt.wall)))
}

// flat is one operation at each backend size: median wall time, time inside Pulumi CLI
// processes and the engine's own time (the difference), side by side.
func (r *report) flat(op string, backends []*flatBackend) {
	var walls, clis, own []string
	for _, fb := range backends {
		s := fb.ops[op]
		w, c := median(s.wall), median(s.cli)
		var diffs []time.Duration
		for i := range s.wall {
			diffs = append(diffs, s.wall[i]-s.cli[i])
		}
		walls = append(walls, secs2(w))
		clis = append(clis, secs2(c))
		if c > w {
			// CLI processes ran side by side (Status reads tags and history at once): their
			// summed time says nothing about the engine's own.
			own = append(own, "n/a (parallel CLI processes)")
			continue
		}
		own = append(own, fmt.Sprintf("%d ms", median(diffs).Milliseconds()))
	}
	r.flats = append(r.flats, fmt.Sprintf("| %s | %s | %s | **%s** |", op,
		strings.Join(walls, " / "), strings.Join(clis, " / "), strings.Join(own, " / ")))
}

func (r *report) drift(n int, label string, files int, bytes, checkpoint int64, per time.Duration) {
	r.drifts = append(r.drifts, fmt.Sprintf("| %s | %d | %.1f KiB | **%.1f** | %s |",
		label, files, float64(bytes)/1024, float64(bytes)/float64(max(checkpoint, 1)), secs2(per)))
}

func (r *report) body() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# tfrs benchmark, %s\n\n", r.started.UTC().Format("2006-01-02 15:04 MST"))
	table(&b, "Against the floor (same run, same control plane)",
		"| # | measurement | tfrs | floor | ratio | target |", r.ratios)
	table(&b, "Idle cost (tfrs operator)",
		"| # | measurement | engine operations per resync | Pulumi CLI processes per resync | operator CPU per resync | target |", r.idles)
	table(&b, fmt.Sprintf("4. Scale: %s tenants through the HTTP API (tfrs serve, default concurrency)", r.cfg.profile),
		"| tenants | wall | wall per tenant | p50 / p95 accepted→done | p50 / p95 operation run | RSS before | peak RSS (serve tree) | failed |", r.scales)
	table(&b, "5. Memory per in-flight operation (full enterprise tenants through the API)",
		"| in flight | RSS before | peak RSS (serve tree) | added | **added per operation** | wall |", r.mems)
	var sizes []string
	for _, n := range r.cfg.flatStacks {
		sizes = append(sizes, fmt.Sprintf("%d", n))
	}
	table(&b, fmt.Sprintf("6. Flat cost: one small stack's operations with %s stacks in the backend (median of %d)", strings.Join(sizes, " / "), max(r.cfg.rounds, 3)),
		fmt.Sprintf("| operation | wall (%[1]s stacks) | in Pulumi CLI processes (%[1]s) | engine's own time (%[1]s) |", strings.Join(sizes, " / ")), r.flats)
	table(&b, fmt.Sprintf("7. State per stack after %d drift checks (refreshes)", r.cfg.refreshes),
		"| history | files (checkpoint, history, backups) | bytes | **in checkpoints** | per refresh |", r.drifts)
	table(&b, "8. Fleet preview (tfrs fleet preview, default --parallel; proven = unchanged from recorded inputs, no Pulumi run)",
		"| run | tenants | wall | per stack | proven | unchanged | changed or failed |", r.fleets)
	if len(r.notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range r.notes {
			b.WriteString("- " + n + "\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Total benchmark time: %s.\n", time.Since(r.started).Round(time.Second))
	return b.String()
}

// write prints the tables and writes them, with the machine's description, to path.
func (r *report) write(stdout io.Writer, path string) error {
	body := r.body()
	fmt.Fprint(stdout, "\n"+body)
	if path == "" {
		return nil
	}
	return os.WriteFile(path, []byte(body+"\n"+machine()+fmt.Sprintf("- measured binary: %s (%s)\n", r.cfg.tfrs, binaryStamp(r.cfg.tfrs))), 0o644)
}

// machine describes where the numbers were measured.
func machine() string {
	var b strings.Builder
	b.WriteString("## Machine\n\n")
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "- host: %s, %s/%s, kernel %s\n", host, runtime.GOOS, runtime.GOARCH, strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")))
	fmt.Fprintf(&b, "- CPU: %s, %d logical cores\n", cpuModel(), runtime.NumCPU())
	fmt.Fprintf(&b, "- memory: %s\n", memTotal())
	fmt.Fprintf(&b, "- Go %s; tfrs commit %s\n", runtime.Version(), gitDescribe())
	fmt.Fprintf(&b, "- tools: %s\n", toolVersions())
	if out, err := exec.Command("kubectl", "version", "--client").Output(); err == nil {
		fmt.Fprintf(&b, "- kubectl: %s\n", strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; "))
	}
	return b.String()
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func cpuModel() string {
	for _, l := range strings.Split(readFile("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotal() string {
	for _, l := range strings.Split(readFile("/proc/meminfo"), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			return strings.Join(strings.Fields(l)[1:], " ")
		}
	}
	return "unknown"
}

func gitDescribe() string {
	out, err := exec.Command("git", "-C", testenv.RepoRoot(), "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// toolVersions are the pinned tool versions (hack/tools/versions.env).
func toolVersions() string {
	f, err := os.Open(filepath.Join(testenv.RepoRoot(), "hack", "tools", "versions.env"))
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && !strings.HasPrefix(k, "#") && strings.HasSuffix(k, "_VERSION") && !strings.Contains(k, "MODULE") && !strings.Contains(k, "STAGING") {
			out = append(out, strings.ToLower(strings.TrimSuffix(k, "_VERSION"))+" "+v)
		}
	}
	return strings.Join(out, ", ")
}

// binaryStamp identifies the measured binary (size and modification time): the harness may be
// built from another commit than the binary it measures.
func binaryStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "missing"
	}
	return fmt.Sprintf("%d bytes, built %s", fi.Size(), fi.ModTime().UTC().Format(time.RFC3339))
}

// table writes one Markdown section (nothing when there are no rows).
func table(b *strings.Builder, title, header string, rows []string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## %s\n\n%s\n|%s\n%s\n\n", title, header, strings.Repeat("---|", strings.Count(header, "|")-1), strings.Join(rows, "\n"))
}
