package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tfrs-io/tfrs-operator/internal/progress"
	"github.com/tfrs-io/tfrs-operator/server"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// `tfrs watch OPERATION_URL`: follow an HTTP API operation's Server-Sent Events
// (GET /v1/operations/{id}/events) to its end, rendered like the CLI's own progress.

type watchFlags struct {
	apiURL, tokenFile string
	reconnects        int
}

func newWatchCmd(a *app) *cobra.Command {
	var f watchFlags
	cmd := &cobra.Command{
		Use:   "watch OPERATION_URL [flags]",
		Short: "Follow an HTTP API operation to its end as a progress bar; exit 0 if it succeeded",
		Long: `Watch follows the events of an HTTP API operation — the Location a POST, PUT or DELETE
answered with — and renders them like the CLI's own progress: on a terminal a progress bar with
one line per component; plain lines without escape sequences when stdout is not a terminal or
NO_COLOR is set. A dropped connection is resumed where it stopped (Last-Event-ID).

OPERATION_URL is the operation's URL, its path (/v1/operations/ID) or its ID; a path or an ID is
resolved against --api-url. The bearer token comes from $TFRS_API_TOKEN or --token-file (never a
flag: a command line is visible to every user of the machine).

Exit codes: 0 the operation succeeded, 1 it failed or was canceled (the failure is named), or the
stream could not be followed.`,
		Example: `  source ~/.tfrs/dev/env.sh    # TFRS_API_URL and TFRS_API_TOKEN of tfrs dev
  tfrs watch /v1/operations/0f3c5d…
  tfrs watch https://tfrs.example.com/v1/operations/0f3c5d… --token-file ~/.tfrs/token
  # in CI: wait for an operation and fail the job with it
  op=$(curl -fsS -X POST … -o /dev/null -w '%header{location}') && tfrs watch "$op"`,
		GroupID: groupStacks,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("%w: watch takes one OPERATION_URL, got %d argument(s)", errUsage, len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd.Context(), a, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.apiURL, "api-url", os.Getenv("TFRS_API_URL"), "base URL of the HTTP API a path or an ID is resolved against (env TFRS_API_URL)")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token (default: env TFRS_API_TOKEN)")
	_ = cmd.MarkFlagFilename("token-file")
	fs.IntVar(&f.reconnects, "reconnects", 10, "how often a dropped stream is resumed in a row before giving up")
	return cmd
}

var reOperationRef = regexp.MustCompile(`^[0-9a-f]{24}$`)

// operationURL resolves OPERATION_URL to the operation's absolute URL (without /events).
func operationURL(ref, base string) (string, error) {
	ref = strings.TrimSuffix(strings.TrimSpace(ref), "/")
	ref = strings.TrimSuffix(ref, "/events")
	if reOperationRef.MatchString(ref) {
		ref = "/v1/operations/" + ref
	}
	if strings.HasPrefix(ref, "/") {
		if base == "" {
			return "", fmt.Errorf("%w: %q is relative: give --api-url or set TFRS_API_URL", errUsage, ref)
		}
		ref = strings.TrimSuffix(base, "/") + ref
	}
	u, err := url.Parse(ref)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%w: OPERATION_URL %q is not an http(s) URL", errUsage, ref)
	}
	i := strings.LastIndex(u.Path, "/operations/")
	if i < 0 || !reOperationRef.MatchString(u.Path[i+len("/operations/"):]) {
		return "", fmt.Errorf("%w: %q does not name an operation (…/v1/operations/ID)", errUsage, ref)
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

func (f *watchFlags) token() (string, error) {
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("--token-file %s is empty", f.tokenFile)
		}
		return tok, nil
	}
	if tok := strings.TrimSpace(os.Getenv("TFRS_API_TOKEN")); tok != "" {
		return tok, nil
	}
	return "", fmt.Errorf("%w: no API token: set TFRS_API_TOKEN or give --token-file", errUsage)
}

func (f *watchFlags) run(ctx context.Context, a *app, ref string) error {
	opURL, err := operationURL(ref, f.apiURL)
	if err != nil {
		return err
	}
	tok, err := f.token()
	if err != nil {
		return err
	}
	if f.reconnects < 0 {
		return fmt.Errorf("%w: --reconnects must not be negative", errUsage)
	}
	pal := a.palette(os.Stdout)
	r := progress.NewRenderer(os.Stdout, renderOptions(os.Stdout, isTerminal(os.Stdout), pal))
	w := &watcher{url: opURL, token: tok, r: r, client: http.DefaultClient, reconnects: f.reconnects, wait: time.Second}
	final, err := w.follow(ctx)
	r.Close()
	if err != nil {
		return err
	}
	return final.outcome(pal)
}

// opView is the part of the API's operation the watch reads (GET /v1/operations/{id}).
type opView struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	State string `json:"state"`
	Error *struct {
		Title           string   `json:"title"`
		Detail          string   `json:"detail"`
		FailedResources []string `json:"failedResources"`
	} `json:"error"`
	Resource struct {
		Kind, Namespace, Name string
	} `json:"resource"`
}

func (v *opView) what() string {
	res := v.Resource.Kind // a fleet preview's resource has no name
	if v.Resource.Name != "" {
		res += " " + v.Resource.Name
	}
	if v.Resource.Namespace != "" {
		res = v.Resource.Kind + " " + v.Resource.Namespace + "/" + v.Resource.Name
	}
	return fmt.Sprintf("operation %s (%s %s)", v.ID, v.Kind, res)
}

// outcome prints a success and turns anything else into the command's error.
func (v *opView) outcome(pal palette) error {
	if v.State == "succeeded" {
		fmt.Fprintf(os.Stdout, "%s %s\n", v.what(), pal.green("succeeded"))
		return nil
	}
	msg := v.what() + " " + v.State
	if e := v.Error; e != nil {
		msg += ": " + e.Title
		if e.Detail != "" {
			msg += ": " + e.Detail
		}
		if len(e.FailedResources) > 0 {
			msg += "; failed resources: " + strings.Join(e.FailedResources, ", ")
		}
	}
	return errors.New(msg)
}

// watcher follows one operation's event stream across reconnects.
type watcher struct {
	url, token string
	r          *progress.Renderer
	client     *http.Client
	reconnects int
	wait       time.Duration // before a reconnect (the stream's retry: field changes it)

	lastID string
}

// errFatal ends the watch without a reconnect.
type errFatal struct{ error }

func (w *watcher) follow(ctx context.Context) (*opView, error) {
	failures := 0
	for {
		final, got, err := w.stream(ctx)
		if final != nil {
			return final, nil
		}
		var fe errFatal
		if errors.As(err, &fe) || ctx.Err() != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fe.error
		}
		if got {
			failures = 0 // the stream moved on: a fresh budget of reconnects
		}
		failures++
		if failures > w.reconnects {
			return nil, fmt.Errorf("event stream of %s: %v (gave up after %d reconnects)", w.url, err, w.reconnects)
		}
		w.r.Note(fmt.Sprintf("(stream interrupted: %v; resuming after event %s)", err, orNone(w.lastID)))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(w.wait):
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// stream reads the stream once: the final operation when it saw the done event, whether any
// event arrived, and why it ended otherwise.
func (w *watcher) stream(ctx context.Context) (*opView, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/events", nil)
	if err != nil {
		return nil, false, errFatal{err}
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	req.Header.Set("Accept", "text/event-stream")
	if w.lastID != "" {
		req.Header.Set("Last-Event-ID", w.lastID)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, false, w.refused(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var (
		name, id string
		data     strings.Builder
		got      bool
	)
	for sc.Scan() {
		line := sc.Text()
		if line != "" {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				name = value
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
			case "id":
				id = value
			case "retry":
				if ms, err := strconv.Atoi(value); err == nil && ms > 0 {
					w.wait = time.Duration(ms) * time.Millisecond
				}
			}
			continue
		}
		// A blank line dispatches the event (comments and retry-only blocks carry none).
		if name == "" && data.Len() == 0 {
			continue
		}
		if id != "" {
			w.lastID = id
		}
		got = true
		final, err := w.dispatch(name, data.String())
		if final != nil || err != nil {
			return final, got, err
		}
		name, id = "", ""
		data.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, got, err
	}
	return nil, got, errors.New("the stream ended before the operation did")
}

// dispatch renders one event; it returns the final operation on done.
func (w *watcher) dispatch(name, data string) (*opView, error) {
	switch name {
	case "progress":
		var e engine.Event
		if err := json.Unmarshal([]byte(data), &e); err == nil {
			w.r.Event(e)
		}
	case server.FleetEvent:
		var p server.FleetProgress
		if err := json.Unmarshal([]byte(data), &p); err == nil {
			line := fmt.Sprintf("fleet %d/%d: %s %s", p.Done, p.Total, p.Target, p.Status)
			if p.Proven {
				line += " (proven from recorded inputs)"
			}
			w.r.Note(line)
		}
	case "state":
		var s struct{ State string }
		if err := json.Unmarshal([]byte(data), &s); err == nil && s.State != "" {
			w.r.Note("operation " + s.State)
		}
	case "gap":
		var g struct{ Missed int64 }
		if err := json.Unmarshal([]byte(data), &g); err == nil {
			w.r.Note(fmt.Sprintf("(%d earlier events are no longer kept by the server; the counts start later)", g.Missed))
		}
	case "shutdown":
		return nil, errors.New("the server is shutting down")
	case "done":
		var v opView
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return nil, errFatal{fmt.Errorf("the final event of %s: %w", w.url, err)}
		}
		return &v, nil
	}
	return nil, nil
}

// refused turns a non-200 answer into an error naming the problem; 429 and 5xx are retried.
func (w *watcher) refused(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var p struct{ Title, Detail string }
	msg := resp.Status
	if json.Unmarshal(body, &p) == nil && p.Title != "" {
		msg += ": " + p.Title
		if p.Detail != "" {
			msg += ": " + p.Detail
		}
	}
	err := fmt.Errorf("GET %s/events: %s", w.url, msg)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			w.wait = time.Duration(s) * time.Second
		}
		return err
	}
	return errFatal{err}
}
