package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testTag    = "ghcr.io/tfrs-io/tfrs:v0.9.0"
	testCommit = "0123456789ab"
	testEpoch  = 1767225600 // 2026-01-01T00:00:00Z
)

func TestParseFlags(t *testing.T) {
	base := []string{"-tools", "/tools"}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"-tag", "ghcr.io/tfrs-io/tfrs:latest"}, `-tag: tag "latest" is not a version`},
		{[]string{"-tag", "ghcr.io/tfrs-io/tfrs"}, `-tag: tag "latest" is not a version`},
		{[]string{"-tag", "ghcr.io/tfrs-io/tfrs:dev"}, `-tag: tag "dev" is not a version`},
		{[]string{"-tag", "ghcr.io/tfrs-io/tfrs:0.9.0"}, `-tag: tag "0.9.0" is not a version`},
		{[]string{"-tag", "GHCR.io/Bad Name:v1"}, "-tag: repository can only contain"},
		{[]string{"-tag", "tfrs:v0.9.0"}, "-tag: strict validation requires the registry"},
		{[]string{}, "-tag: required"},
		{[]string{"-tag", testTag, "-push", "registry.local:5000/tfrs:latest"}, `-push: tag "latest" is not a version`},
		{[]string{"-tag", testTag, "-commit", "HEAD; rm -rf"}, "-commit: "},
		{[]string{"-tag", testTag, "-created", "yesterday"}, "-created: "},
		{[]string{"-tag", testTag, "extra"}, "unexpected arguments"},
	} {
		_, err := parseFlags(append(slices.Clone(base), tc.args...), io.Discard)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.err, tc.args)
	}
	_, err := parseFlags([]string{"-tag", testTag}, io.Discard)
	assert.ErrorContains(t, err, "-tools: required")

	o, err := parseFlags(append(base, "-tag", testTag, "-push", "registry.local:5000/tfrs:v0.9.0-rc.1", "-commit", testCommit), io.Discard)
	require.NoError(t, err)
	require.NotNil(t, o.push)
	assert.Equal(t, "registry.local:5000/tfrs:v0.9.0-rc.1", o.push.String())
	assert.Equal(t, "v0.9.0", o.tag.TagStr())
	assert.Equal(t, time.Unix(0, 0).UTC(), o.created, "no SOURCE_DATE_EPOCH: the epoch")
}

func TestAssembleRefuses(t *testing.T) {
	dir := t.TempDir()
	dyn := filepath.Join(dir, "dyn")
	// A dynamically linked binary (the host's) cannot run in an image without a libc.
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	b, err := os.ReadFile(sh)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dyn, b, 0o755))
	assert.ErrorContains(t, checkStatic(dyn), "dynamically linked")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "script"), []byte("#!/bin/sh\n"), 0o755))
	assert.ErrorContains(t, checkStatic(filepath.Join(dir, "script")), "not a Linux executable")

	assert.ErrorContains(t, checkCABundle(filepath.Join(dir, "none.crt")), "does not exist; install the CA certificates")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.crt"), []byte("not pem"), 0o644))
	assert.ErrorContains(t, checkCABundle(filepath.Join(dir, "empty.crt")), "holds no PEM certificate")
	_, err = assemble(spec{CABundle: filepath.Join(dir, "none.crt"), TFRS: dyn, ToolsDir: dir, WorkDir: dir})
	assert.ErrorContains(t, err, "-ca: ")
}
