package sourcepolicy

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeS3 answers HeadBucket and CreateBucket for path-style requests, like an S3 server
// holding the buckets in have; with deny it answers 403 to everything.
type fakeS3 struct {
	mu      sync.Mutex
	have    map[string]bool
	deny    bool
	created []string
}

func (f *fakeS3) handle(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := strings.Trim(r.URL.Path, "/")
	switch {
	case f.deny:
		w.WriteHeader(http.StatusForbidden)
	case r.Method == http.MethodHead && f.have[name]:
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodHead:
		w.WriteHeader(http.StatusNotFound)
	case r.Method == http.MethodPut:
		f.have[name] = true
		f.created = append(f.created, name)
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func TestEnsureBucket(t *testing.T) {
	loop := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	s3 := &fakeS3{have: map[string]bool{"there": true}}
	srv := newRecorder(t, s3.handle)
	f := &Fetcher{Policy: &Policy{Hosts: []string{srv.host()}, AllowedNets: loop}}
	ensure := func(name string, create bool) (bool, error) {
		return f.EnsureBucket(t.Context(), Bucket{Endpoint: srv.URL, Region: "us-east-1", Name: name,
			AccessKey: "AKIDEXAMPLE", SecretKey: "s3cr3t-never-shown", Create: create})
	}

	created, err := ensure("there", false)
	require.NoError(t, err)
	require.False(t, created, "an existing bucket is left alone")

	_, err = ensure("missing", false)
	require.ErrorIs(t, err, ErrNoBucket, "bucketPolicy Existing never creates")
	require.Empty(t, s3.created)

	created, err = ensure("made", true)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, []string{"made"}, s3.created)
	created, err = ensure("made", true)
	require.NoError(t, err)
	require.False(t, created, "made once")

	s3.deny = true
	_, err = ensure("there", true)
	require.ErrorContains(t, err, "403")
	require.NotContains(t, err.Error(), "s3cr3t", "the secret key is in no error")
}

// TestEnsureBucketRefusalsNeverReachTheEndpoint: the source policy holds for the endpoint
// as for a chart: its host must be allowed, and every address it resolves to must pass.
func TestEnsureBucketRefusalsNeverReachTheEndpoint(t *testing.T) {
	loop := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	for _, tc := range []struct {
		name     string
		policy   func(host string) *Policy
		endpoint func(url, port string) string
		resolver Resolver
	}{
		{"loopback endpoint", func(string) *Policy { return &Policy{AnyHost: true} }, func(u, _ string) string { return u }, nil},
		{"host not allowed", func(string) *Policy { return &Policy{Hosts: []string{"s3.example.com"}, AllowedNets: loop} },
			func(u, _ string) string { return u }, nil},
		{"allowed name resolving to the metadata address", func(string) *Policy { return &Policy{AnyHost: true} },
			func(_, port string) string { return "http://s3.example.com:" + port }, fakeResolver{netip.MustParseAddr("169.254.169.254")}},
		{"file endpoint", func(string) *Policy { return Permissive() }, func(string, string) string { return "file:///etc" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, nil)
			port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
			p := tc.policy(srv.host())
			f := &Fetcher{Policy: p, Client: p.Client(tc.resolver, BucketTimeout)}
			_, err := f.EnsureBucket(context.Background(), Bucket{Endpoint: tc.endpoint(srv.URL, port), Region: "us-east-1",
				Name: "b-1", AccessKey: "a", SecretKey: "s", Create: true})
			require.ErrorIs(t, err, ErrForbidden)
			require.Zero(t, srv.hits.Load())
		})
	}
}
