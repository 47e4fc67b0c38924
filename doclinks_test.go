package architecture_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// markdownFiles lists every .md file of the repository (slash-separated,
// relative to the root), outside hidden directories, testdata, node_modules
// and deploy/cluster's data.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			files = append(files, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	fenceRE      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpanRE   = regexp.MustCompile("`+[^`]*`+")
	inlineLinkRE = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRE     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	headingRE    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchorRE = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	headingLink  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// mdLine is one line of a Markdown file outside fenced code blocks.
type mdLine struct {
	n    int
	text string
}

// proseLines returns the lines of a Markdown document that are not inside a
// fenced code block.
func proseLines(src string) []mdLine {
	var out []mdLine
	inFence := false
	for i, l := range strings.Split(src, "\n") {
		if fenceRE.MatchString(l) {
			inFence = !inFence
			continue
		}
		if !inFence {
			out = append(out, mdLine{n: i + 1, text: l})
		}
	}
	return out
}

// slug is GitHub's anchor for a heading: the rendered text lower-cased,
// everything but letters, digits, spaces, hyphens and underscores dropped,
// spaces turned into hyphens.
func slug(heading string) string {
	heading = headingLink.ReplaceAllString(heading, "$1")
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

// anchors returns the anchors a Markdown document defines: one per heading
// (repeated headings get -1, -2, … as on GitHub) and explicit <a name|id>.
func anchors(src string) map[string]bool {
	set := map[string]bool{}
	count := map[string]int{}
	for _, l := range proseLines(src) {
		if m := headingRE.FindStringSubmatch(l.text); m != nil {
			s := slug(m[2])
			if c := count[s]; c > 0 {
				set[s+"-"+strconv.Itoa(c)] = true
			} else {
				set[s] = true
			}
			count[s]++
		}
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(l.text, -1) {
			set[m[1]] = true
		}
	}
	return set
}

// links returns the link targets of one line, code spans left out.
func links(line string) []string {
	line = codeSpanRE.ReplaceAllString(line, "")
	var out []string
	for _, m := range inlineLinkRE.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	if m := refDefRE.FindStringSubmatch(line); m != nil {
		out = append(out, m[1])
	}
	return out
}

// external reports whether a link target leaves the repository.
func external(target string) bool {
	if i := strings.Index(target, ":"); i > 0 && !strings.ContainsAny(target[:i], "/#.") {
		return true // a scheme: https:, mailto:, …
	}
	return strings.HasPrefix(target, "//")
}

// TestMarkdownLinksResolve checks every relative link of every Markdown file
// in the repository: the file or directory it names exists, and its #anchor
// (in the same file or another .md file) is a heading or an explicit anchor
// there.
func TestMarkdownLinksResolve(t *testing.T) {
	t.Parallel()
	files := markdownFiles(t)
	if len(files) == 0 {
		t.Fatal("no Markdown files found")
	}
	srcs := map[string]string{}
	read := func(p string) (string, bool) {
		if s, ok := srcs[p]; ok {
			return s, true
		}
		b, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			return "", false
		}
		srcs[p] = string(b)
		return srcs[p], true
	}
	checked := 0
	for _, file := range files {
		src, ok := read(file)
		if !ok {
			t.Fatalf("%s: unreadable", file)
		}
		for _, l := range proseLines(src) {
			for _, target := range links(l.text) {
				if target == "" || external(target) {
					continue
				}
				checked++
				if msg := resolve(file, target, read); msg != "" {
					t.Errorf("%s:%d: link %q: %s", file, l.n, target, msg)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links checked: the link pattern matches nothing")
	}
}

// resolve checks one relative link target of file and says what is wrong
// with it ("" when it resolves).
func resolve(file, target string, read func(string) (string, bool)) string {
	path, frag, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return "absolute path: use a path relative to the file"
		}
		dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
		if strings.HasPrefix(dest, "../") || dest == ".." {
			return "points outside the repository"
		}
		if _, err := os.Stat(filepath.FromSlash(dest)); err != nil {
			return "no such file or directory: " + dest
		}
	}
	if frag == "" {
		return ""
	}
	if !strings.HasSuffix(dest, ".md") {
		return "" // a line anchor into source (#L10) is GitHub's, not the file's
	}
	src, ok := read(dest)
	if !ok {
		return "unreadable: " + dest
	}
	if !anchors(src)[frag] {
		return "no heading with anchor #" + frag + " in " + dest
	}
	return ""
}

func TestSlugMatchesGitHub(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, heading, want string
	}{
		{name: "plain", heading: "The read index", want: "the-read-index"},
		{name: "code and parentheses", heading: "Live boards (`-live`)", want: "live-boards--live"},
		{name: "punctuation dropped", heading: "Ledger mode (PostgreSQL)", want: "ledger-mode-postgresql"},
		{name: "colon and slash", heading: "Traces: OpenTelemetry / OTLP", want: "traces-opentelemetry--otlp"},
		{name: "link text kept", heading: "See [config](docs/config.md) here", want: "see-config-here"},
		{name: "underscore kept", heading: "redis.wait_replicas", want: "rediswait_replicas"},
		{name: "non-ascii letters kept", heading: "Top-100 ÷ naive × 2", want: "top-100--naive--2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := slug(tc.heading); got != tc.want {
				t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
			}
		})
	}
}

func TestResolveRefusesBrokenLinks(t *testing.T) {
	t.Parallel()
	docs := map[string]string{
		"a.md":      "# Title\n\n## Second part\n\n## Second part\n",
		"docs/b.md": "# B\n",
	}
	read := func(p string) (string, bool) { s, ok := docs[p]; return s, ok }
	cases := []struct {
		name, file, target string
		ok                 bool
	}{
		{name: "same-file anchor", file: "a.md", target: "#second-part", ok: true},
		{name: "repeated heading", file: "a.md", target: "#second-part-1", ok: true},
		{name: "missing anchor", file: "a.md", target: "#third-part"},
		{name: "existing file", file: "README.md", target: "docs/config.md", ok: true},
		{name: "missing file", file: "README.md", target: "docs/nothing.md"},
		{name: "outside the repo", file: "README.md", target: "../x.md"},
		{name: "absolute path", file: "README.md", target: "/docs/config.md"},
		{name: "anchor in another file", file: "README.md", target: "docs/config.md#no-such-heading-here"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rd := read
			if tc.file == "README.md" {
				rd = func(p string) (string, bool) {
					b, err := os.ReadFile(filepath.FromSlash(p))
					return string(b), err == nil
				}
			}
			msg := resolve(tc.file, tc.target, rd)
			if (msg == "") != tc.ok {
				t.Errorf("resolve(%q, %q) = %q, want ok=%v", tc.file, tc.target, msg, tc.ok)
			}
		})
	}
}
