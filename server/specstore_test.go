package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/fileblob"
)

// TestSpecStores runs the same contract over both stores.
func TestSpecStores(t *testing.T) {
	for name, s := range map[string]SpecStore{"backend": NewBackendSpecStore(sharedBucket(t)), "memory": NewMemorySpecStore()} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			_, err := s.Get(ctx, "tenant.ns.a")
			require.True(t, errors.Is(err, ErrNotFound), "%v", err)
			now := time.Now().UTC().Truncate(time.Second)
			for _, st := range []string{"tenant.ns.b", "tenant.ns.a", "tenant.other.c", "server.ns.d"} {
				require.NoError(t, s.Put(ctx, &Record{Stack: st, Name: st[len(st)-1:], Document: []byte(`{"spec":{}}`), Generation: 1, Created: now, Updated: now}))
			}
			got, err := s.List(ctx, "tenant.ns.")
			require.NoError(t, err)
			require.Len(t, got, 2)
			require.Equal(t, "tenant.ns.a", got[0].Stack)
			require.Equal(t, "tenant.ns.b", got[1].Stack)

			rec, err := s.Get(ctx, "server.ns.d")
			require.NoError(t, err)
			require.Equal(t, "d", rec.Name)
			require.JSONEq(t, `{"spec":{}}`, string(rec.Document))
			require.True(t, now.Equal(rec.Created))

			require.NoError(t, s.Delete(ctx, "server.ns.d"))
			require.NoError(t, s.Delete(ctx, "server.ns.d"), "deleting a missing record is fine")
			_, err = s.Get(ctx, "server.ns.d")
			require.True(t, errors.Is(err, ErrNotFound))
		})
	}
}

// TestBackendSpecStoreStaysInItsPrefix: no stack name reaches outside tfrs/api/specs/, and
// nothing else of the backend (Pulumi's .pulumi/, other tfrs/ objects) is listed as a record.
func TestBackendSpecStoreStaysInItsPrefix(t *testing.T) {
	dir := t.TempDir()
	b, err := fileblob.OpenBucket(dir, &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	require.NoError(t, err)
	defer b.Close()
	s := NewBackendSpecStore(b)
	ctx := context.Background()
	for _, bad := range []string{"../escape", "a/b", "", "tenant..x/../../y", `tenant\x`} {
		require.Error(t, s.Put(ctx, &Record{Stack: bad}), bad)
		_, err := s.Get(ctx, bad)
		require.Error(t, err, bad)
	}
	_, err = s.List(ctx, "../")
	require.Error(t, err)
	require.NoError(t, b.WriteAll(ctx, ".pulumi/stacks/tfrs/cluster.x.json", []byte(`{}`), nil))
	require.NoError(t, b.WriteAll(ctx, specPrefix+"cluster.half.json.1a2b.tmp", []byte(`{`), nil))
	require.NoError(t, s.Put(ctx, &Record{Stack: "cluster.dev", Document: []byte(`{}`)}))
	_, err = os.Stat(filepath.Join(dir, "tfrs", "api", "specs", "cluster.dev.json"))
	require.NoError(t, err)
	recs, err := s.List(ctx, "cluster.")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, "cluster.dev", recs[0].Stack)
}

// TestImportLegacySpecs: the records of an older tfrs serve move into the backend once; a
// record already there is newer and stays.
func TestImportLegacySpecs(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "api", "specs")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	for _, st := range []string{"tenant.ns.a", "tenant.ns.b"} {
		b, err := json.Marshal(Record{Stack: st, Name: st[len(st)-1:], Document: []byte(`{"old":true}`), Generation: 1})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, st+".json"), b, 0o600))
	}
	to := NewBackendSpecStore(sharedBucket(t))
	require.NoError(t, to.Put(ctx, &Record{Stack: "tenant.ns.b", Name: "b", Document: []byte(`{"new":true}`), Generation: 3}))
	n, err := ImportLegacySpecs(ctx, dir, to)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	a, err := to.Get(ctx, "tenant.ns.a")
	require.NoError(t, err)
	require.JSONEq(t, `{"old":true}`, string(a.Document))
	b, err := to.Get(ctx, "tenant.ns.b")
	require.NoError(t, err)
	require.Equal(t, int64(3), b.Generation)
	_, err = os.Stat(dir)
	require.True(t, errors.Is(err, os.ErrNotExist), "the old directory is renamed, so it is never imported again")
	n, err = ImportLegacySpecs(ctx, dir, to)
	require.NoError(t, err)
	require.Zero(t, n)
}
