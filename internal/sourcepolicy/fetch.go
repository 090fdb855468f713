package sourcepolicy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Limits of a fetch.
const (
	// MaxManifestBytes bounds a manifest (the largest upstream one, CNPG's, is ~1 MiB).
	MaxManifestBytes = 32 << 20
	// MaxChartBytes bounds a chart archive.
	MaxChartBytes = 64 << 20
	// MaxIndexBytes bounds a Helm repository index (large public ones are ~20 MiB).
	MaxIndexBytes = 64 << 20
	// FetchTimeout bounds one fetch, redirects included.
	FetchTimeout = 5 * time.Minute
)

// Fetcher downloads the remote sources an object overrides (an http(s) manifestURL, a chart
// of an http(s) chartRepo) through Policy.Client into Dir, and hands the file's path to the
// program, which gives it to the Kubernetes provider as a local source: so the provider never
// fetches a client-named URL itself, and the policy holds at connect time. Files are named by
// their content's SHA-256, so an unchanged source gives the same path (no spurious diff).
type Fetcher struct {
	Policy *Policy
	Dir    string
	Client *http.Client // nil: Policy.Client(nil, FetchTimeout)
}

func (f *Fetcher) client() *http.Client {
	if f.Client != nil {
		return f.Client
	}
	return f.Policy.Client(nil, FetchTimeout)
}

// Manifest fetches a manifest URL and returns the path of its local copy.
func (f *Fetcher) Manifest(ctx context.Context, raw string) (string, error) {
	b, err := f.get(ctx, raw, MaxManifestBytes)
	if err != nil {
		return "", err
	}
	return f.store(b, ".yaml")
}

// Chart fetches chart at version from an http(s) Helm repository: its index.yaml, then the
// archive the index names, which must be on the repository's host (an index pointing
// elsewhere is refused like a redirect). It returns the path of the local archive.
func (f *Fetcher) Chart(ctx context.Context, repo, chart, version string) (string, error) {
	base, err := url.Parse(strings.TrimSuffix(repo, "/") + "/")
	if err != nil {
		return "", refuse("chart repository", "cannot be parsed")
	}
	idx, err := f.get(ctx, base.JoinPath("index.yaml").String(), MaxIndexBytes)
	if err != nil {
		return "", err
	}
	var index struct {
		Entries map[string][]struct {
			Version string   `json:"version"`
			URLs    []string `json:"urls"`
		} `json:"entries"`
	}
	if err := yaml.Unmarshal(idx, &index); err != nil {
		return "", fmt.Errorf("chart repository %s: index.yaml: %w", base.Redacted(), err)
	}
	var ref string
	for _, e := range index.Entries[chart] {
		if (e.Version == version || "v"+e.Version == version || e.Version == "v"+version) && len(e.URLs) > 0 {
			ref = e.URLs[0]
			break
		}
	}
	if ref == "" {
		return "", fmt.Errorf("chart repository %s has no chart %s version %s", base.Redacted(), chart, version)
	}
	u, err := base.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("chart repository %s: bad URL for %s %s", base.Redacted(), chart, version)
	}
	if u.Host != base.Host {
		return "", refuse("chart archive on host "+u.Hostname(), "the index names another host than the repository's")
	}
	b, err := f.get(ctx, u.String(), MaxChartBytes)
	if err != nil {
		return "", err
	}
	return f.store(b, ".tgz")
}

// get checks raw against the policy and fetches it, at most limit bytes.
func (f *Fetcher) get(ctx context.Context, raw string, limit int64) ([]byte, error) {
	if err := f.Policy.URL(raw); err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, refuse("URL", "only http and https sources are fetched")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch %s: %s", u.Redacted(), resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("fetch %s: larger than %d bytes", u.Redacted(), limit)
	}
	return b, nil
}

// store writes b under Dir, named by its digest, atomically.
func (f *Fetcher) store(b []byte, ext string) (string, error) {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	path := filepath.Join(f.Dir, hex.EncodeToString(sum[:])+ext)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp, err := os.CreateTemp(f.Dir, ".fetch-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
