package engine

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

// Options configure an Engine. The zero value is usable: file:// state under the user's state
// dir, passphrase secrets from the environment, tools from the cache.
type Options struct {
	// BackendURL is the Pulumi state backend: "file:///abs/dir" or
	// "s3://bucket?endpoint=host:port&s3ForcePathStyle=true&region=…". Default:
	// file://<StateDir>/backend.
	BackendURL string
	// StateDir holds the file backend (by default), PULUMI_HOME and scratch workspaces.
	// Default: DefaultStateDir().
	StateDir string
	// SecretsProvider is any Pulumi secrets-provider URL; default "passphrase".
	SecretsProvider string
	// Passphrase and PassphraseFile feed the passphrase provider. When both are empty the
	// environment is read: TFRS_PASSPHRASE, TFRS_PASSPHRASE_FILE, PULUMI_CONFIG_PASSPHRASE,
	// PULUMI_CONFIG_PASSPHRASE_FILE, in that order.
	Passphrase     string
	PassphraseFile string
	// AllowEmptyPassphrase is the explicit development switch for an empty passphrase; without
	// it an empty one is refused with ErrNoPassphrase, because it would "encrypt" every secret
	// in the state with a key anyone can guess.
	AllowEmptyPassphrase bool
	// MaxConcurrent bounds operations running at once across all stacks (each is a CLI
	// process plus provider plugins). Default 4. Further operations wait for a slot.
	MaxConcurrent int
	// MaxPerNamespace bounds the operations of one share (ShareOf: a tenant's namespace, or
	// the platform's own stacks) running at once, so one team cannot hold every slot (see
	// fairshare.go). Default DefaultMaxPerNamespace(MaxConcurrent); above MaxConcurrent it
	// is MaxConcurrent (no per-share limit).
	MaxPerNamespace int
	// Deadlines bound how long one operation of a kind may run once it has its slot; at the
	// deadline it is canceled (CancelGrace applies) and fails with ErrDeadline. Kinds left
	// out get DefaultDeadlines; unknown kinds and non-positive durations are refused.
	Deadlines map[OpKind]time.Duration
	// Env is added to every CLI invocation (e.g. AWS_ACCESS_KEY_ID for an s3:// backend).
	Env map[string]string
	// CancelGrace is how long a canceled operation may take to wind down after SIGINT (Pulumi
	// finishes in-flight steps and saves state) before it is killed. Default 2 minutes.
	CancelGrace time.Duration
	// Pods lets the engine break a backend lock whose owner ran in another Pod, once that Pod is
	// gone and this process holds the leader Lease (the operator sets it). Without it such locks
	// are reported, never broken: liveness elsewhere cannot be proven from here. Locks of this
	// machine and pid namespace are checked exactly (lockowners.go).
	Pods PodProbe
	// Fence, when set, is asked right before every CLI process that may take the backend lock
	// (up, refresh, destroy, import, stack import|rm|rename); an error refuses that run. The
	// operator sets it to "this replica still holds the leader Lease", read from the Lease
	// itself: a leader that stalled past its term and resumed must not start a mutating run in
	// the seconds before it notices the loss, whatever its reconcilers still decide.
	Fence func(ctx context.Context) error
	// HistoryLimit is how many updates of history and checkpoint backups each stack keeps in
	// the backend (history.go). Zero means DefaultHistoryLimit (20); negative keeps everything.
	HistoryLimit int
	// DataBearing lists resource type-token prefixes whose interrupted creates need a human
	// decision. Default: CNPG clusters, MinIO tenants, PVCs.
	DataBearing []string
	// PulumiPath and ProviderPath override the tools lookup (tests, container images).
	PulumiPath   string
	ProviderPath string
	// Logger receives the engine's own records (recoveries, broken locks). Default: discard.
	Logger *slog.Logger
	// ReadOnly makes the engine one that never writes the backend: only Preview and the
	// reads (Outputs, Status, Tags, List) run, every other operation fails with ErrReadOnly,
	// and no repair of the backend's files is attempted. Previews never create stacks in any
	// mode (see Preview); ReadOnly is what lets CI run them with read-only credentials.
	ReadOnly bool
	// ClaimWait bounds how long an Up waits for the creator of a stack it did not create to
	// record its owner (see ensureTags). Default 10 s.
	ClaimWait time.Duration
}

// DefaultDataBearing are the kinds whose objects hold data: adopting or forgetting an
// interrupted create of one of them is a decision for a human, never the engine's.
var DefaultDataBearing = []string{
	"kubernetes:postgresql.cnpg.io/",
	"kubernetes:minio.min.io/",
	"kubernetes:core/v1:PersistentVolumeClaim",
}

// DefaultStateDir is $XDG_STATE_HOME/tfrs, else ~/.tfrs/state.
func DefaultStateDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "tfrs"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locate state dir: %w", err)
	}
	return filepath.Join(home, ".tfrs", "state"), nil
}

// resolved holds Options after defaults, validation and tool lookup.
type resolved struct {
	Options
	pulumiBin   string
	providerBin string
	passphrase  *string // nil when the secrets provider is not "passphrase"
	pulumiHome  string
}

func resolveOptions(o Options) (*resolved, error) {
	r := &resolved{Options: o}
	var err error
	if r.StateDir == "" {
		if r.StateDir, err = DefaultStateDir(); err != nil {
			return nil, err
		}
	}
	if r.StateDir, err = filepath.Abs(r.StateDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	if r.BackendURL == "" {
		dir := filepath.Join(r.StateDir, "backend")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create backend dir: %w", err)
		}
		r.BackendURL = "file://" + dir
	}
	if err := checkBackendURL(r.BackendURL); err != nil {
		return nil, err
	}
	r.BackendURL = normalizeFileURL(r.BackendURL)
	r.pulumiHome = filepath.Join(r.StateDir, "pulumi-home")
	if err := os.MkdirAll(r.pulumiHome, 0o700); err != nil {
		return nil, fmt.Errorf("create PULUMI_HOME: %w", err)
	}
	if r.SecretsProvider == "" {
		r.SecretsProvider = "passphrase"
	}
	if r.SecretsProvider == "passphrase" {
		p, err := resolvePassphrase(o)
		if err != nil {
			return nil, err
		}
		if p == "" && !o.AllowEmptyPassphrase {
			return nil, ErrNoPassphrase
		}
		r.passphrase = &p
	}
	if r.MaxConcurrent <= 0 {
		r.MaxConcurrent = 4
	}
	if r.MaxPerNamespace <= 0 {
		r.MaxPerNamespace = DefaultMaxPerNamespace(r.MaxConcurrent)
	}
	r.MaxPerNamespace = min(r.MaxPerNamespace, r.MaxConcurrent)
	if r.Deadlines, err = resolveDeadlines(o.Deadlines); err != nil {
		return nil, err
	}
	if r.ClaimWait <= 0 {
		r.ClaimWait = 10 * time.Second
	}
	if r.CancelGrace <= 0 {
		r.CancelGrace = 2 * time.Minute
	}
	if r.DataBearing == nil {
		r.DataBearing = DefaultDataBearing
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.pulumiBin, err = findTool(o.PulumiPath, "pulumi"); err != nil {
		return nil, err
	}
	if r.providerBin, err = findTool(o.ProviderPath, "pulumi-resource-kubernetes"); err != nil {
		return nil, err
	}
	return r, nil
}

func checkBackendURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("backend URL: %w", err)
	}
	switch p.Scheme {
	case "file":
		if p.Path == "" || !filepath.IsAbs(p.Path) {
			return fmt.Errorf("backend URL %q: file:// needs an absolute path", u)
		}
		return os.MkdirAll(p.Path, 0o700)
	case "s3", "gs", "azblob", "postgres":
		return nil
	default:
		return fmt.Errorf("backend URL %q: unsupported scheme %q (want file:// or s3://)", u, p.Scheme)
	}
}

// resolvePassphrase follows the documented order. Files are read once here so the CLI gets
// the value through its own env and a rotated file takes effect on the next engine.
func resolvePassphrase(o Options) (string, error) {
	if o.Passphrase != "" {
		return o.Passphrase, nil
	}
	if o.PassphraseFile != "" {
		return readPassphraseFile(o.PassphraseFile)
	}
	if v := os.Getenv("TFRS_PASSPHRASE"); v != "" {
		return v, nil
	}
	if f := os.Getenv("TFRS_PASSPHRASE_FILE"); f != "" {
		return readPassphraseFile(f)
	}
	if v := os.Getenv("PULUMI_CONFIG_PASSPHRASE"); v != "" {
		return v, nil
	}
	if f := os.Getenv("PULUMI_CONFIG_PASSPHRASE_FILE"); f != "" {
		return readPassphraseFile(f)
	}
	return "", nil
}

func readPassphraseFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read passphrase file: %w", err)
	}
	// A mounted Secret or `echo > file` ends with a newline that is not part of the secret.
	return strings.TrimRight(string(b), "\r\n"), nil
}

func findTool(override, name string) (string, error) {
	if override != "" {
		if st, err := os.Stat(override); err != nil || st.IsDir() {
			return "", fmt.Errorf("%w: %s at %s: not a file; run `make tools`", ErrToolsMissing, name, override)
		}
		return override, nil
	}
	p, err := tools.Bin(name)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrToolsMissing, err)
	}
	return p, nil
}

// controlledEnv are variables the engine sets itself; inherited values are dropped so an
// operator's shell (a stray PULUMI_ACCESS_TOKEN, another backend URL) cannot redirect state.
var controlledEnv = []string{
	"PULUMI_ACCESS_TOKEN", "PULUMI_BACKEND_URL", "PULUMI_API", "PULUMI_HOME", "PULUMI_STACK",
	"PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE",
	"TFRS_PASSPHRASE", "TFRS_PASSPHRASE_FILE",
}

// baseEnv is what every CLI invocation gets on top of the filtered process environment.
func (r *resolved) baseEnv() map[string]string {
	env := map[string]string{
		"PULUMI_BACKEND_URL": r.BackendURL,
		"PULUMI_HOME":        r.pulumiHome,
		// Never reach the network: no update check, no plugin downloads, no registry.
		"PULUMI_SKIP_UPDATE_CHECK":                    "true",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
		"PULUMI_DISABLE_REGISTRY_RESOLVE":             "true",
		"PULUMI_DISABLE_CI_DETECTION":                 "true",
		"PULUMI_SUPPRESS_NEO_LINK":                    "true",
		"PULUMI_SKIP_CONFIRMATIONS":                   "true",
		"PULUMI_DIY_BACKEND_NO_LEGACY_WARNING":        "true",
		// Workspaces are scratch dirs; the secrets manager (passphrase salt) lives in the
		// state, so any engine on any host can open any stack.
		"PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER": "true",
		// The AWS SDK probes the EC2 metadata endpoint when credentials are incomplete.
		"AWS_EC2_METADATA_DISABLED": "true",
		"PATH":                      r.path(),
	}
	if r.passphrase != nil {
		env["PULUMI_CONFIG_PASSPHRASE"] = *r.passphrase
	}
	for k, v := range r.Env {
		env[k] = v
	}
	return env
}

// path puts the provider's and the CLI's directories first: the provider is also declared as a
// project plugin, PATH is the fallback the CLI uses for any other ambient plugin lookup.
func (r *resolved) path() string {
	dirs := []string{filepath.Dir(r.providerBin), filepath.Dir(r.pulumiBin)}
	if d := tools.Dir(); d != "" {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, os.Getenv("PATH"))
	return strings.Join(dirs, string(os.PathListSeparator))
}
