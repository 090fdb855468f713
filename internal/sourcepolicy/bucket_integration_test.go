//go:build integration

package sourcepolicy_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
)

// TestEnsureBucketOnARealS3Server: the bucket check against a real S3 server (versitygw):
// a missing bucket is made under Create and refused under Existing, an existing one is left
// alone, and wrong credentials fail without showing them.
func TestEnsureBucketOnARealS3Server(t *testing.T) {
	s3 := testenv.S3(t)
	f := &sourcepolicy.Fetcher{Policy: &sourcepolicy.Policy{Hosts: []string{s3.Addr}, AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
	b := sourcepolicy.Bucket{Endpoint: "http://" + s3.Addr, Region: "us-east-1", Name: "acme-objects", AccessKey: s3.Access, SecretKey: s3.Secret}

	_, err := f.EnsureBucket(t.Context(), b)
	require.ErrorIs(t, err, sourcepolicy.ErrNoBucket, "Existing: a missing bucket is an error")

	b.Create = true
	created, err := f.EnsureBucket(t.Context(), b)
	require.NoError(t, err)
	require.True(t, created)
	created, err = f.EnsureBucket(t.Context(), b)
	require.NoError(t, err)
	require.False(t, created, "an existing bucket is left alone")

	b.Create = false
	created, err = f.EnsureBucket(t.Context(), b)
	require.NoError(t, err, "Existing: the bucket is there now")
	require.False(t, created)

	wrong := b
	wrong.SecretKey = "not-the-secret-key-42"
	_, err = f.EnsureBucket(t.Context(), wrong)
	require.Error(t, err)
	require.False(t, strings.Contains(err.Error(), wrong.SecretKey) || strings.Contains(err.Error(), s3.Secret), "no key in %v", err)
	t.Logf("wrong credentials: %v", err)
}
