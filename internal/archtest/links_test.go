package archtest

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every reference the repository makes must resolve inside it: a relative
// link in a Markdown file, a repository path named in a document or a Go
// comment, and no pointer to a document, specification or tracker that the
// repository does not hold. A path resolves from the naming file's
// directory or from the root.

var (
	// mdLink is a Markdown inline link or image: [text](target "title").
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// mdRefDef is a reference-style link definition: [label]: target.
	mdRefDef = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// repoPath is a path into the repository's document and data trees, or
	// a top-level document, as prose names them.
	repoPath = regexp.MustCompile(`(?:^|[^\w./-])((?:docs|testdata|spec|specs)/[\w.*…/-]*[\w*…]|[A-Z][A-Z0-9_-]*\.md)`)
	// goFile is a Go source file named in a comment: a file of the same
	// package, or one named by its path from the root.
	goFile = regexp.MustCompile(`(?:^|[^\w./-])((?:[\w-]+/)*[a-z][\w]*\.go)\b`)
	// elsewhere names what is kept outside the repository: the design
	// notes, the style guide, the source specification and the issue
	// tracker. Say what they said instead, or point into the repository.
	elsewhere = regexp.MustCompile(`(?i)\b(DESIGN\.md|STYLE\.md|PREAMBLE\.md|(?:spec|seed)s? ?(?:0\d\d|§)|the (?:spec|seed)'s (?:default|\")|issues? ?#?\d+\b)`)
)

// source is a file's text to check: a Markdown file whole, a Go file's
// comments, a JSON file's "note" values.
type source struct {
	rel  string // slash path from the root
	text []string
	line []int // text[i] starts at this line
}

func readSources(t *testing.T, root string) []source {
	t.Helper()
	var out []source
	fset := token.NewFileSet()
	walkTree(t, root, func(rel string) {
		switch {
		case strings.HasSuffix(rel, ".md"):
			b, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, source{rel: rel, text: []string{string(b)}, line: []int{1}})
		case strings.HasSuffix(rel, ".go") && !strings.Contains("/"+rel, "/testdata/"):
			f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			s := source{rel: rel}
			for _, cg := range f.Comments {
				for _, c := range cg.List {
					s.text = append(s.text, c.Text)
					s.line = append(s.line, fset.Position(c.Pos()).Line)
				}
			}
			out = append(out, s)
		}
	})
	return out
}

// lineOf returns the line of offset off in s.text[i].
func (s source) lineOf(i, off int) int {
	return s.line[i] + strings.Count(s.text[i][:off], "\n")
}

// exists reports whether a named path resolves: relative to the naming
// file's directory or to the root. "…" stands for the rest of a name and
// "*" for any characters: the part before must name something.
func exists(root, dir, p string) bool {
	p = strings.TrimRight(p, ".")
	if i := strings.Index(p, "…"); i >= 0 {
		p = p[:i] + "*"
	}
	for _, base := range []string{dir, ""} {
		full := filepath.Join(root, base, filepath.FromSlash(p))
		if strings.Contains(p, "*") {
			if m, _ := filepath.Glob(full); len(m) > 0 {
				return true
			}
			continue
		}
		if _, err := os.Stat(full); err == nil {
			return true
		}
	}
	return false
}

func TestMarkdownLinks(t *testing.T) {
	root := moduleRoot(t)
	for _, s := range readSources(t, root) {
		if !strings.HasSuffix(s.rel, ".md") {
			continue
		}
		text := s.text[0]
		var targets [][]int
		targets = append(targets, mdLink.FindAllStringSubmatchIndex(text, -1)...)
		targets = append(targets, mdRefDef.FindAllStringSubmatchIndex(text, -1)...)
		for _, m := range targets {
			target := text[m[2]:m[3]]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if err := checkLink(root, s.rel, target); err != nil {
				t.Errorf("%s:%d: link %s: %v", s.rel, s.lineOf(0, m[0]), target, err)
			}
		}
	}
}

// checkLink resolves a relative link of the Markdown file rel: the file it
// names exists and, when it names a heading (#anchor), so does the heading.
func checkLink(root, rel, target string) error {
	file, anchor, _ := strings.Cut(target, "#")
	p := rel
	if file != "" {
		p = path.Join(path.Dir(rel), file)
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			return fmt.Errorf("%s does not exist", p)
		}
	}
	if anchor == "" || !strings.HasSuffix(p, ".md") {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
	if err != nil {
		return err
	}
	for _, a := range headingAnchors(string(b)) {
		if a == anchor {
			return nil
		}
	}
	return fmt.Errorf("%s has no heading #%s", p, anchor)
}

// headingAnchors returns the anchors GitHub gives a document's headings:
// lower case, punctuation dropped, spaces to hyphens, repeats numbered.
func headingAnchors(doc string) []string {
	var out []string
	seen := map[string]int{}
	fence := false
	for _, ln := range strings.Split(doc, "\n") {
		if strings.HasPrefix(ln, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(ln, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(ln, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ' || r == '-':
				b.WriteRune('-')
			case r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && !strings.ContainsRune("—–…’“”·", r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// topFile matches a file path that starts at one of the root's
// directories (catalogue/rules/12-phrase.json, dev/interop/install.sh).
func topFile(t *testing.T, root string) *regexp.Regexp {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs = append(dirs, regexp.QuoteMeta(e.Name()))
		}
	}
	return regexp.MustCompile(`(?:^|[^\w./-])((?:` + strings.Join(dirs, "|") + `)/[\w./*…-]*\.[a-z]+)\b`)
}

func TestNamedPathsExist(t *testing.T) {
	root := moduleRoot(t)
	top := topFile(t, root)
	for _, s := range readSources(t, root) {
		dir := path.Dir(s.rel)
		for i, text := range s.text {
			for _, m := range repoPath.FindAllStringSubmatchIndex(text, -1) {
				p := text[m[2]:m[3]]
				if !exists(root, dir, p) {
					t.Errorf("%s:%d: names %s, which is not in the repository", s.rel, s.lineOf(i, m[2]), p)
				}
			}
			for _, m := range top.FindAllStringSubmatchIndex(text, -1) {
				p := text[m[2]:m[3]]
				if !exists(root, dir, p) {
					t.Errorf("%s:%d: names %s, which is not in the repository", s.rel, s.lineOf(i, m[2]), p)
				}
			}
			if !strings.HasSuffix(s.rel, ".go") {
				continue
			}
			for _, m := range goFile.FindAllStringSubmatchIndex(text, -1) {
				p := text[m[2]:m[3]]
				if !exists(root, dir, p) {
					t.Errorf("%s:%d: names %s, which is not in the repository", s.rel, s.lineOf(i, m[2]), p)
				}
			}
		}
	}
}

func TestNothingOutsideTheRepository(t *testing.T) {
	root := moduleRoot(t)
	for _, s := range readSources(t, root) {
		if strings.HasPrefix(s.rel, "internal/archtest/") {
			continue // names the patterns it forbids
		}
		for i, text := range s.text {
			for _, m := range elsewhere.FindAllStringIndex(text, -1) {
				t.Errorf("%s:%d: %q points outside the repository", s.rel, s.lineOf(i, m[0]), text[m[0]:m[1]])
			}
		}
	}
}

// TestLinkCheckerCatches checks the checkers on a small tree: a broken
// link, a missing heading, a missing named path and a pointer outside the
// repository are each caught; what resolves passes.
func TestLinkCheckerCatches(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"README.md":           "# Top\n",
		"docs/GUIDE.md":       "# The guide\n\n## Adding a provider, in one place\n",
		"pkg/testdata/x.json": "{}",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		target string
		ok     bool
	}{
		{"docs/GUIDE.md", true},
		{"docs/GUIDE.md#adding-a-provider-in-one-place", true},
		{"#top", true},
		{"docs/MISSING.md", false},
		{"docs/GUIDE.md#no-such-heading", false},
	} {
		if err := checkLink(root, "README.md", tt.target); (err == nil) != tt.ok {
			t.Errorf("link %s: got %v, want ok=%v", tt.target, err, tt.ok)
		}
	}
	for _, tt := range []struct {
		dir, path string
		ok        bool
	}{
		{"pkg", "testdata/x.json", true}, // from the naming file's directory
		{"", "pkg/testdata/x.json", true},
		{"", "docs/G…", true},
		{"pkg", "testdata/y.json", false},
		{"", "docs/*.txt", false},
	} {
		if got := exists(root, tt.dir, tt.path); got != tt.ok {
			t.Errorf("exists(%q, %q) = %v, want %v", tt.dir, tt.path, got, tt.ok)
		}
	}
	for _, tt := range []struct {
		text string
		hit  bool
	}{
		{"the fault matrix of issue 11", true},
		{"see DESIGN.md, Wire contracts", true},
		{"as spec 000 says", true},
		{"(seed 004 §2)", true},
		{"the jitter's seed", false},
		{"an issue with the agent", false},
	} {
		if got := elsewhere.MatchString(tt.text); got != tt.hit {
			t.Errorf("%q: flagged %v, want %v", tt.text, got, tt.hit)
		}
	}
}
