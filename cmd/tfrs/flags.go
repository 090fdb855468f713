package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// stackFlags are the flags every command that runs stacks shares (preview, up, destroy,
// refresh, serve, operator): where the state lives, how secrets are protected, how many
// operations run at once and which cluster the programs talk to. Every flag has an
// environment fallback so CI and container images configure it without flags.
type stackFlags struct {
	backend, stateDir, secretsProvider, passphraseFile string
	allowEmptyPassphrase                               bool
	parallel, historyLimit                             int
	parallelPerNamespace                               int    // fair share (stacks/engine/fairshare.go)
	deadlines                                          string // --deadline, e.g. up=45m,preview=10m
	kubeconfig, kubeContext                            string
	readOnly                                           bool                    // preview --read-only (stackcmds.go)
	extra                                              []func(*engine.Options) // the untrusted mode's (untrusted.go)
}

func (f *stackFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.backend, "backend", os.Getenv("TFRS_BACKEND"), "Pulumi state backend URL: file:///dir or s3://bucket?endpoint=…&s3ForcePathStyle=true (env TFRS_BACKEND; default file://<state-dir>/backend)")
	fs.StringVar(&f.stateDir, "state-dir", os.Getenv("TFRS_STATE_DIR"), "directory for the default file backend, PULUMI_HOME and workspaces (env TFRS_STATE_DIR; default $XDG_STATE_HOME/tfrs or ~/.tfrs/state)")
	fs.StringVar(&f.secretsProvider, "secrets-provider", os.Getenv("TFRS_SECRETS_PROVIDER"), "Pulumi secrets provider URL (env TFRS_SECRETS_PROVIDER; default passphrase, read from TFRS_PASSPHRASE or TFRS_PASSPHRASE_FILE)")
	fs.StringVar(&f.passphraseFile, "passphrase-file", "", "file holding the state passphrase (default: env TFRS_PASSPHRASE, TFRS_PASSPHRASE_FILE)")
	fs.BoolVar(&f.allowEmptyPassphrase, "allow-empty-passphrase", os.Getenv("TFRS_ALLOW_EMPTY_PASSPHRASE") == "true", "development only: accept an empty passphrase (secrets in the state are then not protected)")
	fs.IntVar(&f.parallel, "parallel", 4, "operations running at once across all stacks")
	fs.IntVar(&f.parallelPerNamespace, "parallel-per-namespace", 0, "operations of one namespace running at once (the platform's own stacks count as one); 0: --parallel minus 1, so no namespace ever holds every slot")
	fs.StringVar(&f.deadlines, "deadline", "", "how long one operation may run, per kind: e.g. up=45m,preview=10m (kinds up, destroy, refresh, preview, remove, outputs, status, list; default up and destroy 30m, refresh and preview 15m, the rest 5m)")
	fs.IntVar(&f.historyLimit, "history-limit", engine.DefaultHistoryLimit, "updates of history and checkpoint backups kept per stack in the backend (negative: keep all)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file the programs apply to (env KUBECONFIG; empty: in-cluster config)")
	fs.StringVar(&f.kubeContext, "context", "", "kubeconfig context")
}

// engine opens the engine the flags describe.
func (f *stackFlags) engine(ctx context.Context, extra ...func(*engine.Options)) (*engine.Engine, error) {
	if f.parallel < 1 {
		return nil, fmt.Errorf("%w: --parallel must be at least 1, got %d", errUsage, f.parallel)
	}
	if f.parallelPerNamespace < 0 || f.parallelPerNamespace > f.parallel {
		return nil, fmt.Errorf("%w: --parallel-per-namespace must be between 1 and --parallel (%d), or 0 for the default, got %d", errUsage, f.parallel, f.parallelPerNamespace)
	}
	deadlines, err := engine.ParseDeadlines(f.deadlines)
	if err != nil {
		return nil, fmt.Errorf("%w: --deadline %v", errUsage, err)
	}
	o := engine.Options{
		BackendURL: f.backend, StateDir: f.stateDir, SecretsProvider: f.secretsProvider,
		PassphraseFile: f.passphraseFile, AllowEmptyPassphrase: f.allowEmptyPassphrase,
		MaxConcurrent: f.parallel, MaxPerNamespace: f.parallelPerNamespace, Deadlines: deadlines,
		HistoryLimit: f.historyLimit,
		ReadOnly:     f.readOnly,
	}
	for _, x := range append(slices.Clip(f.extra), extra...) {
		x(&o)
	}
	return engine.New(ctx, o)
}

// runOptions reads the kubeconfig (its contents travel as secret stack config, so the
// provider never depends on a path that exists only on this machine).
func (f *stackFlags) runOptions() (runner.Options, error) {
	o := runner.Options{KubeContext: f.kubeContext, Revision: programRevision}
	if f.kubeconfig == "" {
		return o, nil
	}
	path := f.kubeconfig
	if list := filepath.SplitList(path); len(list) > 1 {
		path = list[0] // like kubectl, but without merging: the first file wins
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return o, fmt.Errorf("--kubeconfig: %w", err)
	}
	o.Kubeconfig = string(b)
	return o, nil
}

// runner opens the engine and a Runner over it; close the engine when done.
func (f *stackFlags) runner(ctx context.Context, extra ...func(*engine.Options)) (*engine.Engine, *runner.Runner, error) {
	opts, err := f.runOptions()
	if err != nil {
		return nil, nil, err
	}
	eng, err := f.engine(ctx, extra...)
	if err != nil {
		return nil, nil, err
	}
	return eng, runner.New(eng, opts), nil
}

// logFlags are the logging flags every long-running command (serve, operator, dev) shares.
type logFlags struct {
	format, level string
	jsonLogs      bool // deprecated alias of --log-format json (the operator's old flag)
}

func (f *logFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.format, "log-format", envOr("TFRS_LOG_FORMAT", "text"), "log format: text or json (env TFRS_LOG_FORMAT)")
	fs.StringVar(&f.level, "log-level", envOr("TFRS_LOG_LEVEL", "info"), "lowest level logged: debug, info, warn or error (env TFRS_LOG_LEVEL)")
	fs.BoolVar(&f.jsonLogs, "json-logs", os.Getenv("TFRS_JSON_LOGS") == "true", "log JSON lines (env TFRS_JSON_LOGS=true)")
	_ = fs.MarkDeprecated("json-logs", "use --log-format json")
}

// handler is the slog handler the flags describe, writing to w. --json-logs (or
// TFRS_JSON_LOGS=true) means json unless --log-format was given.
func (f *logFlags) handler(fs *pflag.FlagSet, w io.Writer) (slog.Handler, error) {
	format := f.format
	if f.jsonLogs && !fs.Changed("log-format") {
		format = "json"
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level must be debug, info, warn or error, not %q", errUsage, f.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.NewTextHandler(w, opts), nil
	case "json":
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, fmt.Errorf("%w: --log-format must be text or json, not %q", errUsage, format)
}
