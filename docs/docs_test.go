// Package docs holds the user and design documentation; its test keeps the documentation's
// links and file paths pointing at things that exist.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The markdown links ](target) and the repository paths named in backticks (`stacks/x.go`).
var (
	reLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	reCode = regexp.MustCompile("`[^`\n]*`")
	rePath = regexp.MustCompile("`((?:api|charts|cmd|components|config|docs|examples|hack|internal|operator|server|stacks|test)/[A-Za-z0-9_./-]+\\.(?:go|md|yaml|yml|json|sh|lua|tpl))`")
)

// TestDocLinksAndPathsExist: every relative link of the README and of docs/ names a file or
// directory of the repository, and so does every repository path the documents name in
// backticks. A renamed or deleted file shows here instead of as a dead link to a reader.
func TestDocLinksAndPathsExist(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{filepath.Join(root, "README.md")}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			docs = append(docs, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	links, paths := 0, 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		// Links are looked for outside code spans (a pattern like [a-z](x) is no link).
		for _, m := range reLink.FindAllStringSubmatch(reCode.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			links++
			if _, err := os.Stat(filepath.Join(filepath.Dir(doc), target)); err != nil {
				t.Errorf("%s: link to %s: no such file", rel, m[1])
			}
		}
		for _, m := range rePath.FindAllStringSubmatch(string(b), -1) {
			if strings.ContainsAny(m[1], "*<>") {
				continue // a pattern, not a path
			}
			paths++
			if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
				t.Errorf("%s: names %s: no such file", rel, m[1])
			}
		}
	}
	t.Logf("%d documents, %d relative links and %d repository paths checked", len(docs), links, paths)
}
