package main

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// Defence in depth for the untrusted mode. The confinement (internal/confine) and the
// provider's environment (providershim.go) are what keep secrets away from user content;
// this is the second line: what a preview prints can carry only the report's own fields, and
// every string of them, every progress line and the final error are scrubbed of every secret
// this process knows (the passphrase, backend and cloud credentials, the kubeconfig's
// credentials), also base64-, hex- and case-transformed.

// secretEnvName matches the names of variables that hold credentials.
var secretEnvName = regexp.MustCompile(`(?i)(PASS|SECRET|TOKEN|KEY|CREDENTIAL|AUTH|SESSION|PRIVATE)`)

// minSecretLen: shorter values are not scrubbed (replacing "abc" everywhere would destroy
// the report without protecting anything).
const minSecretLen = 6

// scrubber replaces known secrets.
type scrubber struct{ values []string } // longest first

const scrubbed = "[secret]"

// knownSecrets collects what this process knows that is secret: passphrase values and
// files, secret-named environment variables, the backend URL's password and the kubeconfig's
// credentials.
func knownSecrets(passphraseFile, backend, kubeconfig string) *scrubber {
	var vals []string
	add := func(v string) {
		if v = strings.TrimRight(v, "\r\n"); len(v) >= minSecretLen {
			vals = append(vals, v)
		}
	}
	addFile := func(p string) {
		if p == "" {
			return
		}
		if b, err := os.ReadFile(p); err == nil {
			add(string(b))
		}
	}
	addFile(passphraseFile)
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !secretEnvName.MatchString(k) {
			continue
		}
		add(v)
		if strings.HasSuffix(k, "_FILE") {
			addFile(v)
		}
	}
	for _, raw := range []string{backend, os.Getenv("TFRS_BACKEND"), os.Getenv("PULUMI_BACKEND_URL")} {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok {
				add(p)
			}
		}
	}
	if cfg, err := clientcmd.LoadFromFile(kubeconfig); kubeconfig != "" && err == nil {
		for _, a := range cfg.AuthInfos {
			add(a.Token)
			add(a.Password)
			add(string(a.ClientKeyData))
			addFile(a.TokenFile)
			addFile(a.ClientKey)
			if a.AuthProvider != nil {
				for _, v := range a.AuthProvider.Config {
					add(v)
				}
			}
			if a.Exec != nil {
				for _, e := range a.Exec.Env {
					add(e.Value)
				}
			}
		}
	}
	return newScrubber(vals...)
}

// newScrubber scrubs vals and their usual encodings.
func newScrubber(vals ...string) *scrubber {
	seen := map[string]bool{}
	s := &scrubber{}
	for _, v := range vals {
		for _, f := range []string{
			v, strings.ToUpper(v), strings.ToLower(v),
			base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v)),
			base64.URLEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)),
			hex.EncodeToString([]byte(v)), url.QueryEscape(v),
		} {
			if len(f) >= minSecretLen && !seen[f] {
				seen[f] = true
				s.values = append(s.values, f)
			}
		}
	}
	sort.Slice(s.values, func(i, j int) bool { return len(s.values[i]) > len(s.values[j]) })
	return s
}

func (s *scrubber) scrub(v string) string {
	if s == nil || v == "" {
		return v
	}
	for _, x := range s.values {
		if strings.Contains(v, x) {
			v = strings.ReplaceAll(v, x, scrubbed)
		}
	}
	return v
}

func (s *scrubber) all(vs []string) []string {
	if vs == nil {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = s.scrub(v)
	}
	return out
}

// report rebuilds r from an allowlist of its fields, each string scrubbed: a field added to
// diff.Report later is not carried by an untrusted preview until it is listed here.
func (s *scrubber) report(r *diff.Report) *diff.Report {
	if r == nil {
		return nil
	}
	out := &diff.Report{
		Target:    r.Target,
		Operation: r.Operation,
		Summary:   map[engine.StepOp]int{},
		Changes:   s.changes(r.Changes),
		DataLoss:  s.changes(r.DataLoss),
		Skipped:   s.scrub(r.Skipped),
		Error:     s.scrub(r.Error),
	}
	for op, n := range r.Summary {
		out.Summary[op] = n
	}
	return out
}

func (s *scrubber) changes(cs []diff.Change) []diff.Change {
	out := make([]diff.Change, 0, len(cs))
	for _, c := range cs {
		out = append(out, diff.Change{
			Stack: s.scrub(c.Stack), URN: s.scrub(c.URN), Op: c.Op, Type: s.scrub(c.Type),
			Name: s.scrub(c.Name), Component: s.scrub(c.Component),
			Paths: s.all(c.Paths), ReplaceKeys: s.all(c.ReplaceKeys),
			DataLoss: c.DataLoss, Retained: c.Retained,
		})
	}
	return out
}

// reports scrubs every report.
func (s *scrubber) reports(rs []*diff.Report) []*diff.Report {
	if s == nil {
		return rs
	}
	out := make([]*diff.Report, len(rs))
	for i, r := range rs {
		out[i] = s.report(r)
	}
	return out
}

// sink scrubs the strings of every progress event before next prints it.
func (s *scrubber) sink(next engine.Sink) engine.Sink {
	if s == nil || next == nil {
		return next
	}
	return func(e engine.Event) {
		e.Message, e.URN, e.Parent, e.Type = s.scrub(e.Message), s.scrub(e.URN), s.scrub(e.Parent), s.scrub(e.Type)
		next(e)
	}
}

// scrubbedError keeps an error's exit code and scrubs its message.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

func (s *scrubber) error(err error) error {
	if s == nil || err == nil {
		return err
	}
	return &scrubbedError{msg: s.scrub(err.Error()), err: err}
}
