package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tfrs-io/tfrs-operator/server"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// serveFlags are `tfrs serve`'s own flags, next to the shared stackFlags.
type serveFlags struct {
	listen, tokenFile, specDir, tlsCert, tlsKey string
	shutdownGrace                               time.Duration
	maxBodyBytes                                int64
	sources                                     sourceFlags
	limits                                      server.Config
	log                                         logFlags
}

func (f *serveFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.listen, "listen", envOr("TFRS_LISTEN", "127.0.0.1:8080"), "address to listen on (env TFRS_LISTEN)")
	fs.StringVar(&f.tokenFile, "token-file", os.Getenv("TFRS_API_TOKEN_FILE"), "file of bearer tokens, one 'TOKEN ROLE [NAME]' per line, ROLE admin or read-only (env TFRS_API_TOKEN_FILE; env TFRS_API_TOKENS may hold entries too, separated by ';')")
	fs.StringVar(&f.specDir, "spec-dir", os.Getenv("TFRS_SPEC_DIR"), "directory where the API keeps the specs it was sent (env TFRS_SPEC_DIR; default <state-dir>/api/specs)")
	fs.StringVar(&f.tlsCert, "tls-cert", os.Getenv("TFRS_TLS_CERT"), "serve HTTPS with this certificate (PEM; env TFRS_TLS_CERT)")
	fs.StringVar(&f.tlsKey, "tls-key", os.Getenv("TFRS_TLS_KEY"), "private key of --tls-cert (PEM; env TFRS_TLS_KEY)")
	f.log.bind(fs)
	fs.DurationVar(&f.shutdownGrace, "shutdown-grace", 10*time.Minute, "on SIGTERM, how long running operations may finish before they are canceled")
	fs.Int64Var(&f.maxBodyBytes, "max-body-bytes", 1<<20, "largest accepted request body")
	f.sources.bind(fs, "api")
	l := &f.limits
	fs.Float64Var(&l.RateLimit, "rate-limit", 20, "requests per second one token may make, sustained (429 with Retry-After above)")
	fs.IntVar(&l.RateBurst, "rate-burst", 100, "requests one token may make in a burst above --rate-limit")
	fs.IntVar(&l.MaxStreamsPerToken, "max-streams-per-token", 16, "event streams (SSE) one token may hold open at once (429 above)")
	fs.IntVar(&l.OperationRetention, "operation-retention", 1000, "finished operations kept in memory (GET /v1/operations/{id})")
	fs.DurationVar(&l.OperationTTL, "operation-ttl", 24*time.Hour, "how long a finished operation is kept")
	fs.Int64Var(&l.OperationRetentionBytes, "operation-retention-bytes", 256<<20, "event bytes all kept finished operations may hold together")
	fs.IntVar(&l.MaxEventsPerOperation, "max-events-per-operation", 20000, "events one operation buffers (older ones are dropped; streams get a gap event)")
	fs.Int64Var(&l.MaxEventBytesPerOperation, "max-event-bytes-per-operation", 8<<20, "event bytes one operation buffers")
}

func newServeCmd() *cobra.Command {
	var sf stackFlags
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Run the HTTP API: create, change, preview and delete clusters, tenants and servers over HTTP",
		Long: `Serve runs the HTTP API over the same engine, state and programs as the operator and the CLI.
Every route but /healthz and /readyz needs a bearer token from --token-file or TFRS_API_TOKENS;
serving without any token is refused. GET /openapi.json is the full contract.`,
		Example: `  printf '%s admin ci\n' "$(openssl rand -hex 24)" > tokens
  TFRS_PASSPHRASE=… tfrs serve --listen 127.0.0.1:8080 --token-file tokens --kubeconfig ~/.kube/config
  tfrs serve --listen :8443 --tls-cert tls.crt --tls-key tls.key --log-format json`,
		GroupID: groupServers,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), cmd, &sf, &f)
		},
	}
	sf.bind(cmd.Flags())
	f.bind(cmd.Flags())
	return cmd
}

func runServe(ctx context.Context, cmd *cobra.Command, sf *stackFlags, f *serveFlags) error {
	h, err := f.log.handler(cmd.Flags(), os.Stderr)
	if err != nil {
		return err
	}
	log := slog.New(h)
	tokens, err := f.tokens()
	if err != nil {
		return err
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
	}

	eng, run, err := sf.runner(ctx)
	if err != nil {
		return err
	}
	defer eng.Close()
	specDir, err := f.specDirectory(sf.stateDir)
	if err != nil {
		return err
	}
	specs, err := server.NewFileSpecStore(specDir)
	if err != nil {
		return err
	}
	pol, err := f.sources.policy()
	if err != nil {
		return err
	}
	if err := installFetcher(pol, sf.stateDir); err != nil {
		return err
	}
	cfg := f.limits
	cfg.Runner, cfg.Engine, cfg.Tokens, cfg.Specs, cfg.Logger = run, eng, tokens, specs, log
	cfg.MaxBodyBytes, cfg.ShutdownGrace, cfg.Sources = f.maxBodyBytes, f.shutdownGrace, pol
	srv := server.New(cfg)

	l, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			l.Close()
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	} else if !isLoopback(l.Addr()) {
		log.Warn("serving plain HTTP on a non-loopback address: bearer tokens travel in clear text; use --tls-cert/--tls-key or a TLS-terminating proxy")
	}
	log.Info("tfrs serve", "addr", l.Addr().String(), "backend", eng.BackendURL(), "tokens", len(tokens), "specDir", specDir)
	return srv.Serve(ctx, l)
}

// tokens reads --token-file and TFRS_API_TOKENS. Serving without any token would answer 401
// to everything but the probes, which is never what was meant: it is a usage error.
func (f *serveFlags) tokens() ([]server.Token, error) {
	var all []server.Token
	if f.tokenFile != "" {
		t, err := server.LoadTokenFile(f.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		all = append(all, t...)
	}
	if env := os.Getenv("TFRS_API_TOKENS"); env != "" {
		t, err := server.ParseTokens(strings.NewReader(env))
		if err != nil {
			return nil, fmt.Errorf("TFRS_API_TOKENS: %w", err)
		}
		all = append(all, t...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%w: no API tokens: give --token-file or TFRS_API_TOKENS", errUsage)
	}
	return all, nil
}

func (f *serveFlags) specDirectory(stateDir string) (string, error) {
	if f.specDir != "" {
		return f.specDir, nil
	}
	if stateDir == "" {
		d, err := engine.DefaultStateDir()
		if err != nil {
			return "", err
		}
		stateDir = d
	}
	return filepath.Join(stateDir, "api", "specs"), nil
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
