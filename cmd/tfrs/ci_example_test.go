package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The CI example calls `tfrs preview` with flags that exist, so it does not rot when a flag is
// renamed.
func TestCIExampleUsesRealFlags(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "ci", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	preview, _, err := newApp().root.Find([]string{"preview"})
	require.NoError(t, err)
	fs := preview.Flags()
	flagRE := regexp.MustCompile(`(?:^|\s)(--?)([a-z][a-z-]*)`)
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		text := string(b)
		if strings.Contains(file, "apply-plan") {
			checkApplyExample(t, file, text)
			continue
		}
		// The invocation spans the lines from "tfrs" preview to the output redirection.
		i := strings.Index(text, `tfrs" preview`)
		require.GreaterOrEqual(t, i, 0, "%s runs tfrs preview", file)
		call := text[i:]
		call = call[:strings.Index(call, ">")]
		found := 0
		for _, m := range flagRE.FindAllStringSubmatch(call, -1) {
			if m[1] == "-" {
				require.NotNil(t, fs.ShorthandLookup(m[2]), "%s uses unknown flag -%s", file, m[2])
			} else {
				require.NotNil(t, fs.Lookup(m[2]), "%s uses unknown flag --%s", file, m[2])
			}
			found++
		}
		require.GreaterOrEqual(t, found, 5, "the flags of %q were found", call)
		for _, want := range []string{"-o markdown", "--detailed-exitcode", "--fail-on-data-loss", "--read-only", "--save-plan", "--untrusted"} {
			require.Contains(t, call, want)
		}
	}
}

// checkApplyExample: the apply workflow runs `tfrs up --plan` with flags that exist.
func checkApplyExample(t *testing.T, file, text string) {
	t.Helper()
	up, _, err := newApp().root.Find([]string{"up"})
	require.NoError(t, err)
	i := strings.Index(text, `tfrs" up`)
	require.GreaterOrEqual(t, i, 0, "%s runs tfrs up", file)
	call := text[i:]
	call = call[:strings.Index(call, ">")]
	for _, m := range regexp.MustCompile(`(?:^|\s)--([a-z][a-z-]*)`).FindAllStringSubmatch(call, -1) {
		require.NotNil(t, up.Flags().Lookup(m[1]), "%s uses unknown flag --%s", file, m[1])
	}
	require.Contains(t, call, "--plan")
}
