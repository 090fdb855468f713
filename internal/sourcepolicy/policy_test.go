package sourcepolicy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLocalPath(t *testing.T) {
	p := &Policy{LocalRoots: []string{"/srv/charts", "/opt/mirror/"}}
	for path, ok := range map[string]bool{
		"/srv/charts":                 true,
		"/srv/charts/cert-manager":    true,
		"/opt/mirror/x.yaml":          true,
		"/srv/charts/../../etc":       false,
		"/srv/chartsevil":             false,
		"/etc/passwd":                 false,
		"srv/charts/x":                false,
		"/":                           false,
		"/srv/charts/a\x00b":          false,
		"/var/run/secrets/kubernetes": false,
	} {
		err := p.LocalPath(path)
		require.Equal(t, ok, err == nil, "%q: %v", path, err)
		if err != nil {
			require.ErrorIs(t, err, ErrForbidden)
		}
	}
	require.Error(t, (&Policy{}).LocalPath("/srv/charts"), "no roots: no local path")
	require.NoError(t, (&Policy{AnyLocalPath: true}).LocalPath("relative/ok"))
	require.Error(t, (&Policy{AnyLocalPath: true}).LocalPath("/a\x00"), "NUL is refused whatever the policy")
}

func TestURL(t *testing.T) {
	p := &Policy{Hosts: []string{"charts.jetstack.io", "*.mirror.example.cn", "mirror.local:8443"}, LocalRoots: []string{"/srv"}}
	for raw, ok := range map[string]bool{
		"https://charts.jetstack.io":                     true,
		"https://CHARTS.jetstack.io./":                   true,
		"http://charts.jetstack.io":                      true,
		"https://charts.jetstack.io:22":                  false, // an entry without a port allows 443/80 only
		"oci://a.mirror.example.cn/charts":               true,
		"https://mirror.example.cn":                      false, // *.x is subdomains only
		"https://evilmirror.example.cn":                  false,
		"https://mirror.local:8443/charts":               true,
		"https://mirror.local/charts":                    false,
		"https://charts.jetstack.io@evil.example.com/":   false,
		"https://evil.example.com/?x=charts.jetstack.io": false,
		"https://127.0.0.1/":                             false,
		"https://localhost/":                             false,
		"https://api.localhost/":                         false,
		"http://169.254.169.254/latest/meta-data":        false,
		"http://[::1]/":                                  false,
		"http://[fe80::1]/":                              false,
		"http://[::ffff:127.0.0.1]/":                     false,
		"http://[64:ff9b::a9fe:a9fe]/":                   false, // NAT64 of 169.254.169.254
		"http://10.0.0.1/":                               false,
		"http://100.64.0.1/":                             false,
		"http://0.0.0.0/":                                false,
		"file:///srv/cnpg.yaml":                          true,
		"file:///etc/passwd":                             false,
		"file://remote/srv/x":                            false,
		"ftp://charts.jetstack.io/":                      false,
		"https:///nohost":                                false,
		"gopher://charts.jetstack.io/":                   false,
	} {
		err := p.URL(raw)
		require.Equal(t, ok, err == nil, "%q: %v", raw, err)
	}
}

func TestIPAllowances(t *testing.T) {
	ip := netip.MustParseAddr("10.96.0.10")
	require.Error(t, (&Policy{}).IP(ip))
	require.NoError(t, (&Policy{AllowedNets: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}}).IP(ip))
	require.NoError(t, (&Policy{AllowPrivate: true}).IP(netip.MustParseAddr("127.0.0.1")))
	require.NoError(t, (&Policy{}).IP(netip.MustParseAddr("151.101.1.1")))
}

func TestSecretNamespace(t *testing.T) {
	p := &Policy{SecretNamespaces: []string{"tfrs-system"}}
	require.NoError(t, p.SecretNamespace("tfrs-system", ""))
	require.NoError(t, p.SecretNamespace("team-a", "team-a"), "an object's own namespace")
	require.Error(t, p.SecretNamespace("kube-system", ""))
	require.Error(t, p.SecretNamespace("", ""), "cluster-scoped objects have no own namespace")
	require.NoError(t, (&Policy{SecretNamespaces: []string{"*"}}).SecretNamespace("kube-system", ""))
}

func TestSymlinkOutOfRootRefused(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "escape")))
	require.NoError(t, os.Mkdir(filepath.Join(root, "charts"), 0o755))
	p := &Policy{LocalRoots: []string{root}}
	require.NoError(t, p.LocalPath(filepath.Join(root, "escape", "secret")), "lexically under the root")
	require.ErrorIs(t, p.ResolveLocal(filepath.Join(root, "escape", "secret")), ErrForbidden)
	require.NoError(t, p.ResolveLocal(filepath.Join(root, "charts")))
	require.NoError(t, p.ResolveLocal(filepath.Join(root, "missing")))
}

// recorder is a local listener that counts every request it gets.
type recorder struct {
	*httptest.Server
	hits atomic.Int64
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		if h != nil {
			h(w, req)
			return
		}
		_, _ = w.Write([]byte("kind: List\n"))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) host() string { u, _ := url.Parse(r.URL); return u.Host }

// fakeResolver answers every name with addrs.
type fakeResolver []netip.Addr

func (f fakeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return f, nil
}

func fetch(t *testing.T, p *Policy, r Resolver, raw string) error {
	t.Helper()
	f := &Fetcher{Policy: p, Dir: t.TempDir(), Client: p.Client(r, 5*time.Second)}
	_, err := f.Manifest(context.Background(), raw)
	return err
}

func TestFetchRefusalsNeverReachTheListener(t *testing.T) {
	loop := netip.MustParsePrefix("127.0.0.0/8")
	t.Run("loopback URL", func(t *testing.T) {
		rec := newRecorder(t, nil)
		err := fetch(t, &Policy{AnyHost: true}, nil, rec.URL+"/m.yaml")
		require.ErrorIs(t, err, ErrForbidden)
		require.Zero(t, rec.hits.Load())
	})
	t.Run("localhost name", func(t *testing.T) {
		rec := newRecorder(t, nil)
		port := rec.URL[strings.LastIndex(rec.URL, ":")+1:]
		err := fetch(t, &Policy{AnyHost: true}, nil, "http://localhost:"+port+"/m.yaml")
		require.ErrorIs(t, err, ErrForbidden)
		require.Zero(t, rec.hits.Load())
	})
	t.Run("host not allowed", func(t *testing.T) {
		rec := newRecorder(t, nil)
		err := fetch(t, &Policy{Hosts: []string{"charts.jetstack.io"}, AllowedNets: []netip.Prefix{loop}}, nil, rec.URL+"/m.yaml")
		require.ErrorIs(t, err, ErrForbidden)
		require.Zero(t, rec.hits.Load())
	})
	t.Run("DNS rebinding: an allowed name resolving to loopback", func(t *testing.T) {
		rec := newRecorder(t, nil)
		port := rec.URL[strings.LastIndex(rec.URL, ":")+1:]
		p := &Policy{Hosts: []string{"mirror.example.com:" + port}}
		require.NoError(t, p.URL("http://mirror.example.com:"+port+"/m.yaml"), "the URL itself is allowed")
		err := fetch(t, p, fakeResolver{netip.MustParseAddr("127.0.0.1")}, "http://mirror.example.com:"+port+"/m.yaml")
		require.ErrorIs(t, err, ErrForbidden)
		require.Zero(t, rec.hits.Load())
	})
	t.Run("split answer: one public and one link-local address", func(t *testing.T) {
		rec := newRecorder(t, nil)
		port := rec.URL[strings.LastIndex(rec.URL, ":")+1:]
		p := &Policy{Hosts: []string{"mirror.example.com:" + port}, AllowedNets: []netip.Prefix{loop}}
		err := fetch(t, p, fakeResolver{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("169.254.169.254")}, "http://mirror.example.com:"+port+"/m.yaml")
		require.ErrorIs(t, err, ErrForbidden)
		require.Zero(t, rec.hits.Load())
	})
	t.Run("redirect to another host", func(t *testing.T) {
		target := newRecorder(t, nil)
		first := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/m.yaml", http.StatusFound)
		})
		// Both hosts allowed: a redirect still may not change host.
		p := &Policy{Hosts: []string{first.host(), target.host()}, AllowedNets: []netip.Prefix{loop}}
		err := fetch(t, p, nil, first.URL+"/m.yaml")
		require.ErrorIs(t, err, ErrForbidden)
		require.Equal(t, int64(1), first.hits.Load())
		require.Zero(t, target.hits.Load())
	})
	t.Run("redirect to file://", func(t *testing.T) {
		first := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "file:///etc/passwd")
			w.WriteHeader(http.StatusFound)
		})
		p := &Policy{Hosts: []string{first.host()}, AllowedNets: []netip.Prefix{loop}}
		require.Error(t, fetch(t, p, nil, first.URL+"/m.yaml"))
	})
	t.Run("redirect loop on the same host", func(t *testing.T) {
		var first *recorder
		first = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, first.URL+r.URL.Path+"x", http.StatusFound)
		})
		p := &Policy{Hosts: []string{first.host()}, AllowedNets: []netip.Prefix{loop}}
		require.ErrorIs(t, fetch(t, p, nil, first.URL+"/m"), ErrForbidden)
		require.Equal(t, int64(MaxRedirects), first.hits.Load())
	})
	t.Run("file URL is never fetched", func(t *testing.T) {
		p := &Policy{AnyLocalPath: true, AnyHost: true}
		err := fetch(t, p, nil, "file:///etc/passwd")
		require.ErrorIs(t, err, ErrForbidden)
	})
}

func TestFetchAllowed(t *testing.T) {
	loop := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	t.Run("manifest, with a same-host redirect", func(t *testing.T) {
		var rec *recorder
		rec = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/old.yaml" {
				http.Redirect(w, r, rec.URL+"/new.yaml", http.StatusMovedPermanently)
				return
			}
			_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\n"))
		})
		p := &Policy{Hosts: []string{rec.host()}, AllowedNets: loop}
		f := &Fetcher{Policy: p, Dir: t.TempDir()}
		path, err := f.Manifest(context.Background(), rec.URL+"/old.yaml")
		require.NoError(t, err)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(b), "ConfigMap")
		again, err := f.Manifest(context.Background(), rec.URL+"/new.yaml")
		require.NoError(t, err)
		require.Equal(t, path, again, "content-addressed: same content, same path")
	})
	t.Run("chart from a Helm repository", func(t *testing.T) {
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/charts/index.yaml":
				_, _ = w.Write([]byte("apiVersion: v1\nentries:\n  jaeger:\n  - version: 4.11.1\n    urls: [jaeger-4.11.1.tgz]\n"))
			case "/charts/jaeger-4.11.1.tgz":
				_, _ = w.Write([]byte("tgz-bytes"))
			default:
				http.NotFound(w, r)
			}
		})
		p := &Policy{Hosts: []string{rec.host()}, AllowedNets: loop}
		f := &Fetcher{Policy: p, Dir: t.TempDir()}
		path, err := f.Chart(context.Background(), rec.URL+"/charts", "jaeger", "4.11.1")
		require.NoError(t, err)
		require.True(t, strings.HasSuffix(path, ".tgz"))
		_, err = f.Chart(context.Background(), rec.URL+"/charts", "jaeger", "9.9.9")
		require.Error(t, err)
	})
	t.Run("an index naming another host", func(t *testing.T) {
		other := newRecorder(t, nil)
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("entries:\n  jaeger:\n  - version: 1.0.0\n    urls: [" + other.URL + "/j.tgz]\n"))
		})
		p := &Policy{Hosts: []string{rec.host(), other.host()}, AllowedNets: loop}
		f := &Fetcher{Policy: p, Dir: t.TempDir()}
		_, err := f.Chart(context.Background(), rec.URL, "jaeger", "1.0.0")
		require.True(t, errors.Is(err, ErrForbidden), "%v", err)
		require.Zero(t, other.hits.Load())
	})
	t.Run("too large", func(t *testing.T) {
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write(make([]byte, MaxManifestBytes+1))
		})
		p := &Policy{Hosts: []string{rec.host()}, AllowedNets: loop}
		// The fetch's own time bound, not fetch's 5 s: 32 MiB over a loaded machine's
		// loopback can take longer, and the limit under test is the size.
		f := &Fetcher{Policy: p, Dir: t.TempDir(), Client: p.Client(nil, FetchTimeout)}
		_, err := f.Manifest(context.Background(), rec.URL+"/big.yaml")
		require.ErrorContains(t, err, "larger than")
	})
}
