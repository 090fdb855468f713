package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/blang/semver"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/tools"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// Set by the Makefile (go build -ldflags "-X main.tfrsVersion=… -X main.tfrsCommit=…");
// without them the module version and VCS stamp of the build are used.
var (
	tfrsVersion string
	tfrsCommit  string
)

// buildInfo is what tfrs knows of its own build.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Go      string `json:"go"`
}

func (b buildInfo) String() string {
	s := b.Version
	if b.Commit != "" {
		s += ", commit " + b.Commit
	}
	return s + ", " + b.Go
}

// buildVersion reads the ldflags, else runtime/debug.ReadBuildInfo: a `go install …@vX` build
// knows its module version, a build in a checkout its VCS revision.
func buildVersion() buildInfo {
	b := buildInfo{Version: tfrsVersion, Commit: tfrsCommit, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		if b.Commit == "" {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" && modified == "true" {
				rev += "-dirty"
			}
			b.Commit = rev
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	return b
}

// programRevision is this build's program revision (stacks.NewRevision), computed once: a
// clean commit names the code, with the build's -tags and -ldflags (they select and change
// code: two builds of one commit with other tags are other programs); a build from a
// modified or unknown tree is named by its own bytes (builds are reproducible, -trimpath), so
// two such builds with different programs never share a revision. An unreadable binary gives
// no revision rather than a wrong one.
var programRevision = sync.OnceValue(func() *v1alpha1.Revision {
	b := buildVersion()
	code := buildFlags()
	if !stacks.CleanCommit(b.Commit) {
		exe, err := os.Executable()
		if err != nil {
			return nil
		}
		f, err := os.Open(exe)
		if err != nil {
			return nil
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return nil
		}
		code = hex.EncodeToString(h.Sum(nil))
	}
	r := stacks.NewRevision(b.Version, b.Commit, code)
	return &r
})

// buildFlags are the build's -tags and -ldflags as recorded in its build info ("" for none).
func buildFlags() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var flags []string
	for _, s := range bi.Settings {
		if s.Key == "-tags" || s.Key == "-ldflags" {
			flags = append(flags, s.Key+"="+s.Value)
		}
	}
	return strings.Join(flags, " ")
}

// toolVersion is one tool the engine runs: where it was found and the version it reports.
type toolVersion struct {
	Version string `json:"version,omitempty"`
	Path    string `json:"path,omitempty"`
	Error   string `json:"error,omitempty"`
}

// versions is `tfrs version -o json`.
type versions struct {
	TFRS       buildInfo    `json:"tfrs"`
	Pulumi     *toolVersion `json:"pulumi,omitempty"`
	Kubernetes *toolVersion `json:"kubernetesProvider,omitempty"`
	// Support is the support matrix of the pinned cluster components (stacks/support.go).
	Support []stacks.PinnedSupport `json:"support"`
}

// errToolsBroken is version's error when a tool is missing or unusable.
var errToolsBroken = errors.New("the engine cannot run with these tools; run `make tools`")

func newVersionCmd() *cobra.Command {
	var format string
	var client bool
	cmd := &cobra.Command{
		Use:   "version [-o text|json] [--client]",
		Short: "Print the versions of tfrs, the Pulumi CLI and the Kubernetes provider, and the support matrix",
		Long: `Version prints tfrs's version and commit, and the Pulumi CLI and Kubernetes provider plugin
the engine would run: found where the engine finds them (the tools cache of ` + "`make tools`" + `, then
PATH) and asked for their versions (` + "`pulumi version`" + `, the provider's plugin info), all
offline. It exits 1 when a tool is missing or reports no usable version; --client asks no tool
and prints tfrs's own version. Then the support matrix: for each pinned cluster component,
the Kubernetes versions its upstream supports and the day that support ends. A TFRCluster whose
component is past its end of support, or on an older Kubernetes, is refused unless
spec.allowUnsupported names it; one on a newer Kubernetes, or near the end, gets a warning.`,
		Example: `  tfrs version
  tfrs version -o json | jq -r .pulumi.version
  tfrs version --client`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := oneOf("-o", format, "text", "json"); err != nil {
				return err
			}
			v := versions{TFRS: buildVersion(), Support: stacks.PinnedSupports()}
			if !client {
				v.Pulumi, v.Kubernetes = toolVersions(cmd.Context())
			}
			if err := writeVersions(cmd.OutOrStdout(), format, v); err != nil {
				return err
			}
			if !client && (v.Pulumi.Error != "" || v.Kubernetes.Error != "") {
				return errToolsBroken
			}
			return nil
		},
	}
	outputFlag(cmd, &format, "output format", "text", "json")
	cmd.Flags().BoolVar(&client, "client", false, "tfrs's own version and the support matrix; ask no tool")
	return cmd
}

func writeVersions(w io.Writer, format string, v versions) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	fmt.Fprintf(w, "tfrs        %s\n", v.TFRS)
	for _, t := range []struct {
		name string
		v    *toolVersion
	}{{"pulumi", v.Pulumi}, {"kubernetes", v.Kubernetes}} {
		switch {
		case t.v == nil:
		case t.v.Error != "":
			fmt.Fprintf(w, "%-11s %s\n", t.name, t.v.Error)
		default:
			fmt.Fprintf(w, "%-11s %-10s %s\n", t.name, t.v.Version, t.v.Path)
		}
	}
	writeSupport(w, v.Support)
	return nil
}

// writeSupport prints the support matrix of the pinned components: the cluster stack refuses
// a component past its end of support or on an older Kubernetes, and warns about the rest.
func writeSupport(w io.Writer, rows []stacks.PinnedSupport) {
	fmt.Fprintf(w, "\nupstream support of the pinned components:\n")
	fmt.Fprintf(w, "  %-38s %-9s %-12s %s\n", "project", "pinned", "kubernetes", "end of support")
	for _, r := range rows {
		kube, eol := "?", r.Support.EndOfLife
		if r.Support.KubeMin != "" {
			kube = r.Support.KubeMin + "-" + r.Support.KubeMax
		}
		if eol == "" {
			eol = "not announced"
		}
		fmt.Fprintf(w, "  %-38s %-9s %-12s %s\n", r.Project, r.Pinned, kube, eol)
	}
}

// toolVersions asks both tools at once.
func toolVersions(ctx context.Context) (pulumi, provider *toolVersion) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { pulumi = askTool(ctx, "pulumi", pulumiCLIVersion) })
	wg.Go(func() { provider = askTool(ctx, "pulumi-resource-kubernetes", providerVersion) })
	wg.Wait()
	return pulumi, provider
}

// askTool finds the binary as the engine does (internal/tools) and asks its version.
func askTool(ctx context.Context, name string, ask func(context.Context, string) (string, error)) *toolVersion {
	bin, err := tools.Bin(name)
	if err != nil {
		return &toolVersion{Error: err.Error()}
	}
	v, err := ask(ctx, bin)
	if err != nil {
		return &toolVersion{Path: bin, Error: fmt.Sprintf("%s: %v", bin, err)}
	}
	return &toolVersion{Version: v, Path: bin}
}

// pulumiCLIVersion runs `pulumi version` the way the engine checks it: offline (no update
// check, a scratch PULUMI_HOME) and parsed as a semantic version, since the Automation API
// refuses a CLI that reports none.
func pulumiCLIVersion(ctx context.Context, bin string) (string, error) {
	home, err := os.MkdirTemp("", "tfrs-version-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd := exec.CommandContext(ctx, bin, "version")
	cmd.Env = append(os.Environ(), "PULUMI_HOME="+home, "PULUMI_SKIP_UPDATE_CHECK=true")
	out, err := cmd.Output()
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(out))
	if _, err := semver.ParseTolerant(v); err != nil {
		return "", fmt.Errorf("reports version %q, not a semantic version (built without the version ldflag?)", v)
	}
	return v, nil
}

// providerVersion asks the provider plugin for its version the way the Pulumi CLI does: start
// it, read the port it prints, and call GetPluginInfo over gRPC.
func providerVersion(ctx context.Context, bin string) (string, error) {
	cmd := exec.CommandContext(ctx, bin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	port, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no port on stdout: %w", err)
	}
	conn, err := grpc.NewClient("127.0.0.1:"+strings.TrimSpace(port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	info, err := pulumirpc.NewResourceProviderClient(conn).GetPluginInfo(ctx, &emptypb.Empty{})
	if err != nil {
		return "", err
	}
	if info.GetVersion() == "" {
		return "", errors.New("reports no version")
	}
	return info.GetVersion(), nil
}
