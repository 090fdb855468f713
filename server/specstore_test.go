package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSpecStores runs the same contract over both stores.
func TestSpecStores(t *testing.T) {
	file, err := NewFileSpecStore(filepath.Join(t.TempDir(), "specs"))
	require.NoError(t, err)
	for name, s := range map[string]SpecStore{"file": file, "memory": NewMemorySpecStore()} {
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

// TestFileSpecStoreStaysInItsDirectory: no stack name reaches outside the directory, and the
// files are private.
func TestFileSpecStoreStaysInItsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "specs")
	s, err := NewFileSpecStore(dir)
	require.NoError(t, err)
	ctx := context.Background()
	for _, bad := range []string{"../escape", "a/b", "", "tenant..x/../../y"} {
		require.Error(t, s.Put(ctx, &Record{Stack: bad}), bad)
		_, err := s.Get(ctx, bad)
		require.Error(t, err, bad)
	}
	require.NoError(t, s.Put(ctx, &Record{Stack: "cluster.dev", Document: []byte(`{}`)}))
	fi, err := os.Stat(filepath.Join(dir, "cluster.dev.json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(dir))
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing written beside the directory")
}
