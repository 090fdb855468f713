package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/labstack/echo/v4"
)

const (
	ctxRequestID = "tfrs.requestID"
	ctxBody      = "tfrs.body"
)

// reRequestID is what a client-supplied X-Request-Id may look like. Anything else is replaced:
// the id goes into logs and responses, and must not carry log-injection payloads.
var reRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// requestIDMiddleware gives every request an id (the client's, when well-formed), returned in
// X-Request-Id and carried by logs and problem documents.
func requestIDMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rid := c.Request().Header.Get(echo.HeaderXRequestID)
		if !reRequestID.MatchString(rid) {
			var b [16]byte
			_, _ = rand.Read(b[:])
			rid = hex.EncodeToString(b[:])
		}
		c.Set(ctxRequestID, rid)
		c.Response().Header().Set(echo.HeaderXRequestID, rid)
		return next(c)
	}
}

func requestIDOf(c echo.Context) string {
	rid, _ := c.Get(ctxRequestID).(string)
	return rid
}

// accessLogMiddleware writes the access log line of every request, authenticated or not. It
// runs the error handler itself (as echo's own logger does) unless an inner middleware
// already did, so that the status it logs is the one sent. Logs carry the route, never the
// query or the body, and the token's name, never the token. A 401 only increments one
// unlabeled counter: unauthenticated clients make no metric series.
func (s *Server) accessLogMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		d := time.Since(start)
		req := c.Request()
		route := s.routeLabel(c)
		status := statusOf(c)
		if status == http.StatusUnauthorized {
			s.m.unauthenticated.Inc()
		}
		level := slog.LevelInfo
		switch {
		case status >= 500:
			level = slog.LevelError
		case route == "/healthz" || route == "/readyz" || route == "/metrics":
			level = slog.LevelDebug // probes and scrapes would drown the log
		}
		s.log.LogAttrs(req.Context(), level, "request",
			slog.String("requestId", requestIDOf(c)),
			slog.String("method", methodLabel(req.Method)),
			slog.String("route", route),
			slog.String("path", req.URL.Path),
			slog.Int("status", status),
			slog.Float64("durationMs", float64(d.Microseconds())/1000),
			slog.Int64("bytesIn", req.ContentLength),
			slog.Int64("bytesOut", c.Response().Size),
			slog.String("principal", principalOf(c)),
			slog.String("remote", c.RealIP()),
		)
		return nil
	}
}

// metricsMiddleware records the request metrics. It runs after authentication, so only the
// probes and authenticated callers are counted, under labels from fixed sets: the method
// (methodLabel), the route template (routeLabel) and the status code.
func (s *Server) metricsMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		s.m.inflight.Inc()
		defer s.m.inflight.Dec()
		if err := next(c); err != nil {
			c.Error(err)
		}
		s.m.observeRequest(methodLabel(c.Request().Method), s.routeLabel(c), codeLabel(statusOf(c)), time.Since(start))
		return nil
	}
}

// bodyMiddleware reads a request body once, under the body limit, after checking its media
// type (415 before a byte is read). Reading it here, up front, lets the per-route deadline
// lift the server's read timeout afterwards without opening the door to slow bodies.
func bodyMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !hasBody(c) {
			return next(c)
		}
		b, err := readBody(c)
		if err != nil {
			return err
		}
		c.Set(ctxBody, b)
		c.Request().Body = io.NopCloser(bytes.NewReader(b))
		return next(c)
	}
}

// bodyOf is the request body read by bodyMiddleware (nil when there was none).
func bodyOf(c echo.Context) []byte {
	b, _ := c.Get(ctxBody).([]byte)
	return b
}

// deadline bounds a route: its handler's context ends after d, and the connection's write
// deadline is moved to match. The server-wide read timeout is lifted once the body is in:
// net/http cancels the request context when that deadline passes during a long handler, which
// would cut a preview short. d == 0 marks a stream that manages its own write deadlines.
func deadline(d time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			rc := http.NewResponseController(c.Response())
			_ = rc.SetReadDeadline(time.Time{})
			if d == 0 {
				return next(c)
			}
			_ = rc.SetWriteDeadline(time.Now().Add(d + 5*time.Second))
			orig := c.Request()
			ctx, cancel := context.WithTimeout(orig.Context(), d)
			defer cancel()
			c.SetRequest(orig.WithContext(ctx))
			// The error handler runs after this returns: give it the request whose context
			// tells a client that left from a handler that timed out.
			defer c.SetRequest(orig)
			return next(c)
		}
	}
}
