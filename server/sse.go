package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// Server-Sent Events: GET /v1/operations/{id}/events writes an operation's event buffer
// (events.go) out as a stream. Apart from the other operation handlers because a stream
// outlives the server's timeouts and has its own: write deadlines, heartbeats, a per-token
// cap and an end at shutdown.

// streamRetryAfter is the Retry-After of a stream refused over the per-token cap.
const streamRetryAfter = 5 * time.Second

// operationEvents: GET /v1/operations/{id}/events, Server-Sent Events (at most
// Config.MaxStreamsPerToken at once per token). It replays the
// operation's buffered events (after Last-Event-ID when the client reconnects), follows new
// ones, and ends with a `done` event holding the final operation. Leaving (a client
// disconnect, the server closing the stream at shutdown) never touches the operation.
func (s *Server) operationEvents(c echo.Context) error {
	op, err := s.ops.get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	release, ok := s.limits.openStream(principalOf(c))
	if !ok {
		return &RateLimitError{RetryAfter: streamRetryAfter, Kind: ErrTooManyStreams}
	}
	defer release()
	var after int64
	if v := c.Request().Header.Get("Last-Event-ID"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			after = n
		}
	}
	ctx := c.Request().Context()
	w := c.Response()
	rc := http.NewResponseController(w)
	// The stream outlives the server's read and write timeouts: lift them, and bound each
	// write instead, so a client that stops reading cannot hold the handler forever.
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // no proxy buffering (nginx)
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte("retry: 3000\n\n")) {
		return nil
	}
	heartbeat := time.NewTicker(s.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	for {
		evs, missed, done, changed := op.since(after)
		var buf []byte
		if missed > 0 {
			buf = fmt.Appendf(buf, "event: gap\ndata: {\"missed\":%d}\n\n", missed)
		}
		for _, ev := range evs {
			buf = fmt.Appendf(buf, "id: %d\nevent: %s\ndata: %s\n\n", ev.seq, ev.name, ev.data)
			after = ev.seq
		}
		if done {
			final, err := json.Marshal(op.view())
			if err != nil {
				return nil
			}
			buf = fmt.Appendf(buf, "event: done\ndata: %s\n\n", final)
			write(buf)
			return nil
		}
		if len(buf) > 0 && !write(buf) {
			return nil
		}
		select {
		case <-changed:
		case <-heartbeat.C:
			if !write([]byte(": keep-alive\n\n")) {
				return nil
			}
		case <-ctx.Done():
			return nil
		case <-s.closing:
			// Shutdown after the grace period: the client reconnects elsewhere with
			// Last-Event-ID, or reads the final state with GET.
			write([]byte("event: shutdown\ndata: {}\n\n"))
			return nil
		}
	}
}
