// Package contenthash keys the hashes that name content-addressed objects and fill the
// config-checksum annotations.
//
// Those hashes are published (object names, pod annotations, the server stack's checksum
// output, CR status, the HTTP API), and their input includes secret data: an unkeyed sha256
// of a short secret is guessable offline by hashing candidates until one matches. Keyed with
// HMAC-SHA256 under a per-stack secret key, a hash says nothing without the key. The key is
// a generated stack credential (stacks' CredentialContentHashKey): crypto/rand, created once,
// kept encrypted in the stack's state and the same on every run, so unchanged data keeps its
// name and nothing rolls without a change; two stacks hash the same data differently.
package contenthash

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ErrNoKey is returned where a keyed hash is asked for without a key.
var ErrNoKey = errors.New("content hash: no key (the stack's content-hash key credential)")

// Sum is the hex HMAC-SHA256 of data under key.
func Sum(key string, data []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil))
}

// Short is the first n hex digits of Sum.
func Short(key string, data []byte, n int) string { return Sum(key, data)[:n] }

// Of computes f(key, v) inside Apply, on the plain (possibly secret) key and value v of in,
// and returns the result in the clear: a keyed hash reveals nothing. f must only hash.
func Of(key pulumi.StringInput, in pulumi.Input, f func(key string, v any) string) (pulumi.StringOutput, error) {
	if key == nil {
		return pulumi.StringOutput{}, ErrNoKey
	}
	out := pulumi.All(key, in).ApplyT(func(vs []any) (string, error) {
		k, _ := vs[0].(string)
		if k == "" {
			return "", ErrNoKey
		}
		return f(k, vs[1]), nil
	}).(pulumi.StringOutput)
	return pulumi.Unsecret(out).(pulumi.StringOutput), nil
}
