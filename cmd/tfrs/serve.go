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

	"github.com/tfrs-io/tfrs-operator/operator"
	"github.com/tfrs-io/tfrs-operator/server"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// serveFlags are `tfrs serve`'s own flags, next to the shared stackFlags.
type serveFlags struct {
	listen, tokenFile, tlsCert, tlsKey string
	importSpecs                        string
	leaderElect                        bool
	leaderElectionNamespace            string
	auth                               []string
	authAudiences                      []string
	authCacheTTL                       time.Duration
	shutdownGrace                      time.Duration
	maxBodyBytes                       int64
	sources                            sourceFlags
	limits                             server.Config
	log                                logFlags
}

func (f *serveFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.listen, "listen", envOr("TFRS_LISTEN", "127.0.0.1:8080"), "address to listen on (env TFRS_LISTEN)")
	fs.StringSliceVar(&f.auth, "auth", splitEnv("TFRS_API_AUTH", "static"), "authentication modes: static (the token file), kubernetes (ServiceAccount/OIDC tokens verified with TokenReview, requests authorized with SubjectAccessReview), or both: kubernetes,static (env TFRS_API_AUTH)")
	fs.StringSliceVar(&f.authAudiences, "auth-audience", splitEnv("TFRS_API_AUTH_AUDIENCES", ""), "with --auth kubernetes: accept only tokens issued for these audiences (kubectl create token SA --audience AUD; default: the API server's own)")
	fs.DurationVar(&f.authCacheTTL, "auth-cache-ttl", server.DefaultAuthCacheTTL, "with --auth kubernetes: how long TokenReview and SubjectAccessReview answers are cached (a revoked token or binding works at most this long; negative: no cache)")
	fs.StringVar(&f.tokenFile, "token-file", os.Getenv("TFRS_API_TOKEN_FILE"), "file of static bearer tokens, one 'TOKEN ROLE [NAME] [namespaces=NS,…] [kinds=KIND,…] [verbs=VERB,…]' per line, ROLE admin or read-only (env TFRS_API_TOKEN_FILE; env TFRS_API_TOKENS may hold entries too, separated by ';')")
	fs.StringVar(&f.importSpecs, "import-specs", "", "on start, move the specs an older tfrs serve kept in this directory (its --spec-dir) into the state backend, once (default: <state-dir>/api/specs when it exists)")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "replicas elect the holder of the Lease "+operator.APILockLeaseID+": the only one that may break a backend lock left by an API pod that is gone (needs the API server of --kubeconfig or in-cluster; all replicas serve either way)")
	fs.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the --leader-elect Lease (default: the pod's)")
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
Every route but /healthz and /readyz needs a bearer token: with --auth static (the default) one
from --token-file or TFRS_API_TOKENS (serving without any is refused); with --auth kubernetes a
ServiceAccount or OIDC token of the API server --kubeconfig (or the in-cluster account) points
at, verified with TokenReview, every request authorized with SubjectAccessReview as the verb on
the custom resource (tfrtenants, tfrservers, tfrclusters in tfrs.io); --auth kubernetes,static
accepts both. GET /openapi.json is the full contract.`,
		Example: `  printf '%s admin ci\n' "$(openssl rand -hex 24)" > tokens
  TFRS_PASSPHRASE=… tfrs serve --listen 127.0.0.1:8080 --token-file tokens --kubeconfig ~/.kube/config
  tfrs serve --listen :8443 --tls-cert tls.crt --tls-key tls.key --log-format json
  tfrs serve --auth kubernetes --auth-audience tfrs --tls-cert tls.crt --tls-key tls.key`,
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
	modes, err := f.authModes()
	if err != nil {
		return err
	}
	var tokens []server.Token
	if modes[server.AuthStatic] {
		if tokens, err = f.tokens(); err != nil {
			return err
		}
	} else if f.tokenFile != "" || os.Getenv("TFRS_API_TOKENS") != "" {
		return fmt.Errorf("%w: --token-file/TFRS_API_TOKENS need --auth static (or kubernetes,static)", errUsage)
	}
	if !modes[server.AuthKubernetes] && (len(f.authAudiences) > 0 || cmd.Flags().Changed("auth-cache-ttl")) {
		return fmt.Errorf("%w: --auth-audience and --auth-cache-ttl go with --auth kubernetes", errUsage)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
	}

	var pods engine.PodProbe
	if f.leaderElect {
		rc, err := sf.restConfig()
		if err != nil {
			return fmt.Errorf("--leader-elect: %w", err)
		}
		// The Lease is released when serving has ended (deferred before eng.Close runs).
		lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		defer stop()
		if pods, err = operator.StartAPILockLease(lctx, rc, f.leaderElectionNamespace, "", log); err != nil {
			return fmt.Errorf("--leader-elect: %w", err)
		}
	}
	eng, run, err := sf.runner(ctx, func(o *engine.Options) { o.Pods = pods })
	if err != nil {
		return err
	}
	defer eng.Close()
	// Specs and operation records live in the state backend beside the stacks, so replicas
	// that share it (one s3:// bucket) give the same answers.
	bkt, err := eng.Bucket(ctx)
	if err != nil {
		return fmt.Errorf("state backend: %w", err)
	}
	specs := server.NewBackendSpecStore(bkt)
	if err := importLegacySpecs(ctx, sf.stateDir, f.importSpecs, specs, log); err != nil {
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
	cfg.Operations = server.NewOperationStore(bkt, server.ReplicaName())
	cfg.MaxBodyBytes, cfg.ShutdownGrace, cfg.Sources = f.maxBodyBytes, f.shutdownGrace, pol
	if modes[server.AuthKubernetes] {
		// The API server the programs apply to is the one whose users and RBAC count.
		rc, err := sf.restConfig()
		if err != nil {
			return fmt.Errorf("--auth kubernetes: %w", err)
		}
		if cfg.Kubernetes, err = server.NewKubernetesAuthForConfig(rc, server.KubernetesOptions{
			Audiences: f.authAudiences, CacheTTL: f.authCacheTTL, Logger: log,
		}); err != nil {
			return fmt.Errorf("--auth kubernetes: %w", err)
		}
	}
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
	log.Info("tfrs serve", "addr", l.Addr().String(), "backend", eng.BackendURL(), "auth", strings.Join(f.auth, ","), "tokens", len(tokens), "replica", server.ReplicaName())
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

// authModes reads --auth: static, kubernetes, or both (in any order: static tokens are always
// tried first, so they never reach the API server's TokenReview).
func (f *serveFlags) authModes() (map[server.AuthMode]bool, error) {
	modes := map[server.AuthMode]bool{}
	for _, m := range f.auth {
		switch mode := server.AuthMode(strings.ToLower(strings.TrimSpace(m))); mode {
		case server.AuthStatic, server.AuthKubernetes:
			modes[mode] = true
		default:
			return nil, fmt.Errorf("%w: --auth %q: want static, kubernetes or kubernetes,static", errUsage, m)
		}
	}
	if len(modes) == 0 {
		return nil, fmt.Errorf("%w: --auth: want static, kubernetes or kubernetes,static", errUsage)
	}
	return modes, nil
}

// splitEnv is the comma-separated list in env key, def when unset.
func splitEnv(key, def string) []string {
	v := os.Getenv(key)
	if v == "" {
		v = def
	}
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// importLegacySpecs moves the specs an older `tfrs serve` kept in <state-dir>/api/specs into
// the backend, once.
func importLegacySpecs(ctx context.Context, stateDir, dir string, to server.SpecStore, log *slog.Logger) error {
	if dir == "" {
		if stateDir == "" {
			d, err := engine.DefaultStateDir()
			if err != nil {
				return err
			}
			stateDir = d
		}
		dir = filepath.Join(stateDir, "api", "specs")
	}
	n, err := server.ImportLegacySpecs(ctx, dir, to)
	if err != nil {
		return err
	}
	if n > 0 {
		log.Info("imported the specs of an older tfrs serve into the state backend", "records", n, "from", dir)
	}
	return nil
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
