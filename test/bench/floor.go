package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// The floor is what a platform team could do without tfrs: `kubectl apply --server-side`
// of exactly the manifests `tfrs render` writes for the tenant, then the same readiness waits
// the Pulumi Kubernetes provider makes (workload rollouts, Jobs complete). Data volumes are
// not waited for, as in the programs (they carry pulumi.com/skipAwait).

const floorManager = "tfrs-bench-floor"

// manifest is one rendered object.
type manifest struct {
	path, kind, namespace, name string
}

func readManifests(dir string) ([]manifest, error) {
	var out []manifest
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, manifest{path: path, kind: m.Kind, namespace: m.Metadata.Namespace, name: m.Metadata.Name})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s: no manifests rendered", dir)
	}
	return out, err
}

// floorApply applies the manifests and waits like the provider does. Namespaces and CRDs go
// first (kubectl applies files in name order, and a namespaced object cannot be created
// before its namespace).
func (b *bench) floorApply(ctx context.Context, ms []manifest) error {
	var first, rest []string
	for _, m := range ms {
		if m.kind == "Namespace" || m.kind == "CustomResourceDefinition" {
			first = append(first, "-f", m.path)
		} else {
			rest = append(rest, "-f", m.path)
		}
	}
	apply := []string{"apply", "--server-side", "--field-manager=" + floorManager}
	if len(first) > 0 {
		if _, err := b.kubectl(ctx, append(apply, first...)...); err != nil {
			return err
		}
	}
	if _, err := b.kubectl(ctx, append(apply, rest...)...); err != nil {
		return err
	}
	for _, m := range ms {
		var args []string
		switch m.kind {
		case "Deployment", "StatefulSet", "DaemonSet":
			args = []string{"rollout", "status", strings.ToLower(m.kind) + "/" + m.name, "--timeout=10m"}
		case "Job":
			args = []string{"wait", "--for=condition=complete", "job/" + m.name, "--timeout=10m"}
		default:
			continue
		}
		if m.namespace != "" {
			args = append(args, "-n", m.namespace)
		}
		if _, err := b.kubectl(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// floorDiff runs `kubectl diff --server-side` over the manifests; clean reports no difference.
func (b *bench) floorDiff(ctx context.Context, ms []manifest) (clean bool, err error) {
	args := []string{"diff", "--server-side", "--field-manager=" + floorManager}
	for _, m := range ms {
		args = append(args, "-f", m.path)
	}
	_, err = b.kubectl(ctx, args...)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return false, nil // differences found: still a completed diff
	}
	return err == nil, err
}

// kubectl runs kubectl against the bench's control plane.
func (b *bench) kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", b.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && args[0] == "diff" && ee.ExitCode() == 1 {
			return string(out), err
		}
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args[:min(len(args), 4)], " "), err, tail(out))
	}
	return string(out), nil
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}
