package stacks

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
)

// SourceFetcher downloads the remote sources an object overrides (chartRepo, manifestURL)
// before the program hands them to the Kubernetes provider, which then reads local files.
// internal/sourcepolicy.Fetcher is the one the doors install: it enforces the source policy
// when it connects (after DNS resolution, on every redirect), which the provider, fetching by
// itself, could not.
type SourceFetcher interface {
	Manifest(ctx context.Context, url string) (path string, err error)
	Chart(ctx context.Context, repo, chart, version string) (path string, err error)
}

// BucketEnsurer checks, and by the bucket policy creates, a tenant's bucket on an external
// S3-compatible endpoint (sourcepolicy.Fetcher is one: it connects under the source policy).
// The tenant program asks the installed fetcher when it is one; a program run outside a door
// (no fetcher installed: graphs, tests under mocks) checks nothing.
type BucketEnsurer interface {
	EnsureBucket(ctx context.Context, b sourcepolicy.Bucket) (created bool, err error)
}

func bucketEnsurer() BucketEnsurer {
	e, _ := sourceFetcher().(BucketEnsurer)
	return e
}

var (
	fetcherMu sync.RWMutex
	fetcher   SourceFetcher
)

// UseSourceFetcher installs the process's fetcher (each door does once at start, with its
// source policy); nil restores the default, under which the provider fetches overrides itself.
// Pinned upstream sources are always fetched by the provider: they are this program's own.
func UseSourceFetcher(f SourceFetcher) {
	fetcherMu.Lock()
	defer fetcherMu.Unlock()
	fetcher = f
}

func sourceFetcher() SourceFetcher {
	fetcherMu.RLock()
	defer fetcherMu.RUnlock()
	return fetcher
}

// fetchTimeout bounds the fetches of one artifact. Programs resolve their sources before
// registering anything, outside any request, so the bound is their own.
const fetchTimeout = 5 * time.Minute

// fetchedChart returns the local archive of an http(s) chartRepo override, or "" when no
// fetcher is installed or the repository is not fetched here (oci:// goes to the provider).
func fetchedChart(id, repo, chart, version string) (string, error) {
	f := sourceFetcher()
	if f == nil || !isHTTP(repo) {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	path, err := f.Chart(ctx, repo, chart, version)
	if err != nil {
		return "", fmt.Errorf("%s: chartRepo: %w", id, err)
	}
	return path, nil
}

// fetchedManifest returns the local copy of an http(s) manifestURL override, or the URL as is
// when no fetcher is installed or it is not http(s).
func fetchedManifest(id, url string) (string, error) {
	f := sourceFetcher()
	if f == nil || !isHTTP(url) {
		return url, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	path, err := f.Manifest(ctx, url)
	if err != nil {
		return "", fmt.Errorf("%s: manifestURL: %w", id, err)
	}
	return path, nil
}

func isHTTP(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

// PinnedHosts are the hosts of the pinned upstream sources (chart repositories and manifest
// URLs of both tables), sorted: the default allowed hosts of the source policy.
func PinnedHosts() []string {
	seen := map[string]bool{}
	add := func(raw string) {
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			seen[u.Host] = true
		}
	}
	for _, table := range []map[string]PinnedSource{pinnedSources, tenantPinnedSources} {
		for _, s := range table {
			add(s.Repo)
			for _, a := range s.Artifacts {
				add(a.URL)
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
