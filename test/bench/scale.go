package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/tfrs-io/tfrs-operator/internal/testenv"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// api is `tfrs serve` started by the bench, with the RSS sampler on its process tree.
type api struct {
	url, token string
	d          *daemon
	rss        *sampler
}

func (b *bench) startAPI(ctx context.Context) (*api, error) {
	token := randomHex(16)
	tokenFile := filepath.Join(b.dir, "api-tokens")
	if err := os.WriteFile(tokenFile, []byte(token+" admin bench\n"), 0o600); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort())
	// The stand-in charts are local paths, which serve refuses unless their root is allowed.
	args := []string{"serve", "--listen", addr, "--token-file", tokenFile, "--log-format", "text",
		"--source-allow-local-root", filepath.Dir(testenv.StandIns("tenant"))}
	if b.cfg.parallel > 0 {
		args = append(args, "--parallel", fmt.Sprint(b.cfg.parallel))
	}
	d, err := b.startDaemon(ctx, "serve", "http://"+addr+"/healthz", args...)
	if err != nil {
		return nil, err
	}
	return &api{url: "http://" + addr, token: token, d: d, rss: startSampler(d.cmd.Process.Pid)}, nil
}

func (a *api) stop() {
	a.rss.close()
	a.d.stop()
}

// operation is the part of the API's operation the bench reads.
type operation struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt"`
	Links     struct {
		Self string `json:"self"`
	} `json:"links"`
	Error json.RawMessage `json:"error"`
}

// do sends one request. A 429 (the API's per-token rate limit, which a bench polling a hundred
// operations reaches) is waited out for its Retry-After and sent again, as a well-behaved
// client does; the wait counts in the wall time it delays.
func (a *api) do(ctx context.Context, method, path string, body any, out any) (int, error) {
	var payload []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		payload = b
	}
	for {
		req, err := http.NewRequestWithContext(ctx, method, a.url+path, bytes.NewReader(payload))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+a.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			wait := time.Second
			if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 {
				wait = time.Duration(n) * time.Second
			}
			if err := sleep(ctx, wait); err != nil {
				return resp.StatusCode, err
			}
			continue
		}
		if resp.StatusCode >= 300 {
			return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
		}
		if out != nil {
			return resp.StatusCode, json.Unmarshal(b, out)
		}
		return resp.StatusCode, nil
	}
}

// batch is the outcome of provisioning n tenants at once through the API.
type batch struct {
	n                int
	wall             time.Duration
	latency, run     []time.Duration // per tenant: accepted→done, started→done
	idleRSS, peakRSS int64
	failed           int
	firstFailure     string
}

// provisionBatch POSTs n tenants named prefix-i as fast as the API accepts them and waits
// for every operation to end, sampling the serve tree's RSS meanwhile.
func (b *bench) provisionBatch(ctx context.Context, a *api, prefix string, n int, lean bool) (*batch, error) {
	if err := sleep(ctx, 2*time.Second); err != nil { // let the last batch's processes exit
		return nil, err
	}
	out := &batch{n: n, idleRSS: treeRSS(a.d.cmd.Process.Pid)}
	a.rss.reset()
	start := time.Now()
	ops := make([]*operation, n)
	for i := range n {
		tt := b.tenant(fmt.Sprintf("%s-%03d", prefix, i), lean)
		body := map[string]any{"apiVersion": tt.APIVersion, "kind": tt.Kind, "metadata": map[string]any{"name": tt.Name}, "spec": tt.Spec}
		op := &operation{}
		if _, err := a.do(ctx, http.MethodPost, "/v1/namespaces/"+crNamespace+"/tenants", body, op); err != nil {
			return nil, err
		}
		ops[i] = op
	}
	pending := n
	for pending > 0 {
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
		pending = 0
		for i, op := range ops {
			if op.State == "succeeded" || op.State == "failed" || op.State == "canceled" {
				continue
			}
			cur := &operation{}
			if _, err := a.do(ctx, http.MethodGet, op.Links.Self, nil, cur); err != nil {
				return nil, err
			}
			if cur.Links.Self == "" {
				cur.Links.Self = op.Links.Self
			}
			ops[i] = cur
			switch cur.State {
			case "succeeded":
			case "failed", "canceled":
				out.failed++
				if out.firstFailure == "" {
					out.firstFailure = fmt.Sprintf("%s: %s %s", cur.ID, cur.State, cur.Error)
				}
			default:
				pending++
			}
		}
	}
	out.wall = time.Since(start)
	out.peakRSS = a.rss.reset()
	for _, op := range ops {
		out.latency = append(out.latency, op.EndedAt.Sub(op.CreatedAt))
		out.run = append(out.run, op.EndedAt.Sub(op.StartedAt))
	}
	return out, nil
}

// scale provisions each count of tenants through the HTTP API at its default concurrency.
func (b *bench) scale(ctx context.Context) error {
	a, err := b.startAPI(ctx)
	if err != nil {
		return err
	}
	defer a.stop()
	for _, n := range b.cfg.scale {
		logf("scale: %d %s tenants through the HTTP API", n, b.cfg.profile)
		bt, err := b.provisionBatch(ctx, a, fmt.Sprintf("s%d", n), n, b.cfg.profile == "lean")
		if err != nil {
			return err
		}
		b.report.scale(bt)
		if bt.failed > 0 {
			return fmt.Errorf("%d of %d tenants failed; first: %s", bt.failed, n, bt.firstFailure)
		}
	}
	return nil
}

// memory measures the RSS one in-flight operation adds: full enterprise tenants through the
// API, one alone, then as many at once as the default concurrency runs.
func (b *bench) memory(ctx context.Context) error {
	a, err := b.startAPI(ctx)
	if err != nil {
		return err
	}
	defer a.stop()
	conc := b.cfg.parallel
	if conc == 0 {
		conc = 4 // tfrs serve's default --parallel
	}
	for _, n := range []int{1, conc} {
		logf("memory: %d full tenant(s) in flight", n)
		bt, err := b.provisionBatch(ctx, a, fmt.Sprintf("m%d", n), n, false)
		if err != nil {
			return err
		}
		if bt.failed > 0 {
			return fmt.Errorf("%d of %d tenants failed; first: %s", bt.failed, n, bt.firstFailure)
		}
		b.report.memory(bt)
	}
	return nil
}
