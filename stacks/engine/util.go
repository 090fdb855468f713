package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sort"
	"time"
)

func timeDuration(ns int64) time.Duration { return time.Duration(ns) }

func sortStrings(s []string) { sort.Strings(s) }

func hashString(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// redactURL hides credentials a backend URL may carry (user:password@, access keys in the
// query) before it goes into a message.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<backend>"
	}
	if u.User != nil {
		u.User = url.User("****")
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "access_key_id", "secret_access_key", "awssdk", "password", "token":
			q.Set(k, "****")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
