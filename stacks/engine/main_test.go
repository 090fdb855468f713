package engine

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/controlplane"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
)

// Integration tests run the real Pulumi CLI and Kubernetes provider against a local control
// plane and a real S3 server (versitygw). Missing tools fail the tests with the tools error,
// which names `make tools`; nothing is skipped.

const testPassphrase = "tfrs-engine-test-passphrase"

// childEnv carries a childSpec into a re-executed test binary (see TestMain).
const childEnv = "TFRS_ENGINE_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	code := m.Run()
	shared.stop()
	os.Exit(code)
}

// shared holds the expensive fixtures, started once per test binary on first use.
var shared fixtures

type fixtures struct {
	cpOnce sync.Once
	cp     *controlplane.ControlPlane
	cpErr  error

	s3Once sync.Once
	s3     *s3Server
	s3Err  error
}

func (f *fixtures) stop() {
	if f.cp != nil {
		_ = f.cp.Stop()
	}
	if f.s3 != nil {
		f.s3.stop()
	}
}

func controlPlane(t testing.TB) *controlplane.ControlPlane {
	t.Helper()
	shared.cpOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared.cp, shared.cpErr = controlplane.Start(ctx, controlplane.Options{})
	})
	require.NoError(t, shared.cpErr, "local control plane")
	return shared.cp
}

func kubeconfig(t testing.TB) string {
	t.Helper()
	kc, err := controlPlane(t).Kubeconfig()
	require.NoError(t, err)
	return kc
}

// s3Server is the binary's shared versitygw (internal/testenv), in a directory it removes on
// stop.
type s3Server struct {
	*testenv.S3Server
	dir string
}

func s3(t testing.TB) *s3Server {
	t.Helper()
	shared.s3Once.Do(func() { shared.s3, shared.s3Err = startS3() })
	require.NoError(t, shared.s3Err, "S3 server")
	return shared.s3
}

func startS3() (*s3Server, error) {
	dir, err := os.MkdirTemp("", "tfrs-s3-")
	if err != nil {
		return nil, err
	}
	srv, err := testenv.StartS3(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &s3Server{S3Server: srv, dir: dir}, nil
}

func (s *s3Server) stop() {
	s.Stop()
	_ = os.RemoveAll(s.dir)
}

func (s *s3Server) backendURL() string { return s.BackendURL() }

func (s *s3Server) env() map[string]string {
	return map[string]string{"AWS_ACCESS_KEY_ID": s.Access, "AWS_SECRET_ACCESS_KEY": s.Secret, "AWS_REGION": "us-east-1"}
}

// newEngine makes an engine on a fresh file:// state dir (or the given options).
func newEngine(t testing.TB, o Options) *Engine {
	t.Helper()
	if o.StateDir == "" {
		o.StateDir = t.TempDir()
	}
	if o.Passphrase == "" {
		o.Passphrase = testPassphrase
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := New(ctx, o)
	require.NoError(t, err, "engine (tools are built by `make tools`)")
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// recorder is a Sink that keeps events for assertions.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) sink(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func (r *recorder) text() string {
	var b strings.Builder
	for _, e := range r.all() {
		j, _ := json.Marshal(e)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// exportState reads a stack's deployment (test-only: it decrypts secrets).
func exportState(t testing.TB, e *Engine, stack string) stateDoc {
	t.Helper()
	ws, err := e.reader(context.Background())
	require.NoError(t, err)
	dep, err := ws.ExportStack(context.Background(), stack)
	require.NoError(t, err)
	var doc stateDoc
	require.NoError(t, json.Unmarshal(dep.Deployment, &doc))
	return doc
}

// tctx is a bounded context for one integration step.
func tctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
