package server

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// Bounds on what one client can make the server hold: requests per second and event streams
// per token (the set of tokens is fixed, so the limiters are too), and what the operation
// store keeps (registry.go). Unauthenticated requests hold nothing: they are answered 401
// before any limiter, metric series or buffer exists for them.

// ErrRateLimited answers a token over its request rate (429).
var ErrRateLimited = errors.New("rate limited")

// ErrTooManyStreams answers a token over its event-stream cap (429).
var ErrTooManyStreams = errors.New("too many event streams")

// RateLimitError is a 429 with the seconds after which a retry may pass.
type RateLimitError struct {
	RetryAfter time.Duration
	Kind       error // ErrRateLimited or ErrTooManyStreams
}

func (e *RateLimitError) Error() string { return e.Kind.Error() }

// Is makes errors.Is(err, e.Kind) true.
func (e *RateLimitError) Is(target error) bool { return target == e.Kind }

// retryAfterSeconds is the Retry-After value: whole seconds, at least 1.
func (e *RateLimitError) retryAfterSeconds() string {
	return strconv.Itoa(max(1, int(math.Ceil(e.RetryAfter.Seconds()))))
}

// limiters holds one request-rate limiter and one stream count per token name.
type limiters struct {
	rps        rate.Limit
	burst      int
	maxStreams int

	mu      sync.Mutex
	rate    map[string]*rate.Limiter
	sweepAt int // sweep idle limiters when rate reaches this size
	streams map[string]int
}

// minSweep is the size of the limiter map below which idle limiters are not swept. With
// Kubernetes auth the set of callers is open (anyone who may create ServiceAccounts adds
// names), so the map must not keep every caller ever seen.
const minSweep = 1024

func newLimiters(rps float64, burst, maxStreams int) *limiters {
	return &limiters{rps: rate.Limit(rps), burst: burst, maxStreams: maxStreams,
		rate: map[string]*rate.Limiter{}, sweepAt: minSweep, streams: map[string]int{}}
}

// sweep drops the limiters whose bucket has refilled: a full bucket answers exactly as a new
// one would, so forgetting it changes no answer. The next sweep waits until the map has
// doubled, which keeps the cost amortized O(1) per request.
func (l *limiters) sweep(now time.Time) {
	for name, lim := range l.rate {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.rate, name)
		}
	}
	l.sweepAt = max(minSweep, 2*len(l.rate))
}

// allow takes one request from name's bucket, or says how long until one is there.
func (l *limiters) allow(name string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	lim := l.rate[name]
	if lim == nil {
		if len(l.rate) >= l.sweepAt {
			l.sweep(now)
		}
		lim = rate.NewLimiter(l.rps, l.burst)
		l.rate[name] = lim
	}
	l.mu.Unlock()
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// openStream counts a new stream of name; false when name is at its cap. release ends it.
func (l *limiters) openStream(name string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams[name] >= l.maxStreams {
		return nil, false
	}
	l.streams[name]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.streams[name]--; l.streams[name] <= 0 {
				delete(l.streams, name)
			}
		})
	}, true
}

// rateLimitMiddleware applies the per-token request rate after authentication. The probes
// have no token and are never limited.
func (s *Server) rateLimitMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		name := principalOf(c)
		if name == "" {
			return next(c)
		}
		if ok, wait := s.limits.allow(name, time.Now()); !ok {
			return &RateLimitError{RetryAfter: wait, Kind: ErrRateLimited}
		}
		return next(c)
	}
}

// metricMethods are the method label's values; any other method is "other".
var metricMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodDelete: true, http.MethodPatch: true, http.MethodOptions: true,
}

// methodLabel keeps the method label to a fixed set.
func methodLabel(m string) string {
	if metricMethods[m] {
		return m
	}
	return "other"
}

// codeLabel keeps the code label to valid status codes.
func codeLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// routeLabel is the request's route template when it is one of the server's routes,
// "unmatched" otherwise: the label's values are the routes, whatever the client sends.
func (s *Server) routeLabel(c echo.Context) string {
	if r := c.Path(); s.routes[r] {
		return r
	}
	return "unmatched"
}
