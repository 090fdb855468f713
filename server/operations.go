package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// The /v1/operations handlers that answer with the operation: GET and cancel. Its event
// stream is in sse.go.

// getOperation: GET /v1/operations/{id}.
func (s *Server) getOperation(c echo.Context) error {
	op, err := s.ops.get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, op.view())
}

// cancelOperation: POST /v1/operations/{id}/cancel. Cancel is asynchronous: 202 with the
// operation, whose state turns canceled once the engine has stopped.
func (s *Server) cancelOperation(c echo.Context) error {
	op, err := s.ops.get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	if err := op.requestCancel(); err != nil {
		return err
	}
	s.log.Info("operation cancel requested", "operation", c.Param("id"), "principal", principalOf(c), "requestId", requestIDOf(c))
	return c.JSON(http.StatusAccepted, op.view())
}
