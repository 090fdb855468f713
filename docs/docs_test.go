// Package docs holds the user guide (docs/*.md) and the design notes (docs/design/); its tests
// keep the documentation true to the repository: every relative link and anchor, every
// repository path named in the documents and in the Go package comments, and the HTTP endpoint
// table against server/openapi.json.
package docs

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	// A markdown link ](target); links are looked for outside code spans and fences, where a
	// pattern like [a-z](x) is no link.
	reLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	reCode = regexp.MustCompile("`[^`\n]*`")
	// A code span that is one whole path: `stacks/engine/doc.go`, `config/default`, `examples/`.
	// Whether it names this repository is decided by its first element (repoDirs).
	reSpanPath = regexp.MustCompile("`([A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*)`")
	// A path in Go comment prose: it starts after a space, an opening bracket or a quote (never
	// inside an import path such as github.com/…/stacks) and ends on a letter, digit or slash, so
	// a sentence's full stop is not part of it.
	reProsePath = regexp.MustCompile("(?:^|[\\s(\\[\"'`])([A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*[A-Za-z0-9_/])")
	// A bare Go file name in prose (core.go, tenant_steps.go), checked in doc.go files only.
	reGoFile = regexp.MustCompile(`(?:^|[\s(,;"'\x60])([a-z0-9_]+\.go)\b`)
	// A heading and an explicit HTML anchor, the two things a #fragment can point at.
	reHeading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	reAnchor  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// An HTTP endpoint as the API reference writes it: `POST /v1/clusters/{name}/apply`.
	reEndpoint = regexp.MustCompile("`(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) (/[^`\\s?]*)(?:\\?[^`\\s]*)?`")
	// A row of the endpoint table: | `METHOD /path` | does | 200, 401, … |
	reEndpointRow = regexp.MustCompile("(?m)^\\| `([A-Z]+) (/[^`]*)` \\|.*\\| ([0-9, ]+) \\|\\s*$")
	// A Go identifier after a package path: components/routing.UpstreamHost.
	reIdentSuffix = regexp.MustCompile(`\.[A-Z][A-Za-z0-9_]*$`)
)

// repoRoot is the repository's root directory (this package lives in docs/).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// repoDirs are the top-level directories of the repository a path may start with. Build
// output (bin/) and VCS metadata are not the repository's content: a document naming them
// would pass here and fail on a fresh clone.
func repoDirs(t *testing.T, root string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "bin" && e.Name() != ".git" {
			dirs[e.Name()] = true
		}
	}
	return dirs
}

// documents are the markdown files this package keeps true: the README, everything under
// docs/, and the hand-written pages beside the benchmark harness (its results-*.md are the
// harness's own dated output, kept as written).
func documents(t *testing.T, root string) []string {
	t.Helper()
	docs := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			docs = append(docs, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	bench, err := filepath.Glob(filepath.Join(root, "test", "bench", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range bench {
		if !strings.HasPrefix(filepath.Base(p), "results-") {
			docs = append(docs, p)
		}
	}
	return docs
}

// prose is a markdown document without its fenced code blocks, whose lines are examples
// (shell comments are no headings, and [x](y) in code is no link).
func prose(md string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// slug is the anchor GitHub gives a heading: lower case, markup and punctuation dropped
// (letters, digits, '-' and '_' stay), spaces turned into '-'.
func slug(heading string) string {
	heading = reLinkText.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var reLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// anchors are the fragments a link may name in a document: its headings' slugs (a repeated
// heading gets -1, -2, … as on GitHub) and its explicit <a id> anchors.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	text := prose(md)
	for _, m := range reHeading.FindAllStringSubmatch(text, -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	for _, m := range reAnchor.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// pathExists reports whether a repository path exists, also when it ends in a Go identifier
// (`stacks/engine.ErrConflict` names the package stacks/engine).
func pathExists(root, p string) bool {
	if _, err := os.Stat(filepath.Join(root, p)); err == nil {
		return true
	}
	if q := reIdentSuffix.ReplaceAllString(p, ""); q != p {
		_, err := os.Stat(filepath.Join(root, q))
		return err == nil
	}
	return false
}

// isPattern: a placeholder or glob (`<ns>`, `*`, `{id}`, `$X`, `…`) names a family of paths,
// not one.
func isPattern(p string) bool { return strings.ContainsAny(p, "*<>{}$…") }

// repoPath reports whether p starts with one of the repository's top-level directories.
func repoPath(dirs map[string]bool, p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return dirs[first]
}

// TestDocLinksAndPathsExist: every relative link of the README, of docs/ (recursively) and of
// test/bench's pages names a file or directory of the repository, every #fragment names a
// heading or anchor of its target, and every repository path the documents name as a whole
// code span exists. A renamed or deleted file, or a renamed section, shows here instead of as a
// dead link to a reader.
func TestDocLinksAndPathsExist(t *testing.T) {
	root := repoRoot(t)
	dirs := repoDirs(t, root)
	docs := documents(t, root)
	cache := map[string]map[string]bool{}
	anchorsOf := func(p string) map[string]bool {
		if a, ok := cache[p]; ok {
			return a
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cache[p] = anchors(string(b))
		return cache[p]
	}
	links, fragments, paths := 0, 0, 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		text := prose(string(b))
		for _, m := range reLink.FindAllStringSubmatch(reCode.ReplaceAllString(text, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := doc
			if file != "" {
				links++
				dest = filepath.Join(filepath.Dir(doc), file)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link to %s: no such file", rel, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			fragments++
			if !anchorsOf(dest)[frag] {
				t.Errorf("%s: link to %s: no heading or anchor #%s in %s", rel, target, frag, filepath.Base(dest))
			}
		}
		for _, m := range reSpanPath.FindAllStringSubmatch(string(b), -1) {
			p := m[1]
			if isPattern(p) || !repoPath(dirs, p) {
				continue
			}
			paths++
			if !pathExists(root, p) {
				t.Errorf("%s: names %s: no such file or directory", rel, p)
			}
		}
	}
	t.Logf("%d documents: %d relative links, %d #fragments and %d repository paths checked", len(docs), links, fragments, paths)
}

// TestPackageCommentPathsExist: every repository path a package comment names — the whole
// comment of a doc.go, and every other file's comment that starts "Package x" — exists.
// Only paths with a '/' that start at a top-level directory count, and, in a doc.go (a
// package's map of its files), bare Go file names, which must be files of that package's
// directory. Bare names elsewhere are too common in prose to check without noise.
func TestPackageCommentPathsExist(t *testing.T) {
	root := repoRoot(t)
	dirs := repoDirs(t, root)
	files, comments, paths := 0, 0, 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil || f.Doc == nil {
			return nil // a file that does not parse is the compiler's to report
		}
		text := f.Doc.Text()
		if filepath.Base(p) != "doc.go" && !strings.HasPrefix(text, "Package ") {
			return nil
		}
		comments++
		rel, _ := filepath.Rel(root, p)
		for _, m := range reProsePath.FindAllStringSubmatch(text, -1) {
			path := strings.TrimSuffix(m[1], ".")
			if isPattern(path) || !repoPath(dirs, path) {
				continue
			}
			paths++
			if !pathExists(root, path) {
				t.Errorf("%s: package comment names %s: no such file or directory", rel, path)
			}
		}
		if filepath.Base(p) == "doc.go" {
			for _, m := range reGoFile.FindAllStringSubmatch(text, -1) {
				paths++
				if _, err := os.Stat(filepath.Join(filepath.Dir(p), m[1])); err != nil {
					t.Errorf("%s: package comment names %s: no such file in %s", rel, m[1], filepath.Dir(rel))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d Go files, %d package comments, %d repository paths checked", files, comments, paths)
}

// TestHTTPAPIReferenceMatchesOpenAPI: docs/http-api.md documents exactly the endpoints of
// server/openapi.json (the contract the server serves at /openapi.json): every method and
// path there appears in the reference as `METHOD /path`, and every `METHOD /path` the
// reference names is one the API has, and the reference's endpoint table gives each the
// answers (status codes) the contract lists. An endpoint added without its documentation, a
// documented one removed, or a new answer, fails here.
func TestHTTPAPIReferenceMatchesOpenAPI(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "server", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatalf("server/openapi.json: %v", err)
	}
	methods := map[string]bool{"get": true, "head": true, "post": true, "put": true, "patch": true, "delete": true, "options": true}
	api := map[string]bool{}
	codes := map[string]string{} // endpoint → its answers, sorted: "200, 401, 503"
	for path, ops := range spec.Paths {
		for m, raw := range ops {
			if !methods[m] { // parameters, summary, servers … are no operations
				continue
			}
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("server/openapi.json: %s %s: %v", m, path, err)
			}
			ep := strings.ToUpper(m) + " " + path
			api[ep] = true
			answers := map[string]bool{}
			for code := range op.Responses {
				answers[code] = true
			}
			codes[ep] = strings.Join(sorted(answers), ", ")
		}
	}
	if len(api) == 0 {
		t.Fatal("server/openapi.json: no operations")
	}
	ref, err := os.ReadFile(filepath.Join(root, "docs", "http-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range reEndpoint.FindAllStringSubmatch(string(ref), -1) {
		documented[m[1]+" "+m[2]] = true
	}
	rows := map[string]string{}
	for _, m := range reEndpointRow.FindAllStringSubmatch(string(ref), -1) {
		answers := map[string]bool{}
		for _, code := range strings.Split(m[3], ",") {
			answers[strings.TrimSpace(code)] = true
		}
		rows[m[1]+" "+m[2]] = strings.Join(sorted(answers), ", ")
	}
	for _, ep := range sorted(api) {
		if !documented[ep] {
			t.Errorf("docs/http-api.md does not document %s (server/openapi.json has it)", ep)
		}
		switch got, ok := rows[ep]; {
		case !ok:
			t.Errorf("docs/http-api.md: the endpoint table has no row for %s", ep)
		case got != codes[ep]:
			t.Errorf("docs/http-api.md: %s answers %s in the table, %s in server/openapi.json", ep, got, codes[ep])
		}
	}
	for _, ep := range sorted(documented) {
		if !api[ep] {
			t.Errorf("docs/http-api.md documents %s, which server/openapi.json does not have", ep)
		}
	}
	t.Logf("%d endpoints in server/openapi.json, %d documented", len(api), len(documented))
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
