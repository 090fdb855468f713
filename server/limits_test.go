package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// httpSeries counts the series of the server's tfrs_http_* metrics.
func httpSeries(t *testing.T, s *Server) (n int, unauthenticated float64) {
	t.Helper()
	fams, err := s.m.reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "tfrs_http_") {
			n += len(f.GetMetric())
		}
		if f.GetName() == "tfrs_http_unauthenticated_requests_total" {
			unauthenticated = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return n, unauthenticated
}

func randomRequest(r *rand.Rand, token string) *http.Request {
	methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "PROPFIND"}
	m := methods[r.IntN(len(methods))]
	if r.IntN(3) == 0 {
		m = fmt.Sprintf("X%08X", r.Uint32()) // a method of its own
	}
	segs := []string{"v1", "namespaces", fmt.Sprint(r.Uint64()), "tenants", "servers", "clusters", "operations", "%2e%2e", "x"}
	var path strings.Builder
	for range 1 + r.IntN(6) {
		path.WriteString("/" + segs[r.IntN(len(segs))])
		if r.IntN(2) == 0 {
			path.WriteString(strconv.FormatUint(r.Uint64(), 36))
		}
	}
	hr := httptest.NewRequest(m, path.String()+"?q="+strconv.Itoa(r.Int()), nil)
	if token != "" {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	return hr
}

// TestLoadKeepsMetricsBounded: 2,000 unauthenticated requests with random methods and paths
// make no metric series (one unlabeled counter counts them) and leave the heap flat; 2,000
// authenticated ones make series only from the fixed label sets.
func TestLoadKeepsMetricsBounded(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.DiscardHandler)
		c.RateLimit, c.RateBurst = 1e6, 1e6
	})
	r := rand.New(rand.NewPCG(1, 2))
	// Warm up (route tables, pools), then measure.
	for range 200 {
		serve(h, randomRequest(r, ""))
	}
	before, unauth0 := httpSeries(t, h.s)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc
	for range 2000 {
		w := serve(h, randomRequest(r, ""))
		require.Equal(t, http.StatusUnauthorized, w.Code)
	}
	after, unauth := httpSeries(t, h.s)
	require.Equal(t, before, after, "unauthenticated requests make no series")
	require.Equal(t, unauth0+2000, unauth)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	growth := int64(ms.HeapAlloc) - int64(heap0)
	t.Logf("series %d → %d; heap %d KiB → %d KiB (%+d KiB) after 2,000 unauthenticated requests",
		before, after, heap0>>10, ms.HeapAlloc>>10, growth>>10)
	require.Less(t, growth, int64(4<<20), "the heap stays flat")

	for range 2000 {
		serve(h, randomRequest(r, adminToken))
	}
	n, _ := httpSeries(t, h.s)
	// requests_total by (method, route, code) and duration by (method, route): methods are 8
	// values, routes the registered ones plus "unmatched"; the codes these requests get are
	// 400, 401, 403, 404, 405 and 200.
	bound := 8 * (len(h.s.routes) + 1) * (6 + 1 + 15)
	t.Logf("series after 2,000 authenticated random requests: %d (bound %d)", n, bound)
	require.Less(t, n, bound)
	fams, err := h.s.m.reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "method":
					require.Contains(t, []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "other"}, l.GetValue())
				case "route":
					require.True(t, h.s.routes[l.GetValue()] || l.GetValue() == "unmatched", l.GetValue())
				}
			}
		}
	}
}

// TestStreamCapAndHealth: 200 concurrent event streams from one token get exactly the cap
// (the rest 429 with Retry-After), and /healthz still answers in under 100 ms meanwhile.
func TestStreamCapAndHealth(t *testing.T) {
	const streams, capN = 200, 16
	h := newHarness(t, func(c *Config) {
		c.MaxStreamsPerToken = capN
		c.RateLimit, c.RateBurst = 1e6, 1e6
		c.Logger = slog.New(slog.DiscardHandler)
	})
	release := h.hold()
	defer release()
	w := h.admin(http.MethodPost, tenantsPath, tenantBody("globex"))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	id := decodeJSON[OperationView](t, w).ID
	ts := httptest.NewServer(h.s.Handler())
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}

	// Each stream reports its response: kept open when it is a stream, nil when refused.
	results := make(chan *http.Response, streams)
	for range streams {
		go func() {
			rq, _ := http.NewRequest(http.MethodGet, ts.URL+operationPath(id)+"/events", nil)
			rq.Header.Set("Authorization", "Bearer "+adminToken)
			resp, err := client.Do(rq)
			if !assertNoErr(t, err) {
				results <- nil
				return
			}
			switch resp.StatusCode {
			case http.StatusOK:
				line, _ := bufio.NewReader(resp.Body).ReadString('\n')
				if line == "retry: 3000\n" {
					results <- resp
					return
				}
				t.Errorf("stream began with %q", line)
			case http.StatusTooManyRequests:
				if resp.Header.Get("Retry-After") == "" {
					t.Error("429 without Retry-After")
				}
				_, _ = io.Copy(io.Discard, resp.Body)
			default:
				t.Errorf("status %d", resp.StatusCode)
			}
			resp.Body.Close()
			results <- nil
		}()
	}
	var ok []*http.Response
	limited := 0
	for range streams {
		if r := <-results; r != nil {
			ok = append(ok, r)
		} else {
			limited++
		}
	}
	require.Len(t, ok, capN)
	require.Equal(t, streams-capN, limited)

	var worst time.Duration
	for range 20 {
		start := time.Now()
		resp, err := client.Get(ts.URL + "/healthz")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		worst = max(worst, time.Since(start))
	}
	t.Logf("%d streams open, %d refused; slowest /healthz of 20: %s", len(ok), limited, worst)
	require.Less(t, worst, 100*time.Millisecond)

	// Another token has a cap of its own; a closed stream frees its slot.
	rq, _ := http.NewRequest(http.MethodGet, ts.URL+operationPath(id)+"/events", nil)
	rq.Header.Set("Authorization", "Bearer "+readerToken)
	resp, err := client.Do(rq)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp.Body.Close()
	ok[0].Body.Close()
	require.Eventually(t, func() bool {
		rq, _ := http.NewRequest(http.MethodGet, ts.URL+operationPath(id)+"/events", nil)
		rq.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := client.Do(rq)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
	for _, r := range ok[1:] {
		r.Body.Close()
	}
}

func assertNoErr(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TestRateLimitPerToken: over its burst a token gets 429 with Retry-After; another token
// and the probes are not affected.
func TestRateLimitPerToken(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RateLimit, c.RateBurst = 0.5, 3 })
	for range 3 {
		require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: tenantsPath, token: readerToken}).Code)
	}
	w := h.do(req{method: http.MethodGet, path: tenantsPath, token: readerToken})
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, problemTypeBase+"rate-limited", problemOfResponse(t, w).Type)
	secs, err := strconv.Atoi(w.Header().Get("Retry-After"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, secs, 1)
	require.LessOrEqual(t, secs, 2)
	require.Equal(t, http.StatusOK, h.admin(http.MethodGet, tenantsPath, nil).Code, "another token")
	require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: "/healthz"}).Code)
	// A refused request costs nothing: it is not counted against the bucket either.
	w = h.do(req{method: http.MethodGet, path: tenantsPath, token: readerToken})
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	// Unauthenticated requests never reach the limiter (401, not 429).
	require.Equal(t, http.StatusUnauthorized, h.do(req{method: http.MethodGet, path: tenantsPath, token: "nope-nope-nope-nope"}).Code)
}

// TestOperationStoreBounded: an operation's events are bounded in count and bytes (a stream
// that asks for dropped ones gets a gap), and the finished operations kept are bounded in
// bytes as a whole.
func TestOperationStoreBounded(t *testing.T) {
	reg := newRegistry(retention{count: 1000, ttl: time.Hour, bytes: 10 << 10, events: 50, eventBytes: 4 << 10}, nil,
		slog.New(slog.DiscardHandler), newMetrics(nil))
	op, err := reg.reserve(OpCreate, ResourceRef{Name: "a"}, []string{"s"}, "p", "r")
	require.NoError(t, err)
	big := strings.Repeat("x", 1000)
	for i := range 100 {
		op.publish("progress", map[string]string{"i": strconv.Itoa(i), "pad": big})
	}
	require.LessOrEqual(t, op.size(), int64(4<<10))
	evs, missed, _, _ := op.since(0)
	require.NotEmpty(t, evs)
	require.Equal(t, int64(100), missed+int64(len(evs)))
	for range 100 {
		op.publish("state", "x") // small ones: the count bound
	}
	evs, _, _, _ = op.since(0)
	require.LessOrEqual(t, len(evs), 50)
	reg.release(op)

	// Finished operations: 30 of ~3 KiB each with a 10 KiB budget keep at most 3.
	for i := range 30 {
		op, err := reg.reserve(OpCreate, ResourceRef{Name: "a"}, []string{"s" + strconv.Itoa(i)}, "p", "r")
		require.NoError(t, err)
		for range 3 {
			op.publish("progress", map[string]string{"pad": big})
		}
		reg.start(op, func(context.Context, engine.Sink) (*runner.Outcome, error) { return nil, nil })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.True(t, reg.wait(ctx))
	reg.mu.Lock()
	defer reg.mu.Unlock()
	t.Logf("finished operations kept: %d of 30, %d bytes (budget %d)", len(reg.ended), reg.endedBytes, 10<<10)
	require.LessOrEqual(t, reg.endedBytes, int64(10<<10))
	require.LessOrEqual(t, len(reg.ended), 3)
	require.NotEmpty(t, reg.ended, "the newest is kept")
	require.Len(t, reg.ops, len(reg.ended))
}

// TestRateLimitersForgetIdleCallers: with Kubernetes auth every ServiceAccount is a caller,
// so the per-caller limiters must not pile up; a refilled bucket is forgotten, and a caller
// whose bucket is still draining keeps its limiter (forgetting it would lift its limit).
func TestRateLimitersForgetIdleCallers(t *testing.T) {
	l := newLimiters(20, 100, 16)
	now := time.Unix(1_700_000_000, 0)
	for range 100 {
		ok, _ := l.allow("busy", now)
		require.True(t, ok)
	}
	ok, _ := l.allow("busy", now)
	require.False(t, ok, "its burst is spent")
	// 3×minSweep callers, one request each, 1 ms apart: about 3 s, less than the 5 s "busy"
	// needs to refill 100 tokens at 20/s.
	for i := range 3 * minSweep {
		ok, _ := l.allow(fmt.Sprintf("system:serviceaccount:ns%d:sa", i), now.Add(time.Duration(i)*time.Millisecond))
		require.True(t, ok)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.LessOrEqual(t, len(l.rate), 2*minSweep+1, "idle callers are swept")
	assert.Contains(t, l.rate, "busy", "a draining bucket is kept")
	assert.NotContains(t, l.rate, "system:serviceaccount:ns0:sa", "a refilled one is forgotten")
}
