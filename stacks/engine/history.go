package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Bounded state. The DIY backend keeps, for every update, refresh and destroy, a history entry
// and a full copy of the checkpoint (.pulumi/history/<project>/<stack>/), and a backup of the
// previous checkpoint (.pulumi/backups/<project>/<stack>/); nothing ever prunes them, so a
// stack under drift detection grows by a checkpoint per check. After each mutating operation
// the engine keeps the newest HistoryLimit entries of that stack and deletes older ones. It
// lists only that stack's own prefixes, so the cost does not grow with the number of stacks.
// Deleting only entries older than the newest N is safe next to a concurrent writer: writers
// only ever add newer ones.

// DefaultHistoryLimit is how many updates of history (and checkpoint backups) a stack keeps.
const DefaultHistoryLimit = 20

// historyLimit is the effective limit: Options.HistoryLimit, zero meaning the default.
func (e *Engine) historyLimit() int {
	if e.opts.HistoryLimit == 0 {
		return DefaultHistoryLimit
	}
	return e.opts.HistoryLimit
}

// pruneHistory applies the history limit to one stack (best effort: a failure is logged and
// the next operation tries again).
func (e *Engine) pruneHistory(ctx context.Context, stack string) {
	limit := e.historyLimit()
	if limit < 0 {
		return
	}
	b, err := e.bucket(ctx)
	if err != nil {
		return
	}
	dir := path.Join(".pulumi", "history", ProjectName, stack) + "/"
	bak := path.Join(".pulumi", "backups", ProjectName, stack) + "/"
	for _, p := range []struct {
		prefix, sep string
		history     bool
	}{{dir, "-", true}, {bak, ".", false}} {
		if err := prune(ctx, b, p.prefix, stack+p.sep, limit, p.history); err != nil {
			e.opts.Logger.Warn("cannot prune the stack's history", "stack", stack, "err", e.red.redact(err.Error()))
		}
	}
}

// prune deletes all but the newest limit entries under prefix. An entry is every key that
// starts with <namePrefix><unix nanoseconds> (a history file and its checkpoint copy are one
// entry); keys that do not parse are left alone. In the history, the newest update or destroy
// is kept too, however old: a stack's readiness (Status) is read from it, and a run of drift
// checks (refreshes) must not make a ready parent look unready.
func prune(ctx context.Context, b *blob.Bucket, prefix, namePrefix string, limit int, history bool) error {
	entries := map[int64][]string{}
	it := b.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if obj.IsDir {
			continue
		}
		if ts, ok := entryTime(strings.TrimPrefix(obj.Key, prefix), namePrefix); ok {
			entries[ts] = append(entries[ts], obj.Key)
		}
	}
	if len(entries) <= limit {
		return nil
	}
	times := make([]int64, 0, len(entries))
	for ts := range entries {
		times = append(times, ts)
	}
	slices.Sort(times)
	old := times[:len(times)-limit]
	if history && !slices.ContainsFunc(times[len(old):], func(ts int64) bool { return isUpdate(ctx, b, entries[ts]) }) {
		for i := len(old) - 1; i >= 0; i-- {
			if isUpdate(ctx, b, entries[old[i]]) {
				old = slices.Delete(slices.Clone(old), i, i+1)
				break
			}
		}
	}
	for _, ts := range old {
		for _, k := range entries[ts] {
			if err := b.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				return err
			}
		}
	}
	return nil
}

// entryTime reads the timestamp of "<namePrefix><nanos>.<rest>".
func entryTime(name, namePrefix string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, ".")
	if !ok || digits == "" {
		return 0, false
	}
	ts, err := strconv.ParseInt(digits, 10, 64)
	return ts, err == nil
}

// isUpdate reports whether a history entry records an update or a destroy (not a refresh). An
// entry that cannot be read counts as one, so it is kept: pruning errs on keeping.
func isUpdate(ctx context.Context, b *blob.Bucket, keys []string) bool {
	for _, k := range keys {
		if !strings.HasSuffix(k, ".history.json") {
			continue
		}
		body, err := b.ReadAll(ctx, k)
		if err != nil {
			return true
		}
		var info struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(body, &info) != nil {
			return true
		}
		return info.Kind != "refresh"
	}
	return true // compressed or missing history file: unknown, keep
}
