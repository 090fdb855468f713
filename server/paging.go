package server

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// List pages: the page sizes and the ?limit= and ?continue= parameters with their opaque
// token. Apart from the list handler (resources_read.go) so the token's format has one home.

// Page sizes of list requests.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// pageParams reads ?limit= and ?continue=.
func pageParams(c echo.Context) (limit int, after string, err error) {
	limit = DefaultPageSize
	var fields []FieldProblem
	if v := c.QueryParam("limit"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > MaxPageSize {
			fields = append(fields, FieldProblem{Field: "limit", Reason: "invalid", Detail: fmt.Sprintf("limit must be an integer from 1 to %d", MaxPageSize)})
		} else {
			limit = n
		}
	}
	if v := c.QueryParam("continue"); v != "" {
		name, ok := decodeContinue(v)
		if !ok {
			fields = append(fields, FieldProblem{Field: "continue", Reason: "invalid", Detail: "not a continue token of this API"})
		}
		after = name
	}
	if len(fields) > 0 {
		return 0, "", invalid("invalid list parameters", fields...)
	}
	return limit, after, nil
}

const continuePrefix = "v1:"

// encodeContinue makes the opaque token of the next page: the last name returned.
func encodeContinue(name string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(continuePrefix + name))
}

func decodeContinue(tok string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", false
	}
	name, ok := strings.CutPrefix(string(b), continuePrefix)
	if !ok || !reDNSLabel.MatchString(name) {
		return "", false
	}
	return name, true
}
