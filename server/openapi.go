package server

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openapiJSON is the API's OpenAPI 3 document. Its paths are written by hand and checked
// against the registered routes (TestOpenAPIMatchesRoutes); its spec schemas are the CRDs'
// (TestOpenAPISpecSchemasMatchCRDs, which rewrites them with -update).
//
//go:embed openapi.json
var openapiJSON []byte

// serveOpenAPI: GET /openapi.json.
func serveOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openapiJSON)
}
