// Package server is the HTTP door of tfrs: an echo v4 API over the same runner, engine and
// stacks as the operator and the CLI.
//
// Resources are TFRClusters, TFRTenants and TFRServers (servers under their tenant). One set of
// handlers (resources.go, resources_read.go) serves the three: a kind adds only its URL
// (kinds.go); the rest is the kind's own description (v1alpha1.Object) and the runner's (the
// door rule is runner.CheckDoor, the one the runner applies). A create, update or delete
// returns 202 with an operation (GET it, stream its events as Server-Sent Events, cancel it); a
// preview answers synchronously with the structured diff. Every error is an RFC 7807 problem
// document produced by one error handler. Every route but the health probes needs a bearer
// token (a static one, or a Kubernetes one verified with TokenReview), and every request is
// authorized as the verb on the custom resource it stands for (authz.go). See openapi.json for
// the contract.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/stacks/approval"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// Runner is what the API needs from *runner.Runner; handler tests substitute a fake.
type Runner interface {
	Up(ctx context.Context, obj v1alpha1.Object, op runner.Op) (*runner.Outcome, error)
	Preview(ctx context.Context, obj v1alpha1.Object, op runner.Op) (*runner.Outcome, error)
	Destroy(ctx context.Context, obj v1alpha1.Object, op runner.Op) (*runner.Outcome, error)
	Dependents(ctx context.Context, t kinds.Target) ([]string, error)
	// Unchanged proves an object's stack unchanged from its recorded inputs (the fleet
	// preview's short-circuit).
	Unchanged(ctx context.Context, obj v1alpha1.Object) (bool, error)
	// Approval is the approval mode obj's runs follow (a personal tenant's: its cluster's).
	Approval(ctx context.Context, obj v1alpha1.Object) (v1alpha1.ApprovalMode, error)
}

// Engine is the read side of *engine.Engine the API needs.
type Engine interface {
	Status(ctx context.Context, stack string) (*engine.StackStatus, error)
	Outputs(ctx context.Context, stack string) (program.Outputs, error)
	List(ctx context.Context, prefix string) ([]engine.StackSummary, error)
	// The saved-plan store (approvals.go).
	StorePlan(ctx context.Context, p *engine.Plan) error
	LoadPlan(ctx context.Context, stack, id string) (*engine.Plan, error)
	DiscardPlans(ctx context.Context, stack string, keep ...string) error
}

var (
	_ Runner = (*runner.Runner)(nil)
	_ Engine = (*engine.Engine)(nil)
)

// Config configures a Server. Runner and Engine are required; zero values of the rest get
// the defaults named on each field.
type Config struct {
	Runner Runner
	Engine Engine
	// Tokens are the accepted static bearer tokens, authorized by their role and scope.
	Tokens []Token
	// Kubernetes, when set, also accepts Kubernetes bearer tokens (TokenReview) and authorizes
	// them with SubjectAccessReview. Static tokens are tried first, so they are never sent to
	// the API server. Neither: every route but the probes answers 401.
	Kubernetes *KubernetesAuth
	// Specs keeps the specs sent to the API. Default: in memory (lost on restart); `tfrs
	// serve` keeps them in the state backend (BackendSpecStore), shared by its replicas.
	Specs SpecStore
	// Operations, when set, records every operation in the state backend, so any replica
	// sharing it can read, stream and cancel it (NewOperationStore). Nil: in memory only.
	Operations *OperationStore
	Logger     *slog.Logger

	// MaxBodyBytes limits request bodies (413 above). Default 1 MiB: a TFRServer's Confz
	// TOML may be 256 KiB.
	MaxBodyBytes int64
	// RequestTimeout bounds every request but previews and event streams. Default 60 s.
	RequestTimeout time.Duration
	// PreviewTimeout bounds a synchronous preview. Default 15 min.
	PreviewTimeout time.Duration
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout are the http.Server's. Defaults 10 s,
	// 30 s, 120 s.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// ShutdownGrace is how long Serve lets running operations finish once its context ends,
	// before canceling them. Default 10 min.
	ShutdownGrace time.Duration
	// CancelWait is how long shutdown waits for canceled operations to stop (the engine
	// interrupts the Pulumi CLI gracefully). Default 60 s.
	CancelWait time.Duration
	// HeartbeatInterval is the keep-alive period of event streams. Default 15 s.
	HeartbeatInterval time.Duration
	// StreamWriteTimeout bounds each write to an event stream. Default 30 s.
	StreamWriteTimeout time.Duration
	// OperationRetention and OperationTTL bound the finished operations kept in memory.
	// Defaults 1000 and 24 h.
	OperationRetention int
	OperationTTL       time.Duration
	// OperationRetentionBytes bounds the event bytes the finished operations kept hold, all
	// together: the oldest are forgotten first. Default 256 MiB.
	OperationRetentionBytes int64
	// MaxEventsPerOperation and MaxEventBytesPerOperation bound one operation's event
	// buffer; older events are dropped (a stream that asks for them gets a gap event).
	// Defaults 20000 and 8 MiB.
	MaxEventsPerOperation     int
	MaxEventBytesPerOperation int64
	// RateLimit is the sustained requests per second one token may make, RateBurst the
	// burst above it; beyond, 429 with Retry-After. Defaults 20/s and 100.
	RateLimit float64
	RateBurst int
	// MaxStreamsPerToken caps the event streams one token holds open at once (429 above).
	// Default 16.
	MaxStreamsPerToken int
	// Sources is the source policy applied to every spec before anything runs (403 naming
	// the field). Default DefaultSourcePolicy().
	Sources *sourcepolicy.Policy
	// ListConcurrency is how many stack statuses a list reads at once. Default 4.
	ListConcurrency int
	// Ready, when set, is asked by /readyz (besides the server not shutting down).
	Ready func(ctx context.Context) error
}

func (c *Config) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	set(&c.RequestTimeout, 60*time.Second)
	set(&c.PreviewTimeout, 15*time.Minute)
	set(&c.ReadHeaderTimeout, 10*time.Second)
	set(&c.ReadTimeout, 30*time.Second)
	set(&c.IdleTimeout, 120*time.Second)
	set(&c.ShutdownGrace, 10*time.Minute)
	set(&c.CancelWait, 60*time.Second)
	set(&c.HeartbeatInterval, 15*time.Second)
	set(&c.StreamWriteTimeout, 30*time.Second)
	set(&c.OperationTTL, 24*time.Hour)
	if c.OperationRetention <= 0 {
		c.OperationRetention = 1000
	}
	setInt64 := func(d *int64, v int64) {
		if *d <= 0 {
			*d = v
		}
	}
	setInt64(&c.OperationRetentionBytes, 256<<20)
	setInt64(&c.MaxEventBytesPerOperation, 8<<20)
	if c.MaxEventsPerOperation <= 0 {
		c.MaxEventsPerOperation = 20000
	}
	if c.RateLimit <= 0 {
		c.RateLimit = 20
	}
	if c.RateBurst <= 0 {
		c.RateBurst = 100
	}
	if c.MaxStreamsPerToken <= 0 {
		c.MaxStreamsPerToken = 16
	}
	if c.Sources == nil {
		c.Sources = DefaultSourcePolicy()
	}
	if c.ListConcurrency <= 0 {
		c.ListConcurrency = 4
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Specs == nil {
		c.Specs = NewMemorySpecStore()
	}
}

// Server is the HTTP API. Create it with New.
type Server struct {
	cfg    Config
	e      *echo.Echo
	http   *http.Server
	log    *slog.Logger
	run    Runner
	eng    Engine
	specs  SpecStore
	plans  *approval.Store
	authn  Authenticator
	authz  Authorizer
	ops    *registry
	m      *metrics
	limits *limiters
	routes map[string]bool // the route templates, for the metrics' route label

	shuttingDown atomic.Bool
	closing      chan struct{} // closed when event streams must end
	closeOnce    sync.Once
}

// New builds a server. It panics without a Runner or an Engine (a programming error).
func New(cfg Config) *Server {
	if cfg.Runner == nil || cfg.Engine == nil {
		panic("server.New: Config.Runner and Config.Engine are required")
	}
	cfg.defaults()
	s := &Server{
		cfg: cfg, log: cfg.Logger, run: cfg.Runner, eng: cfg.Engine, specs: cfg.Specs,
		m: newMetrics(cfg.Engine), closing: make(chan struct{}),
	}
	s.plans = approval.NewStore(approval.OnBucket(plansBucket(cfg.Specs), cfg.Engine), engine.ManagedByAPI)
	s.authn, s.authz = authenticators{newStaticTokens(cfg.Tokens)}, modeAuthorizer{AuthStatic: staticAuthorizer{}}
	if cfg.Kubernetes != nil {
		s.authn = append(s.authn.(authenticators), cfg.Kubernetes)
		s.authz.(modeAuthorizer)[AuthKubernetes] = cfg.Kubernetes
	}
	s.ops = newRegistry(retention{count: cfg.OperationRetention, ttl: cfg.OperationTTL, bytes: cfg.OperationRetentionBytes,
		events: cfg.MaxEventsPerOperation, eventBytes: cfg.MaxEventBytesPerOperation}, cfg.Operations, s.log, s.m)
	s.limits = newLimiters(cfg.RateLimit, cfg.RateBurst, cfg.MaxStreamsPerToken)
	s.e = s.newEcho()
	s.routes = map[string]bool{}
	for _, r := range s.e.Routes() {
		s.routes[r.Path] = true
	}
	s.http = &http.Server{
		Handler:           s.e,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		// Routes move the write deadline themselves (see deadline); this covers the rest
		// (unknown routes, errors before routing).
		WriteTimeout: cfg.RequestTimeout + 5*time.Second,
		IdleTimeout:  cfg.IdleTimeout,
		ErrorLog:     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	return s
}

func (s *Server) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	// Log the peer's address, not X-Forwarded-For/X-Real-IP, which any client can forge.
	// Behind a proxy the proxy's address is logged; its own log has the client's.
	e.IPExtractor = echo.ExtractIPDirect()
	// The order is the order of the checks: authentication, then (counted in the metrics) the
	// rate limit, authorization, the body's size and media type, and the handler's decoding,
	// validation, parent and busy checks.
	e.Use(
		requestIDMiddleware,
		s.accessLogMiddleware,
		s.authMiddleware,
		s.metricsMiddleware,
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			DisablePrintStack: true,
			LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
				s.log.Error("panic in handler", "requestId", requestIDOf(c), "err", err, "stack", string(stack))
				return err
			},
		}),
		s.rateLimitMiddleware,
		s.authzMiddleware,
		middleware.BodyLimit(fmt.Sprintf("%dB", s.cfg.MaxBodyBytes)),
		bodyMiddleware,
	)
	normal, long, stream := deadline(s.cfg.RequestTimeout), deadline(s.cfg.PreviewTimeout), deadline(0)

	e.GET("/healthz", s.healthz, normal)
	e.GET("/readyz", s.readyz, normal)
	e.GET("/metrics", s.m.handler(), normal)
	e.GET("/openapi.json", serveOpenAPI, normal)

	for _, k := range resourceKinds {
		h := resources{s: s, k: k}
		col := k.route
		e.GET(col, h.list, normal)
		e.POST(col, h.create, normal)
		e.GET(col+"/:name", h.get, normal)
		e.PUT(col+"/:name", h.update, normal)
		e.DELETE(col+"/:name", h.remove, normal)
		e.POST(col+"/:name/preview", h.preview, long)
		e.POST(col+"/:name/apply", h.apply, normal)
	}
	e.POST(FleetPreviewPath, s.fleetPreview, normal)
	e.GET("/v1/operations/:id", s.getOperation, normal)
	e.GET("/v1/operations/:id/events", s.operationEvents, stream)
	e.POST("/v1/operations/:id/cancel", s.cancelOperation, normal)
	return e
}

// Handler is the API as an http.Handler (for tests, or to mount under another server).
func (s *Server) Handler() http.Handler { return s.e }

// Serve serves on l until ctx ends, then shuts down gracefully (see Shutdown) within
// Config.ShutdownGrace plus Config.CancelWait. It returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(l) }()
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go s.ops.sweepStored(sweepCtx, time.Hour)
	s.log.Info("serving", "addr", l.Addr().String())
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownGrace)
	defer cancel()
	err := s.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// Shutdown stops the server gracefully: /readyz turns 503 and new operations are refused
// (503), while running operations may finish until ctx ends; those still running then are
// canceled, which the engine does cleanly (the Pulumi CLI is interrupted and whatever it
// leaves pending is recovered by the next up of the stack), and waited for up to
// Config.CancelWait. Event streams then end and the HTTP server closes.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shuttingDown.Store(true)
	s.ops.close()
	if n := s.ops.running(); n > 0 {
		s.log.Info("shutting down: waiting for running operations", "operations", n)
	}
	if !s.ops.wait(ctx) {
		s.log.Warn("shutdown grace period over: canceling running operations", "operations", s.ops.running())
		s.ops.cancelAll()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CancelWait)
		ok := s.ops.wait(wctx)
		cancel()
		if !ok {
			s.log.Error("operations did not stop after cancel", "operations", s.ops.running())
		}
	}
	s.closeOnce.Do(func() { close(s.closing) })
	// ctx may be spent by now; closing idle connections needs only a moment.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return s.http.Shutdown(hctx)
}

// healthz: the process serves.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// ErrNotReady answers /readyz while the readiness check fails.
var ErrNotReady = errors.New("not ready")

// readyz: the server takes new work (not shutting down, and Config.Ready agrees).
func (s *Server) readyz(c echo.Context) error {
	if s.shuttingDown.Load() {
		return ErrShuttingDown
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(c.Request().Context()); err != nil {
			s.log.Warn("readiness check failed", "err", err)
			return ErrNotReady
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
