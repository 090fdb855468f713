package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path"
	"sort"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
)

// tagsSuffix names the file in which the DIY backend keeps a stack's tags, beside its
// checkpoint: .pulumi/stacks/<project>/<stack>.pulumi-tags, {"version":1,"tags":{…}}.
const tagsSuffix = ".pulumi-tags"

// TaggedStacks returns, by name, the stacks whose names start with prefix and whose tag key
// equals value (the dependents of a stack, the members of a shared one). It reads the tag files
// straight from the backend: one listing of the names under prefix and one small read per
// stack there, no CLI process. (Reading each stack's tags through the CLI cost a process per
// stack, so the destroy that asks grew by seconds per stack in the backend.) A stack removed
// meanwhile is left out. Backends the engine cannot read itself (gs://, azblob://, postgres://)
// are asked through the CLI: a listing, then the tags of each stack listed.
func (e *Engine) TaggedStacks(ctx context.Context, prefix, key, value string) ([]string, error) {
	e.repairBackend("") // a broken sidecar of a tags file would fail its read
	b, err := e.bucket(ctx)
	if err != nil {
		return e.taggedByCLI(ctx, prefix, key, value)
	}
	dir := path.Join(".pulumi", "stacks", ProjectName) + "/"
	it := b.List(&blob.ListOptions{Prefix: dir + prefix})
	var out []string
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, opErr(OpList, "", ErrFailed, "list stacks: %s", e.red.redact(err.Error()))
		}
		name, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, dir), tagsSuffix)
		if obj.IsDir || !ok || strings.Contains(name, "/") || stackname.Validate(name) != nil {
			continue
		}
		tags, err := readTags(ctx, b, obj.Key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue // removed since the listing
		}
		if err != nil {
			return nil, opErr(OpList, name, ErrFailed, "read the stack's tags: %s", e.red.redact(err.Error()))
		}
		if v, has := tags[key]; has && v == value {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func readTags(ctx context.Context, b *blob.Bucket, key string) (map[string]string, error) {
	body, err := b.ReadAll(ctx, key)
	if err != nil {
		return nil, err
	}
	var f struct {
		Version int               `json:"version"`
		Tags    map[string]string `json:"tags"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, err
	}
	if f.Version != 1 {
		return nil, errors.New("unknown tags file version (a newer Pulumi CLI?)")
	}
	return f.Tags, nil
}

func (e *Engine) taggedByCLI(ctx context.Context, prefix, key, value string) ([]string, error) {
	list, err := e.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list {
		tags, err := e.Tags(ctx, s.Name)
		if errors.Is(err, ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		if v, has := tags[key]; has && v == value {
			out = append(out, s.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}
